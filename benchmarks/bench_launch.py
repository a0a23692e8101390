"""Launch overhead, warm compile, and a kernel's first launches against its steady state (CPU backend).

    python benchmarks/bench_launch.py                 # a minute or so on 2 cores
    python benchmarks/bench_launch.py --quick         # small sizes, few repeats (the smoke test)
    python benchmarks/bench_launch.py --numba-python /path/to/venv/bin/python   # numba's figures from there

Every figure is printed beside a reference run in the same process (in turn, round robin, so that a
busy machine's load falls on both alike) and as a ratio to it; nothing is asserted.

- **Launch overhead**: ``saxpy[1, 256](a, x, y, out)`` on device arrays, a compiled kernel's optimised
  code (tier 1), batches of 200 launches, the median batch, as wall time and as this thread's CPU
  time (which a busy shared machine inflates least). References: an empty ctypes call (libc's
  ``labs``), the kernel's own launcher called through ctypes with its packed parameters (the kernel's
  256 threads and one foreign call: the floor of any launch), and the same launch in a session
  somebody listens to (the TUI, ``--trace``: three events a launch). numba's CUDA simulator
  (``NUMBA_ENABLE_CUDASIM=1``) launching the same kernel, in a child of ``--numba-python``, where
  numba imports.
- **Warm compile**: saxpy and matmul_tiled through ``load`` (a new session and driver each time, the
  frontend's caches cleared: nothing reused), to runnable code (tier 0 where compiles are tiered, a
  plain ``python script.py``'s default) and untiered (``KDEBUG_TIERED=0``, and every session that
  shows code); median of REPEAT, this thread's CPU time and wall. Reference: kdebug's own warm
  ``cuda.compile_ptx`` of the kernel in this process, and numba-cuda's in a child where it imports.
- **First launches and the steady state**: matmul_tiled on 256x256 float32 (the issue's case) in a
  fresh session, launch by launch: the first launch compiles; the launches after it run tier 0's
  quick code until the background thread has loaded tier 1. The steady state is measured after
  ``kdebug.targets.cpu.tiers.wait_all()`` (or with ``KDEBUG_TIERED=0``): a timing loop that starts
  right after the first launch averages tier 0's launches into it. Time per multiply-add (256^3).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import runpy
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_kernels")
BATCH = 200  # launches a timed batch
SIG = "void(float32, float32[::1], float32[::1], float32[::1])"


def median(xs):
    return statistics.median(xs) if xs else None


def _ratio(a, b) -> str:
    return "—" if a is None or not b else f"{a / b:.1f}x"


def _us(x) -> str:
    return "—" if x is None else f"{x * 1e6:.2f}"


def _ms(x) -> str:
    return "—" if x is None else f"{x * 1e3:.2f}"


def _load() -> str:
    try:
        return " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def _fresh_session(tiered: bool | None = None, **more):
    """A new session and driver, the frontend's caches cleared (as bench_compile's warm compiles)."""
    import kdebug.session.live as A
    A.set_session(None)
    for modname, attr in (("kdebug.frontend.typeinfer", "_cache"), ("kdebug.driver.job", "_source_hash")):
        cache = getattr(sys.modules.get(modname), attr, None)
        if isinstance(cache, dict):
            cache.clear()
    session = A.Session(backend="cpu", snapshots=False, **({} if tiered is None else {"tiered": tiered}), **more)
    A.set_session(session)
    return session


def _wait_tiers() -> None:
    from kdebug.targets.cpu import tiers
    tiers.wait_all()


def _timed_batches(fns: dict, batches: int, batch: int = BATCH) -> dict:
    """{name: (median wall s, median thread CPU s) per call}, the functions' batches taken in turn."""
    walls = {k: [] for k in fns}
    cpus = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(batches):
        for name, fn in fns.items():
            t, c = time.perf_counter(), time.thread_time()
            for _ in range(batch):
                fn()
            walls[name].append((time.perf_counter() - t) / batch)
            cpus[name].append((time.thread_time() - c) / batch)
    return {k: (median(walls[k]), median(cpus[k])) for k in fns}


