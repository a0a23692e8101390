"""Inclusive prefix sum: a Hillis-Steele scan per block in shared memory, then block offsets."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import int64

TPB = 128


@cuda.jit
def block_scan(x, out, sums):
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


@cuda.jit
def add_offsets(out, offsets):
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    if i < out.size and b > 0:
        out[i] += offsets[b - 1]


def scan(x):
    blocks = (x.size + TPB - 1) // TPB
    out = np.zeros(x.size, np.int64)
    sums = np.zeros(blocks, np.int64)
    block_scan[blocks, TPB](x, out, sums)
    if blocks > 1:
        offsets = scan(sums)
        add_offsets[blocks, TPB](out, offsets)
    return out


def main(n=100_000):
    x = np.random.default_rng(0).integers(-50, 100, n).astype(np.int64)
    np.testing.assert_array_equal(scan(x), np.cumsum(x))
    print(f"scan: prefix sum of {n} elements matches numpy")


if __name__ == "__main__":
    main()
