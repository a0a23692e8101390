"""Two device functions that reach each other through pointers: is_even and is_odd.

Each is a deferred job (reason: pointer) of the other, so the job graph has a
cycle; their signatures are declared because each one's return type depends on
the other's.
"""
import numpy as np

import kdebug
from kdebug import cuda


@cuda.jit("int64(int64)", device=True)
def is_even(n):
    if n == 0:
        return 1
    return kdebug.deferred(is_odd)(n - 1)


@cuda.jit("int64(int64)", device=True)
def is_odd(n):
    if n == 0:
        return 0
    return kdebug.deferred(is_even)(n - 1)


@cuda.jit
def parity(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = kdebug.deferred(is_even)(i)


def main(n=64):
    out = np.full(n, -1, dtype=np.int64)
    parity[(n + 31) // 32, 32](out)
    np.testing.assert_array_equal(out, (np.arange(n) % 2 == 0).astype(np.int64))
    print(f"mutual_pointers: parity of 0..{n - 1} through is_even <-> is_odd")


if __name__ == "__main__":
    main()
