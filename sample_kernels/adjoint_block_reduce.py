"""The adjoint of a shared-memory tree reduction: barriers run backwards.

    kernel block_squares_adjoint ──adjoint──▶ adjoint(block_squares)

Each block squares its elements into a shared array and sums them by halving steps, with a barrier
after each step; thread 0 writes the block's sum. The adjoint body runs the primal forwards (every
barrier in its place), then backwards: the reverse sweep meets each barrier again, so the shadow
of the shared array, which the block's threads zero together where the adjoint starts, carries
every step's adjoints down the tree before any thread goes on to the step below. x[i] is kept on
the tape for the square's adjoint. On exit dx holds 2 x dout[block]; the tape stage says which
barriers and shared arrays the transform met.
"""
import numpy as np

import kdebug
from kdebug import cuda

BLOCK = 64


@cuda.jit
def block_squares(x, out):
    s = cuda.shared.array(BLOCK, np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] * x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


def main(n=1000):
    rng = np.random.default_rng(3)
    blocks = (n + BLOCK - 1) // BLOCK
    x = rng.standard_normal(n)
    out, dx = np.zeros(blocks), np.zeros(n)
    dout = rng.standard_normal(blocks)
    seed = dout.copy()
    kdebug.adjoint(block_squares)[blocks, BLOCK](x, dx, out, dout)
    padded = np.zeros(blocks * BLOCK)
    padded[:n] = x * x
    np.testing.assert_allclose(out, padded.reshape(blocks, BLOCK).sum(axis=1), rtol=1e-13)  # the primal's effect
    np.testing.assert_allclose(dx, 2.0 * x * np.repeat(seed, BLOCK)[:n], rtol=1e-13)
    np.testing.assert_array_equal(dout, 0.0)  # every block's out is written: its initial value is lost
    print(f"adjoint_block_reduce: dx = 2 x dout[block] through {blocks} blocks' tree reductions")


if __name__ == "__main__":
    main()
