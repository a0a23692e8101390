"""Derivative code speed on the CPU backend: a kernel evaluating f against one evaluating grad(f), side by side.

    python benchmarks/bench_grad.py            # 2^22 elements, best of 7 (a few seconds on 2 cores)
    python benchmarks/bench_grad.py --quick    # 2^16 elements, best of 3

Each function is launched over the same float64 inputs: the primal ``f(x, y)``, its first
derivative ``grad(f)`` (forward mode: every float carries a tangent) and the second
derivative ``grad(grad(f))``. Times are the best of several launches after a warm-up
launch (compilation excluded), per element, with the ratio to the primal. numpy's
evaluation of the analytic derivative is a second reference. Target (reported, never
asserted): the first derivative at most 3x the primal's time.

Reverse mode: ``gradient(f)`` (both partials by one reverse sweep) against the primal, and
kernel adjoints (``kdebug.adjoint``) against their primal kernels: saxpy and a 3-point
stencil over the same number of float64 elements, on numpy's own arrays (each page-aligned, so the
six streams of an adjoint meet 4K aliasing at every element) and on arrays offset from one another
by 72 bytes. Target (reported): adjoint at most 3x. A shared-memory tree reduction (sample_kernels/adjoint_block_reduce.py,
64 threads a block, a barrier per step) is a third row, outside the target: its adjoint runs its barriers
backwards, on the CPU backend as a coroutine per thread (kdebug/targets/cpu/adjoint_barriers.py).

Derivative compiles (``--compile`` runs only these): a kernel calling ``gradient(f)``,
``gradient(f, argnum=1)``, ``grad(f)`` and ``grad(f, argnum=1)`` (four derivative jobs, as each
example of tests/autodiff/test_gradient_property.py compiles per program), compiled from scratch in a fresh
session (untiered, no snapshots, the frontend's caches cleared) against the kernel calling ``f``
itself: the median process CPU time of several compiles, the ratio, and the time in the transforms'
own phases (``reverse``, ``derivative``: reading the resolved primal, building and printing the
derivative module). Reported, never asserted.
"""
from __future__ import annotations

import argparse
import math
import os
import runpy
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kdebug  # noqa: E402
from kdebug import cuda  # noqa: E402


@cuda.jit(device=True)
def f(x, y):
    s = x * y + math.sin(x)
    if x > 0.0:
        s = s + math.exp(-x * x) * y
    else:
        s = s - math.log(1.0 + x * x)
    return math.sqrt(s * s + 1.0) + math.tanh(y * x)


df = kdebug.grad(f)
d2f = kdebug.grad(df)


@cuda.jit
def primal(out, xs, ys):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = f(xs[i], ys[i])


@cuda.jit
def first(out, xs, ys):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = df(xs[i], ys[i])


@cuda.jit
def second(out, xs, ys):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = d2f(xs[i], ys[i])


gf = kdebug.gradient(f)


@cuda.jit
def reverse(out, xs, ys):
    i = cuda.grid(1)
    if i < xs.size:
        gx, gy = gf(xs[i], ys[i])
        out[i] = gx + gy


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def stencil(x, out):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


# the tree reduction of sample_kernels/adjoint_block_reduce.py (64 threads a block), as that sample defines it
_REDUCE = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_kernels",
                                      "adjoint_block_reduce.py"))
block_squares, RED_BLOCK = _REDUCE["block_squares"], _REDUCE["BLOCK"]


def _optimised_code() -> None:
    """Until tiered compiles' optimised code is loaded (kdebug/targets/cpu/tiers.py): that is what is timed."""
    try:
        from kdebug.targets.cpu import tiers
    except ImportError:  # not kdebug's process, or a kdebug without tiers
        return
    tiers.wait_all()


