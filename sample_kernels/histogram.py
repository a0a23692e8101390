"""Histogram with atomics: per-block counts in shared memory, merged into the global bins."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import int32

NBINS = 64
TPB = 256


@cuda.jit
def histogram(data, bins):
    local = cuda.shared.array(NBINS, int32)
    t = cuda.threadIdx.x
    for b in range(t, NBINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, data.size, stride):
        cuda.atomic.add(local, data[i] % NBINS, 1)
    cuda.syncthreads()
    for b in range(t, NBINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])


def main(n=1 << 20):
    data = np.random.default_rng(0).integers(0, 1 << 30, n).astype(np.int32)
    bins = np.zeros(NBINS, np.int64)
    histogram[64, TPB](data, bins)
    ref = np.bincount(data % NBINS, minlength=NBINS)
    assert bins.sum() == n, f"lost counts: {n - bins.sum()}"
    np.testing.assert_array_equal(bins, ref)
    print(f"histogram: {n} values in {NBINS} bins match numpy")


if __name__ == "__main__":
    main()
