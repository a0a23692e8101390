"""Tiled matrix multiplications ``C = A @ B`` of square matrices, TPB x TPB tiles in shared memory. Timed per
multiply-add (n^3) against numpy's ``A @ B`` (BLAS)."""
from __future__ import annotations

import numpy as np

from kdebug import cuda
from kdebug.cuda import float32, float64

from . import Form

TPB = 16


# --- 1. kdebug's own sample (sample_kernels/matmul_tiled.py): cuda.grid(2), loads guarded inside conditional
# expressions, the trip count from ``A.shape[1]``.
@cuda.jit
def sample(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n = A.shape[1]
    acc = float32(0.0)
    for t in range((n + TPB - 1) // TPB):
        sA[ty, tx] = A[y, t * TPB + tx] if y < A.shape[0] and t * TPB + tx < n else 0
        sB[ty, tx] = B[t * TPB + ty, x] if x < B.shape[1] and t * TPB + ty < n else 0
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


# --- 2. numba's documentation, "Examples" > "Matrix multiplication", ``fast_matmul`` (numba-cuda's
# numba/cuda/tests/doc_examples/test_matmul.py, https://nvidia.github.io/numba-cuda/user/examples.html):
# the tiles zeroed, then loaded under ``if`` statements; the trip count ``cuda.gridDim.x`` (blocks per grid).
@cuda.jit
def numba_docs(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = float32(0.0)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


# --- 3. numba's documentation before numba-cuda (numba 0.49, "CUDA Kernel API" > "Examples" > "Matrix
# multiplication", https://numba.pydata.org/numba-doc/0.49.0/cuda/examples.html): no guard on the loads
# (square matrices whose size is a multiple of TPB), an early ``return`` test before the loop, the tiles
# indexed ``[tx, ty]`` and ``cuda.grid(2)`` read as (row, column).
@cuda.jit
def numba_049(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    if x >= C.shape[0] and y >= C.shape[1]:
        return
    tmp = float32(0.)
    for i in range(bpg):
        sA[tx, ty] = A[x, ty + i * TPB]
        sB[tx, ty] = B[tx + i * TPB, y]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    C[x, y] = tmp


# --- 4. The CUDA C++ Programming Guide, "Shared Memory" (section 3.2.4 in the 12.x guides,
# https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory), ``MatMulKernel`` with
# sub-matrices: row and column from threadIdx/blockIdx (no ``cuda.grid``), the trip count
# ``A.width / BLOCK_SIZE`` from the shape, no guards (sizes a multiple of the block); float64.
@cuda.jit
def cuda_guide(A, B, C):
    As = cuda.shared.array((TPB, TPB), float64)
    Bs = cuda.shared.array((TPB, TPB), float64)
    block_row = cuda.blockIdx.y
    block_col = cuda.blockIdx.x
    row = cuda.threadIdx.y
    col = cuda.threadIdx.x
    c_value = float64(0)
    for m in range(A.shape[1] // TPB):
        As[row, col] = A[block_row * TPB + row, m * TPB + col]
        Bs[row, col] = B[m * TPB + row, block_col * TPB + col]
        cuda.syncthreads()
        for e in range(TPB):
            c_value += As[row, e] * Bs[e, col]
        cuda.syncthreads()
    C[block_row * TPB + row, block_col * TPB + col] = c_value


def _inputs(dtype):
    def make(n, seed=0):
        rng = np.random.default_rng(seed)
        return rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
    return make


def _launcher(kernel, dtype):
    def launch_of(A, B):
        n = A.shape[0]
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        dC = cuda.device_array((n, n), dtype)
        grid = ((n + TPB - 1) // TPB, (n + TPB - 1) // TPB)
        return (lambda: kernel[grid, (TPB, TPB)](dA, dB, dC)), dC

    def run(A, B):
        launch, dC = launch_of(A, B)
        launch()
        return dC.copy_to_host()
    run.prepare = lambda A, B: launch_of(A, B)[0]
    return run


def _form(name, kernel, dtype, source, note=""):
    return Form("matmul", name, source, _inputs(dtype), _launcher(kernel, dtype), lambda A, B: A @ B,
                lambda A, B: A.shape[0] ** 3, (48, 512), rtol=1e-3, note=note)


FORMS = [
    _form("sample", sample, np.float32, "sample_kernels/matmul_tiled.py"),
    _form("numba_docs", numba_docs, np.float32, "numba docs, Examples > Matrix multiplication"),
    _form("numba_049", numba_049, np.float32, "numba 0.49 docs, Examples > Matrix multiplication",
          note="no guards, early return"),
    _form("cuda_guide", cuda_guide, np.float64, "CUDA C++ Programming Guide, Shared Memory",
          note="threadIdx/blockIdx, float64"),
]
