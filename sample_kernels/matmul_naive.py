"""Naive matrix multiply: one thread per output element, a dot product over the shared dimension."""
import numpy as np

from kdebug import cuda


@cuda.jit
def matmul(a, b, c):
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = 0
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


def launch(a, b, dtype):
    c = np.zeros((a.shape[0], b.shape[1]), dtype=dtype)
    block = (16, 16)
    grid = ((c.shape[0] + block[0] - 1) // block[0], (c.shape[1] + block[1] - 1) // block[1])
    matmul[grid, block](a, b, c)
    return c


def main(m=70, k=45, n=90):
    rng = np.random.default_rng(2)
    # integers: exact
    ai = rng.integers(-50, 50, (m, k)).astype(np.int32)
    bi = rng.integers(-50, 50, (k, n)).astype(np.int32)
    np.testing.assert_array_equal(launch(ai, bi, np.int64), ai.astype(np.int64) @ bi.astype(np.int64))
    # floats: to 1e-6 relative
    af, bf = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    np.testing.assert_allclose(launch(af, bf, np.float64), af @ bf, rtol=1e-6, atol=1e-12)
    # device arrays in and out
    d_a, d_b = cuda.to_device(af), cuda.to_device(bf)
    d_c = cuda.device_array((m, n), dtype=np.float64)
    matmul[((m + 15) // 16, (n + 15) // 16), (16, 16)](d_a, d_b, d_c)
    np.testing.assert_allclose(d_c.copy_to_host(), af @ bf, rtol=1e-6, atol=1e-12)
    print(f"matmul_naive: ({m}x{k}) @ ({k}x{n}) in int32 and float64 match numpy")


if __name__ == "__main__":
    main()
