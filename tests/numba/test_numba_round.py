"""round(x) and round(x, ndigits) in kernels as numba-cuda 0.30.4 (tests/cudapy/test_intrinsics.py:
test_round_f4, test_round_f8, test_round_to_f4, test_round_to_f4_overflow, test_round_to_f4_halfway,
test_round_to_f8, test_round_to_f8_overflow, test_round_to_f8_halfway), with their expected values:
Python's round of the same value."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError


def simple_round(ary, c):
    ary[0] = round(c)


def simple_round_to(ary, c, ndigits):
    ary[0] = round(c, ndigits)


def _close(got, want, bits):
    """numba's assertPreciseEqual with prec 'single'/'double' and ulps=1: within 2**(1-bits-1)*(|a|+|b|)."""
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want) or want == 0.0:
        return got == want
    return abs(got - want) <= 2.0 ** (1 - bits - 1) * (abs(got) + abs(want))


@pytest.mark.parametrize("sig", ["void(int64[:], float32)", "void(int64[:], float64)"])
def test_round(sig):
    compiled = cuda.jit(sig)(simple_round)
    ary = np.zeros(1, dtype=np.int64)
    for i in [-3.0, -2.5, -2.25, -1.5, 1.5, 2.25, 2.5, 2.75]:
        compiled[1, 1](ary, i)
        assert ary[0] == round(i)


def test_round_to_f4():
    compiled = cuda.jit("void(float32[:], float32, int32)")(simple_round_to)
    ary = np.zeros(1, dtype=np.float32)
    np.random.seed(123)
    vals = np.random.random(32).astype(np.float32)
    for val, ndigits in itertools.product(vals, (-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 13)):
        compiled[1, 1](ary, val, ndigits)
        assert _close(float(ary[0]), float(np.float32(round(val, ndigits))), 24), (val, ndigits, ary[0])


def test_round_to_f8():
    compiled = cuda.jit("void(float64[:], float64, int32)")(simple_round_to)
    ary = np.zeros(1, dtype=np.float64)
    np.random.seed(123)
    vals = np.random.random(32)
    for val, ndigits in itertools.product(vals, (-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5)):
        compiled[1, 1](ary, val, ndigits)
        assert ary[0] == round(val, ndigits), (val, ndigits, ary[0])  # numba: prec="exact"
    val, ndigits = 0.12345678987654321 * 10e-15, 23  # the "overflow safe" branch
    compiled[1, 1](ary, val, ndigits)
    assert _close(float(ary[0]), round(val, ndigits), 53)


def test_round_to_overflow_returns_the_value():
    f4 = cuda.jit("void(float32[:], float32, int32)")(simple_round_to)
    a4 = np.zeros(1, dtype=np.float32)
    f4[1, 1](a4, np.finfo(np.float32).max, 300)
    assert a4[0] == np.finfo(np.float32).max
    f8 = cuda.jit("void(float64[:], float64, int32)")(simple_round_to)
    a8 = np.zeros(1, dtype=np.float64)
    f8[1, 1](a8, np.finfo(np.float64).max, 12)
    assert a8[0] == np.finfo(np.float64).max
    for special in (math.inf, -math.inf):
        f8[1, 1](a8, special, 3)
        assert a8[0] == special
    f8[1, 1](a8, math.nan, 3)
    assert math.isnan(a8[0])


def test_round_to_halfway_rounds_to_even():
    f4 = cuda.jit("void(float32[:], float32, int32)")(simple_round_to)
    a4 = np.zeros(1, dtype=np.float32)
    f4[1, 1](a4, 0.3425, 3)
    assert _close(float(a4[0]), round(0.3425, 3), 24)  # numba's expected value: Python's round of the float
    f8 = cuda.jit("void(float64[:], float64, int32)")(simple_round_to)
    a8 = np.zeros(1, dtype=np.float64)
    f8[1, 1](a8, 0.5425, 3)
    assert _close(float(a8[0]), round(0.5425, 3), 53)


def test_round_to_types_as_numba():
    """numba's Round template: (float32, intp) -> float32, (float64, intp) -> float64, (float, ) -> int64."""
    import io

    @cuda.jit
    def k(x32, x64, out32, out64):
        r32 = round(x32, 1)
        r64 = round(x64, 1)
        whole = round(x32)
        out32[0] = r32
        out64[0] = r64 + whole

    o32, o64 = np.zeros(1, np.float32), np.zeros(1, np.float64)
    k[1, 1](np.float32(2.25), 2.25, o32, o64)
    assert o32[0] == np.float32(2.2) and o64[0] == 2.2 + 2
    text = io.StringIO()
    k.inspect_types(file=text)
    annotated = text.getvalue()
    assert "r32 = float32" in annotated and "r64 = float64" in annotated and "whole = int64" in annotated, annotated


def test_round_with_a_float_ndigits_is_located():
    @cuda.jit
    def bad(ary, c):
        ary[0] = round(c, 1.5)

    with pytest.raises(CompileError) as err:
        bad[1, 1](np.zeros(1), 1.0)
    assert "ndigits is an integer" in str(err.value) and err.value.loc.line > 0


def test_round_to_compiles_for_the_ptx_target():
    ptx, _ = cuda.compile_ptx(simple_round_to, "void(float32[:], float32, int32)")
    assert ".entry" in ptx and "cvt.rni" in ptx  # round half to even in PTX
