"""Warp-shuffle reduction: each thread sums a grid-stride slice, the 32 lanes of a warp combine their sums
with cuda.shfl_down_sync, and lane 0 of every warp adds the warp's total with one atomic."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import float32

FULL = 0xFFFFFFFF


@cuda.jit
def warp_sum(x, total):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = float32(0)
    for k in range(i, x.size, stride):
        acc += x[k]
    offset = 16
    while offset > 0:
        acc += cuda.shfl_down_sync(FULL, acc, offset)
        offset //= 2
    if cuda.laneid == 0:
        cuda.atomic.add(total, 0, acc)


def reduce(x, blocks=64, threads=256):
    total = np.zeros(1, np.float32)
    warp_sum[blocks, threads](x, total)
    return total[0]


def main(n=1 << 20):
    x = np.random.default_rng(0).random(n).astype(np.float32)
    got = reduce(x)
    ref = x.astype(np.float64).sum()
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    print(f"warp_reduce: sum of {n} elements matches numpy ({got:.3f})")


if __name__ == "__main__":
    main()
