"""numpy ufuncs in kernels, as numba-cuda compiles them (its test_ufunc doc example and numba's ufunc loops):
on arrays an elementwise loop writing the output array, on scalars a value; numpy's results."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import TypingError

UNARY = ["sin", "cos", "tan", "exp", "log", "sqrt", "arctan", "tanh", "absolute", "negative", "floor", "ceil",
         "square", "log1p", "expm1", "deg2rad", "isnan"]
BINARY = ["add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum", "arctan2", "hypot",
          "greater", "copysign"]


def _unary_kernel(uf):
    @cuda.jit
    def k(x, out):
        uf(x, out)
    return k


def _binary_kernel(uf):
    @cuda.jit
    def k(x, y, out):
        uf(x, y, out)
    return k


@pytest.mark.parametrize("name", UNARY)
def test_unary_ufunc_on_arrays_matches_numpy(name):
    uf = getattr(np, name)
    x = np.linspace(0.1, 0.9, 12, dtype=np.float64).reshape(3, 4)
    out = np.zeros(x.shape, dtype=np.bool_ if name == "isnan" else np.float64)
    _unary_kernel(uf)[1, 1](x, out)
    np.testing.assert_allclose(out, uf(x), rtol=1e-12)


@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_on_arrays_and_scalars_matches_numpy(name):
    uf = getattr(np, name)
    x = np.linspace(-2, 2, 10, dtype=np.float32)
    y = np.linspace(0.5, 3, 10, dtype=np.float32)
    out = np.zeros(10, dtype=np.bool_ if name == "greater" else np.float32)
    _binary_kernel(uf)[1, 1](x, y, out)
    np.testing.assert_allclose(out, uf(x, y), rtol=1e-6)
    out2 = np.zeros_like(out)
    _binary_kernel(uf)[1, 1](x, np.float32(1.5), out2)  # a scalar applies to every element
    np.testing.assert_allclose(out2, uf(x, np.float32(1.5)), rtol=1e-6)


def test_ufunc_on_scalars_returns_the_value_and_out_keyword():
    @cuda.jit
    def k(x, out, out2):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = np.sin(x[i]) + np.add(x[i], 1.0)
        if i == 0:
            np.multiply(x, 2.0, out=out2)

    x = np.arange(8, dtype=np.float64)
    out, out2 = np.zeros(8), np.zeros(8)
    k[1, 8](x, out, out2)
    np.testing.assert_allclose(out, np.sin(x) + x + 1.0)
    np.testing.assert_allclose(out2, 2 * x)


def test_ufunc_on_arrays_without_an_output_is_a_located_error():
    @cuda.jit
    def k(x):
        np.sin(x)

    with pytest.raises(TypingError, match="np.sin on arrays needs an output array") as info:
        k[1, 1](np.zeros(3))
    assert info.value.loc.line == k.py_func.__code__.co_firstlineno + 2
