"""complex64/complex128 in kernels as numba-cuda 0.30.4 (tests/cudapy/test_complex.py, test_complex_kernel.py,
complex_usecases.py): arithmetic, abs, .real/.imag/.conjugate(), the cmath functions, arrays and arguments.

Expected values are Python's cmath on the same (rounded) inputs, as numba's tests compare them."""
from __future__ import annotations

import cmath
import itertools
import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import types
from kdebug.errors import CompileError

REALS_BASIC = [-0.0, +0.0, 1, -1, +1.5, -3.5, float("-inf"), float("+inf"), float("nan")]
REALS_MORE = [0.0, +0.0, 1, -1, -math.pi, +math.pi, float("-inf"), float("+inf"), float("nan")]
REALS_NON_NAN = [-0.0, +0.0, 1, -1, -math.pi, +math.pi, float("inf"), float("-inf")]


def _values(reals):
    return [complex(x, y) for x, y in itertools.product(reals, reals)]


def _close(got, want, single: bool, ulps: int = 2) -> bool:
    """numba's assertPreciseEqual (tests/support.py): equal when both hold a NaN; infinities exactly; else each
    part within 2 ** (ulps - bits - 1) * (|got| + |want|)."""
    got, want = complex(got), complex(want)
    if cmath.isnan(got) and cmath.isnan(want):
        return True
    delta = 2.0 ** (ulps - (24 if single else 53) - 1) * (abs(got) + abs(want))
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isinf(g) or math.isinf(w) or math.isnan(g) or math.isnan(w):
            if not (g == w or (math.isnan(g) and math.isnan(w))):
                return False
        elif abs(g - w) > delta:
            return False
    return True


