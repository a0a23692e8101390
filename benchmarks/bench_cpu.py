"""CPU backend throughput, side by side in one run: kdebug (memcheck on and off), numpy, numba's CUDA simulator.

    python benchmarks/bench_cpu.py                  # the full run (about a minute on 2 cores)
    python benchmarks/bench_cpu.py --quick          # small sizes, few repeats (the smoke test runs this)
    python benchmarks/bench_cpu.py --numba-python /path/to/python   # an interpreter where numba imports

Kernels: saxpy (barrier-free, vectorised thread loop), the tiled matmul of
sample_kernels/matmul_tiled.py (shared memory, two syncthreads per tile), the
block tree reduction of sample_kernels/reduction.py (syncthreads in a loop), the
Hillis-Steele scan of sample_kernels/scan.py (two syncthreads per step, the block
offsets added by a second, barrier-free kernel) and the shared-memory halo stencil
of sample_kernels/stencil_halo.py (one syncthreads). The kernels with barriers run
in both of the CPU backend's forms side by side: the region form (cut at the
barriers, a thread loop per region; kdebug/targets/cpu/forms/regions/cut.py; also with every
thread in every thread loop, region_bounds.py's narrowing off) and one
coroutine per thread (``regions=False``, with lockstep loops), each with memcheck
on and off.
Times are the best of several launches after a warm-up launch (compilation
excluded), given per element: per input element for saxpy and the reduction,
per multiply-add (n^3 of them) for the matmul, whose work per output element
grows with n (the simulator can only run small matrices).

numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, one Python thread per CUDA
thread) runs the same kernel sources in a subprocess of ``--numba-python``
(default: this interpreter; or $KDEBUG_BENCH_NUMBA_PYTHON) at small sizes —
numba is not a kdebug dependency (``pip install numba`` to measure it); the
table says so when it is not importable.

Targets (reported, never asserted): per-element time at least 10,000x below the
simulator for saxpy and the tiled matmul; memcheck costs at most 2x on saxpy;
a 512x512 float32 tiled matmul in under 0.5 s.

Only the standard library is imported at module level: the simulator child runs
this file under an interpreter that need not have kdebug installed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SAMPLES = os.path.join(ROOT, "sample_kernels")


def _optimised_code() -> None:
    """Until tiered compiles' optimised code is loaded (kdebug/targets/cpu/tiers.py): that is what is timed."""
    try:
        from kdebug.targets.cpu import tiers
    except ImportError:  # not kdebug's process, or a kdebug without tiers
        return
    tiers.wait_all()


def median_time(fn, repeat: int) -> float:
    """The best of ``repeat`` runs after a warm-up (the minimum resists other processes' noise best)."""
    fn()  # warm-up: compiles on the first launch
    _optimised_code()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# ---- the workloads: the same kernel sources for kdebug and for numba's simulator -------------------
def load(name, cuda_module):
    """Execute a sample's source with ``from kdebug import cuda`` meaning ``cuda_module``."""
    import types
    path = os.path.join(SAMPLES, f"{name}.py")
    src = open(path).read()
    src = src.replace("from kdebug import cuda", "cuda = __cuda__")
    src = src.replace("from kdebug.cuda import", "from __cuda_types__ import")
    mod = types.ModuleType(f"bench_{name}")
    mod.__file__ = path
    mod.__dict__["__cuda__"] = cuda_module
    sys.modules["__cuda_types__"] = cuda_module if hasattr(cuda_module, "float32") else _numba_types()
    linecache_register(path, src)
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def _numba_types():
    import numba
    return numba


def linecache_register(path, src):
    """numba and kdebug read kernel source through inspect/linecache: keep the rewritten text there."""
    import linecache
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)


