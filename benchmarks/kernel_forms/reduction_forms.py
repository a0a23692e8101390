"""Block reductions: each block sums its part of ``x`` into ``partial[blockIdx.x]`` (the host adds the partial
sums). Timed per input element against numpy's ``x.sum()``."""
from __future__ import annotations

import numpy as np

from kdebug import cuda
from kdebug.cuda import float32, float64

from . import Form

TPB = 256


# --- 1. kdebug's own sample (sample_kernels/reduction.py): cuda.grid(1), a guarded load, a `while` tree with
# `step //= 2` and a guard on the thread index.
@cuda.jit
def sample(x, partial):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# --- 2. numba's documentation, "Examples" > "Shared Memory Reduction" (numba-cuda's
# docs/source/user/examples.rst, https://nvidia.github.io/numba-cuda/user/examples.html; the code is
# numba/cuda/tests/doc_examples/test_reduction.py, ``array_sum``): interleaved addressing
# (``tid % (2 * s) == 0``, ``s *= 2``), the barrier after the update. The example sums one block in place
# (``data[0]``); here every block writes its sum to ``partial``, and the shared array has the block's size.
@cuda.jit
def numba_docs(data, partial):
    tid = cuda.threadIdx.x
    size = len(data)
    shr = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    shr[tid] = data[i] if i < size else 0
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:
            shr[tid] += shr[tid + s]
        s *= 2
        cuda.syncthreads()
    if tid == 0:
        partial[cuda.blockIdx.x] = shr[tid]


# --- 3. "CUDA by Example" (Sanders and Kandrot, 2010), chapter 5, the dot product's ``dot`` kernel: a
# grid-stride ``while tid < N: ...; tid += blockDim.x * gridDim.x`` into a per-thread sum, then
# ``i = blockDim.x / 2; while (i != 0) {...; i /= 2;}``; threadIdx/blockIdx, no ``cuda.grid``. The book
# launches min(32, ...) blocks; here ``blocks_for`` gives 64. A sum of one array instead of a dot product.
@cuda.jit
def cuda_by_example(x, partial):
    cache = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    cache_index = cuda.threadIdx.x
    temp = float32(0)
    while tid < x.size:
        temp += x[tid]
        tid += cuda.blockDim.x * cuda.gridDim.x
    cache[cache_index] = temp
    cuda.syncthreads()
    i = cuda.blockDim.x // 2
    while i != 0:
        if cache_index < i:
            cache[cache_index] += cache[cache_index + i]
        cuda.syncthreads()
        i //= 2
    if cache_index == 0:
        partial[cuda.blockIdx.x] = cache[0]


# --- 4. Mark Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007,
# https://developer.download.nvidia.com/assets/cuda/files/reduction.pdf), reduction #3 "sequential
# addressing" (``for (s = blockDim.x/2; s > 0; s >>= 1)``) fed by a grid-stride loop written as numba's
# ``for k in range(start, n, stride)`` with ``cuda.gridsize(1)`` (the loop of "CUDA Pro Tip: Write Flexible
# Kernels with Grid-Stride Loops", https://developer.nvidia.com/blog/cuda-pro-tip-write-flexible-kernels-grid-stride-loops/);
# float64.
@cuda.jit
def harris_grid_stride(x, partial):
    sdata = cuda.shared.array(TPB, float64)
    tid = cuda.threadIdx.x
    acc = float64(0)
    for k in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[k]
    sdata[tid] = acc
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s >>= 1
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


# --- 5. The same document, reduction #4 "first add during global load": each thread loads two elements,
# ``i = blockIdx.x * (blockDim.x * 2) + threadIdx.x; sdata[tid] = g_idata[i] + g_idata[i + blockDim.x]``
# (guarded here for sizes that are not multiples), then a tree with a constant trip count
# (``for k in range(LOG2_TPB)``, the stride ``TPB >> (k + 1)``).
LOG2_TPB = 8


@cuda.jit
def harris_two_loads(x, partial):
    sdata = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
    a = x[i] if i < x.size else float32(0)
    j = i + cuda.blockDim.x
    b = x[j] if j < x.size else float32(0)
    sdata[tid] = a + b
    cuda.syncthreads()
    for k in range(LOG2_TPB):
        s = TPB >> (k + 1)
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


def _inputs(dtype):
    def make(n, seed=0):
        return (np.random.default_rng(seed).random(n).astype(dtype),)
    return make


def _launcher(kernel, dtype, blocks_for):
    def run(x):
        blocks = blocks_for(x.size)
        d = cuda.to_device(x)
        partial = cuda.device_array(blocks, dtype)
        kernel[blocks, TPB](d, partial)
        return partial.copy_to_host().sum(dtype=np.float64)
    run.prepare = lambda x: _prepared(kernel, dtype, blocks_for, x)
    return run


def _prepared(kernel, dtype, blocks_for, x):
    """The launch alone, on device arrays made once (what the benchmark times)."""
    blocks = blocks_for(x.size)
    d = cuda.to_device(x)
    partial = cuda.device_array(blocks, dtype)
    return lambda: kernel[blocks, TPB](d, partial)


def _per_thread(n):
    return (n + TPB - 1) // TPB


def _reference(x):
    return x.sum(dtype=np.float64)


def _form(name, kernel, dtype, source, blocks_for=_per_thread, note=""):
    return Form("reduction", name, source, _inputs(dtype), _launcher(kernel, dtype, blocks_for), _reference,
                lambda x: x.size, (3000, 1 << 22), rtol=1e-4, note=note)


FORMS = [
    _form("sample", sample, np.float32, "sample_kernels/reduction.py"),
    _form("numba_docs", numba_docs, np.float32, "numba docs, Examples > Shared Memory Reduction"),
    _form("cuda_by_example", cuda_by_example, np.float32, "CUDA by Example, ch. 5 (dot)",
          blocks_for=lambda n: 64, note="grid-stride `while`, 64 blocks"),
    _form("harris_grid_stride", harris_grid_stride, np.float64, "Harris, reduction #3 + grid-stride `for`",
          blocks_for=lambda n: 64, note="grid-stride `for range`, 64 blocks, float64"),
    _form("harris_two_loads", harris_two_loads, np.float32, "Harris, reduction #4",
          blocks_for=lambda n: (n + 2 * TPB - 1) // (2 * TPB), note="two loads a thread, `for` tree"),
]