# ---- launch overhead ------------------------------------------------------------------------------
def bench_launch(batches: int) -> dict:
    import numpy as np

    from kdebug import cuda
    from kdebug.lang import types as T
    from kdebug.runtime.record import RuntimeRecord

    saxpy = runpy.run_path(os.path.join(SAMPLES, "saxpy.py"), run_name="kdebug_bench_launch")["saxpy"]
    session = _fresh_session()
    n = 256
    x, y = cuda.to_device(np.arange(n, dtype=np.float32)), cuda.to_device(np.ones(n, np.float32))
    out = cuda.device_array(n, np.float32)
    a = np.float32(2.5)
    saxpy[1, n](a, x, y, out)
    _wait_tiers()  # the optimised code: the steady state
    np.testing.assert_allclose(out.copy_to_host(), 2.5 * np.arange(n) + 1)

    argtypes = (T.float32, T.typeof(x), T.typeof(y), T.typeof(out))
    compiled = session.compile_kernel(saxpy, argtypes)
    runtime = session.runtime
    params = runtime.pack_params(argtypes, (a, x, y, out))
    dims = runtime.dims((1, 1, 1), (n, 1, 1))
    tiers = compiled.artifact.tiers
    fn = runtime.launcher(compiled.entry_address if tiers is None else tiers.address(compiled.record.id, n))
    record = RuntimeRecord()
    address = ctypes.addressof(record)

    def raw():
        fn(params, dims, 0, 1, address)

    libc = ctypes.CDLL(None)
    labs = libc.labs
    labs.argtypes, labs.restype = (ctypes.c_long,), ctypes.c_long

    listening = _fresh_session()
    listening.bus.subscribe(lambda ev: None)
    plain = session

    def launch_plain():
        saxpy[1, n](a, x, y, out)

    def launch_listened():
        import kdebug.session.live as A
        A.set_session(listening)
        saxpy[1, n](a, x, y, out)
        A.set_session(plain)

    import kdebug.session.live as A
    A.set_session(listening)
    saxpy[1, n](a, x, y, out)  # compiled in that session too
    _wait_tiers()
    A.set_session(plain)
    rows = _timed_batches({"kdebug launch": launch_plain, "kdebug launch, somebody listening": launch_listened,
                           "the kernel's launcher through ctypes": raw, "empty ctypes call (labs)": lambda: labs(0)},
                          batches)
    A.set_session(None)
    return rows


SIMULATOR_CHILD = r"""
import json, os, runpy, sys, time, types, statistics
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from numba import cuda
fake = types.ModuleType("kdebug"); fake.cuda = cuda
sys.modules["kdebug"], sys.modules["kdebug.cuda"] = fake, cuda
saxpy = runpy.run_path(sys.argv[1], run_name="kdebug_bench_sim")["saxpy"]
n = 256
x, y = cuda.to_device(np.arange(n, dtype=np.float32)), cuda.to_device(np.ones(n, np.float32))
out = cuda.device_array(n, np.float32)
saxpy[1, n](np.float32(2.5), x, y, out)
walls, cpus = [], []
for _ in range(int(sys.argv[2])):
    t, c = time.perf_counter(), time.process_time()
    saxpy[1, n](np.float32(2.5), x, y, out)
    walls.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
import numba
print(json.dumps({"wall": statistics.median(walls), "cpu": statistics.median(cpus), "version": numba.__version__}))
"""

NUMBA_PTX_CHILD = r"""
import json, runpy, sys, time, types, statistics
import numpy as np
from numba import cuda
fake = types.ModuleType("kdebug"); fake.cuda = cuda
sys.modules["kdebug"], sys.modules["kdebug.cuda"] = fake, cuda
out = {}
for path, name, sig in json.loads(sys.argv[1]):
    f = runpy.run_path(path, run_name="kdebug_bench_ptx")[name].py_func
    cpus = []
    for _ in range(1 + int(sys.argv[2])):
        c = time.process_time()
        cuda.compile_ptx(f, sig, cc=(9, 0))
        cpus.append(time.process_time() - c)
    out[name] = statistics.median(cpus[1:])
print(json.dumps(out))
"""