def _run(pyfunc, restype, argtypes, values):
    """numba's compile_scalar_func: a device function with the signature, called by a kernel per element."""
    device_func = cuda.jit(restype(*argtypes), device=True)(pyfunc)
    if len(argtypes) == 1:
        def kernel_func(out, a):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = device_func(a[i])
    else:
        def kernel_func(out, a, b):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = device_func(a[i], b[i])
    kernel = cuda.jit(kernel_func)
    n = len(values)
    inputs = [np.empty(n, dtype=t.np_dtype) for t in argtypes]
    out = np.empty(n, dtype=restype.np_dtype)
    for i, vs in enumerate(values):
        for v, inp in zip(vs, inputs):
            inp[i] = v
    kernel[(n + 63) // 64, 64](out, *inputs)
    single = argtypes[0] in (types.float32, types.complex64)
    rounded = [tuple(complex(inp[i]) if inp.dtype.kind == "c" else float(inp[i]) for inp in inputs) for i in range(n)]
    bad = []
    for got, args in zip(out, rounded):
        try:
            want = pyfunc(*args)
        except (ValueError, OverflowError):
            continue  # math domain error: numba's test skips these values too
        if not _close(got, want, single):
            bad.append((args, got, want))
    assert not bad, f"{pyfunc.__name__}: {len(bad)} wrong, e.g. {bad[:3]}"


def real_usecase(x):
    return x.real


def imag_usecase(x):
    return x.imag


def conjugate_usecase(x):
    return x.conjugate()


def div_usecase(x, y):
    return x / y


@pytest.mark.parametrize("pyfunc", [real_usecase, imag_usecase])
def test_real_imag(pyfunc):
    for tp in (types.complex64, types.complex128):
        _run(pyfunc, tp.underlying_float, (tp,), [(v,) for v in _values(REALS_BASIC)])


def test_conjugate():
    for tp in (types.complex64, types.complex128):
        _run(conjugate_usecase, tp, (tp,), [(v,) for v in _values(REALS_BASIC)])


def test_division_of_finite_values():
    vals = [v for v in _values([1, -1, 1.5, -3.5, 0.0]) if v]
    pairs = list(itertools.product(vals, vals))
    for tp in (types.complex64, types.complex128):
        _run(div_usecase, tp, (tp, tp), pairs)


CASES = {  # numba's TestCMath: function, values for complex128 (complex64 uses the basic ones)
    "exp": REALS_MORE, "log": REALS_MORE, "log10": REALS_MORE, "sqrt": REALS_MORE, "acos": REALS_MORE,
    "asin": REALS_MORE, "atan": REALS_NON_NAN, "cos": REALS_MORE, "sin": REALS_MORE, "tan": REALS_MORE,
    "acosh": REALS_MORE, "asinh": REALS_MORE, "atanh": REALS_MORE, "cosh": REALS_MORE, "sinh": REALS_MORE,
    "tanh": REALS_MORE,
}


def exp_usecase(x):
    return cmath.exp(x)


def log_usecase(x):
    return cmath.log(x)


def log10_usecase(x):
    return cmath.log10(x)


def sqrt_usecase(x):
    return cmath.sqrt(x)


def acos_usecase(x):
    return cmath.acos(x)


def asin_usecase(x):
    return cmath.asin(x)


def atan_usecase(x):
    return cmath.atan(x)


def cos_usecase(x):
    return cmath.cos(x)


def sin_usecase(x):
    return cmath.sin(x)


def tan_usecase(x):
    return cmath.tan(x)


def acosh_usecase(x):
    return cmath.acosh(x)


def asinh_usecase(x):
    return cmath.asinh(x)


def atanh_usecase(x):
    return cmath.atanh(x)


def cosh_usecase(x):
    return cmath.cosh(x)


def sinh_usecase(x):
    return cmath.sinh(x)


def tanh_usecase(x):
    return cmath.tanh(x)


def phase_usecase(x):
    return cmath.phase(x)


def polar_as_complex_usecase(x):
    r, phi = cmath.polar(x)
    return complex(r, phi)


def rect_usecase(r, phi):
    return cmath.rect(r, phi)


def isnan_usecase(x):
    return cmath.isnan(x)


def isinf_usecase(x):
    return cmath.isinf(x)


def isfinite_usecase(x):
    return cmath.isfinite(x)


def log_base_usecase(x, base):
    return cmath.log(x, base)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cmath_unary(name):
    pyfunc = globals()[f"{name}_usecase"]
    _run(pyfunc, types.complex128, (types.complex128,), [(v,) for v in _values(CASES[name])])
    _run(pyfunc, types.complex64, (types.complex64,),
         [(v,) for v in _values(REALS_NON_NAN if name == "atan" else REALS_BASIC)])


@pytest.mark.parametrize("pyfunc", [isnan_usecase, isinf_usecase, isfinite_usecase])
def test_cmath_predicates(pyfunc):
    for tp in (types.complex128, types.complex64):
        _run(pyfunc, types.boolean, (tp,), [(v,) for v in _values(REALS_BASIC)])


def test_phase_polar_rect():
    for tp, reals in ((types.complex128, REALS_MORE), (types.complex64, REALS_BASIC)):
        _run(phase_usecase, tp.underlying_float, (tp,), [(v,) for v in _values(reals)])
        _run(polar_as_complex_usecase, tp, (tp,), [(v,) for v in _values(reals)])
        pairs = [(z.real, z.imag) for z in _values(reals) if not math.isinf(z.imag) or z.real == 0]
        _run(rect_usecase, tp, (tp.underlying_float, tp.underlying_float), pairs)


def test_log_base():
    vals = _values([1, -1, 1.5, -3.5, 0.5])
    _run(log_base_usecase, types.complex128, (types.complex128, types.complex128),
         list(itertools.product(vals, vals[:6])))


def test_cuda_complex_arg():
    """numba's test_complex_kernel.py."""
    @cuda.jit("void(complex128[:], complex128)")
    def foo(a, b):
        i = cuda.grid(1)
        a[i] += b

    a = np.arange(5, dtype=np.complex128)
    a0 = a.copy()
    foo[1, a.shape](a, 2j)
    assert np.allclose(a, a0 + 2j)


def test_arithmetic_mixes_with_reals_as_numba_types_it():
    @cuda.jit
    def k(z, out, f, flags):
        x = z[0]
        out[0] = x * 2 + 1.5        # complex64 with float64 constants: complex128
        out[1] = x - 1j
        out[2] = x ** 3
        out[3] = complex(2, 3) ** 0.5
        out[4] = -x + x.conjugate()
        f[0] = abs(x)
        f[1] = (x * x).imag
        flags[0] = x == complex(1.0, 2.0)
        flags[1] = x != x
        flags[2] = bool(x)
        flags[3] = not (x - x)

    z = np.array([1 + 2j], dtype=np.complex64)
    out = np.zeros(5, dtype=np.complex128)
    f = np.zeros(2)
    flags = np.zeros(4, dtype=np.bool_)
    k[1, 1](z, out, f, flags)
    x = complex(z[0])
    np.testing.assert_allclose(out, [x * 2 + 1.5, x - 1j, x ** 3, complex(2, 3) ** 0.5, -x + x.conjugate()],
                               rtol=1e-6)
    np.testing.assert_allclose(f, [abs(x), (x * x).imag], rtol=1e-6)
    assert flags.tolist() == [True, False, True, True]


def test_complex_division_by_zero_stops_the_thread_and_raises_with_debug():
    """numba's complex_div raises ZeroDivisionError("complex division by zero") in both error models."""
    @cuda.jit
    def k(z, out):
        out[0] = 1
        out[0] = z[0] / z[1]

    out = np.zeros(1, dtype=np.complex128)
    k[1, 1](np.array([1 + 1j, 0j]), out)
    assert out[0] == 1  # the thread stopped at the division
    with pytest.raises(ZeroDivisionError, match="complex division by zero$"):
        cuda.jit(debug=True)(k.py_func)[1, 1](np.array([1 + 1j, 0j]), out)


@pytest.mark.parametrize("body, message", [
    ("out[0] = z[0] // z[1]", "complex numbers take + - * / **"),
    ("out[0] = z[0] < z[1]", "complex numbers cannot be ordered"),
    ("f[0] = z[0]", "cannot store complex128 into an array of float64"),
    ("f[0] = float(z[0])", "float() does not take complex numbers"),
    ("f[0] = math.sqrt(z[0])", "math.sqrt does not take complex numbers"),
    ("out[0] = cmath.sqrt(f[0])", "cmath.sqrt takes a complex number in kernels, not float64"),
])
def test_what_numba_rejects_is_a_located_error(body, message, tmp_path):
    path = tmp_path / "bad_complex.py"
    path.write_text(f"import math, cmath\n\ndef k(z, out, f):\n    {body}\n")
    import runpy
    k = cuda.jit(runpy.run_path(str(path))["k"])
    with pytest.raises(CompileError) as cm:
        k[1, 1](np.zeros(2, dtype=np.complex128), np.zeros(1, dtype=np.complex128), np.zeros(1))
    assert message in str(cm.value) and f"{path}:4:" in str(cm.value)


def test_ptx_passes_a_complex_argument_as_its_two_parts():
    def k(a, b):
        i = cuda.grid(1)
        a[i] = cmath.sqrt(a[i]) * b

    ptx, _ = cuda.compile_ptx(k, "void(complex64[:], complex64)")
    params = [line.strip() for line in ptx.splitlines() if line.strip().startswith(".param")]
    assert [p.split()[1] for p in params] == [".u64", ".u64", ".f32", ".f32"], params  # data, shape, re, im
