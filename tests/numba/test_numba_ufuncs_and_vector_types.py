"""numpy ufuncs in kernels on complex, integer and column-major operands (numba-cuda's test_ufuncs.py
cases: numba's ufunc_db loops, compared with numpy), and CUDA vector types built from other vectors
(numba-cuda's vector_types.py: ``float32x4(float32x2, x, y)`` and the like)."""
from __future__ import annotations

import numpy as np
import pytest

from test_numba_ufuncs import _binary_kernel, _unary_kernel
from kdebug import cuda
from kdebug.lang import types as T

COMPLEX_UNARY = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
                 "arccosh", "arctanh", "log", "log2", "log10", "exp", "sqrt"]
COMPLEX_BINARY = ["greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "maximum", "minimum",
                  "fmax", "fmin"]


def _kernel(uf):
    """The one-element-wise kernel of tests/numba/test_numba_ufuncs.py for ``uf``'s number of inputs."""
    return _unary_kernel(uf) if uf.nin == 1 else _binary_kernel(uf)


@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_ufunc_matches_numpy(name):
    uf = getattr(np, name)
    x = np.array([-0.5 - 0.5j, 0.0, 0.5 + 0.5j, 0.25 - 1j], dtype=np.complex128)
    out = np.zeros_like(x)
    _kernel(uf)[1, 1](x, out)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(out, uf(x), rtol=1e-12)  # log(0): -inf + 0j, as numpy's


@pytest.mark.parametrize("name", COMPLEX_BINARY)
def test_complex_comparison_and_extrema_follow_numpys_order(name):
    uf = getattr(np, name)
    nan = complex(np.nan, 0)
    x = np.array([1 + 1j, 1 + 2j, 2 + 0j, 1 + 1j, nan, 3 + 0j], dtype=np.complex64)
    y = np.array([1 + 2j, 1 + 1j, 1 + 5j, 1 + 1j, 1 + 0j, nan], dtype=np.complex64)
    with np.errstate(invalid="ignore"):  # numpy warns comparing NaNs
        expected = uf(x, y)
    out = np.zeros_like(expected)
    _kernel(uf)[1, 1](x, y, out)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_real_extrema_keep_or_drop_nan_as_numpy(name):
    uf = getattr(np, name)
    x = np.array([1.0, np.nan, 3.0, np.nan, -0.5])
    y = np.array([2.0, 1.0, np.nan, np.nan, -1.5])
    out = np.zeros(5)
    _kernel(uf)[1, 1](x, y, out)
    np.testing.assert_array_equal(out, uf(x, y))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                                  "bitwise_xor"])
def test_logical_and_bitwise_ufuncs_on_integers(name):
    uf = getattr(np, name)
    x = np.array([0, 1, 6, -3, 12], dtype=np.int32)
    y = np.array([0, 0, 3, 5, -12], dtype=np.int32)
    out = np.zeros(5, dtype=np.int32)
    _kernel(uf)[1, 1](x, y, out)
    np.testing.assert_array_equal(out, uf(x, y))


@pytest.mark.parametrize("name", ["logical_not", "invert"])
def test_unary_logical_and_bitwise_ufuncs(name):
    uf = getattr(np, name)
    x = np.array([0, 1, 200, 255], dtype=np.uint8)
    out = np.zeros(4, dtype=np.uint8)
    _kernel(uf)[1, 1](x, out)
    np.testing.assert_array_equal(out, uf(x))


def test_logical_ufuncs_on_complex_numbers_test_both_parts():
    x = np.array([0j, 1j, 2 + 0j, 0j], dtype=np.complex128)
    y = np.array([0j, 0j, 1j, 1 + 1j], dtype=np.complex128)
    out = np.zeros(4, dtype=np.bool_)
    _kernel(np.logical_xor)[1, 1](x, y, out)
    np.testing.assert_array_equal(out, np.logical_xor(x, y))


