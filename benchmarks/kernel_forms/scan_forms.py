"""Hillis-Steele (Kogge-Stone) inclusive scans: each block scans its part of ``x`` in shared memory and writes
its total to ``sums``; the host scans the block totals with the same kernel and a barrier-free kernel adds
them (as sample_kernels/scan.py does). Timed per element against numpy's ``cumsum``."""
from __future__ import annotations

import numpy as np

from kdebug import cuda
from kdebug.cuda import float32, float64, int64

from . import Form

TPB = 128
LOG2_TPB = 7


# --- 1. kdebug's own sample (sample_kernels/scan.py): cuda.grid(1), a read ``v = s[t - d] if t >= d else 0``,
# a barrier, the update, a barrier; ``while d < TPB: ...; d *= 2``; int64.
@cuda.jit
def sample(x, out, sums):
    s = cuda.shared.array(TPB, int64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    d = 1
    while d < TPB:
        v = s[t - d] if t >= d else 0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        d *= 2
    if i < x.size:
        out[i] = s[t]
    if t == TPB - 1:
        sums[cuda.blockIdx.x] = s[t]


# --- 2. GPU Gems 3, chapter 39, "Parallel Prefix Sum (Scan) with CUDA" (Harris, Sengupta and Owens,
# https://developer.nvidia.com/gpugems/gpugems3/part-vi-gpu-computing/chapter-39-parallel-prefix-sum-scan-cuda),
# Example 39-1, the naive scan: a double buffer (``pout = 1 - pout; pin = 1 - pout``) instead of a second
# barrier, ``for (int offset = 1; offset < n; offset *= 2)``. Inclusive here (the example shifts the input
# by one for an exclusive scan); float64.
@cuda.jit
def gpu_gems(x, out, sums):
    temp = cuda.shared.array(2 * TPB, float64)
    thid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + thid
    pout = 0
    pin = 1
    temp[pout * TPB + thid] = x[i] if i < x.size else 0
    cuda.syncthreads()
    offset = 1
    while offset < TPB:
        pout = 1 - pout
        pin = 1 - pout
        if thid >= offset:
            temp[pout * TPB + thid] = temp[pin * TPB + thid] + temp[pin * TPB + thid - offset]
        else:
            temp[pout * TPB + thid] = temp[pin * TPB + thid]
        cuda.syncthreads()
        offset *= 2
    if i < x.size:
        out[i] = temp[pout * TPB + thid]
    if thid == TPB - 1:
        sums[cuda.blockIdx.x] = temp[pout * TPB + thid]


# --- 3. Kirk and Hwu, "Programming Massively Parallel Processors" (3rd ed., 2016), chapter 8, the
# Kogge-Stone scan kernel: ``if (i < InputSize) XY[threadIdx.x] = X[i]``, then ``for (stride = 1; stride <
# blockDim.x; stride *= 2)`` with ``__syncthreads()`` first, the sum into a temporary, a barrier and the
# write under ``if (threadIdx.x >= stride)`` statements; threadIdx/blockIdx; float32.
@cuda.jit
def pmpp(x, out, sums):
    xy = cuda.shared.array(TPB, float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.size:
        xy[cuda.threadIdx.x] = x[i]
    else:
        xy[cuda.threadIdx.x] = 0
    stride = 1
    while stride < cuda.blockDim.x:
        cuda.syncthreads()
        temp = float32(0)
        if cuda.threadIdx.x >= stride:
            temp = xy[cuda.threadIdx.x] + xy[cuda.threadIdx.x - stride]
        cuda.syncthreads()
        if cuda.threadIdx.x >= stride:
            xy[cuda.threadIdx.x] = temp
        stride *= 2
    cuda.syncthreads()
    if i < x.size:
        out[i] = xy[cuda.threadIdx.x]
    if cuda.threadIdx.x == cuda.blockDim.x - 1:
        sums[cuda.blockIdx.x] = xy[cuda.threadIdx.x]


# --- 4. Hillis and Steele's algorithm as Wikipedia's "Prefix sum" article writes it (Algorithm 1: shorter span,
# more parallel, https://en.wikipedia.org/wiki/Prefix_sum#Algorithm_1:_Shorter_span,_more_parallel):
# ``for i <- 0 to floor(log2(n)) do for j <- 0 to n-1 in parallel: if j >= 2^i then x[j] <- x[j] + x[j - 2^i]``,
# a ``for`` over a constant trip count, the stride ``1 << k``; cuda.grid(1); int64.
@cuda.jit
def wikipedia(x, out, sums):
    s = cuda.shared.array(TPB, int64)
    j = cuda.threadIdx.x
    i = cuda.grid(1)
    s[j] = x[i] if i < x.size else 0
    cuda.syncthreads()
    for k in range(LOG2_TPB):
        d = 1 << k
        v = s[j]
        if j >= d:
            v += s[j - d]
        cuda.syncthreads()
        s[j] = v
        cuda.syncthreads()
    if i < x.size:
        out[i] = s[j]
    if j == TPB - 1:
        sums[cuda.blockIdx.x] = s[j]


@cuda.jit
def add_offsets(out, offsets):
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    if i < out.size and b > 0:
        out[i] += offsets[b - 1]


def _scan(kernel, dtype, d_x, n):
    """The inclusive scan of device array ``d_x`` (n elements): block scans, the block totals scanned, added."""
    blocks = (n + TPB - 1) // TPB
    out = cuda.device_array(n, dtype)
    sums = cuda.device_array(blocks, dtype)
    kernel[blocks, TPB](d_x, out, sums)
    if blocks > 1:
        offsets = _scan(kernel, dtype, sums, blocks)
        add_offsets[blocks, TPB](out, offsets)
    return out


def _inputs(dtype):
    def make(n, seed=0):
        rng = np.random.default_rng(seed)
        if dtype == np.int64:
            return (rng.integers(-50, 100, n).astype(np.int64),)
        # small integers: every partial sum exact in float32 (|sum| <= 4 * 2^20 < 2^24) and float64
        return (rng.integers(-4, 5, n).astype(dtype),)
    return make


def _launcher(kernel, dtype):
    def run(x):
        return _scan(kernel, dtype, cuda.to_device(x), x.size).copy_to_host()

    def prepare(x):
        d = cuda.to_device(x)
        return lambda: _scan(kernel, dtype, d, x.size)
    run.prepare = prepare
    return run


def _form(name, kernel, dtype, source, note=""):
    return Form("scan", name, source, _inputs(dtype), _launcher(kernel, dtype), lambda x: np.cumsum(x),
                lambda x: x.size, (5000, 1 << 20), rtol=0, note=note)


FORMS = [
    _form("sample", sample, np.int64, "sample_kernels/scan.py"),
    _form("gpu_gems", gpu_gems, np.float64, "GPU Gems 3, ch. 39, Example 39-1", note="double buffer, float64"),
    _form("pmpp", pmpp, np.float32, "Kirk & Hwu, PMPP 3rd ed., ch. 8 (Kogge-Stone)",
          note="threadIdx/blockIdx, `if` statements, float32"),
    _form("wikipedia", wikipedia, np.int64, "Wikipedia, Prefix sum, Algorithm 1", note="`for` over a constant"),
]
