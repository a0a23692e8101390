"""Three levels of deferred jobs: a function pointer whose job launches a kernel
whose job takes another pointer.

    kernel top ──pointer──▶ device fill_via_launch ──launch──▶ kernel fill_squares ──pointer──▶ device square

Under the recursive strategy the innermost jobs are compiled inside nested jobs
and never reach the toplevel's finish list: kdebug reports the finish-coverage miss.
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit(device=True)
def square(x):
    return x * x


@cuda.jit
def fill_squares(out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = kdebug.deferred(square)(i)


@cuda.jit(device=True)
def fill_via_launch(out, n):
    fill_squares[(n + 31) // 32, 32](out, n)
    return n


@cuda.jit
def top(out, count):
    if cuda.grid(1) == 0:
        count[0] = kdebug.deferred(fill_via_launch)(out, out.size)


def main(n=100):
    out = np.zeros(n, dtype=np.int64)
    count = np.zeros(1, dtype=np.int64)
    top[1, 1](out, count)
    np.testing.assert_array_equal(out, np.arange(n) ** 2)
    assert count[0] == n
    print(f"nested_deferred: {n} squares through pointer -> launch -> pointer")


if __name__ == "__main__":
    main()