@pytest.mark.parametrize("name", ["greater", "greater_equal", "less", "less_equal", "equal", "not_equal"])
def test_signed_and_uint64_compare_exactly_as_numpy(name):
    uf = getattr(np, name)
    big = 2**62  # int64(big + 1) and uint64(big) are the same float64
    a = np.array([-1, -1, 0, 1, big + 1, big], dtype=np.int64)
    b = np.array([0, 2**64 - 1, 0, 0, big, big + 1], dtype=np.uint64)
    out = np.zeros(6, dtype=np.bool_)
    _kernel(uf)[1, 1](a, b, out)
    np.testing.assert_array_equal(out, uf(a, b))
    out2 = np.zeros(6, dtype=np.bool_)
    _kernel(uf)[1, 1](b, a, out2)
    np.testing.assert_array_equal(out2, uf(b, a))


def test_fortran_order_signature_takes_column_major_arrays():
    sig = (T.Array(T.float64, 2, "F"), T.Array(T.float64, 2, "C"))
    assert str(sig[0]) == "float64[::1, :]"

    @cuda.jit(sig)
    def k(x, out):
        np.rad2deg(x, out)

    x = np.asfortranarray(np.linspace(0, 1, 12).reshape(3, 4))
    out = np.zeros((3, 4))
    k[1, 1](x, out)
    np.testing.assert_allclose(out, np.rad2deg(x))


# ---- a variable reassigned with another type: numba's SSA versions ---------------------------------------
def test_loop_variable_reused_over_vectors_of_different_sizes():
    """numba-cuda's fancy creation test: ``v`` loops over float32x2 values, then over float32x3 ones."""
    @cuda.jit
    def k(res):
        one = np.float32(1.0)
        two = np.float32(2.0)
        f2 = cuda.float32x2(one, two)
        f3 = cuda.float32x3(f2, np.float32(3.0))  # a vector and a number: 1 2 3
        f4 = cuda.float32x4(two, f3)  # 2 1 2 3
        j = 0
        for v in (f2, cuda.float32x2(f2.y, f2.x)):
            res[j] = v.x
            res[j + 1] = v.y
            j += 2
        for v in tuple((f3,)):
            res[j] = v.x + v.y + v.z
            j += 1
        for v in (f4,):
            res[j] = v.x * 1000 + v.y * 100 + v.z * 10 + v.w
            j += 1

    res = np.zeros(6, dtype=np.float32)
    k[1, 1](res)
    np.testing.assert_array_equal(res, [1, 2, 2, 1, 6, 2123])


def test_reassigned_variable_takes_each_values_type():
    @cuda.jit
    def k(a, out):
        x = a[0] * 2  # float64
        out[0] = x
        x = (3, 4)  # a tuple: its own version of x
        out[1] = x[0] + x[1]
        x = a.shape[0]  # int64
        for i in range(2):
            x += i
        out[2] = x

    out = np.zeros(3)
    k[1, 1](np.array([1.5, 0, 0]), out)
    np.testing.assert_array_equal(out, [3.0, 7.0, 4.0])


def test_values_that_meet_after_a_branch_still_need_one_type():
    from kdebug.errors import TypingError

    @cuda.jit
    def k(a):
        x = 1
        if a[0] > 0:
            x = (1, 2)
        a[0] = len(x)

    with pytest.raises(TypingError, match="variable 'x' holds int64 in one place and UniTuple") as info:
        k[1, 1](np.zeros(1))
    assert info.value.loc.line == k.py_func.__code__.co_firstlineno + 4


def test_parameter_reassigned_with_another_type_and_loop_carried_value():
    @cuda.jit
    def k(n, out):
        out[0] = n  # the int64 parameter
        n = 0.5  # a float from here on
        total = n
        while n < 4.0:  # the value carried around the loop keeps one version
            n = n * 2
            total += n
        out[1] = total

    out = np.zeros(2)
    k[1, 1](7, out)
    np.testing.assert_array_equal(out, [7.0, 0.5 + 1 + 2 + 4])


def test_tuple_of_a_non_tuple_is_a_located_error():
    from kdebug.errors import TypingError

    @cuda.jit
    def k(a):
        t = tuple(a)
        a[0] = t[0]

    with pytest.raises(TypingError, match=r"tuple\(\) in a kernel takes a tuple"):
        k[1, 1](np.zeros(2))


def test_tuple_of_a_tuple_is_the_tuple_and_tuple_of_nothing_is_empty():
    @cuda.jit
    def k(a):
        t = tuple()
        u = tuple((1, 2.5))
        a[0] = len(t) + len(u) + u[1]

    a = np.zeros(1)
    k[1, 1](a)
    assert a[0] == 4.5
