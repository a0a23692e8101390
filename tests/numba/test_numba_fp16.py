"""float16 as a storage and arithmetic type and ``cuda.fp16`` as numba-cuda 0.30.4 (tests/cudapy/test_intrinsics.py's
fp16 tests, test_operator.py's fp16 tests, fp16.py's math overloads), expected values from numpy in float16."""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda.types import f2

RTOL = np.finfo(np.float16).eps  # numba's FLOAT16_RTOL


def simple_hadd_scalar(ary, a, b):
    ary[0] = cuda.fp16.hadd(a, b)


def simple_hsub_scalar(ary, a, b):
    ary[0] = cuda.fp16.hsub(a, b)


def simple_hmul_scalar(ary, a, b):
    ary[0] = cuda.fp16.hmul(a, b)


def simple_hdiv_scalar(ary, a, b):
    ary[0] = cuda.fp16.hdiv(a, b)


def simple_hmax_scalar(ary, a, b):
    ary[0] = cuda.fp16.hmax(a, b)


def simple_hmin_scalar(ary, a, b):
    ary[0] = cuda.fp16.hmin(a, b)


def simple_hadd(ary, a, b):
    ary[0] = cuda.fp16.hadd(a[0], b[0])


def simple_hfma(ary, a, b, c):
    ary[0] = cuda.fp16.hfma(a[0], b[0], c[0])


def simple_hfma_scalar(ary, a, b, c):
    ary[0] = cuda.fp16.hfma(a, b, c)


def simple_hneg_scalar(ary, a):
    ary[0] = cuda.fp16.hneg(a)


def simple_habs_scalar(ary, a):
    ary[0] = cuda.fp16.habs(a)


def simple_hdiv_kernel(ary, array_a, array_b):
    i = cuda.grid(1)
    if i < ary.size:
        ary[i] = cuda.fp16.hdiv(array_a[i], array_b[i])


@pytest.mark.parametrize("fn, op", [(simple_hadd_scalar, operator.add), (simple_hsub_scalar, operator.sub),
                                    (simple_hmul_scalar, operator.mul), (simple_hdiv_scalar, operator.truediv)])
def test_binary_scalar(fn, op):
    compiled = cuda.jit("void(f2[:], f2, f2)")(fn)
    ary = np.zeros(1, dtype=np.float16)
    arg1, arg2 = np.float16(3.1415926), np.float16(1.57)
    compiled[1, 1](ary, arg1, arg2)
    np.testing.assert_allclose(ary[0], op(arg1, arg2), rtol=RTOL)


def test_hadd_and_hfma_of_array_elements():
    compiled = cuda.jit("void(f2[:], f2[:], f2[:])")(simple_hadd)
    ary = np.zeros(1, dtype=np.float16)
    compiled[1, 1](ary, np.array([3.0], np.float16), np.array([4.0], np.float16))
    assert ary[0] == 7
    compiled = cuda.jit("void(f2[:], f2[:], f2[:], f2[:])")(simple_hfma)
    args = [np.array([v], np.float16) for v in (2.0, 3.0, 4.0)]
    compiled[1, 1](ary, *args)
    assert ary[0] == 10
    cuda.jit("void(f2[:], f2, f2, f2)")(simple_hfma_scalar)[1, 1](ary, np.float16(2.5), np.float16(3), np.float16(4))
    np.testing.assert_allclose(ary[0], np.float16(2.5) * np.float16(3) + np.float16(4), rtol=RTOL)


def test_hdiv_of_arrays():
    rng = np.random.default_rng(1)
    a1 = rng.integers(-65504, 65505, size=500).astype(np.float16)
    a2 = rng.integers(-65504, 65505, size=500).astype(np.float16)
    ary = np.zeros_like(a1)
    cuda.jit("void(f2[:], f2[:], f2[:])")(simple_hdiv_kernel).forall(ary.size)(ary, a1, a2)
    np.testing.assert_allclose(ary, a1 / a2, rtol=RTOL)


def test_hneg_habs():
    ary = np.zeros(1, dtype=np.float16)
    cuda.jit("void(f2[:], f2)")(simple_hneg_scalar)[1, 1](ary, np.float16(3.1415926))
    assert ary[0] == -np.float16(3.1415926)
    cuda.jit("void(f2[:], f2)")(simple_habs_scalar)[1, 1](ary, np.float16(-3.1415926))
    assert ary[0] == np.float16(3.1415926)


