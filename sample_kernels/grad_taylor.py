"""A Taylor expansion of orders 1 to 3 built from derivatives of derivatives.

    kernel taylor ──grad──▶ grad(f)
                  ──grad──▶ grad(grad(f))        ──grad (body)──▶ grad(f)
                  ──grad──▶ grad(grad(grad(f)))  ──grad (body)──▶ grad(grad(f))

A derivative of a derivative needs the *body* of the inner derivative job with its
markers resolved: the worklist strategy compiles every key once; under toplevel the
second order fails (the inner job's marker was never expanded, Enzyme.jl#1707,
GPUCompiler.jl#629); under recursive it works but compiles the shared jobs again.
"""
import math

import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit(device=True)
def f(x):
    return math.sin(x) * math.exp(0.5 * x)


d1 = kdebug.grad(f)
d2 = kdebug.grad(d1)
d3 = kdebug.grad(d2)


@cuda.jit
def taylor(out, a, hs):
    i = cuda.grid(1)
    if i < hs.size:
        h = hs[i]
        t1 = f(a) + d1(a) * h
        t2 = t1 + d2(a) * h * h / 2.0
        t3 = t2 + d3(a) * h * h * h / 6.0
        out[0, i] = t1
        out[1, i] = t2
        out[2, i] = t3
        out[3, i] = d3(a + h)


def main(n=64, a=0.7):
    hs = np.linspace(-0.2, 0.2, n)
    out = np.zeros((4, n))
    taylor[1, n](out, a, hs)
    r = 0.5 + 1j  # f = Im(exp(r x)), so the k-th derivative is Im(r**k exp(r x))
    derivs = [(r ** k * np.exp(r * a)).imag for k in range(4)]
    exact = np.sin(a + hs) * np.exp(0.5 * (a + hs))
    for order in (1, 2, 3):
        want = sum(derivs[k] * hs ** k / math.factorial(k) for k in range(order + 1))
        np.testing.assert_allclose(out[order - 1], want, rtol=1e-12, atol=1e-14)
        error = np.abs(out[order - 1] - exact).max()
        assert error <= 2.0 * 0.2 ** (order + 1), (order, error)  # each order closes in on f
    np.testing.assert_allclose(out[3], (r ** 3 * np.exp(r * (a + hs))).imag, rtol=1e-12)
    print(f"grad_taylor: orders 1-3 of sin(x) exp(x/2) at {a}: max errors "
          + ", ".join(f"{np.abs(out[k] - exact).max():.1e}" for k in range(3)))


if __name__ == "__main__":
    main()