def best(fn, repeat: int) -> float:
    fn()  # warm-up: compiles on the first launch
    _optimised_code()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_first(xs, ys):
    """d f / d x, written out by hand with numpy: the analytic reference."""
    pos = xs > 0
    e = np.exp(-xs * xs)
    s = xs * ys + np.sin(xs) + np.where(pos, e * ys, -np.log1p(xs * xs))
    ds = ys + np.cos(xs) + np.where(pos, -2 * xs * e * ys, -2 * xs / (1 + xs * xs))
    return s * ds / np.sqrt(s * s + 1) + ys * (1 - np.tanh(ys * xs) ** 2)


@cuda.jit
def derivatives(out, xs, ys):
    i = cuda.grid(1)
    if i < xs.size:
        gx, gy = kdebug.gradient(f)(xs[i], ys[i])
        out[i] = gx + gy + kdebug.gradient(f, argnum=1)(xs[i], ys[i]) + kdebug.grad(f)(xs[i], ys[i]) \
            + kdebug.grad(f, argnum=1)(xs[i], ys[i])


_TRANSFORM_PHASES = ("reverse", "derivative")  # a derivative job's transform (kdebug/autodiff/derivative.py)


def compile_times(kern, argtypes, repeat: int) -> tuple[float, float, float, int]:
    """Medians of a compile from scratch: (CPU seconds, wall seconds, wall seconds in the transforms' phases),
    and the number of jobs."""
    from kdebug.session.live import Session, set_session
    cpus, walls, transforms, jobs = [], [], [], 0
    for _ in range(repeat):
        set_session(None)
        for modname, attr in (("kdebug.frontend.typeinfer", "_cache"), ("kdebug.driver.job", "_source_hash")):
            cache = getattr(sys.modules.get(modname), attr, None)
            if isinstance(cache, dict):
                cache.clear()
        session = Session(backend="cpu", snapshots=False, tiered=False)
        set_session(session)
        spent, seen = [0.0], set()

        def listen(ev, spent=spent, seen=seen):
            if getattr(ev, "kind", "") == "phase_finished":
                seen.add(ev.job)
                if ev.phase in _TRANSFORM_PHASES:
                    spent[0] += ev.duration
        session.bus.subscribe(listen)
        c, t = time.process_time(), time.perf_counter()
        session.compile_kernel(kern, argtypes)
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - t)
        transforms.append(spent[0])
        jobs = len(seen)
        set_session(None)
    return statistics.median(cpus), statistics.median(walls), statistics.median(transforms), jobs


