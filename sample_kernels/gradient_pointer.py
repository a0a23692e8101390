"""A reverse-mode derivative through a function pointer: f calls g through kdebug.deferred(g).

    kernel chain ──pointer──▶ device g
                 ──gradient─▶ gradient(f, argnum=0) ──gradient──▶ gradient(g, argnum=0)
                 ──gradient─▶ gradient(f)            ──gradient──▶ gradient(g, argnum=0)

The reverse transform must see f with its marker for g resolved: then the call is a call to
g's entry, and its reverse sweep asks for g's partial, the reverse-mode job
gradient(g, argnum=0), through the same job table. Under toplevel, f's marker is still in
place when gradient(f) is compiled: the transform meets an opaque deferred-codegen call and
stops with a located error.
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
        out[1, i] = kdebug.gradient(f, argnum=0)(xs[i], 3.0)
        dx, dk = kdebug.gradient(f)(xs[i], 3.0)
        out[2, i] = dx
        out[3, i] = dk


def main(n=128):
    xs = np.linspace(-1.5, 1.5, n)
    out = np.zeros((4, n))
    chain[(n + 31) // 32, 32](out, xs)
    u = xs * xs
    np.testing.assert_allclose(out[0], 3.0 * np.tanh(u) * u + np.cos(xs), rtol=1e-12)
    dg = np.tanh(u) + u * (1 - np.tanh(u) ** 2)  # g'(u)
    np.testing.assert_allclose(out[1], 3.0 * dg * 2 * xs - np.sin(xs), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out[2], out[1], rtol=1e-15, atol=0)
    np.testing.assert_allclose(out[3], np.tanh(u) * u, rtol=1e-12)  # d/dk
    print(f"gradient_pointer: the gradient of [3 g(x^2) + cos x] through a pointer to g, {n} points")


if __name__ == "__main__":
    main()
