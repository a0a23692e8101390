"""Bit, integer and math intrinsics against numba-cuda 0.30.4's semantics (cudadecl.py, cudaimpl.py,
libdevicefuncs.py, cudamath.py) and plain Python integer and float operations."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdebug import cuda
from kdebug.cuda import int32, int64, uint32, uint64
from kdebug.errors import CompileError
from kdebug.lang import types as T

DTYPES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


@cuda.jit
def bit_kernel(x, popc, clz, ffs):
    i = cuda.grid(1)
    if i < x.size:
        popc[i] = cuda.popc(x[i])
        clz[i] = cuda.clz(x[i])
        ffs[i] = cuda.ffs(x[i])


@cuda.jit
def brev_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cuda.brev(x[i])


def run_bits(values, dtype):
    x = np.array(values, dtype=dtype)
    n = x.size
    popc, clz = np.zeros(n, dtype), np.zeros(n, dtype)
    ffs = np.zeros(n, np.uint32)
    bit_kernel[1, max(n, 1)](x, popc, clz, ffs)
    return x, popc, clz, ffs


def unsigned(v: int, bits: int) -> int:
    return int(v) & ((1 << bits) - 1)


def py_popc(v, bits):
    return bin(unsigned(v, bits)).count("1")


def py_clz(v, bits):
    return bits - unsigned(v, bits).bit_length()


def py_ffs(v, bits):
    # numba lowers 8/16-bit ffs through int32 (sign extension keeps the lowest set bit where it is)
    u = unsigned(v, bits)
    return (u & -u).bit_length()


def py_brev(v, bits):
    return int(format(unsigned(v, bits), f"0{bits}b")[::-1], 2)


# ---- tables -------------------------------------------------------------------------------------
BIT_TABLE = [  # dtype, value, popc, clz, ffs
    ("int32", 0, 0, 32, 0),
    ("int32", 1, 1, 31, 1),
    ("int32", -1, 32, 0, 1),
    ("int32", -2**31, 1, 0, 32),
    ("int32", 2**31 - 1, 31, 1, 1),
    ("int64", 0, 0, 64, 0),
    ("int64", -1, 64, 0, 1),
    ("int64", -2**63, 1, 0, 64),
    ("int64", 2**40, 1, 23, 41),
    ("uint32", 2**32 - 1, 32, 0, 1),
    ("uint32", 0x80000000, 1, 0, 32),
    ("uint64", 2**64 - 1, 64, 0, 1),
    ("uint64", 0x10, 1, 59, 5),
    ("int8", -1, 8, 0, 1),
    ("int8", 0x40, 1, 1, 7),
    ("int16", -32768, 1, 0, 16),
    ("uint8", 0, 0, 8, 0),
    ("uint16", 0x0100, 1, 7, 9),
]


@pytest.mark.parametrize("dtype,value,popc,clz,ffs", BIT_TABLE)
def test_popc_clz_ffs_table(dtype, value, popc, clz, ffs):
    _, p, c, f = run_bits([value], dtype)
    assert (int(p[0]), int(c[0]), int(f[0])) == (popc, clz, ffs)
    assert p.dtype == np.dtype(dtype)  # numba: popc and clz keep the argument's type


@pytest.mark.parametrize("dtype,value,expected", [
    ("uint32", 1, 0x80000000), ("uint32", 0x80000000, 1), ("uint32", 0xF0, 0x0F000000),
    ("uint32", 0, 0), ("uint32", 0xFFFFFFFF, 0xFFFFFFFF),
    ("uint64", 1, 1 << 63), ("uint64", 0x1234, py_brev(0x1234, 64)),
])
def test_brev_table(dtype, value, expected):
    x = np.array([value], dtype)
    out = np.zeros(1, dtype)
    brev_kernel[1, 1](x, out)
    assert int(out[0]) == expected


# ---- properties against Python's integers ------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_bits_match_python(dtype, data):
    bits = DTYPES[dtype]
    info = np.iinfo(dtype)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=32))
    x, p, c, f = run_bits(values, dtype)
    for v, pv, cv, fv in zip(values, p, c, f):
        assert int(pv) == py_popc(v, bits)
        assert int(cv) == py_clz(v, bits)
        assert int(fv) == py_ffs(v, bits)


@pytest.mark.parametrize("dtype,bits", [("uint32", 32), ("uint64", 64)])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_brev_matches_python(dtype, bits, data):
    values = data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=1, max_size=32))
    x = np.array(values, dtype)
    out = np.zeros_like(x)
    brev_kernel[1, x.size](x, out)
    assert [int(v) for v in out] == [py_brev(v, bits) for v in values]


# ---- libdevice integer functions -----------------------------------------------------------------------
@cuda.jit
def libdevice_kernel(x, y, z, out):
    i = cuda.grid(1)
    if i < x.size:
        a, b = int32(x[i]), int32(y[i])
        ua, ub = uint32(x[i]), uint32(y[i])
        out[i, 0] = cuda.libdevice.hadd(a, b)
        out[i, 1] = cuda.libdevice.rhadd(a, b)
        out[i, 2] = cuda.libdevice.uhadd(ua, ub)
        out[i, 3] = cuda.libdevice.urhadd(ua, ub)
        out[i, 4] = cuda.libdevice.mul24(a, b)
        out[i, 5] = cuda.libdevice.umul24(ua, ub)
        out[i, 6] = cuda.libdevice.mulhi(a, b)
        out[i, 7] = cuda.libdevice.umulhi(ua, ub)
        out[i, 8] = cuda.libdevice.mul64hi(int64(x[i]) * 4294967296, int64(y[i]) * 4294967296)
        out[i, 9] = cuda.libdevice.umul64hi(uint64(ua) * uint64(4294967296), uint64(ub) * uint64(4294967296))
        out[i, 10] = cuda.libdevice.sad(a, b, uint32(z[i]))
        out[i, 11] = cuda.libdevice.usad(ua, ub, uint32(z[i]))


def wrap(v, bits, signed=True):
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def sext24(v):
    v &= 0xFFFFFF
    return v - (1 << 24) if v >> 23 else v


def libdevice_reference(x, y, z):
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    return [
        (x + y) >> 1, (x + y + 1) >> 1, (ux + uy) >> 1, (ux + uy + 1) >> 1,
        wrap(sext24(x) * sext24(y), 32), wrap((ux & 0xFFFFFF) * (uy & 0xFFFFFF), 32, False),
        wrap((x * y) >> 32, 32), (ux * uy) >> 32,
        wrap(((x << 32) * (y << 32)) >> 64, 64), ((ux << 32) * (uy << 32)) >> 64,
        wrap(abs(x - y) + (z & 0xFFFFFFFF), 32, False), wrap(abs(ux - uy) + (z & 0xFFFFFFFF), 32, False),
    ]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1),
                          st.integers(0, 2**31 - 1)), min_size=1, max_size=16))
def test_libdevice_integer_functions_match_python(triples):
    x, y, z = (np.array(c, np.int64) for c in zip(*triples))
    out = np.zeros((x.size, 12), np.int64)
    libdevice_kernel[1, x.size](x, y, z, out)
    for k, (a, b, c) in enumerate(triples):
        got = [int(v) for v in out[k]]
        want = libdevice_reference(a, b, c)
        # columns 3, 5, 7, 9, 11 are unsigned results stored into int64 (9 is a full uint64)
        want[9] = wrap(want[9], 64)
        assert got == want, (a, b, c)


@pytest.mark.parametrize("fn,x,y,expected", [
    ("hadd", 2**31 - 1, 2**31 - 1, 2**31 - 1),  # no overflow in the intermediate sum
    ("hadd", -3, 0, -2),  # floor((x + y) / 2)
    ("rhadd", -3, 0, -1),
    ("mulhi", -1, 1, -1),
    ("mul24", 0x00FFFFFF, 2, -2),  # the low 24 bits are a signed 24-bit number
])
def test_libdevice_edges(fn, x, y, expected):
    triples = [(x, y, 0)]
    xs, ys, zs = (np.array(c, np.int64) for c in zip(*triples))
    out = np.zeros((1, 12), np.int64)
    libdevice_kernel[1, 1](xs, ys, zs, out)
    col = {"hadd": 0, "rhadd": 1, "mul24": 4, "mulhi": 6}[fn]
    assert int(out[0, col]) == expected


# ---- selp, fma, cbrt -------------------------------------------------------------------------------------
@cuda.jit
def select_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = cuda.selp(x[i] > 0.0, x[i], -x[i])
        out[i, 1] = cuda.fma(x[i], 3.0, 0.5)
        out[i, 2] = cuda.cbrt(x[i])


def test_selp_fma_cbrt():
    x = np.array([2.0, -8.0, 0.0, np.nan, np.inf, -27.0])
    out = np.zeros((x.size, 3))
    select_kernel[1, x.size](x, out)
    np.testing.assert_array_equal(out[:, 0], np.where(x > 0.0, x, -x))
    np.testing.assert_array_equal(out[:, 1], x * 3.0 + 0.5)
    np.testing.assert_allclose(out[:, 2], np.cbrt(x), rtol=1e-15)


def test_selp_mismatched_types_is_a_located_error():
    @cuda.jit
    def bad(out):
        out[0] = cuda.selp(True, int32(1), 2.0)
    with pytest.raises(CompileError) as err:
        bad[1, 1](np.zeros(1))
    assert "cuda.selp" in str(err.value) and err.value.loc is not None and err.value.loc.line > 0


def test_popc_of_a_float_is_a_located_error():
    @cuda.jit
    def bad(out):
        out[0] = cuda.popc(out[0])
    with pytest.raises(CompileError) as err:
        bad[1, 1](np.zeros(1))
    assert "integer" in str(err.value)


# ---- math functions with tuple and integer parts ---------------------------------------------------------
@cuda.jit
def math_kernel(x, out, e):
    i = cuda.grid(1)
    if i < x.size:
        m, ex = math.frexp(x[i])
        out[i, 0] = m
        e[i] = ex
        frac, whole = math.modf(x[i])
        out[i, 1] = frac
        out[i, 2] = whole
        out[i, 3] = math.ldexp(x[i], int32(-3))
        out[i, 4] = math.remainder(x[i], 0.75)
        out[i, 5] = math.pow(x[i], int32(5))
        out[i, 6] = math.pow(x[i], int32(-2))
        out[i, 7] = math.copysign(1.0, x[i])
        out[i, 8] = math.expm1(x[i] * 1e-9)
        out[i, 9] = math.log1p(abs(x[i]))
        out[i, 10] = math.fmod(x[i], 0.75)


MATH_VALUES = [0.0, -0.0, 1.5, -2.25, 1e10, 3.0e-5, 7.0, -0.375]


def test_math_functions_match_python():
    x = np.array(MATH_VALUES)
    out = np.zeros((x.size, 11))
    e = np.zeros(x.size, np.int32)
    math_kernel[1, x.size](x, out, e)
    assert e.dtype == np.int32
    for k, v in enumerate(MATH_VALUES):
        m, ex = math.frexp(v)
        assert (out[k, 0], int(e[k])) == (m, ex)
        assert tuple(out[k, 1:3]) == math.modf(v)
        assert out[k, 3] == math.ldexp(v, -3)
        assert out[k, 4] == math.remainder(v, 0.75)
        assert out[k, 5] == pytest.approx(v ** 5, rel=1e-15)
        assert out[k, 6] == (pytest.approx(v ** -2, rel=1e-15) if v else math.inf)
        assert out[k, 7] == math.copysign(1.0, v)
        assert out[k, 8] == pytest.approx(math.expm1(v * 1e-9), rel=1e-15)
        assert out[k, 9] == pytest.approx(math.log1p(abs(v)), rel=1e-15)
        assert out[k, 10] == math.fmod(v, 0.75)


def test_math_nan_and_inf():
    x = np.array([np.nan, np.inf, -np.inf])
    out = np.zeros((x.size, 11))
    e = np.zeros(x.size, np.int32)
    math_kernel[1, x.size](x, out, e)
    assert np.isnan(out[0]).all() or np.isnan(out[0, [0, 1, 2, 3, 4, 5]]).all()
    assert out[1, 2] == np.inf and out[1, 1] == 0.0  # modf(inf) == (0.0, inf)
    assert np.isnan(out[1, 4]) and np.isnan(out[1, 10])  # remainder and fmod of inf


@cuda.jit
def powi32_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.pow(x[i], int32(3))


def test_powi_keeps_float32():
    """numba: math.pow(float32, int32) is float32 (powif)."""
    x = np.array([1.5, -2.0, 0.1], np.float32)
    out = np.zeros_like(x)
    from kdebug.session.live import Session, get_session, set_session
    set_session(Session(backend="cpu", passes_on_demand=True, snapshots=True))  # the lower phase's IR is kept
    powi32_kernel[1, 3](x, out)
    np.testing.assert_allclose(out, x.astype(np.float64) ** 3, rtol=1e-6)
    (compiled,) = get_session().compiled_for(powi32_kernel).values()
    assert "call float @\"kdebug.powi.f32\"(float" in compiled.record.snapshots["lower"]


@cuda.jit
def powi_kernel(a, o, n):
    o[0] = math.pow(a[0], int32(n))


@settings(max_examples=40, deadline=None)
@given(st.floats(-1e3, 1e3, allow_nan=False).filter(lambda v: v == 0.0 or abs(v) > 1e-3), st.integers(-8, 8))
def test_powi_matches_python(x, n):
    xs = np.array([x])
    out = np.zeros(1)
    powi_kernel[1, 1](xs, out, n)
    if x == 0.0 and n < 0:
        assert out[0] == math.inf or out[0] == -math.inf
    else:
        assert out[0] == pytest.approx(x ** n, rel=1e-13, abs=1e-300)


# ---- operator functions -------------------------------------------------------------------------------------
@cuda.jit
def operator_kernel(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = operator.add(a[i], b[i])
        out[i, 1] = operator.sub(a[i], b[i])
        out[i, 2] = operator.mul(a[i], b[i])
        out[i, 3] = operator.floordiv(a[i], b[i])
        out[i, 4] = operator.mod(a[i], b[i])
        out[i, 5] = operator.lt(a[i], b[i])
        out[i, 6] = operator.neg(a[i])
        out[i, 7] = operator.xor(a[i], b[i])
        out[i, 8] = operator.lshift(a[i], 2)


def test_operator_functions_are_the_operators():
    a = np.array([7, -7, 3, 0], np.int64)
    b = np.array([2, 2, -5, 9], np.int64)
    out = np.zeros((4, 9), np.int64)
    operator_kernel[1, 4](a, b, out)
    for k in range(4):
        x, y = int(a[k]), int(b[k])
        assert list(out[k]) == [x + y, x - y, x * y, x // y, x % y, int(x < y), -x, x ^ y, x << 2]


# ---- fastmath --------------------------------------------------------------------------------------------------
def _fast_flags(fastmath):
    @cuda.jit(fastmath=fastmath)
    def k(a):
        a[0] = a[0] * 2.0 + a[1] / a[2]
        if a[0] < a[1]:
            a[1] = math.sqrt(a[0])
    a = np.ones(3)
    k[1, 1](a)
    return next(iter(k.inspect_llvm().values()))


def test_fastmath_sets_llvm_flags():
    fast = _fast_flags(True)
    plain = _fast_flags(False)
    assert "fmul fast" in fast and "fadd fast" in fast and "fdiv fast" in fast and "fcmp fast" in fast
    assert "call fast double @llvm.sqrt" in fast
    assert " fast " not in plain


# ---- the PTX target ---------------------------------------------------------------------------------------------
def _bits_for_ptx(x, o):
    i = cuda.grid(1)
    o[i] = cuda.popc(x[i]) + cuda.clz(x[i]) + cuda.ffs(x[i]) + cuda.brev(uint32(x[i]))


def test_bit_intrinsics_lower_to_ptx_instructions():
    import re
    ptx, _ = cuda.compile_ptx(_bits_for_ptx, "void(int32[:], int64[:])")
    ops = set(re.findall(r"\b(popc|clz|brev)\.b32\b", ptx))
    assert ops == {"popc", "clz", "brev"}


# ---- numba-cuda 0.30.4's tests/cudapy/test_math.py unary templates, for the functions not covered above --------
# (its ranges, dtypes, result dtypes and tolerances: rtol 1e-13 for float64, 1e-6 for float32, 1e-3 for integers;
# the reference is the function on the host, as numba's vectorized one is)
def math_erf(A, B):
    i = cuda.grid(1)
    B[i] = math.erf(A[i])


def math_erfc(A, B):
    i = cuda.grid(1)
    B[i] = math.erfc(A[i])


def math_gamma(A, B):
    i = cuda.grid(1)
    B[i] = math.gamma(A[i])


def math_lgamma(A, B):
    i = cuda.grid(1)
    B[i] = math.lgamma(A[i])


def math_degrees(A, B):
    i = cuda.grid(1)
    B[i] = math.degrees(A[i])


def math_radians(A, B):
    i = cuda.grid(1)
    B[i] = math.radians(A[i])


def _unary_kernel(fn):
    return globals()[f"math_{fn}"]


@pytest.mark.parametrize("fn,dtype,start,stop", [
    (fn, dtype, start, stop)
    for fn, starts in [("erf", (0, 0)), ("erfc", (0, 0)), ("gamma", (0.1, 1)), ("lgamma", (0.1, 1)),
                       ("degrees", (0, None)), ("radians", (0, None))]
    for dtype, start, stop in [(np.float32, starts[0], 1), (np.float64, starts[0], 1), (np.int64, starts[1], 50),
                               (np.uint64, starts[1], 50)]
    if start is not None
])
def test_math_functions_as_numbas_test_math(fn, dtype, start, stop):
    A = np.linspace(start, stop, 50, dtype=dtype)
    restype = dtype if dtype in (np.float32, np.float64) else np.float64
    B = np.empty_like(A, dtype=restype)
    arg, res = (T.from_dtype(np.dtype(t))[::1] for t in (dtype, restype))
    cuda.jit((arg, res))(_unary_kernel(fn))[1, 50](A, B)
    reference = np.array([getattr(math, fn)(float(a)) for a in A])
    rtol = {np.float64: 1e-13, np.float32: 1e-6}.get(dtype, 1e-3)
    np.testing.assert_allclose(reference, B, rtol=rtol)


@pytest.mark.parametrize("fn,x,expected", [
    ("erf", -np.inf, -1.0), ("erfc", np.inf, 0.0), ("erfc", -np.inf, 2.0), ("gamma", np.inf, np.inf),
    ("lgamma", -np.inf, np.inf), ("gamma", -0.5, math.gamma(-0.5)), ("lgamma", -0.5, math.lgamma(-0.5)),
    ("gamma", np.nan, np.nan), ("lgamma", np.nan, np.nan), ("degrees", -np.pi, -180.0), ("radians", -180.0, -np.pi),
])
def test_math_function_edges(fn, x, expected):
    A = np.array([x])
    B = np.zeros(1)
    cuda.jit(_unary_kernel(fn))[1, 1](A, B)
    np.testing.assert_allclose(B, [expected], rtol=1e-13)
