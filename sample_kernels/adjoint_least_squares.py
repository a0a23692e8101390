"""A least-squares fit by gradient descent, the loss's gradient from kdebug.adjoint.

    kernel residuals_adjoint ──adjoint──▶ adjoint(residuals)

residuals writes each point's squared residual of the line p[0] t + p[1]; its adjoint with
dloss = 1 gives d(sum of squares)/dp in dp (every thread reads p: atomic accumulations).
A few hundred steps of gradient descent on the CPU backend reach numpy's least-squares fit.
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit
def residuals(p, t, y, loss):
    i = cuda.grid(1)
    if i < t.size:
        r = p[0] * t[i] + p[1] - y[i]
        loss[i] = r * r


def main(n=64, steps=300, rate=0.2):
    rng = np.random.default_rng(3)
    t = np.linspace(-1.0, 1.0, n)
    y = 1.5 * t - 0.25 + 0.05 * rng.standard_normal(n)
    adj = kdebug.adjoint(residuals)
    p = np.zeros(2)
    loss = np.zeros(n)
    blocks = (n + 31) // 32
    for step in range(steps):
        dp, dt, dy = np.zeros(2), np.zeros(n), np.zeros(n)
        dloss = np.full(n, 1.0 / n)  # the mean of the squares
        adj[blocks, 32](p, dp, t, dt, y, dy, loss, dloss)
        if step == 0:  # the gradient against its closed form, at p = 0
            np.testing.assert_allclose(dp, [2 * np.mean(-y * t), 2 * np.mean(-y)], rtol=1e-12)
            np.testing.assert_allclose(dy, -2 * (0 - y) / n, rtol=1e-12)
        p -= rate * dp
    want = np.polyfit(t, y, 1)
    np.testing.assert_allclose(p, want, rtol=1e-6, atol=1e-8)
    print(f"adjoint_least_squares: p = {p[0]:.4f} t + {p[1]:.4f} after {steps} steps (numpy: {want[0]:.4f}, "
          f"{want[1]:.4f}), mean squared residual {loss.mean():.2e}")


if __name__ == "__main__":
    main()