def _child(python: str, code: str, args: list[str], timeout: float) -> tuple[dict | None, str]:
    try:
        r = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["failed"])[-1]
        return None, last[:160]
    try:
        return json.loads(r.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, "no result"


# ---- warm compile ---------------------------------------------------------------------------------
def bench_compile(repeat: int, quick: bool) -> list[dict]:
    import numpy as np

    from kdebug import cuda
    from kdebug.lang import types as T

    saxpy = runpy.run_path(os.path.join(SAMPLES, "saxpy.py"), run_name="kdebug_bench_launch")["saxpy"]
    matmul = runpy.run_path(os.path.join(SAMPLES, "matmul_tiled.py"), run_name="kdebug_bench_launch")["matmul_tiled"]
    vec = T.typeof(cuda.device_array(4, np.float32))
    mat = T.typeof(cuda.device_array((4, 4), np.float32))
    cases = [("saxpy", saxpy, (T.float32, vec, vec, vec), SIG, "saxpy.py")]
    if not quick:
        cases.append(("matmul_tiled", matmul, (mat, mat, mat),
                      "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", "matmul_tiled.py"))
    rows = []
    for name, kernel, argtypes, sig, sample in cases:
        times = {"tier 0": ([], []), "untiered": ([], []), "compile_ptx": ([], [])}
        for k in range(repeat + 1):  # in turn; the first round warms each up and is not counted
            for label in times:
                session = _fresh_session(tiered=label != "untiered")
                t, c = time.perf_counter(), time.thread_time()
                if label == "compile_ptx":
                    cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
                else:
                    session.compile_kernel(kernel, argtypes)
                wall, cpu = time.perf_counter() - t, time.thread_time() - c
                _wait_tiers()  # the background compile outside the next figure
                if k:
                    times[label][0].append(wall)
                    times[label][1].append(cpu)
        rows.append({"kernel": name, "sig": sig, "sample": sample,
                     **{label: (median(w), median(c)) for label, (w, c) in times.items()}})
    import kdebug.session.live as A
    A.set_session(None)
    return rows


# ---- first launches against the steady state ------------------------------------------------------
def bench_first_launches(m: int, launches: int, steady: int) -> list[dict]:
    import numpy as np

    from kdebug import cuda
    from kdebug.targets.cpu import tiers as tiers_module

    matmul = runpy.run_path(os.path.join(SAMPLES, "matmul_tiled.py"), run_name="kdebug_bench_launch")["matmul_tiled"]
    a = cuda.to_device(np.ones((m, m), np.float32))
    out = cuda.device_array((m, m), np.float32)
    grid, block = (m // 16, m // 16), (16, 16)
    rows = []
    for tiered in (True, False):
        session = _fresh_session(tiered=tiered)
        seq = []
        for k in range(launches):
            before = _tier_of(session)
            t = time.perf_counter()
            matmul[grid, block](a, a, out)
            seq.append((time.perf_counter() - t, before if k else "compile"))
        tiers_module.wait_all()
        walls = []
        for _ in range(steady):
            t = time.perf_counter()
            matmul[grid, block](a, a, out)
            walls.append(time.perf_counter() - t)
        np.testing.assert_allclose(out.copy_to_host(), np.full((m, m), m, np.float32))
        rows.append({"tiered": tiered, "seq": seq, "steady": median(walls), "steady_min": min(walls)})
    import kdebug.session.live as A
    A.set_session(None)
    return rows


def _tier_of(session) -> str:
    """The tier the session's compiled kernel would run now ("tier 0", "tier 1", "untiered")."""
    for compiled in session.driver.cache.values():
        tiers = getattr(compiled.artifact, "tiers", None)
        return "untiered" if tiers is None else f"tier {tiers.tier}"
    return "—"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (the smoke test)")
    p.add_argument("--repeat", type=int, help="warm compiles per kernel and variant (default 9, quick 2)")
    p.add_argument("--batches", type=int, help="launch batches of 200 (default 25, quick 3)")
    p.add_argument("--numba-python", help="an interpreter with numba-cuda (default: this one)")
    args = p.parse_args(argv)
    sys.path.insert(0, ROOT)
    repeat = args.repeat or (2 if args.quick else 9)
    batches = args.batches or (3 if args.quick else 25)
    numba_python = args.numba_python or os.environ.get("KDEBUG_BENCH_NUMBA_PYTHON") or sys.executable
    print("# kdebug launch overhead and warm compile (CPU backend)" + (" (--quick)" if args.quick else ""))
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} cores, load average {_load()} (1 / 5 / 15 min)")

    import kdebug.cuda  # noqa: F401 - the session's default factory

    rows = bench_launch(batches)
    sim, why = _child(numba_python, SIMULATOR_CHILD, [os.path.join(SAMPLES, "saxpy.py"), "3" if args.quick else "20"],
                      120)
    kd_cpu = rows["kdebug launch"][1]
    print(f"\n## Launch overhead: saxpy[1, 256] on device arrays, tier 1 (µs a launch; median of {batches} "
          f"batches of {BATCH}, in turn)\n")
    empty = rows["empty ctypes call (labs)"][1]
    floor = rows["the kernel's launcher through ctypes"][1]
    print("| launch | wall | thread CPU | CPU / empty ctypes call | CPU / the launcher's own call |")
    print("|---|---:|---:|---:|---:|")
    for name, (wall, cpu) in rows.items():
        print(f"| {name} | {_us(wall)} | {_us(cpu)} | {_ratio(cpu, empty)} | {_ratio(cpu, floor)} |")
    if sim is not None:
        print(f"| numba {sim['version']}'s CUDA simulator (a child process; process CPU) | {_us(sim['wall'])} | "
              f"{_us(sim['cpu'])} | {_ratio(sim['cpu'], empty)} | {_ratio(sim['cpu'], floor)} |")
    else:
        print(f"\n(numba's CUDA simulator not run: {why or 'numba does not import'}; "
              "--numba-python names an interpreter with numba-cuda)")
    print(f"\ntarget: launch overhead <= 10 µs of CPU time: {_us(kd_cpu)} µs "
          f"({'met' if kd_cpu is not None and kd_cpu <= 10e-6 else 'NOT met'})")

    comp = bench_compile(repeat, args.quick)
    ptx, why = _child(numba_python, NUMBA_PTX_CHILD,
                      [json.dumps([(os.path.join(SAMPLES, r["sample"]), r["kernel"], r["sig"]) for r in comp]),
                       str(repeat)], 300)
    print(f"\n## Warm compile (ms; median of {repeat}, in turn; thread CPU time, wall in brackets)\n")
    print("| kernel | to runnable code (tier 0) | untiered (KDEBUG_TIERED=0) | kdebug compile_ptx | "
          "numba-cuda compile_ptx (process CPU) | numba's compile_ptx / kdebug's | tier 0 / kdebug compile_ptx |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in comp:
        t0, un, kp = r["tier 0"], r["untiered"], r["compile_ptx"]
        nb = ptx.get(r["kernel"]) if ptx else None
        print(f"| {r['kernel']} | {_ms(t0[1])} ({_ms(t0[0])}) | {_ms(un[1])} ({_ms(un[0])}) | {_ms(kp[1])} "
              f"({_ms(kp[0])}) | {_ms(nb)} | {_ratio(nb, kp[1])} | {_ratio(t0[1], kp[1])} |")
    if ptx is None:
        print(f"\n(numba-cuda's compile_ptx not run: {why or 'numba-cuda does not import'})")
    sx = comp[0]["tier 0"][1]
    print(f"\ntarget: warm compile of saxpy through load <= 10 ms: {_ms(sx)} ms of CPU time "
          f"({'met' if sx is not None and sx <= 10e-3 else 'NOT met'})")

    m = 64 if args.quick else 256
    first = bench_first_launches(m, 4 if args.quick else 15, 3 if args.quick else 15)
    fma = m ** 3
    print(f"\n## First launches and the steady state: matmul_tiled {m}x{m} float32 (ns per multiply-add, wall)\n")
    print("The first launch compiles; then each launch runs the code ready at its start. The steady state: "
          "after tiers.wait_all() (kdebug.targets.cpu.tiers), the median of the launches after it.\n")
    print("| launch | tiered (a plain run's default) | tier | untiered (KDEBUG_TIERED=0) |")
    print("|---|---:|---|---:|")
    tiered, untiered = first
    for k, ((tw, tt), (uw, _)) in enumerate(zip(tiered["seq"], untiered["seq"])):
        print(f"| {k + 1} | {tw / fma * 1e9:.2f} | {tt} | {uw / fma * 1e9:.2f} |")
    print(f"| steady state (median) | {tiered['steady'] / fma * 1e9:.2f} | tier 1 | {untiered['steady'] / fma * 1e9:.2f} |")
    after = [w for w, _ in tiered["seq"][1:4]]
    if after:
        print(f"\nthe 3 launches after the first: {sum(after) / len(after) / fma * 1e9:.2f} ns per multiply-add "
              f"on average ({tiered['steady'] / fma * 1e9:.2f} in the steady state)")
    print(f"\nload average at the end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
