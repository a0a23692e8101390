"""Tiled matrix multiply: each block stages TPBxTPB tiles of A and B in shared memory."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import float32

TPB = 16


@cuda.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n = A.shape[1]
    acc = float32(0.0)
    for t in range((n + TPB - 1) // TPB):
        # stage one tile of each matrix (zeros outside the matrices)
        sA[ty, tx] = A[y, t * TPB + tx] if y < A.shape[0] and t * TPB + tx < n else 0
        sB[ty, tx] = B[t * TPB + ty, x] if x < B.shape[1] and t * TPB + ty < n else 0
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


def run(n=256, m=None, k=None, seed=0):
    m = m or n
    k = k or n
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = np.zeros((m, n), np.float32)
    grid = ((n + TPB - 1) // TPB, (m + TPB - 1) // TPB)
    matmul_tiled[grid, (TPB, TPB)](A, B, C)
    return C, A @ B


def main(n=256):
    C, ref = run(n)
    np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-3)
    C, ref = run(50, 37, 45)  # sizes that are not multiples of the tile
    np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-3)
    print(f"matmul_tiled: {n}x{n} and 37x45 @ 45x50 match numpy")


if __name__ == "__main__":
    main()
