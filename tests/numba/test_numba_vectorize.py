"""cuda.vectorize / guvectorize / reduce (and numba.vectorize(target='cuda')) with numba's documented results
(numba-cuda docs, ufunc.rst and reduction.rst)."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda


@cuda.vectorize(["float32(float32, float32)", "float64(float64, float64)", "int64(int64, int64)"])
def cu_discriminant(a, b):
    return a * a - 4 * b


def test_vectorize_picks_the_signature_and_broadcasts():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = cu_discriminant(a, np.float32(1))
    assert isinstance(r, np.ndarray) and r.dtype == np.float32 and r.shape == (2, 3)
    np.testing.assert_equal(r, a * a - 4)
    ri = cu_discriminant(np.arange(4), np.arange(4))
    assert ri.dtype == np.int64 and list(ri) == [0, -3, -4, -3]
    assert cu_discriminant(3, 1) == 5 and cu_discriminant(3.0, 1.0) == 5.0  # scalars as their dtypes, exactly
    # numba-cuda's _resolve_signature (deviceufunc.py): arrays of the exact types only (casting='no'), and
    # scalars that match no signature exactly take any: ambiguous with more than one
    with pytest.raises(TypeError, match="No matching version.  GPU ufunc requires array arguments to have the "
                                        "exact types.  This behaves like regular ufunc with casting='no'."):
        cu_discriminant(np.array([1 + 2j]), np.array([1 + 2j]))
    with pytest.raises(TypeError, match="No matching version"):
        cu_discriminant(np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32))  # not cast to int64
    with pytest.raises(TypeError, match="ambiguous signature. Too many untyped scalars"):
        cu_discriminant(np.int32(3), np.int32(1))
    r = cu_discriminant(np.arange(3, dtype=np.float32), 2)  # the scalar coerced to the array's signature
    assert r.dtype == np.float32 and list(r) == [-8.0, -7.0, -4.0]


def test_vectorize_out_and_stream_give_device_results():
    a = cuda.to_device(np.arange(4, dtype=np.float64))
    out = cuda.device_array(4, np.float64)
    s = cuda.stream()
    r = cu_discriminant(a, a, out=out, stream=s)
    assert r is out
    np.testing.assert_equal(out.copy_to_host(), np.arange(4.0) ** 2 - 4 * np.arange(4.0))
    r2 = cu_discriminant(a, 1.0)  # a device input gives a device result
    assert isinstance(r2, cuda.DeviceNDArray)


def test_a_vectorized_function_is_a_device_function_in_kernels():
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = cu_discriminant(x[i], 2.0)

    x = np.arange(5.0)
    out = np.zeros(5)
    k[1, 8](x, out)
    np.testing.assert_equal(out, x * x - 8)


def test_guvectorize_layouts_and_scalar_arguments():
    @cuda.guvectorize(["void(float32[:,:], float32[:,:], float32[:,:])"], "(m,n),(n,p)->(m,p)")
    def matmul(A, B, C):
        m, n = A.shape
        n, p = B.shape
        for i in range(m):
            for j in range(p):
                C[i, j] = 0
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]

    A = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3)  # a loop of two 2x3 matrices
    B = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    np.testing.assert_allclose(matmul(A, B), A @ B)

    @cuda.guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
    def scale(a, s, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * s

    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_equal(scale(a, 3.0), a * 3)
    out = cuda.device_array((2, 3))
    scale(cuda.to_device(a), 0.5, out)  # the output array as the last argument
    np.testing.assert_equal(out.copy_to_host(), a * 0.5)


def test_numba_vectorize_with_target_cuda_is_cuda_vectorize():
    from kdebug.numba import guvectorize, vectorize

    @vectorize(["float64(float64)"], target="cuda")
    def half(x):
        return x / 2

    np.testing.assert_equal(half(np.arange(4.0)), np.arange(4.0) / 2)

    @guvectorize(["void(int64[:], int64[:])"], "(n)->()", target="cuda")
    def total(a, res):
        res[0] = 0
        for v in range(a.shape[0]):
            res[0] += a[v]

    np.testing.assert_equal(total(np.arange(12).reshape(3, 4)), [6, 22, 38])

    @vectorize(["float64(float64)"])  # the CPU target: the function per element
    def twice(x):
        return 2 * x

    np.testing.assert_equal(twice(np.arange(3.0)), [0.0, 2.0, 4.0])


def test_reduce_as_in_numbas_documentation():
    sum_reduce = cuda.reduce(lambda a, b: a + b)
    A = np.arange(1234, dtype=np.float64) + 1
    expect = A.sum()
    assert sum_reduce(A) == expect  # numba's reduction.rst example
    dA = cuda.to_device(A)
    res = cuda.device_array(1, np.float64)
    assert sum_reduce(dA, res=res) is None and res.copy_to_host()[0] == expect
    assert sum_reduce(A, init=10) == expect + 10
    assert sum_reduce(A, size=10) == 55
    assert sum_reduce(np.zeros(0), init=7) == 7.0

    @cuda.Reduce
    def max_reduce(a, b):
        return max(a, b)

    v = np.array([3, 9, -2, 7], dtype=np.int32)
    assert max_reduce(v, init=-100) == 9
    with pytest.raises(TypeError, match="only support 1D array"):
        sum_reduce(np.zeros((2, 2)))
