"""Warp-shuffle reduction of 2^24 float32 on the CPU backend against numpy's sum, side by side.

    python benchmarks/bench_warp.py            # 2^24 floats, best of 7
    python benchmarks/bench_warp.py --quick    # 2^18 floats, best of 3

Two kernels, both ending in the warp-shuffle tree (five ``cuda.shfl_down_sync`` steps) and one
``cuda.atomic.add`` per warp:

* ``strided``: sample_kernels/warp_reduce.py, the usual GPU form: each thread adds a grid-stride
  slice (coalesced on a GPU, one element every ``gridsize`` on a CPU);
* ``chunked``: each thread adds one contiguous chunk, with ``fastmath=True`` so that LLVM may
  reorder the float additions and vectorise the loop (numpy's pairwise sum reorders them too).

Times are the best of several launches after a warm-up launch (compilation excluded), with the input
already a device array; memcheck on and off. Both kernels take the region form (their warp operations
are cuts, kdebug/targets/cpu/forms/regions/cut.py; the strided kernel's grid-stride loop runs in rounds,
``regions.emit_rounds``). The strided kernel also runs as coroutines (``regions=False``: its loop in
lockstep, kdebug/targets/cpu/forms/coroutines/lockstep.py) and with lockstep loops off (``lockstep=False``: each emulated
thread runs its loop alone, inside its region). Target (reported, never asserted): within 3x of numpy.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sample_kernels"))

from kdebug import cuda  # noqa: E402
from kdebug.cuda import float32  # noqa: E402

FULL = 0xFFFFFFFF


@cuda.jit(fastmath=True)
def chunked_sum(x, total):
    i = cuda.grid(1)
    n = x.size
    threads = cuda.gridsize(1)
    chunk = (n + threads - 1) // threads
    start = i * chunk
    stop = min(start + chunk, n)
    acc = float32(0)
    for k in range(start, stop):
        acc += x[k]
    offset = 16
    while offset > 0:
        acc += cuda.shfl_down_sync(FULL, acc, offset)
        offset //= 2
    if cuda.laneid == 0:
        cuda.atomic.add(total, 0, acc)


def _optimised_code() -> None:
    """Until tiered compiles' optimised code is loaded (kdebug/targets/cpu/tiers.py): that is what is timed."""
    try:
        from kdebug.targets.cpu import tiers
    except ImportError:  # not kdebug's process, or a kdebug without tiers
        return
    tiers.wait_all()


def best(fn, repeat):
    fn()
    _optimised_code()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--quick", action="store_true")
    opts = ap.parse_args(argv)
    import kdebug
    import warp_reduce
    n = 1 << (18 if opts.quick else 24)
    repeat = 3 if opts.quick else 7
    x = np.random.default_rng(0).random(n).astype(np.float32)
    xd = cuda.to_device(x)
    ref = float(x.astype(np.float64).sum())
    t_np = best(lambda: x.sum(), repeat)
    strided = ("strided", lambda: warp_reduce.reduce(xd, 64, 256))
    chunked = ("chunked", lambda: _chunked(xd, 8, 128))
    rows = []
    runs = (("region form, rounds", dict(lockstep=True, regions=True), (strided, chunked)),
            ("coroutines, lockstep", dict(lockstep=True, regions=False), (strided,)),
            ("region form, lockstep off", dict(lockstep=False, regions=True), (strided,)))
    for form, options, kernels in runs:
        for memcheck in (True, False):
            kdebug.set_options(memcheck=memcheck, **options)
            for name, launch in kernels:
                got = float(launch())
                assert abs(got - ref) <= 1e-5 * abs(ref), (name, got, ref)
                rows.append((name, memcheck, form if name == "strided" else "region form", best(launch, repeat)))
    kdebug.set_options(memcheck=True, lockstep=True, regions=True)
    print(f"warp-shuffle reduction of {n} float32 (2^{n.bit_length() - 1}), best of {repeat}")
    print("| kernel | memcheck | form | kdebug | numpy sum | kdebug / numpy |")
    print("|---|---|---|---|---|---|")
    for name, memcheck, form, t in rows:
        print(f"| {name} | {'on' if memcheck else 'off'} | {form} | {t * 1e3:.2f} ms "
              f"| {t_np * 1e3:.2f} ms | {t / t_np:.1f}x |")


def _chunked(xd, blocks, threads):
    total = np.zeros(1, np.float32)
    chunked_sum[blocks, threads](xd, total)
    return total[0]


if __name__ == "__main__":
    main()
