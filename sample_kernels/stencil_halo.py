"""1-D stencil with a shared-memory halo: each block loads its tile plus RADIUS cells each side."""
import numpy as np

from kdebug import cuda
from kdebug.cuda import float32

TPB = 128
RADIUS = 3


@cuda.jit
def stencil(x, out):
    tile = cuda.shared.array(TPB + 2 * RADIUS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    tile[t + RADIUS] = x[i] if i < n else 0
    if t < RADIUS:  # the halo: RADIUS cells left and right of the block
        left = i - RADIUS
        right = i + TPB
        tile[t] = x[left] if left >= 0 else 0
        tile[t + TPB + RADIUS] = x[right] if right < n else 0
    cuda.syncthreads()
    if i < n:
        acc = float32(0)
        for k in range(-RADIUS, RADIUS + 1):
            acc += tile[t + RADIUS + k]
        out[i] = acc / (2 * RADIUS + 1)


def reference(x):
    pad = np.concatenate([np.zeros(RADIUS, x.dtype), x, np.zeros(RADIUS, x.dtype)])
    return np.convolve(pad, np.ones(2 * RADIUS + 1), mode="valid") / (2 * RADIUS + 1)


def main(n=10_000):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    stencil[(n + TPB - 1) // TPB, TPB](x, out)
    np.testing.assert_allclose(out, reference(x), rtol=1e-5, atol=1e-5)
    print(f"stencil_halo: {n} elements, radius {RADIUS}, match numpy")


if __name__ == "__main__":
    main()
