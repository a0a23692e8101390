"""Dynamic parallelism: a parent kernel launches a child grid over a sub-range of the data.

The child is a deferred job (reason: launch) of the parent; it completes before
the parent grid is considered complete.
"""
import numpy as np

from kdebug import cuda


@cuda.jit
def scale_range(data, start, stop, factor):
    i = start + cuda.grid(1)
    if i < stop:
        data[i] = data[i] * factor


@cuda.jit
def parent(data, start, stop):
    if cuda.grid(1) == 0:
        n = stop - start
        scale_range[(n + 63) // 64, 64](data, start, stop, 3.0)


def main(n=1000):
    data = np.arange(n, dtype=np.float64)
    d = cuda.to_device(data)
    parent[1, 32](d, 100, 700)
    out = d.copy_to_host()
    expected = data.copy()
    expected[100:700] *= 3.0
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    print("dynamic_parallel: elements 100..699 tripled by the child grid")


if __name__ == "__main__":
    main()
