"""Block tree reduction: each block sums its slice in shared memory (syncthreads in a loop)."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import float32

TPB = 256


@cuda.jit
def block_sum(x, partial):
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


def total(x):
    """Sum x on the device: one pass of block sums, then the partial sums once more."""
    while x.size > 1:
        blocks = (x.size + TPB - 1) // TPB
        partial = np.zeros(blocks, np.float32)
        block_sum[blocks, TPB](x, partial)
        x = partial
    return x[0]


def main(n=1 << 18):
    x = np.random.default_rng(0).random(n).astype(np.float32)
    got = total(x)
    ref = x.astype(np.float64).sum()
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    print(f"reduction: sum of {n} elements matches numpy ({got:.3f})")


if __name__ == "__main__":
    main()
