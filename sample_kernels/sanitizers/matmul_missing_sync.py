"""racecheck: a tiled matmul without its second syncthreads, beside the fixed one.

Without the barrier after the inner product, a fast thread stages the next tile
while its neighbours still read the current one: a write-after-read hazard on
both shared tiles. Run it under ``kdebug run --sanitize racecheck`` (the script
also turns racecheck on itself): the report names ``matmul_racy`` only.
"""
import numpy as np

import kdebug
from kdebug import cuda
from kdebug.cuda import float32

TPB = 16


@cuda.jit
def matmul_racy(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    for t in range(A.shape[1] // TPB):
        sA[ty, tx] = A[y, t * TPB + tx]
        sB[ty, tx] = B[t * TPB + ty, x]
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        # missing: cuda.syncthreads()
    C[y, x] = acc


@cuda.jit
def matmul_fixed(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    for t in range(A.shape[1] // TPB):
        sA[ty, tx] = A[y, t * TPB + tx]
        sB[ty, tx] = B[t * TPB + ty, x]
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[y, x] = acc


def main(n=64):
    kdebug.set_options(racecheck=True)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    grid = (n // TPB, n // TPB)
    matmul_racy[grid, (TPB, TPB)](A, B, C)
    matmul_fixed[grid, (TPB, TPB)](A, B, C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-3)
    print("matmul_fixed matches numpy; racecheck reports matmul_racy's missing barrier")


if __name__ == "__main__":
    main()