def compile_table(repeat: int) -> None:
    from kdebug.lang import types as T
    a = np.zeros(4)
    argtypes = tuple(T.typeof(v) for v in (a, a, a))
    rows = [(name, *compile_times(kern, argtypes, repeat)) for name, kern in (
        ("f (primal)", primal), ("gradient(f), gradient(f, argnum=1), grad(f), grad(f, argnum=1)", derivatives))]
    base = rows[0][1]
    print(f"| kernel compiled from scratch (CPU backend, untiered; median of {repeat}) | jobs | CPU ms | "
          f"ratio to f (CPU) | wall ms | of which the transforms' phases, wall ms |")
    print("|---|---|---|---|---|---|")
    for name, cpu, wall, spent, jobs in rows:
        print(f"| {name} | {jobs} | {cpu * 1e3:.1f} | {cpu / base:.2f}x | {wall * 1e3:.1f} | {spent * 1e3:.1f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--quick", action="store_true", help="2^16 elements, 3 repeats")
    ap.add_argument("--compile", action="store_true", help="only the derivative compiles")
    opts = ap.parse_args(argv)
    compile_table(3 if opts.quick else 9)
    if opts.compile:
        return
    print()
    n, repeat = (2 ** 16, 3) if opts.quick else (2 ** 22, 7)
    rng = np.random.default_rng(1)
    xs, ys = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    out = np.zeros(n)
    block = 256
    grid = (n + block - 1) // block
    rows = []
    for name, kern in (("f (primal)", primal), ("grad(f)", first), ("grad(grad(f))", second)):
        t = best(lambda k=kern: k[grid, block](out, xs, ys), repeat)
        rows.append((name, t))
        if kern is first:
            np.testing.assert_allclose(out, numpy_first(xs, ys), rtol=1e-10, atol=1e-12)  # the right derivative
    t_np = best(lambda: numpy_first(xs, ys), repeat)
    base = rows[0][1]
    print(f"| kernel over 2^{int(math.log2(n))} float64 elements (CPU backend) | ns / element | ratio to f |")
    print("|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t / n * 1e9:.2f} | {t / base:.2f}x |")
    print(f"| numpy, analytic d f / d x | {t_np / n * 1e9:.2f} | {t_np / base:.2f}x |")
    t_rev = best(lambda: reverse[grid, block](out, xs, ys), repeat)
    print(f"| gradient(f) (reverse mode, both partials) | {t_rev / n * 1e9:.2f} | {t_rev / base:.2f}x |")
    ratio = rows[1][1] / base
    print(f"\ntarget: grad(f) at most 3x the primal: {ratio:.2f}x ({'met' if ratio <= 3 else 'NOT met'})")
    dx, dy, dout = np.zeros(n), np.zeros(n), np.ones(n)
    print(f"\n| kernel over 2^{int(math.log2(n))} float64 elements (CPU backend) | arrays | primal ns / element | "
          f"adjoint ns / element | adjoint / primal |")
    print("|---|---|---|---|---|")
    worst = 0.0
    # numpy's large arrays start on a page boundary each: element i of every array has the same address
    # bits 0-11, and a load after a store with the same low bits waits on it (4K aliasing). The adjoint's
    # six streams meet that at every element; arrays carved from one buffer at offsets that are not
    # multiples of 4096 bytes show the code without it
    pool = np.zeros(6 * n + 6 * 9)
    carved = [pool[k * (n + 9):k * (n + 9) + n] for k in range(6)]
    for arrays, (cx, cy, cout, cdx, cdy, cdout) in (
            ("numpy's own (page-aligned)", (xs, ys, out, dx, dy, dout)),
            ("offset by 72 bytes", carved)):
        cx[:], cy[:], cdout[:] = xs, ys, 1.0
        for name, run, run_adj in (
                ("saxpy", lambda: saxpy[grid, block](2.0, cx, cy, cout),
                 lambda: kdebug.adjoint(saxpy)[grid, block](2.0, cx, cdx, cy, cdy, cout, cdout)),
                ("3-point stencil", lambda: stencil[grid, block](cx, cout),
                 lambda: kdebug.adjoint(stencil)[grid, block](cx, cdx, cout, cdout))):
            tp, ta = best(run, repeat), best(run_adj, repeat)
            worst = max(worst, ta / tp)
            print(f"| {name} | {arrays} | {tp / n * 1e9:.2f} | {ta / n * 1e9:.2f} | {ta / tp:.2f}x |")
    dx[:], dy[:], dout[:] = 0.0, 0.0, 1.0
    kdebug.adjoint(saxpy)[grid, block](2.0, xs, dx, ys, dy, out, dout)
    np.testing.assert_allclose(dx, 2.0, rtol=1e-15)  # the right adjoint
    blocks = n // RED_BLOCK
    sums, dsums = np.zeros(blocks), np.ones(blocks)
    tp = best(lambda: block_squares[blocks, RED_BLOCK](xs, sums), repeat)
    dx[:] = 0.0
    ta = best(lambda: kdebug.adjoint(block_squares)[blocks, RED_BLOCK](xs, dx, sums, dsums), repeat)
    print(f"| block reduction (shared, barriers; outside the target) | numpy's own | {tp / n * 1e9:.2f} | "
          f"{ta / n * 1e9:.2f} | {ta / tp:.2f}x |")
    # the first launch adds 2 x dout into dx and zeroes dout (out's final value was written): the rest add 0
    np.testing.assert_allclose(dx, 2 * xs, rtol=1e-12)
    print(f"\ntarget: adjoint at most 3x the primal: worst {worst:.2f}x ({'met' if worst <= 3 else 'NOT met'})")


if __name__ == "__main__":
    main()
