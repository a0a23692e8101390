"""The adjoint of a 3-point stencil: kdebug.adjoint(smooth), Enzyme's Duplicated arrays.

    kernel smooth_adjoint ──adjoint──▶ adjoint(smooth)

Each thread reads x[i - 1], x[i] and x[i + 1]: in the reverse sweep those reads become accumulations
into dx, atomic where another thread may add to the same element at once (on the CPU backend only at a
block's edges: it runs a block's threads one at a time). On entry dout holds the adjoint of out's final
value; on exit dx holds what was there plus A^T dout (A the stencil's matrix), dout zero where out was written.
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit
def smooth(x, out):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


def main(n=100):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n)
    out = np.zeros(n)
    dx = np.full(n, 0.5)  # an adjoint already there: the reverse sweep adds to it
    dout = rng.standard_normal(n)
    seed = dout.copy()
    kdebug.adjoint(smooth)[(n + 31) // 32, 32](x, dx, out, dout)
    a = np.zeros((n, n))  # the stencil's matrix
    for i in range(1, n - 1):
        a[i, i - 1:i + 2] = 0.25, 0.5, 0.25
    np.testing.assert_allclose(out, a @ x, rtol=1e-14, atol=1e-15)  # the primal's effect happened too
    written = np.zeros(n, bool)
    written[1:-1] = True
    np.testing.assert_allclose(dx, 0.5 + a.T @ np.where(written, seed, 0.0), rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(dout[written], 0.0)  # out's initial value does not reach its final one
    np.testing.assert_array_equal(dout[~written], seed[~written])
    print(f"adjoint_stencil: dx = A^T dout for a 3-point stencil over {n} points")


if __name__ == "__main__":
    main()