def workloads(cuda_module, sizes, repeat):
    """{name: (per-element seconds, elements, total seconds)} for this cuda module."""
    import numpy as np
    rng = np.random.default_rng(0)
    out = {}
    sx = load("saxpy", cuda_module)
    n = sizes["saxpy"]
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy, do = cuda_module.to_device(x), cuda_module.to_device(y), cuda_module.device_array_like(x)
    t = median_time(lambda: sx.saxpy[(n + 255) // 256, 256](np.float32(2.5), dx, dy, do), repeat)
    np.testing.assert_allclose(do.copy_to_host(), np.float32(2.5) * x + y, rtol=1e-5)
    out["saxpy"] = (t / n, n, t)

    mm = load("matmul_tiled", cuda_module)
    m = sizes["matmul"]
    A = rng.standard_normal((m, m)).astype(np.float32)
    B = rng.standard_normal((m, m)).astype(np.float32)
    dA, dB = cuda_module.to_device(A), cuda_module.to_device(B)
    dC = cuda_module.device_array((m, m), np.float32)
    tpb = mm.TPB
    grid = ((m + tpb - 1) // tpb, (m + tpb - 1) // tpb)
    t = median_time(lambda: mm.matmul_tiled[grid, (tpb, tpb)](dA, dB, dC), repeat)
    np.testing.assert_allclose(dC.copy_to_host(), A @ B, rtol=1e-3, atol=1e-3)
    out["matmul"] = (t / (m * m * m), m, t)  # per multiply-add

    rd = load("reduction", cuda_module)
    n = sizes["reduction"]
    x = rng.random(n).astype(np.float32)
    blocks = (n + rd.TPB - 1) // rd.TPB
    dx = cuda_module.to_device(x)
    dp = cuda_module.device_array(blocks, np.float32)
    t = median_time(lambda: rd.block_sum[blocks, rd.TPB](dx, dp), repeat)
    np.testing.assert_allclose(dp.copy_to_host().sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-4)
    out["reduction"] = (t / n, n, t)

    if "scan" in sizes:
        sc = load("scan", cuda_module)
        n = sizes["scan"]
        xi = rng.integers(-50, 100, n).astype(np.int64)
        got = {}
        t = median_time(lambda: got.__setitem__("out", sc.scan(xi)), repeat)
        np.testing.assert_array_equal(got["out"], np.cumsum(xi))
        out["scan"] = (t / n, n, t)
    if "stencil" in sizes:
        sh = load("stencil_halo", cuda_module)
        n = sizes["stencil"]
        x = rng.standard_normal(n).astype(np.float32)
        dx, do = cuda_module.to_device(x), cuda_module.device_array_like(x)
        blocks = (n + sh.TPB - 1) // sh.TPB
        t = median_time(lambda: sh.stencil[blocks, sh.TPB](dx, do), repeat)
        np.testing.assert_allclose(do.copy_to_host(), sh.reference(x), rtol=1e-4, atol=1e-5)
        out["stencil"] = (t / n, n, t)
    return out


def saxpy_cpu_time(n, repeat):
    """saxpy's CPU time on one core (process_time, blocks not spread over cores): the memcheck
    ratio measured this way is not disturbed by other processes on a shared machine."""
    import numpy as np
    import kdebug
    import kdebug.runtime.cpu as rc
    from kdebug import cuda
    sx = load("saxpy", cuda)
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dx, dy, do = cuda.to_device(x), cuda.to_device(x), cuda.device_array_like(x)
    saved = rc.PARALLEL_MIN_THREADS
    rc.PARALLEL_MIN_THREADS = 1 << 62
    res = {}
    try:
        for mc in (True, False):
            kdebug.set_options(memcheck=mc)
            launch = lambda: sx.saxpy[(n + 255) // 256, 256](np.float32(2.5), dx, dy, do)  # noqa: E731
            launch()
            best = None
            for _ in range(max(3, repeat)):
                t0 = time.process_time()
                launch()
                dt = time.process_time() - t0
                best = dt if best is None else min(best, dt)
            res[mc] = best / n
    finally:
        rc.PARALLEL_MIN_THREADS = saved
        kdebug.set_options(memcheck=True)
    return res


def numpy_times(sizes, repeat):
    import numpy as np
    rng = np.random.default_rng(0)
    n = sizes["saxpy"]
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = np.float32(2.5)
    res = {"saxpy": median_time(lambda: a * x + y, repeat) / n}
    m = sizes["matmul"]
    A = rng.standard_normal((m, m)).astype(np.float32)
    B = rng.standard_normal((m, m)).astype(np.float32)
    res["matmul"] = median_time(lambda: A @ B, repeat) / (m * m * m)
    n = sizes["reduction"]
    x = rng.random(n).astype(np.float32)
    res["reduction"] = median_time(lambda: x.sum(), repeat) / n
    n = sizes["scan"]
    xi = rng.integers(-50, 100, n).astype(np.int64)
    res["scan"] = median_time(lambda: np.cumsum(xi), repeat) / n
    n = sizes["stencil"]
    x = rng.standard_normal(n).astype(np.float32)
    k = np.ones(7, np.float32) / np.float32(7)
    res["stencil"] = median_time(lambda: np.convolve(x, k, mode="same"), repeat) / n
    return res


# ---- the simulator child ------------------------------------------------------------------------------
def child_simulator(sizes_json: str, repeat: int) -> None:
    """Runs under the numba interpreter with NUMBA_ENABLE_CUDASIM=1; prints one JSON line."""
    try:
        from numba import cuda
        import numba
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"unavailable": f"numba is not importable by {sys.executable} "
                                         f"({type(exc).__name__}: {exc})"}))
        return
    res = workloads(cuda, json.loads(sizes_json), repeat)
    print(json.dumps({"version": numba.__version__, "results": res}))


def simulator_times(python: str, sizes, repeat, timeout):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONUNBUFFERED="1")
    try:
        r = subprocess.run([python, os.path.abspath(__file__), "--child-simulator", json.dumps(sizes),
                            "--repeat", str(repeat)], capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"unavailable": f"the simulator run failed ({type(exc).__name__}: {exc})"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"unavailable": f"the simulator run failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"}
    return json.loads(lines[-1])


