"""Newton's method on the grid: each thread solves x**3 - 2x = c for its own c, stepping with
the derivative that kdebug.grad compiles (a derivative job, reason grad, of the device function f).

    kernel newton ──grad──▶ derivative grad(f)
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit(device=True)
def f(x, c):
    return x * x * x - 2.0 * x - c


df = kdebug.grad(f)  # d f / d x, bound at module level: frozen at compile time like any global


@cuda.jit
def newton(roots, cs, steps):
    i = cuda.grid(1)
    if i < cs.size:
        x = 2.0
        for _ in range(steps):
            x = x - f(x, cs[i]) / df(x, cs[i])
        roots[i] = x


def main(n=256):
    cs = np.linspace(0.0, 10.0, n)
    roots = np.zeros(n)
    newton[(n + 63) // 64, 64](roots, cs, 30)
    residual = roots ** 3 - 2 * roots - cs
    assert np.abs(residual).max() < 1e-9, residual
    largest = np.array([max(r.real for r in np.roots([1, 0, -2, -c]) if abs(r.imag) < 1e-9) for c in cs[::37]])
    np.testing.assert_allclose(roots[::37], largest, rtol=1e-12)
    print(f"grad_newton: {n} roots of x^3 - 2x = c, max residual {np.abs(residual).max():.1e}")


if __name__ == "__main__":
    main()
