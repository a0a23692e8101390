"""A kernel that launches itself with a decreasing counter (CUDA.jl's "self-recursion").

Each level records its counter; the job asks for itself while it is being compiled,
the smallest re-entrant codegen request.
"""
import numpy as np

from kdebug import cuda


@cuda.jit
def countdown(out, n):
    out[n] = n * 10
    if n > 0:
        countdown[1, 1](out, n - 1)


def main(levels=8):
    out = np.full(levels + 1, -1, dtype=np.int64)
    countdown[1, 1](out, levels)
    np.testing.assert_array_equal(out, np.arange(levels + 1) * 10)
    print("self_launch:", out.tolist())


if __name__ == "__main__":
    main()
