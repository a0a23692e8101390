"""initcheck: a block reduction that reads shared memory no thread wrote, beside the fixed one.

When the input is not a multiple of the block size, the last block's threads
past the end skip their store, and the tree reduction then adds shared
elements nobody wrote (garbage on a GPU). The fix writes 0 there.
Run under ``kdebug run --sanitize initcheck``.
"""
import numpy as np

import kdebug
from kdebug import cuda
from kdebug.cuda import float32

TPB = 128


@cuda.jit
def block_sum_uninit(x, partial):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.size:
        s[t] = x[i]
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def block_sum_fixed(x, partial):
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


def main(n=1000):
    kdebug.set_options(initcheck=True)
    x = np.random.default_rng(0).random(n).astype(np.float32)
    blocks = (n + TPB - 1) // TPB
    partial = np.zeros(blocks, np.float32)
    block_sum_uninit[blocks, TPB](x, partial)
    block_sum_fixed[blocks, TPB](x, partial)
    np.testing.assert_allclose(partial.sum(), x.sum(), rtol=1e-5)
    print("block_sum_fixed matches numpy; initcheck reports block_sum_uninit's unwritten tail")


if __name__ == "__main__":
    main()
