"""The reverse-mode derivative of a recursive function reached through a pointer: power(x, n) = x * power(x, n - 1).

    kernel powers ──gradient──▶ gradient(power, argnum=0) ──pointer───▶ power ──pointer──▶ power (↻ reference)
                                                          ──gradient──▶ gradient(power, argnum=0) (↻ reference)
                  ──grad──────▶ grad(gradient(power, argnum=0)) ──gradient (body)──▶ gradient(power, argnum=0)

The reverse sweep of power calls the partial of its own callee, which is the job itself:
a request for an address of a job in progress resolves to a reference. Under the recursive
strategy the pointer cycle power -> power is stopped at the first re-entry; under toplevel
the primal's marker for power is never expanded before the transform.
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit("float64(float64, int64)", device=True)
def power(x, n):
    if n == 0:
        return 1.0
    return x * kdebug.deferred(power)(x, n - 1)


@cuda.jit
def powers(out, xs, n):
    i = cuda.grid(1)
    if i < xs.size:
        out[0, i] = kdebug.gradient(power, argnum=0)(xs[i], n)
        out[1, i] = kdebug.grad(kdebug.gradient(power, argnum=0))(xs[i], n)


def main(size=64, n=5):
    xs = np.linspace(-2.0, 2.0, size)
    out = np.zeros((2, size))
    powers[(size + 31) // 32, 32](out, xs, n)
    np.testing.assert_allclose(out[0], n * xs ** (n - 1), rtol=1e-12)
    np.testing.assert_allclose(out[1], n * (n - 1) * xs ** (n - 2), rtol=1e-12, atol=1e-12)
    print(f"gradient_recursive_power: d/dx by reverse mode, d2/dx2 forward over reverse, of x^{n}, {size} points")


if __name__ == "__main__":
    main()
