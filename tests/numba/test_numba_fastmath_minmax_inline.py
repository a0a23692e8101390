"""numba-cuda 0.30.4's ``fastmath``, ``max``/``min`` and FMA-contraction behaviour in the PTX that kdebug's
NVPTX target emits (numba/cuda/mathimpl.py, cudaimpl.py; tests/cudapy/test_fastmath.py, test_minmax.py,
test_optimization.py): under ``fastmath=True`` float32 math is libdevice's ``__nv_fast_*`` approximations in
flush-to-zero mode (NVVM's ``-ftz=1``), ``tanh`` is ``tanh.approx.f32`` from sm_80, a float32 division is
``div.approx.ftz.f32`` and never raises ZeroDivisionError; two-float ``max``/``min`` are fmax/fmin (a NaN gives
the other operand, PTX ``max.f32``...); ``x * y + z`` is one ``fma.rn`` without fastmath (NVVM's -fma=1).
A device function declared with a signature is compiled eagerly, so its ``inspect_asm(sig)`` has it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.lang.types import float32, float64


def _ptx(fn, sig, device=False, fastmath=False, cc=None):
    ptx, _ = cuda.compile_ptx(fn, sig, device=device, fastmath=fastmath, cc=cc)
    return ptx


def _cos(x):
    return math.cos(x)


def _tan(x):
    return math.tan(x)


def _log(x):
    return math.log(x)


def _exp2(x):
    return math.exp2(x)


def _tanh(x):
    return math.tanh(x)


def _div(x, y):
    return x / y


def _fma(x, y, z):
    return x * y + z


@pytest.mark.parametrize("fn, fast_has", [
    (_cos, ["cos.approx.ftz.f32 "]),
    (_tan, ["sin.approx.ftz.f32 ", "cos.approx.ftz.f32 ", "div.approx.ftz.f32 "]),
    (_log, ["lg2.approx.ftz.f32 ", "0f3F317218"]),  # log2(x) * ln(2)
    (_exp2, ["ex2.approx.ftz.f32 "]),  # the precise __nv_exp2f in flush-to-zero mode
])
def test_fastmath_float32_math_is_libdevice_approximations(fn, fast_has):
    fast = _ptx(fn, (float32,), device=True, fastmath=True)
    prec = _ptx(fn, (float32,), device=True)
    for text in fast_has:
        assert text in fast
    assert fast_has[0] not in prec


def test_fastmath_float64_math_stays_precise():
    fast = _ptx(_cos, (float64,), device=True, fastmath=True)
    assert "cos.approx" not in fast


def test_fastmath_tanh_is_tanh_approx_where_the_ptx_isa_has_it():
    assert "tanh.approx.f32 " in _ptx(_tanh, (float32,), device=True, fastmath=True, cc=(8, 0))
    # sm_75's PTX (ISA 6.3) predates tanh.approx: libdevice's tanhf, in flush-to-zero mode
    assert "tanh.approx.f32 " not in _ptx(_tanh, (float32,), device=True, fastmath=True, cc=(7, 5))
    assert "tanh.approx.f32 " not in _ptx(_tanh, (float32,), device=True, cc=(8, 0))


def test_fastmath_division_in_ptx():
    fast = _ptx(_div, (float32, float32), device=True, fastmath=True)
    prec = _ptx(_div, (float32, float32), device=True)
    assert "div.approx.ftz.f32 " in fast and "div.rn.f32" not in fast
    assert "div.rn.f32" in prec and "div.approx" not in prec


def test_fastmath_jit_inspect_asm_of_kernel_and_device_function():
    def kernel(r, x):
        r[0] = math.sin(x)

    sig = (float32[::1], float32)
    assert "sin.approx.ftz.f32 " in cuda.jit(sig, fastmath=True)(kernel).inspect_asm(sig)
    assert "sin.approx" not in cuda.jit(sig)(kernel).inspect_asm(sig)
    device = cuda.jit((float32,), device=True, fastmath=True)(_cos)  # compiled eagerly, as numba
    assert "cos.approx.ftz.f32 " in device.inspect_asm((float32,))


def test_fastmath_division_by_zero_does_not_raise():
    def divide(r, x, y):
        r[0] = x / y

    sig = (float32[::1], float32, float32)
    fast = cuda.jit(sig, fastmath=True, debug=True)(divide)
    prec = cuda.jit(sig, debug=True)(divide)
    r = np.zeros(1, np.float32)
    with pytest.raises(ZeroDivisionError):
        prec[1, 1](r, 10.0, 0.0)
    fast[1, 1](r, 10.0, 0.0)
    assert r[0] == np.inf


@pytest.mark.parametrize("left, right, insn", [
    (np.float32, np.float32, "max.f32"), (np.float32, np.float64, "max.f64"), (np.float64, np.float64, "max.f64"),
])
def test_max_of_two_floats_is_ptx_max(left, right, insn):
    @cuda.jit
    def kernel(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = max(a[i], b[i])

    a = np.array([0.5, 3.0, np.nan, 1.0], dtype=left)
    b = np.array([2.0, 2.0, 1.0, np.nan], dtype=right)
    c = np.zeros(4, np.float64)
    kernel[1, 4](a, b, c)
    np.testing.assert_array_equal(c, [2.0, 3.0, 1.0, 1.0])  # fmax: a NaN gives the other operand
    assert insn in next(iter(kernel.inspect_asm().values()))


def test_min_of_two_floats_is_ptx_min():
    @cuda.jit
    def kernel(a, b, c):
        c[0] = min(a[0], b[0])
        c[1] = min(b[0], a[0])

    c = np.zeros(2, np.float32)
    kernel[1, 1](np.array([np.nan], np.float32), np.array([4.0], np.float32), c)
    np.testing.assert_array_equal(c, [4.0, 4.0])
    assert "min.f32" in next(iter(kernel.inspect_asm().values()))


def test_multiply_add_is_one_fma_in_ptx():
    ptx = _ptx(_fma, (float64, float64, float64), device=True)
    assert "fma.rn.f64" in ptx and "mul.rn.f64" not in ptx


def test_second_dispatcher_of_a_function_has_its_overloads():
    def kernel(x):
        x[0] = 1

    sig = (float64[::1],)
    cuda.jit(sig)(kernel)
    again = cuda.jit(sig)(kernel)  # the same job: the second dispatcher still lists it
    assert sig in again.inspect_asm()