def _unary_kernel(name):
    fn = getattr(cuda.fp16, name)

    def k(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = fn(x[i])
    return cuda.jit("void(f2[:], f2[:])")(k)


@pytest.mark.parametrize("name, ref", [
    ("hsin", np.sin), ("hcos", np.cos), ("hlog", np.log), ("hlog2", np.log2), ("hlog10", np.log10),
    ("hsqrt", np.sqrt), ("hceil", np.ceil), ("hfloor", np.floor), ("hrcp", np.reciprocal), ("htrunc", np.trunc),
    ("hrint", np.rint), ("hrsqrt", lambda x, dtype: x ** -0.5),
])
def test_fp16_intrinsics_common(name, ref):
    """numba's test_fp16_intrinsics_common: random integers 1..65504 as float16 against numpy in float16."""
    np.random.seed(1)
    x = np.random.randint(1, 65505, size=32).astype(np.float16)
    r = np.zeros_like(x)
    _unary_kernel(name)[1, 32](r, x)
    np.testing.assert_allclose(r, ref(x, dtype=np.float16), rtol=RTOL)


@pytest.mark.parametrize("name, ref", [("hexp", np.exp), ("hexp2", np.exp2)])
def test_fp16_exp(name, ref):
    np.random.seed(1)
    x = np.random.randint(1, 65505, size=32).astype(np.float16)
    x2 = np.random.randint(1, 10, size=32).astype(np.float16)
    r = np.zeros_like(x2)
    _unary_kernel(name)[1, 32](r, x2)
    np.testing.assert_allclose(r, ref(x2, dtype=np.float16), rtol=RTOL)
    assert len(x) == 32


def test_hexp10():
    @cuda.jit()
    def hexp10_vectors(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = cuda.fp16.hexp10(x[i])

    np.random.seed(1)
    x = np.random.rand(32).astype(np.float16)
    r = np.zeros_like(x)
    hexp10_vectors[1, 32](r, x)
    np.testing.assert_allclose(r, 10 ** x, rtol=RTOL)


@pytest.mark.parametrize("name, op", [("heq", operator.eq), ("hne", operator.ne), ("hge", operator.ge),
                                      ("hgt", operator.gt), ("hle", operator.le), ("hlt", operator.lt)])
def test_fp16_comparison(name, op):
    fn = getattr(cuda.fp16, name)

    def k(ary, a, b):
        ary[0] = fn(a, b)

    kernel = cuda.jit("void(b1[:], f2, f2)")(k)
    got = np.zeros(1, dtype=np.bool_)
    two, three, four = np.float16(2), np.float16(3), np.float16(4)
    for a, b in ((three, three), (three, four), (three, two)):
        kernel[1, 1](got, a, b)
        assert got[0] == op(a, b)


@cuda.jit(device=True)
def hlt_func_1(x, y):
    return cuda.fp16.hlt(x, y)


@cuda.jit(device=True)
def hlt_func_2(x, y):
    return cuda.fp16.hlt(x, y)


def multiple_hcmp_1(r, a, b, c):
    r[0] = hlt_func_1(a, b) and hlt_func_2(b, c)


def multiple_hcmp_3(r, a, b, c):
    r[0] = hlt_func_1(a, b) and cuda.fp16.hge(c, b)


def multiple_hcmp_5(r, a, b, c):
    r[0] = cuda.fp16.hlt(a, b) and cuda.fp16.hge(c, b)


@pytest.mark.parametrize("fn", [multiple_hcmp_1, multiple_hcmp_3, multiple_hcmp_5])
def test_multiple_float16_comparisons(fn):
    ary = np.zeros(1, dtype=np.bool_)
    cuda.jit("void(b1[:], f2, f2, f2)")(fn)[1, 1](ary, np.float16(2.0), np.float16(3.0), np.float16(4.0))
    assert ary[0]


def test_hmax_hmin():
    ary = np.zeros(1, dtype=np.float16)
    hmax = cuda.jit("void(f2[:], f2, f2)")(simple_hmax_scalar)
    hmin = cuda.jit("void(f2[:], f2, f2)")(simple_hmin_scalar)
    for a, b in ((3.0, 4.0), (5.0, 4.0)):
        hmax[1, 1](ary, np.float16(a), np.float16(b))
        assert ary[0] == max(a, b)
        hmin[1, 1](ary, np.float16(a), np.float16(b))
        assert ary[0] == min(a, b)


def simple_fp16add(ary, a, b):
    ary[0] = a + b


def simple_fp16sub(ary, a, b):
    ary[0] = a - b


def simple_fp16mul(ary, a, b):
    ary[0] = a * b


def simple_fp16_div_scalar(ary, a, b):
    ary[0] = a / b


BINARY = [(simple_fp16add, operator.add), (simple_fp16sub, operator.sub), (simple_fp16mul, operator.mul),
          (simple_fp16_div_scalar, operator.truediv)]


@pytest.mark.parametrize("fn, op", BINARY)
def test_fp16_binary_operators(fn, op):
    kernel = cuda.jit("void(f2[:], f2, f2)")(fn)
    got = np.zeros(1, dtype=np.float16)
    arg1 = np.random.random(1).astype(np.float16)
    arg2 = np.random.random(1).astype(np.float16)
    kernel[1, 1](got, arg1[0], arg2[0])
    np.testing.assert_allclose(got, op(arg1, arg2))


@pytest.mark.parametrize("fnop, ty", list(itertools.product(BINARY, (np.int8, np.int16, np.int32, np.int64,
                                                                         np.float32, np.float64))))
def test_mixed_fp16_binary_arithmetic(fnop, ty):
    """numba's rule: the result type is numpy's result_type(float16, other)."""
    fn, op = fnop
    kernel = cuda.jit(fn)
    arg1 = np.random.random(1).astype(np.float16)
    arg2 = (np.random.random(1) * 100).astype(ty)
    got = np.zeros(1, dtype=np.result_type(np.float16, ty))
    kernel[1, 1](got, arg1[0], arg2[0])
    np.testing.assert_allclose(got, op(arg1, arg2), rtol=1e-6)
    assert kernel.overloads[kernel.signatures[0]] is not None


def test_fp16_inplace_and_unary_and_comparison_operators():
    @cuda.jit("void(f2[:], f2)")
    def k(ary, a):
        ary[0] += a
        ary[1] -= a
        ary[2] *= a
        ary[3] /= a
        ary[4] = -a
        ary[5] = abs(-a)

    got = np.random.random(6).astype(np.float16)
    arg = np.random.random(1).astype(np.float16)[0]
    expected = got.copy()
    expected[0] += arg
    expected[1] -= arg
    expected[2] *= arg
    expected[3] /= arg
    expected[4] = -arg
    expected[5] = abs(arg)
    k[1, 1](got, arg)
    np.testing.assert_allclose(got, expected)

    @cuda.jit("void(b1[:], f2, f2)")
    def cmp(r, a, b):
        r[0] = a > b
        r[1] = a <= b
        r[2] = a == b

    r = np.zeros(3, dtype=np.bool_)
    cmp[1, 1](r, np.float16(1.5), np.float16(2.5))
    assert r.tolist() == [False, True, False]


@pytest.mark.parametrize("name", ["trunc", "ceil", "floor", "fabs", "sqrt", "log", "log2", "log10", "exp", "exp2",
                                  "tanh", "cos", "sin"])
def test_math_on_float16_is_numbas_fp16_overload(name):
    """fp16.py binds these math functions to h* for float16 arguments: the result is float16."""
    fn = getattr(math, name)

    def k(r, x):
        i = cuda.grid(1)
        r[i] = fn(x[i])

    kernel = cuda.jit(k)
    x = np.linspace(0.5, 4.0, 8).astype(np.float16)
    r = np.zeros(8, dtype=np.float16)
    kernel[1, 8](r, x)
    ref = {"fabs": np.abs, "exp2": np.exp2}.get(name, getattr(np, name))
    np.testing.assert_allclose(r[:8], ref(x, dtype=np.float16), rtol=RTOL)
    from kdebug.frontend.typeinfer import infer_function
    from kdebug.lang import types as T
    tf = infer_function(k, kernel.signatures[0], "kernel")
    call = next(n for n, t in tf.types.items() if getattr(getattr(n, "func", None), "id", None) == "fn")
    assert tf.types[call] == T.float16


def test_float16_arrays_on_the_host_and_print(capfd):
    d = cuda.to_device(np.arange(4, dtype=np.float16) / 4)

    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        a[i] = a[i] * 2
        if i == 1:
            print(a[i])

    k[1, 4](d)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(4, dtype=np.float16) / 2)
    assert k.signatures[0][0].dtype == f2
    assert capfd.readouterr().out == "0.500000\n"  # numba-cuda prints a float16 as a double with %f


def test_double_to_half_rounds_once_as_numpy():
    @cuda.jit
    def k(r, x):
        i = cuda.grid(1)
        if i < x.size:
            r[i] = x[i]

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 6, 4000),
                        np.float16(rng.standard_normal(1000)).astype(np.float64) * (1 + 2.0 ** -11 + 2.0 ** -40),
                        [np.inf, -np.inf, 65520.0, 65519.99, 1e-8, -0.0]])
    r = np.zeros(x.size, np.float16)
    k[(x.size + 255) // 256, 256](r, x)
    np.testing.assert_array_equal(r, x.astype(np.float16))


def test_ptx_has_native_half_arithmetic():
    ptx, _ = cuda.compile_ptx(simple_fp16add, "void(f2[:], f2, f2)")
    assert "add.rn.f16" in ptx or "add.f16" in ptx


def test_numba_cuda_fp16_imports_under_numba(tmp_path):
    from conftest import run_kdebug
    script = tmp_path / "h.py"
    script.write_text("import numpy as np\nfrom numba import cuda\nfrom numba.cuda.fp16 import hadd, __hmul\n"
                      "from numba.cuda import fp16\n\n@cuda.jit('void(f2[:], f2, f2)')\ndef k(r, a, b):\n"
                      "    r[0] = hadd(a, b)\n    r[1] = __hmul(a, b)\n    r[2] = fp16.hsqrt(b)\n\n"
                      "r = np.zeros(3, np.float16)\nk[1, 1](r, np.float16(1.5), np.float16(4))\nprint(r.tolist())\n")
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == "[5.5, 6.0, 2.0]"
