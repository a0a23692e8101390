"""racecheck: a histogram that increments its bins without atomics, beside the atomic one.

``bins[v] += 1`` from many threads is a read-modify-write race on global
memory (on a GPU, increments get lost). ``cuda.atomic.add`` is the fix:
atomics never race with atomics. Run under ``kdebug run --sanitize racecheck``.
"""
import numpy as np

import kdebug
from kdebug import cuda

NBINS = 16


@cuda.jit
def histogram_racy(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        bins[values[i]] += 1


@cuda.jit
def histogram_atomic(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i], 1)


def main(n=4096):
    kdebug.set_options(racecheck=True)
    values = np.random.default_rng(0).integers(0, NBINS, n).astype(np.int32)
    blocks = (n + 127) // 128
    racy = np.zeros(NBINS, np.int32)
    histogram_racy[blocks, 128](values, racy)
    bins = np.zeros(NBINS, np.int32)
    histogram_atomic[blocks, 128](values, bins)
    np.testing.assert_array_equal(bins, np.bincount(values, minlength=NBINS))
    print("histogram_atomic matches numpy; racecheck reports histogram_racy's unguarded increments")


if __name__ == "__main__":
    main()