# ---- the report ----------------------------------------------------------------------------------------
def fmt_t(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e9:.3f} ns"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--numba-python", default=None, help="an interpreter where numba imports (simulator runs)")
    ap.add_argument("--no-simulator", action="store_true", help="skip numba's simulator")
    ap.add_argument("--child-simulator", metavar="SIZES", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_simulator:
        child_simulator(args.child_simulator, args.repeat or 1)
        return 0

    import numpy as np  # noqa: F401
    import kdebug
    from kdebug import cuda

    repeat = args.repeat or (2 if args.quick else 7)
    sizes = ({"saxpy": 1 << 16, "matmul": 64, "reduction": 1 << 16, "scan": 1 << 14, "stencil": 1 << 16}
             if args.quick else
             {"saxpy": 1 << 22, "matmul": 512, "reduction": 1 << 22, "scan": 1 << 20, "stencil": 1 << 22})
    sim_sizes = {"saxpy": 1024, "matmul": 32, "reduction": 1024} if args.quick else \
        {"saxpy": 4096, "matmul": 64, "reduction": 4096}

    kd, coro = {}, {}
    barrier_sizes = {k: v for k, v in sizes.items() if k != "saxpy"}
    barrier_sizes["saxpy"] = 1 << 10  # workloads runs saxpy first; the coroutine table leaves it out
    for mc in (True, False):
        kdebug.set_options(memcheck=mc, regions=True, narrow=True)
        kd[mc] = workloads(cuda, sizes, repeat)
        kdebug.set_options(memcheck=mc, regions=False)  # one coroutine per thread (lockstep loops on)
        coro[mc] = workloads(cuda, barrier_sizes, repeat)
    # the region form with every thread in every thread loop (region_bounds.py's narrowing off)
    kdebug.set_options(memcheck=False, regions=True, narrow=False)
    plain = workloads(cuda, barrier_sizes, repeat)
    kdebug.set_options(memcheck=True, regions=True, narrow=True)
    cpu1 = saxpy_cpu_time(sizes["saxpy"], repeat)
    npy = numpy_times(sizes, repeat)
    sim = {"unavailable": "skipped (--no-simulator)"}
    if not args.no_simulator:
        py = args.numba_python or os.environ.get("KDEBUG_BENCH_NUMBA_PYTHON") or sys.executable
        sim = simulator_times(py, sim_sizes, 1, timeout=600)

    print(f"CPU backend, {os.cpu_count()} cores; best of {repeat} launches after a warm-up")
    print()
    print("| kernel | kdebug size | kdebug memcheck on | kdebug memcheck off | memcheck cost | numpy | "
          "simulator (size) | simulator / kdebug |")
    print("|---|---|---|---|---|---|---|---|")
    pow2 = lambda n: f"2^{n.bit_length() - 1}"  # noqa: E731
    label = {"saxpy": pow2, "matmul": lambda n: f"{n}x{n}", "reduction": pow2, "scan": pow2, "stencil": pow2}
    sim_res = sim.get("results", {})
    for name in ("saxpy", "matmul", "reduction", "scan", "stencil"):
        on, n, _ = kd[True][name]
        off = kd[False][name][0]
        s = sim_res.get(name)
        sim_cell = f"{fmt_t(s[0])} ({label[name](s[1])})" if s else "-"
        ratio = f"{s[0] / on:,.0f}x" if s else "-"
        print(f"| {name} | {label[name](n)} | {fmt_t(on)} | {fmt_t(off)} | {on / off:.2f}x | {fmt_t(npy[name])} | "
              f"{sim_cell} | {ratio} |")
    print()
    print("The kernels with barriers in both forms (kdebug memcheck on / off):")
    print()
    print("| kernel | size | region form, on | region form, off | every thread (not narrowed), off | "
          "coroutines, on | coroutines, off | coroutines / regions (off) | numpy | region form (off) / numpy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in ("matmul", "reduction", "scan", "stencil"):
        on, n, _ = kd[True][name]
        off = kd[False][name][0]
        con, coff = coro[True][name][0], coro[False][name][0]
        print(f"| {name} | {label[name](n)} | {fmt_t(on)} | {fmt_t(off)} | {fmt_t(plain[name][0])} | {fmt_t(con)} | "
              f"{fmt_t(coff)} | {coff / off:.1f}x | {fmt_t(npy[name])} | {off / npy[name]:.1f}x |")
    print()
    print("per element: saxpy, reduction, scan and stencil per input element, matmul per multiply-add (n^3)")
    if "unavailable" in sim:
        print(f"numba's CUDA simulator: not measured: {sim['unavailable']}")
    else:
        print(f"numba's CUDA simulator: numba {sim['version']}, NUMBA_ENABLE_CUDASIM=1, run with {sys.executable if not args.numba_python else args.numba_python}")
    print()
    print("targets (reported, not asserted):")
    for name in ("saxpy", "matmul"):
        s = sim_res.get(name)
        if s:
            r = s[0] / kd[True][name][0]
            print(f"  {name}: {r:,.0f}x below the simulator per element (target >= 10,000x): "
                  f"{'met' if r >= 1e4 else 'MISSED'}")
    cost = cpu1[True] / cpu1[False]
    print(f"  memcheck cost on saxpy: {cost:.2f}x in CPU time on one core ({fmt_t(cpu1[True])} vs "
          f"{fmt_t(cpu1[False])} per element; {kd[True]['saxpy'][0] / kd[False]['saxpy'][0]:.2f}x in the "
          f"wall-clock table) (target <= 2x): {'met' if cost <= 2 else 'MISSED'}")
    r = kd[False]["reduction"][0] / npy["reduction"]
    print(f"  reduction, region form, memcheck off: {r:.1f}x numpy's sum per element (target <= 3x): "
          f"{'met' if r <= 3 else 'MISSED'}")
    mm = kd[False]["matmul"][0] * 1e9
    print(f"  tiled matmul, region form, memcheck off: {mm:.3f} ns per multiply-add (target <= 0.2 ns at 512x512): "
          f"{'met' if mm <= 0.2 else 'MISSED'}")
    if sizes["matmul"] == 512:
        t = kd[True]["matmul"][2]
        print(f"  512x512 float32 tiled matmul, memcheck on: {t:.3f} s (target < 0.5 s): "
              f"{'met' if t < 0.5 else 'MISSED'}; memcheck off: {kd[False]['matmul'][2]:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
