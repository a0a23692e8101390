"""A derivative through a function pointer: f calls g through kdebug.deferred(g).

    kernel chain ──pointer──▶ device g
                 ──grad─────▶ grad(f) ──grad──▶ grad(g)

The transform must see f with its marker for g resolved: then the call is a call to g's
entry, and its derivative is the derivative job grad(g), requested through the same job
table. Under toplevel, f's marker is still in place when grad(f) is compiled: the
transform meets an opaque deferred-codegen call and stops with a located error.
"""
import math

import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit(device=True)
def g(x):
    return math.tanh(x) * x


@cuda.jit(device=True)
def f(x, k):
    return k * kdebug.deferred(g)(x * x) + math.cos(x)


@cuda.jit
def chain(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[0, i] = f(xs[i], 3.0)
        out[1, i] = kdebug.grad(f)(xs[i], 3.0)


def main(n=128):
    xs = np.linspace(-1.5, 1.5, n)
    out = np.zeros((2, n))
    chain[(n + 31) // 32, 32](out, xs)
    u = xs * xs
    np.testing.assert_allclose(out[0], 3.0 * np.tanh(u) * u + np.cos(xs), rtol=1e-12)
    dg = np.tanh(u) + u * (1 - np.tanh(u) ** 2)  # g'(u)
    np.testing.assert_allclose(out[1], 3.0 * dg * 2 * xs - np.sin(xs), rtol=1e-12, atol=1e-14)
    print(f"grad_pointer: d/dx [3 g(x^2) + cos x] through a pointer to g, {n} points")


if __name__ == "__main__":
    main()
