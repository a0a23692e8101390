"""Compile latency and CPU-backend throughput, measured side by side in one run.

    python benchmarks/bench_compile.py            # the full run (a minute or two on 2 cores)
    python benchmarks/bench_compile.py --quick    # small sizes, few repeats (the smoke test runs this)
    python benchmarks/bench_compile.py --profile  # also: where kdebug's own Python time goes
    python benchmarks/bench_compile.py --recording  # only: per-pass recording off / on, side by side

What it measures (see benchmarks/README.md for the figures and the findings):

1. Compile latency of every kernel in sample_kernels/*.py. Each sample runs once
   as ``__main__`` in a fresh subprocess (so the argument types are the ones the
   sample really launches with); the first compile of each toplevel kernel there
   is the *cold* figure, next to the time that process took to import kdebug and
   start its session. Then, in the same process, each kernel is compiled again
   ``--repeat`` times with a fresh session and driver and cleared frontend caches
   (nothing cached): the *warm* figure, broken down by phase from the session
   bus's ``phase_finished`` events.
2. numba-cuda's ``cuda.compile_ptx`` on the same kernels with the same signatures
   (cold: fresh process, import + first compile; warm: later compiles), run with
   ``--numba-python`` (default: this interpreter) where numba-cuda imports; it is
   not a kdebug dependency (``pip install 'numba-cuda[cu13]'`` to measure it).
   kdebug's own ``cuda.compile_ptx`` is measured too once the PTX target exists.
3. The CPU backend's saxpy on 2**24 float32 against numpy's ``a*x+y`` on the same
   arrays: medians of several runs and their ratio.

Targets (reported, never asserted): warm compile of saxpy through ``optimize``
at most 50 ms; CPU saxpy on 2**24 floats within 2x of numpy; and the compile and
launch latency targets, printed first as one side-by-side table for saxpy: warm CPU
compile through ``load`` at most 10 ms (matmul_tiled 40 ms), warm ``compile_ptx``
at least 3.5x faster than numba-cuda's, import + first compile at least 5x faster,
launch overhead at most 10 µs, memcheck at most 1.2x the unchecked saxpy.

``--recording`` compiles saxpy, matmul_tiled and recursive_launch's toplevel kernels with per-pass
recording off (a plain run), on as it was before remarks were kept, and on with LLVM's remarks, the
with the passes kept for a replay (the live TUI's default), the modes interleaved in one process per
sample, and the CPU time of replaying the kept passes; prints the times and ratios (target: recording
at most 1.5x the compile with it off).

Only the standard library is imported at module level: the numba-cuda child runs
this file under another interpreter that need not have kdebug installed.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import platform
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_kernels")
PHASES = ("parse", "typeinfer", "lower", "expand_deferred", "link_runtime", "optimize",
          "finish", "validate", "emit", "load")
THROUGH_OPTIMIZE = PHASES[:PHASES.index("optimize") + 1]
COMPILE_HEADER = "| sample | kernel | import+init | cold compile | warm compile | warm through optimize |"
SAXPY_HEADER = "| saxpy, n = "
TARGET_OPTIMIZE_MS = 50.0
TARGET_SAXPY_RATIO = 2.0
# issue 17's targets: warm CPU compiles through load, ratios against numba-cuda, launch, memcheck
TARGET_WARM_CPU_MS = {"saxpy": 10.0, "matmul_tiled": 40.0}
TARGET_WARM_PTX_RATIO = 3.5  # numba-cuda's warm compile_ptx / kdebug's
TARGET_COLD_RATIO = 5.0  # numba-cuda's import + first compile_ptx / kdebug's, fresh processes
TARGET_LAUNCH_US = 10.0
TARGET_MEMCHECK_RATIO = 1.2  # saxpy 2^24 with memcheck / without
LAUNCHES = 200  # launches of one 256-thread block per timed batch
SUMMARY_HEADER = "| saxpy | kdebug CPU | kdebug PTX | numba-cuda compile_ptx | ratio numba / kdebug (CPU / PTX) | target |"
PTX_CC = (9, 0)  # numba needs a compute capability when there is no GPU to ask


def median(xs):
    return statistics.median(xs) if xs else None


def ms(x, digits=1) -> str:
    return "—" if x is None else f"{x * 1e3:.{digits}f}"


# ---- children ----------------------------------------------------------------------------------
class Recorder:
    """Collects job and phase events from a session bus, per job id."""

    def __init__(self, bus) -> None:
        self.jobs: dict[int, dict] = {}
        self.order: list[int] = []
        bus.subscribe(self)

    def __call__(self, ev) -> None:
        kind = getattr(ev, "kind", "")
        job = getattr(ev, "job", None)
        if kind == "job_requested":
            self.jobs[job] = {"name": ev.name, "parent": ev.parent, "reason": getattr(ev, "reason", ""),
                              "argtypes": list(getattr(ev, "argtypes", [])), "phases": {},
                              "t_requested": ev.t, "t_finished": None, "failed": None,
                              "c_requested": time.process_time()}
            self.order.append(job)
        elif kind == "phase_finished" and job in self.jobs:
            ph = self.jobs[job]["phases"]
            ph[ev.phase] = ph.get(ev.phase, 0.0) + ev.duration
        elif kind == "job_finished" and job in self.jobs:
            self.jobs[job]["t_finished"] = ev.t
            self.jobs[job]["c_finished"] = time.process_time()
        elif kind == "job_failed" and job in self.jobs:
            self.jobs[job]["failed"] = getattr(ev, "error", "failed")

    def toplevel(self) -> list[int]:
        return [j for j in self.order if self.jobs[j]["parent"] is None]


def _fresh_session(A, snapshots: bool = False, tiered: bool | None = None, **more):
    """A new session and driver with every frontend cache cleared: nothing is reused. Without
    snapshots by default, as a plain ``python script.py``'s session (kdebug versions before
    snapshots could be turned off always recorded them). ``tiered``: the CPU target's tiers on or
    off (None: the session's default)."""
    A.set_session(None)
    for modname, attr in (("kdebug.frontend.typeinfer", "_cache"), ("kdebug.driver.job", "_source_hash")):
        cache = getattr(sys.modules.get(modname), attr, None)
        if isinstance(cache, dict):
            cache.clear()
    try:
        session = A.Session(backend="cpu", snapshots=snapshots,
                            **({} if tiered is None else {"tiered": tiered}), **more)
    except TypeError:  # no snapshots (or tiers) option: every phase is recorded
        session = A.Session(backend="cpu")
    A.set_session(session)
    return session


def child_kdebug(sample: str, repeat: int, out_path: str, quick: bool = False) -> None:
    """One sample in a fresh process: import, first compiles (cold), then warm recompiles. ``quick``: the
    compile with every snapshot recorded (seconds for a kernel with many jobs) is measured only where the
    report shows it, saxpy's."""
    result: dict = {"sample": os.path.basename(sample), "kernels": []}
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        import numpy  # noqa: F401 - part of what a kdebug user imports
        import kdebug.cuda  # noqa: F401
        import kdebug.session.live as A
        import kdebug.frontend.typeinfer  # noqa: F401
        import kdebug.targets.cpu  # noqa: F401
        result["import_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        session = _fresh_session(A)
        result["session_s"] = time.perf_counter() - t1
        result["import_cpu_s"] = time.process_time() - c0  # import + session start, process CPU time
        rec = Recorder(session.bus)
        sys.argv = [sample]
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                runpy.run_path(sample, run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - a failing sample still has compile figures
            result["run_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        with contextlib.suppress(ImportError):  # the sample's background compiles, before the warm ones
            from kdebug.targets.cpu import tiers
            tiers.wait_all()
        records = getattr(session.driver, "records", {})
        for jid in rec.toplevel():
            info = rec.jobs[jid]
            k = {"name": info["name"], "argtypes": info["argtypes"], "failed": info["failed"],
                 "jobs": 1 + sum(1 for j in rec.jobs.values() if j["parent"] is not None
                                 and j["t_requested"] >= info["t_requested"]
                                 and (info["t_finished"] is None or j["t_requested"] <= info["t_finished"]))}
            if info["t_finished"] is not None:
                k["cold_s"] = info["t_finished"] - info["t_requested"]
                k["cold_cpu_s"] = info["c_finished"] - info["c_requested"]
                k["cold_phases"] = info["phases"]
            record = records.get(jid)
            dispatcher = getattr(getattr(record, "job", None), "function", None)
            argtypes = getattr(record, "argtypes", None)
            if dispatcher is not None and argtypes is not None and not info["failed"]:
                _warm(A, dispatcher, argtypes, repeat, k,
                      snapshots=not quick or os.path.basename(sample) == "saxpy.py")
                _kdebug_ptx(A, dispatcher, info["argtypes"], repeat, k)
            result["kernels"].append(k)
        A.set_session(None)
    except BaseException as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    with open(out_path, "w") as fh:
        json.dump(result, fh)


def _warm(A, dispatcher, argtypes, repeat: int, k: dict, snapshots: bool = True) -> None:
    walls, cpus, phases = [], [], {}
    t1_walls, t1_cpus, t1_errors = [], [], []
    for _ in range(repeat):
        session = _fresh_session(A)
        rec = Recorder(session.bus)
        t, c = time.perf_counter(), time.process_time()
        try:
            compiled = session.compile_kernel(dispatcher, tuple(argtypes))
        except Exception as exc:  # noqa: BLE001
            k["warm_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            return
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        tiers = getattr(getattr(compiled, "artifact", None), "tiers", None)
        if tiers is not None:  # runnable now; the optimised code follows from the background thread
            tiers.wait()
            t1_walls.append(tiers.finished - t)
            t1_cpus.append(time.process_time() - c)  # both threads, from the start of the compile
            if tiers.error is not None:
                t1_errors.append(f"{type(tiers.error).__name__}: {tiers.error}"[:200])
        top = rec.jobs[rec.toplevel()[0]]["phases"]
        for name, d in top.items():
            phases.setdefault(name, []).append(d)
    k["warm_s"] = median(walls)  # to runnable code (tier 0 where the compile is tiered)
    k["warm_cpu_s"] = median(cpus)  # this process's CPU time: what a busy shared machine inflates least
    k["warm_phases"] = {name: median(v) for name, v in phases.items()}
    if t1_walls:
        k["tier1_s"], k["tier1_cpu_s"] = median(t1_walls), median(t1_cpus)  # to the optimised code
        if t1_errors:
            k["tier1_error"] = t1_errors[0]
        walls, cpus = [], []
        for _ in range(repeat):  # the same compile untiered (KDEBUG_TIERED=0): the optimised code at once
            session = _fresh_session(A, tiered=False)
            t, c = time.perf_counter(), time.process_time()
            session.compile_kernel(dispatcher, tuple(argtypes))
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        k["untiered_s"], k["untiered_cpu_s"] = median(walls), median(cpus)
    walls = []
    for _ in range(repeat if snapshots else 0):  # as the TUI, dump and --trace compile: every snapshot recorded
        session = _fresh_session(A, snapshots=True)
        t = time.perf_counter()
        session.compile_kernel(dispatcher, tuple(argtypes))
        walls.append(time.perf_counter() - t)
    k["warm_snapshots_s"] = median(walls)


# ---- per-pass recording: what recording every pass (and its remarks) costs a compile -------------
RECORDING_SAMPLES = ("saxpy", "matmul_tiled", "recursive_launch")
RECORDING_MODES = (
    ("off", "recording off (a plain run's compile, untiered)"),
    ("before", "per-pass recording, without remarks (as before remarks were kept)"),
    ("after", "per-pass recording with LLVM's remarks (missed ones from the recorded run, passed and "
              "analysis from a copy each)"),
    ("kept", "passes kept for a replay (the live TUI's default since the pass lab): the pipelines run "
             "unrecorded, each keeps its input as bitcode and a digest of its result"),
)
# and "replay": the CPU time of replaying a kept compile's passes and remarks (what "after" records),
# spent where and when someone looks at that job's passes (the TUI: the job shown)


def child_recording(sample: str, repeat: int, out_path: str) -> None:
    """One sample in a fresh process: its kernels learnt from one plain run, then each toplevel kernel
    compiled ``repeat`` times per mode, modes interleaved, CPU time of this process per compile."""
    result: dict = {"sample": os.path.basename(sample), "kernels": []}
    try:
        import kdebug.session.live as A
        from kdebug.targets import pass_record
        session = _fresh_session(A)
        rec = Recorder(session.bus)
        sys.argv = [sample]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(sample, run_name="__main__")
        records = session.driver.records
        collect, remarks_of = pass_record.collect_remarks, pass_record.remarks_of

        def plain_run(pass_builder, mod, passes, kind):  # the recorded run as it was: no remarks
            pb = pass_builder()
            pass_record.module_pass_manager(pb, passes).run(mod, pb)
            return []
        for jid in rec.toplevel():
            record = records.get(jid)
            if record is None or rec.jobs[jid]["failed"]:
                continue
            times: dict[str, list[float]] = {m: [] for m, _ in RECORDING_MODES}
            times["replay"] = []
            for _ in range(repeat):
                for mode, _ in RECORDING_MODES:
                    remarked = mode in ("after", "kept")
                    pass_record.collect_remarks = collect if remarked else (lambda *a, **k: [])
                    pass_record.remarks_of = remarks_of if remarked else plain_run
                    s2 = _fresh_session(A, snapshots=mode != "off", tiered=False,
                                        **({"passes_on_demand": True} if mode == "kept" else {}))
                    kept: list = []
                    s2.bus.subscribe(lambda ev: kept.append(ev) if ev.kind == "pass_replay" else None)
                    c = time.process_time()
                    s2.compile_kernel(record.job.function, tuple(record.argtypes))
                    times[mode].append(time.process_time() - c)
                    if mode == "kept":
                        from kdebug.passes import PipelineInput
                        if not kept:
                            raise RuntimeError("the kept compile kept no pipeline for a replay")
                        c = time.process_time()
                        for ev in kept:  # as the model's replayed_events does
                            pass_record.replay([PipelineInput.from_json(p) for p in ev.pipelines])
                        times["replay"].append(time.process_time() - c)
            pass_record.collect_remarks, pass_record.remarks_of = collect, remarks_of
            result["kernels"].append({"name": rec.jobs[jid]["name"], **{m: median(v) for m, v in times.items()}})
        A.set_session(None)
    except BaseException as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    with open(out_path, "w") as fh:
        json.dump(result, fh)


def bench_recording(repeat: int, timeout: float) -> int:
    print("# per-pass recording: compile CPU time, recording off / on (median of %d, modes interleaved)" % repeat)
    print()
    print(environment())
    print()
    for mode, what in RECORDING_MODES:
        print(f"- {mode}: {what}")
    print()
    print("- replay: replaying a kept compile's passes and remarks, where and when someone looks at them")
    print()
    print("| sample | kernel | off | on, before | on, after | kept | replay | before / off | after / off "
          "| kept / off | (kept + replay) / after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in RECORDING_SAMPLES:
        res = run_child(sys.executable, ["--child", "recording", "--sample", os.path.join(SAMPLES, name + ".py"),
                                         "--repeat", str(repeat)], timeout)
        if "error" in res:
            print(f"| {name} | error: {res['error'].splitlines()[0][:100]} | | | | | | | | | |")
            continue
        for k in res["kernels"]:
            print(f"| {name} | {k['name']} | {ms(k['off'])} | {ms(k['before'])} | {ms(k['after'])} | "
                  f"{ms(k['kept'])} | {ms(k['replay'])} | {_ratio(k['before'], k['off'])} | "
                  f"{_ratio(k['after'], k['off'])} | {_ratio(k['kept'], k['off'])} | "
                  f"{_ratio(k['kept'] + k['replay'], k['after'])} |")
    print()
    print("target: per-pass recording on at most 1.5x the compile CPU time with it off (kept / off: the "
          "TUI's default; a --trace or kdebug dump records every pass during the compile, after / off)")
    return 0


def _wait_tier1(compiled) -> None:
    """Until a tiered compile's optimised code is loaded (kdebug/targets/cpu/tiers.py)."""
    tiers = getattr(getattr(compiled, "artifact", None), "tiers", None)
    if tiers is not None:
        tiers.wait()


def _signature(argtypes) -> str:
    return "void(" + ", ".join(argtypes) + ")"


def _kdebug_ptx(A, dispatcher, argtypes, repeat: int, k: dict) -> None:
    """kdebug's own cuda.compile_ptx, when the PTX target exists."""
    from kdebug import cuda
    sig = _signature(argtypes)
    times, ptxas = [], []
    spent = _time_ptxas()
    for _ in range(max(2, repeat)):
        _fresh_session(A)
        spent[0] = 0.0
        t = time.perf_counter()
        try:
            try:
                cuda.compile_ptx(dispatcher.py_func, sig, cc=PTX_CC)
            except TypeError:
                cuda.compile_ptx(dispatcher, sig, cc=PTX_CC)
        except (ImportError, NotImplementedError) as exc:
            k["ptx_note"] = f"kdebug.cuda.compile_ptx is not available yet ({type(exc).__name__}: {exc})"[:200]
            return
        except Exception as exc:  # noqa: BLE001
            k["ptx_note"] = f"kdebug.cuda.compile_ptx failed: {type(exc).__name__}: {exc}".splitlines()[0][:200]
            return
        times.append(time.perf_counter() - t)
        ptxas.append(spent[0])
    k["ptx_first_s"], k["ptx_warm_s"] = times[0], median(times[1:])
    k["ptxas_warm_s"] = median(ptxas[1:])


def _time_ptxas() -> list:
    """Count the time kdebug's PTX target spends in its ptxas subprocess (numba's compile_ptx runs none).

    ``run_ptxas`` is re-exported (``kdebug.targets.ptx``) and may be bound by ``from ... import``
    elsewhere: every loaded kdebug module's binding of it is replaced, so whichever name a caller
    goes through is timed (patching only the defining module read 0 for such callers)."""
    spent = [0.0]
    try:
        import kdebug.targets.ptx.ptxas as ptx
    except ImportError:
        return spent
    original = getattr(ptx, "run_ptxas", None)
    if original is None:
        return spent
    if getattr(original, "_bench_timed", False):
        return original._bench_spent
    timed = _timed(original, spent)
    for name, mod in list(sys.modules.items()):
        if (name == "kdebug" or name.startswith("kdebug.")) and mod is not None:
            for attr, value in list(vars(mod).items()):
                if value is original:
                    setattr(mod, attr, timed)
    return spent


def _timed(original, spent: list):
    """``original``, adding the seconds each call takes to ``spent[0]``."""
    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t

    timed._bench_timed, timed._bench_spent = True, spent
    return timed


def child_compile_ptx(sample: str, kernels_json: str, repeat: int, out_path: str, numba: bool) -> None:
    """``cuda.compile_ptx`` on a sample's kernels in a fresh process: numba-cuda's (``numba``, run by
    the numba interpreter) or kdebug's. Cold = the import plus the first compile in the process."""
    import types
    result: dict = {"kernels": {}}
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            import numpy  # noqa: F401 - part of what a script imports (numba.cuda imports it too)
            if numba:
                from numba import cuda
            else:
                from kdebug import cuda
        except Exception as exc:  # noqa: BLE001
            result["unavailable"] = f"{'numba-cuda' if numba else 'kdebug'} is not importable by {sys.executable} " \
                                    f"({type(exc).__name__}: {exc})"
            return
        result["import_s"] = time.perf_counter() - t0
        result["import_cpu_s"] = time.process_time() - c0
        if numba:
            try:
                from importlib.metadata import version
                result["version"] = version("numba-cuda")
            except Exception:  # noqa: BLE001
                result["version"] = "?"
            # the samples say `from kdebug import cuda`: here that is numba.cuda
            fake = types.ModuleType("kdebug")
            fake.cuda = cuda
            sys.modules["kdebug"], sys.modules["kdebug.cuda"] = fake, cuda
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                ns = runpy.run_path(sample, run_name="kdebug_bench_sample")
        except Exception as exc:  # noqa: BLE001
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
            if "CudaSupportError" in why:
                why += " (it needed the CUDA driver while importing, e.g. for an eager signature; there is no GPU here)"
            result["error"] = f"the sample does not import under {'numba-cuda' if numba else 'kdebug'}: {why}"
            return
        first = True
        for name, argtypes in json.loads(kernels_json):
            key = f"{name}{_signature(argtypes)[4:]}"
            obj = ns.get(name)
            pyfunc = getattr(obj, "py_func", None)
            if pyfunc is None:
                result["kernels"][key] = {"error": "not a module-level kernel"}
                continue
            times, cpus = [], []
            try:
                for _ in range(1 + repeat):
                    t, c = time.perf_counter(), time.process_time()
                    cuda.compile_ptx(pyfunc, _signature(argtypes), cc=PTX_CC)
                    times.append(time.perf_counter() - t)
                    cpus.append(time.process_time() - c)  # ptxas runs in a child: not in this figure
            except Exception as exc:  # noqa: BLE001
                result["kernels"][key] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:120]}
                continue
            entry = {"first_s": times[0], "first_cpu_s": cpus[0], "warm_s": median(times[1:]),
                     "warm_cpu_s": median(cpus[1:]),
                     "first_in_process": first}
            first = False
            result["kernels"][key] = entry
    except BaseException as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        with open(out_path, "w") as fh:
            json.dump(result, fh)


def run_child(python: str, args: list[str], timeout: float) -> dict:
    fd, out_path = tempfile.mkstemp(suffix=".json", prefix="kdebug-bench-")
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    # numpy's OpenBLAS starts one spinning thread per core at import (~70 ms of CPU over its first
    # 200 ms here): a child that compiles in less time than that would count the spin as its own CPU
    # time. No compile uses BLAS; every child, kdebug's and numba-cuda's alike, runs with one thread.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        proc = subprocess.run([python, os.path.abspath(__file__), *args, "--out", out_path], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
        try:
            with open(out_path) as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            data = {"error": f"child exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"}
        return data
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    except OSError as exc:
        return {"error": f"cannot run {python}: {exc}"}
    finally:
        with contextlib.suppress(OSError):
            os.unlink(out_path)


# ---- saxpy: the CPU backend against numpy ------------------------------------------------------------
def bench_saxpy(n: int, runs: int) -> dict:
    import numpy as np

    import kdebug.session.live as A
    from kdebug import cuda

    ns = runpy.run_path(os.path.join(SAMPLES, "saxpy.py"), run_name="kdebug_bench_saxpy")
    saxpy = ns["saxpy"]
    _fresh_session(A)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    a = np.float32(2.5)
    d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(y), cuda.device_array_like(x)
    threads = 256
    blocks = (n + threads - 1) // threads
    saxpy[blocks, threads](a, d_x, d_y, d_out)  # compile outside the timing
    with contextlib.suppress(ImportError):  # every figure below is the optimised code's (tier 1)
        from kdebug.targets.cpu import tiers
        tiers.wait_all()
    expect = a * x + y
    np.testing.assert_allclose(d_out.copy_to_host(), expect, rtol=1e-6)

    variants = {
        "kdebug CPU, device arrays": lambda: saxpy[blocks, threads](a, d_x, d_y, d_out),
        "kdebug CPU, numpy arrays": lambda: saxpy[blocks, threads](a, x, y, out),
    }
    session = A.get_session()
    try:  # internal API: the same launcher on one core, for the scaling figure
        from kdebug.lang import types as T
        compiled = session.compile_kernel(saxpy, (T.float32,) + (T.typeof(x),) * 3)
        variants["kdebug CPU, one core"] = lambda: session.runtime.launch(
            compiled, (a, d_x, d_y, d_out), compiled.argtypes, (blocks, 1, 1), (threads, 1, 1), 0, parallel=False)
        variants["kdebug CPU, one core"]()
    except Exception as exc:  # noqa: BLE001
        variants.pop("kdebug CPU, one core", None)
        print(f"(one-core saxpy skipped: {type(exc).__name__}: {exc})")
    try:  # the same launch in a session without memcheck (kdebug run --no-memcheck)
        plain = A.Session(backend="cpu", memcheck=False)
        d_out2 = cuda.device_array_like(x)

        def no_memcheck():
            A.set_session(plain)
            try:
                saxpy[blocks, threads](a, d_x, d_y, d_out2)
            finally:
                A.set_session(session)

        no_memcheck()
        np.testing.assert_allclose(d_out2.copy_to_host(), expect, rtol=1e-6)
        variants["kdebug CPU, device arrays, no memcheck"] = no_memcheck
    except Exception as exc:  # noqa: BLE001
        print(f"(saxpy without memcheck skipped: {type(exc).__name__}: {exc})")
    variants["numpy a*x+y"] = lambda: a * x + y
    # round robin, so that whatever else the machine does hits every variant alike
    times = {name: [] for name in variants}
    for fn in variants.values():
        fn()
    for _ in range(runs):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    np.testing.assert_allclose(out, expect, rtol=1e-6)
    np.testing.assert_allclose(d_out.copy_to_host(), expect, rtol=1e-6)
    rows = {name: median(ts) for name, ts in times.items()}
    rows.setdefault("kdebug CPU, one core", None)

    def timeit(fn) -> float:
        fn()
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return median(ts)

    small = cuda.to_device(x[:threads]), cuda.to_device(y[:threads]), cuda.device_array(threads, np.float32)
    def launches():
        for _ in range(LAUNCHES):
            saxpy[1, threads](a, *small)

    overhead = timeit(launches) / LAUNCHES
    cpu = []
    for _ in range(max(3, runs // 3)):
        c = time.process_time()
        launches()
        cpu.append((time.process_time() - c) / LAUNCHES)  # this process's CPU: less inflated by a busy machine
    A.set_session(None)
    return {"n": n, "runs": runs, "rows": rows, "launch_overhead_s": overhead, "launch_cpu_s": median(cpu)}


def bench_tier_runs(runs: int, quick: bool) -> list[dict]:
    """Run time of each tier's code (tiers.py), round robin: saxpy on 2^22 float32 (2^16 quick) and
    matmul_tiled on 256x256 (64x64 quick), device arrays, median wall and process CPU time."""
    import numpy as np

    import kdebug.session.live as A
    from kdebug import cuda
    from kdebug.lang import types as T

    saxpy = runpy.run_path(os.path.join(SAMPLES, "saxpy.py"), run_name="kdebug_bench_saxpy")["saxpy"]
    matmul = runpy.run_path(os.path.join(SAMPLES, "matmul_tiled.py"), run_name="kdebug_bench_mm")["matmul_tiled"]
    n, m = (1 << 16, 64) if quick else (1 << 22, 256)
    x = cuda.to_device(np.ones(n, np.float32))
    mat = cuda.to_device(np.ones((m, m), np.float32))
    out = cuda.device_array((m, m), np.float32)
    cases = [(f"saxpy, 2^{n.bit_length() - 1} float32", saxpy, (np.float32(2), x, x, x), n // 256, 256),
             (f"matmul_tiled, {m}x{m} float32", matmul, (mat, mat, out), (m // 16, m // 16), (16, 16))]
    rows = []
    for label, kern, args, grid, block in cases:
        session = _fresh_session(A, tiered=True)
        compiled = session.compile_kernel(kern, tuple(T.typeof(a) for a in args))
        tiers = getattr(getattr(compiled, "artifact", None), "tiers", None)
        if tiers is None:
            rows.append({"label": label, "note": "not tiered"})
            continue
        tiers.wait()
        walls, cpus = {0: [], 1: []}, {0: [], 1: []}
        for _ in range(runs + 1):
            for tier in (0, 1):
                tiers.use(tier)
                t, c = time.perf_counter(), time.process_time()
                kern[grid, block](*args)
                walls[tier].append(time.perf_counter() - t)
                cpus[tier].append(time.process_time() - c)
        rows.append({"label": label, "error": None if tiers.error is None else str(tiers.error)[:200],
                     **{f"tier{k}_s": median(v[1:]) for k, v in walls.items()},
                     **{f"tier{k}_cpu_s": median(v[1:]) for k, v in cpus.items()}})
    A.set_session(None)
    return rows


def print_tiers(results, tier_runs) -> None:
    """Tiered compiles: time to runnable code and to the optimised code, against the untiered compile,
    and the run time of both tiers' code."""
    print("\n## Tiered CPU compiles (ms; warm, medians)\n")
    print("to runnable: compile_kernel returns (tier 0 loaded); to optimised: tier 1 loaded by the background "
          "thread, from the start of the compile; untiered: the same compile with tiers off (KDEBUG_TIERED=0); "
          "CPU: the process's CPU time (both threads)\n")
    print("| kernel | to runnable, wall | to runnable, CPU | to optimised, wall | to optimised, CPU | "
          "untiered, wall | untiered, CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for res in results:
        for k in res.get("kernels", []):
            if "tier1_s" in k:
                print(f"| {k['name']} | {ms(k.get('warm_s'))} | {ms(k.get('warm_cpu_s'))} | {ms(k.get('tier1_s'))} | "
                      f"{ms(k.get('tier1_cpu_s'))} | {ms(k.get('untiered_s'))} | {ms(k.get('untiered_cpu_s'))} |")
                if k.get("tier1_error"):
                    print(f"- {k['name']}: tier 1 failed: {k['tier1_error']}")
    if tier_runs:
        print("\n| run time of one launch (ms) | tier 0, wall | tier 1, wall | tier 0 / tier 1 | tier 0, CPU | "
              "tier 1, CPU |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in tier_runs:
            if "tier0_s" not in r:
                print(f"| {r['label']} | {r.get('note', '—')} | | | | |")
                continue
            print(f"| {r['label']} | {ms(r['tier0_s'], 2)} | {ms(r['tier1_s'], 2)} | {_ratio(r['tier0_s'], r['tier1_s'])} | "
                  f"{ms(r['tier0_cpu_s'], 2)} | {ms(r['tier1_cpu_s'], 2)} |")


# ---- profile -------------------------------------------------------------------------------------------
def profile_compile(repeat: int) -> None:
    """Per phase, Python versus LLVM (time inside llvmlite.binding's C calls), then cProfile."""
    import cProfile
    import pstats

    import llvmlite.binding.ffi as ffi

    import kdebug.session.live as A
    from kdebug.lang import types as T

    ns = runpy.run_path(os.path.join(SAMPLES, "saxpy.py"), run_name="kdebug_bench_saxpy")
    saxpy = ns["saxpy"]
    arr = T.Array(T.float32, 1, "C")
    argtypes = (T.float32, arr, arr, arr)
    wrapper = ffi._lib_fn_wrapper
    original = wrapper.__call__
    clock = {"llvm": 0.0}

    def timed_call(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            clock["llvm"] += time.perf_counter() - t

    split: dict[str, list] = {}
    walls, llvm_totals = [], []
    wrapper.__call__ = timed_call
    try:
        for _ in range(repeat + 1):
            session = _fresh_session(A)
            marks = {}

            def on_event(ev, marks=marks):
                if ev.kind == "phase_started" and ev.parent is None:
                    marks[ev.phase] = clock["llvm"]
                elif ev.kind == "phase_finished" and ev.parent is None and ev.phase in marks:
                    split.setdefault(ev.phase, []).append((ev.duration, clock["llvm"] - marks[ev.phase]))

            session.bus.subscribe(on_event)
            clock["llvm"] = 0.0
            t = time.perf_counter()
            compiled = session.compile_kernel(saxpy, argtypes)
            walls.append(time.perf_counter() - t)
            llvm_totals.append(clock["llvm"])
            _wait_tier1(compiled)  # the background compile, outside the figures
    finally:
        wrapper.__call__ = original
    print(f"\n## Profile: warm compile of saxpy, Python versus LLVM per phase (medians of {repeat + 1}, ms)\n")
    print("| phase | wall | in LLVM (C calls) | Python |")
    print("|---|---:|---:|---:|")
    for phase in PHASES:
        rows = split.get(phase, [])
        if rows:
            wall = median([w for w, _ in rows])
            llvm = median([c for _, c in rows])
            print(f"| {phase} | {ms(wall, 2)} | {ms(llvm, 2)} | {ms(wall - llvm, 2)} |")
    wall, llvm = median(walls), median(llvm_totals)
    print(f"| whole compile_kernel | {ms(wall, 2)} | {ms(llvm, 2)} | {ms(wall - llvm, 2)} |")

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(repeat):
        session = _fresh_session(A)
        _wait_tier1(session.compile_kernel(saxpy, argtypes))  # the foreground's profile, then tier 1's
    prof.disable()
    print(f"\ncProfile of {repeat} warm saxpy compiles, top functions by own time:\n")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(14)
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))

    import numpy as np
    from kdebug import cuda
    _fresh_session(A)
    x = cuda.to_device(np.ones(256, np.float32))
    saxpy[1, 256](np.float32(2), x, x, x)
    a = np.float32(2)
    t = time.perf_counter()
    _launch_many(saxpy, (a, x, x, x), 2000)
    per_launch = (time.perf_counter() - t) / 2000
    prof = cProfile.Profile()
    prof.enable()
    _launch_many(saxpy, (a, x, x, x), 2000)
    prof.disable()
    print(f"\nOne 256-thread block launched 2000 times from a small function: {per_launch * 1e6:.0f} µs a launch."
          "\ncProfile of those launches (the launch path's Python), top by own time:\n")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(14)
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))
    A.set_session(None)


def _launch_many(kernel, args, count: int) -> None:
    """A user's small launch loop (the launch path looks up its caller's frame)."""
    for _ in range(count):
        kernel[1, 256](*args)


def _kernel(results, sample: str, name: str):
    """(the sample's kdebug result, the kernel's kdebug entry, its numba entry, its kdebug-PTX entry)."""
    for res in results:
        if res.get("sample") != sample:
            continue
        for k in res.get("kernels", []):
            if k["name"] == name:
                key = f"{name}{_signature(k['argtypes'])[4:]}"
                return (res, k, res.get("numba", {}).get("kernels", {}).get(key, {}),
                        res.get("kdebug_ptx", {}).get("kernels", {}).get(key, {}))
    return None


def _ratio(num, den) -> str:
    return "—" if num is None or not den else f"{num / den:.1f}×"


def _verdict(ok) -> str:
    return "not measured" if ok is None else ("met" if ok else "NOT met")


def print_summary(results, sx) -> list[str]:
    """The issue's table for saxpy: kdebug CPU, kdebug PTX and numba-cuda side by side, with the ratios
    and targets; returns the target lines for the targets section."""
    found = _kernel(results, "saxpy.py", "saxpy")
    lines = []
    print("\n## Summary: saxpy, kdebug against numba-cuda (ms; fresh processes; warm = median)\n")
    if found is None:
        print("(saxpy was not measured)")
        return ["- issue targets: not measured (saxpy sample missing or failed)"]
    res, k, nbk, kpk = found
    nb = res.get("numba", {})
    kp = res.get("kdebug_ptx", {})
    cpu_import = (res.get("import_s") or 0) + (res.get("session_s") or 0) if "import_s" in res else None
    ptx_import, nb_import = kp.get("import_s"), nb.get("import_s")

    def add(a, b):
        return None if a is None or b is None else a + b

    cpu_cold, ptx_cold, nb_cold = add(cpu_import, k.get("cold_s")), add(ptx_import, kpk.get("first_s")), \
        add(nb_import, nbk.get("first_s"))
    cold_ok = None if nb_cold is None or cpu_cold is None or ptx_cold is None else \
        min(nb_cold / cpu_cold, nb_cold / ptx_cold) >= TARGET_COLD_RATIO
    ptx_ok = None if nbk.get("warm_s") is None or not kpk.get("warm_s") else \
        nbk["warm_s"] / kpk["warm_s"] >= TARGET_WARM_PTX_RATIO
    warm_cpu = k.get("warm_s")
    rows = [
        ("import (kdebug CPU: + session start)", cpu_import, ptx_import, nb_import, ""),
        ("first compile in the process (CPU through load / PTX)", k.get("cold_s"), kpk.get("first_s"),
         nbk.get("first_s"), ""),
        ("import + first compile", cpu_cold, ptx_cold, nb_cold, f"≥ {TARGET_COLD_RATIO:.0f}×: {_verdict(cold_ok)}"),
        ("warm compile, CPU through load", warm_cpu, None, None,
         f"≤ {TARGET_WARM_CPU_MS['saxpy']:.0f} ms: "
         f"{_verdict(None if warm_cpu is None else warm_cpu * 1e3 <= TARGET_WARM_CPU_MS['saxpy'])}"),
        ("warm compile, CPU through load, to the optimised code (tier 1 loaded)", k.get("tier1_s"), None, None, ""),
        ("warm compile, CPU through load, untiered (KDEBUG_TIERED=0)", k.get("untiered_s"), None, None, ""),
        ("warm compile, CPU through load, every snapshot recorded (TUI, dump, --trace)",
         k.get("warm_snapshots_s"), None, None, ""),
        ("warm compile_ptx", None, kpk.get("warm_s"), nbk.get("warm_s"),
         f"≥ {TARGET_WARM_PTX_RATIO}×: {_verdict(ptx_ok)}"),
        ("import + first compile, process CPU time", add(res.get("import_cpu_s"), k.get("cold_cpu_s")),
         add(kp.get("import_cpu_s"), kpk.get("first_cpu_s")), add(nb.get("import_cpu_s"), nbk.get("first_cpu_s")),
         "CPU time: less inflated by a busy machine than wall time"),
        ("warm compile, process CPU time (a ptxas child not counted)", k.get("warm_cpu_s"), kpk.get("warm_cpu_s"),
         nbk.get("warm_cpu_s"), "CPU time: less inflated by a busy machine than wall time"),
    ]
    print(SUMMARY_HEADER)
    print("|---|---:|---:|---:|---:|---|")
    for label, cpu, ptx, numba, target in rows:
        ratio = f"{_ratio(numba, cpu)} / {_ratio(numba, ptx)}" if numba is not None else "—"
        print(f"| {label} | {ms(cpu)} | {ms(ptx)} | {ms(numba)} | {ratio} | {target} |")
    if k.get("ptxas_warm_s") is not None:
        print(f"\nptxas inside kdebug's warm compile_ptx: {ms(k['ptxas_warm_s'])} ms (numba's runs none)")
    for name, limit in TARGET_WARM_CPU_MS.items():
        sample = "saxpy.py" if name == "saxpy" else f"{name}.py"
        hit = _kernel(results, sample, name)
        warm = hit[1].get("warm_s") if hit else None
        cpu = hit[1].get("warm_cpu_s") if hit else None
        tier1 = ""
        if hit and hit[1].get("tier1_s") is not None:
            tier1 = (f"; the optimised code (tier 1) after {ms(hit[1]['tier1_s'])} ms, {ms(hit[1].get('tier1_cpu_s'))} "
                     f"ms of CPU; untiered {ms(hit[1].get('untiered_s'))} ms, {ms(hit[1].get('untiered_cpu_s'))} ms of CPU")
        lines.append(f"- warm compile of {name} on the CPU target through load: {ms(warm)} ms, {ms(cpu)} ms of process "
                     f"CPU time to runnable code "
                     f"(target <= {limit:.0f} ms: {_verdict(None if warm is None else warm * 1e3 <= limit)}){tier1}")
    if nbk.get("warm_s") is not None and kpk.get("warm_s"):
        lines.append(f"- warm compile_ptx of saxpy: numba-cuda's takes {nbk['warm_s'] / kpk['warm_s']:.2f}x kdebug's "
                     f"(target >= {TARGET_WARM_PTX_RATIO}x: {_verdict(ptx_ok)})")
    else:
        lines.append("- warm compile_ptx of saxpy against numba-cuda: not measured (numba-cuda not run)")
    if cold_ok is not None:
        lines.append(f"- import + first compile, fresh process: numba-cuda's takes {nb_cold / cpu_cold:.2f}x kdebug's "
                     f"CPU and {nb_cold / ptx_cold:.2f}x kdebug's PTX (target >= {TARGET_COLD_RATIO:.0f}x: "
                     f"{_verdict(cold_ok)})")
    overhead = sx["launch_overhead_s"] * 1e6
    lines.append(f"- launch of a compiled kernel (one block of 256 threads, device arrays): {overhead:.1f} µs, "
                 f"{sx['launch_cpu_s'] * 1e6:.1f} µs of process CPU time "
                 f"(target <= {TARGET_LAUNCH_US:.0f} µs: {_verdict(overhead <= TARGET_LAUNCH_US)})")
    checked, plain = sx["rows"].get("kdebug CPU, device arrays"), sx["rows"].get("kdebug CPU, device arrays, no memcheck")
    if checked and plain:
        lines.append(f"- memcheck on saxpy: {checked / plain:.2f}x the unchecked run "
                     f"(target <= {TARGET_MEMCHECK_RATIO}x: {_verdict(checked / plain <= TARGET_MEMCHECK_RATIO)})")
    return lines


# ---- the report -----------------------------------------------------------------------------------------
def environment() -> str:
    import llvmlite
    import numpy as np
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    blas = ", ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ)
    blas += f"{', ' if blas else ''}children: OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '1')}"
    return (f"machine: {os.cpu_count()} cores ({cpu}); Python {platform.python_version()}; numpy {np.__version__}; "
            f"llvmlite {llvmlite.__version__}; {blas or 'OPENBLAS_CORETYPE not set'}; {load_average()}")


def load_average() -> str:
    """The machine's load average (1, 5, 15 min): on a shared machine, what the figures were measured under."""
    try:
        return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def compile_bytecode() -> str:
    """Byte-compile kdebug's modules before the fresh-process rows, as ``pip install`` does for an installed
    package (numba-cuda's came with its install): a development checkout run with PYTHONDONTWRITEBYTECODE
    set would otherwise compile every module from source in each child (~90 ms of the import row)."""
    r = subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "kdebug")],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "kdebug's bytecode could not be written (each child compiles from source): " + \
            (r.stdout + r.stderr).strip().splitlines()[-1][:200]
    return "kdebug's modules byte-compiled first (as an installed package's are)"


def numba_python(args) -> str:
    return args.numba_python or os.environ.get("KDEBUG_BENCH_NUMBA_PYTHON") or sys.executable


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (for the smoke test)")
    p.add_argument("--repeat", type=int, help="warm compiles per kernel (default 7, quick 2)")
    p.add_argument("--saxpy-n", type=int, help="saxpy elements (default 2**24, quick 2**16)")
    p.add_argument("--runs", type=int, help="timed saxpy runs (default 15, quick 3)")
    p.add_argument("--samples", default="*.py", help="glob(s) of sample_kernels/ files, comma-separated (default *.py)")
    p.add_argument("--numba-python", help="interpreter with numba-cuda (default: this one; "
                                          "or $KDEBUG_BENCH_NUMBA_PYTHON)")
    p.add_argument("--no-numba", action="store_true", help="skip numba-cuda")
    p.add_argument("--profile", action="store_true", help="also profile warm compile and the launch path")
    p.add_argument("--timeout", type=float, help="seconds per child process (default 120, quick 20)")
    p.add_argument("--recording", action="store_true",
                   help="only: compile CPU time with per-pass recording off / on (saxpy, matmul_tiled, recursive_launch)")
    p.add_argument("--child", choices=("kdebug", "numba", "kdebug-ptx", "recording"), help=argparse.SUPPRESS)
    p.add_argument("--sample", help=argparse.SUPPRESS)
    p.add_argument("--kernels", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 7)
    if args.child == "kdebug":
        child_kdebug(args.sample, repeat, args.out, quick=args.quick)
        return 0
    if args.child in ("numba", "kdebug-ptx"):
        child_compile_ptx(args.sample, args.kernels, repeat, args.out, numba=args.child == "numba")
        return 0
    if args.child == "recording":
        child_recording(args.sample, repeat, args.out)
        return 0
    if args.recording:
        return bench_recording(repeat, args.timeout or 600.0)

    sys.path.insert(0, ROOT)
    n = args.saxpy_n or (1 << 16 if args.quick else 1 << 24)
    runs = args.runs or (3 if args.quick else 15)
    timeout = args.timeout or (60.0 if args.quick else 120.0)  # a loaded machine is slow, not wrong
    budget = 8.0 if args.quick else float("inf")  # seconds for all sample children together
    started = time.perf_counter()
    print("# kdebug compile and CPU-backend benchmark" + (" (--quick)" if args.quick else ""))
    print()
    print(environment())
    print(f"warm: median of {repeat} compiles, each with a fresh session and driver and cleared frontend caches")
    print(compile_bytecode())

    # saxpy first: it is the reference kernel of the targets, measured even when --quick runs out of time
    found = {p for pattern in args.samples.split(",") for p in glob.glob(os.path.join(SAMPLES, pattern.strip()))}
    samples = sorted(found, key=lambda p: (os.path.basename(p) != "saxpy.py", p))
    results = []
    for path in samples:
        if results and time.perf_counter() - started > budget:  # saxpy always runs
            results.append({"sample": os.path.basename(path), "error": "skipped (--quick time budget)"})
            continue
        res = run_child(sys.executable, ["--child", "kdebug", "--sample", path, "--repeat", str(repeat),
                                         *(["--quick"] if args.quick else [])], timeout)
        res.setdefault("sample", os.path.basename(path))
        results.append(res)

    numba_py = numba_python(args)
    numba_note = "skipped (--no-numba)" if args.no_numba else None
    numba_version = None
    for res in results:
        kernels = [(k["name"], k["argtypes"]) for k in res.get("kernels", []) if "warm_s" in k]
        if numba_note or not kernels:
            continue
        nb = run_child(numba_py, ["--child", "numba", "--sample", os.path.join(SAMPLES, res["sample"]),
                                  "--kernels", json.dumps(kernels), "--repeat", str(repeat)], timeout)
        if "unavailable" in nb:
            numba_note = nb["unavailable"] + "; install it (not a kdebug dependency) with " \
                                             "pip install 'numba-cuda[cu13]' to compare"
            break
        numba_version = nb.get("version", numba_version)
        res["numba"] = nb

    # kdebug's own compile_ptx in a fresh process (import + first compile, then warm), like numba's child
    for res in results:
        kernels = [(k["name"], k["argtypes"]) for k in res.get("kernels", []) if "warm_s" in k]
        if not kernels or (args.quick and res["sample"] != "saxpy.py"):
            continue
        res["kdebug_ptx"] = run_child(sys.executable, ["--child", "kdebug-ptx", "--sample",
                                                       os.path.join(SAMPLES, res["sample"]),
                                                       "--kernels", json.dumps(kernels), "--repeat", str(repeat)],
                                      timeout)

    # ---- table 1: compile latency ----
    print("\n## Compile latency (ms)\n")
    print("cold: first compile of the kernel in a fresh process (import+init: importing kdebug and starting the "
          "session, once per sample); warm: through load; numba-cuda: cuda.compile_ptx "
          f"(cc {PTX_CC[0]}.{PTX_CC[1]}), cold = import + first compile in a fresh process; kdebug PTX: "
          "kdebug.cuda.compile_ptx, cold = import + first compile in a fresh process, warm measured after the CPU "
          "compiles (its ptxas column: time in ptxas, which numba's compile_ptx never runs)\n")
    print(COMPILE_HEADER + " numba-cuda cold | numba-cuda warm | kdebug PTX cold | kdebug PTX warm | of which ptxas | jobs |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for res in results:
        if "error" in res and not res.get("kernels"):
            print(f"| {res['sample']} | — | — | — | — | — | — | — | — | — | — | — |")
            notes.append(f"{res['sample']}: {res['error'].strip().splitlines()[-1][:200]}")
            continue
        if res.get("run_error"):
            notes.append(f"{res['sample']}: the sample itself failed: {res['run_error']}")
        nb = res.get("numba", {})
        if nb.get("error"):
            notes.append(f"{res['sample']} under numba-cuda: {nb['error']}")
        init = (res.get("import_s") or 0) + (res.get("session_s") or 0)
        for i, k in enumerate(res.get("kernels", [])):
            label = f"{k['name']}({', '.join(k['argtypes'])})"
            through = None
            if "warm_phases" in k:
                through = sum(k["warm_phases"].get(ph, 0.0) for ph in THROUGH_OPTIMIZE)
            key = f"{k['name']}{_signature(k['argtypes'])[4:]}"
            nbk = nb.get("kernels", {}).get(key, {})
            if nbk.get("error"):
                notes.append(f"numba-cuda, {label}: {nbk['error']}")
            nb_cold = None
            if "first_s" in nbk:
                nb_cold = nbk["first_s"] + (nb.get("import_s", 0) if nbk.get("first_in_process") else 0)
            kp = res.get("kdebug_ptx", {})
            kpk = kp.get("kernels", {}).get(key, {})
            if kpk.get("error"):
                notes.append(f"kdebug compile_ptx, {label}: {kpk['error']}")
            ptx_cold = None
            if "first_s" in kpk:
                ptx_cold = kpk["first_s"] + (kp.get("import_s", 0) if kpk.get("first_in_process") else 0)
            if k.get("ptx_note"):
                notes.append(f"{label}: {k['ptx_note']}")
            if k.get("warm_error"):
                notes.append(f"{label}: warm compile failed: {k['warm_error']}")
            if k.get("failed"):
                notes.append(f"{label}: compile failed: {k['failed'][:200]}")
            print(f"| {res['sample'] if i == 0 else ''} | {label} | {ms(init) if i == 0 else ''} | "
                  f"{ms(k.get('cold_s'))} | {ms(k.get('warm_s'))} | {ms(through)} | {ms(nb_cold)} | "
                  f"{ms(nbk.get('warm_s'))} | {ms(ptx_cold)} | {ms(k.get('ptx_warm_s'))} | {ms(k.get('ptxas_warm_s'))} | {k.get('jobs', 1)} |")
    if numba_note:
        notes.insert(0, f"numba-cuda: {numba_note}")
    elif numba_version:
        notes.insert(0, f"numba-cuda {numba_version}, run by {numba_py}")
    # deduplicate the kdebug PTX note (one per kernel otherwise)
    seen, uniq = set(), []
    for note in notes:
        tail = note.split(": ", 1)[-1]
        if "compile_ptx is not available" in note:
            if tail in seen:
                continue
            seen.add(tail)
        uniq.append(note)
    for note in uniq:
        print(f"- {note}")

    # ---- table 2: warm phases ----
    print("\n## Warm compile by phase (ms, medians; the toplevel job's phases, which include its deferred jobs)\n")
    print("| kernel | " + " | ".join(PHASES) + " |")
    print("|---|" + "---:|" * len(PHASES))
    for res in results:
        for k in res.get("kernels", []):
            if "warm_phases" in k:
                print(f"| {k['name']} | " + " | ".join(ms(k["warm_phases"].get(ph), 2) for ph in PHASES) + " |")

    print("\n## Cold compile by phase (ms; the kernel's first compile in its process)\n")
    print("| kernel | " + " | ".join(PHASES) + " |")
    print("|---|" + "---:|" * len(PHASES))
    for res in results:
        for k in res.get("kernels", []):
            if "cold_phases" in k:
                print(f"| {k['name']} | " + " | ".join(ms(k["cold_phases"].get(ph), 2) for ph in PHASES) + " |")

    saxpy_optimize = None
    for res in results:
        for k in res.get("kernels", []):
            if res["sample"] == "saxpy.py" and k["name"] == "saxpy" and "warm_phases" in k:
                saxpy_optimize = sum(k["warm_phases"].get(ph, 0.0) for ph in THROUGH_OPTIMIZE)

    # ---- table 3: saxpy ----
    sx = bench_saxpy(n, runs)
    numpy_t = sx["rows"]["numpy a*x+y"]
    exp = n.bit_length() - 1
    size = f"2^{exp}" if n == 1 << exp else str(n)
    print(f"\n## CPU-backend saxpy against numpy (medians of {runs} runs)\n")
    print(f"{SAXPY_HEADER}{size} float32 | time (ms) | ratio to numpy | GB/s (12 bytes per element) |")
    print("|---|---:|---:|---:|")
    for name, t in sx["rows"].items():
        ratio = "—" if t is None else f"{t / numpy_t:.2f}"
        gbs = "—" if t is None else f"{12 * n / t / 1e9:.1f}"
        print(f"| {name} | {ms(t, 2)} | {ratio} | {gbs} |")
    print(f"\nlaunch overhead (one block of 256 threads, device arrays, median of batches of {LAUNCHES}): "
          f"{sx['launch_overhead_s'] * 1e6:.1f} µs (process CPU time {sx['launch_cpu_s'] * 1e6:.1f} µs)")

    tier_runs = bench_tier_runs(max(3, runs // 3), args.quick)
    issue_targets = print_summary(results, sx)
    print_tiers(results, tier_runs)

    # ---- targets ----
    print("\n## Targets (reported, not asserted)\n")
    for line in issue_targets:
        print(line)
    if saxpy_optimize is not None:
        ok = "met" if saxpy_optimize * 1e3 <= TARGET_OPTIMIZE_MS else "NOT met"
        print(f"- warm compile of saxpy through optimize: {ms(saxpy_optimize)} ms "
              f"(target <= {TARGET_OPTIMIZE_MS:.0f} ms: {ok})")
    else:
        print("- warm compile of saxpy through optimize: not measured (saxpy sample missing or failed)")
    ratio = sx["rows"]["kdebug CPU, device arrays"] / numpy_t
    ok = "met" if ratio <= TARGET_SAXPY_RATIO else "NOT met"
    print(f"- CPU saxpy on {size} floats: {ratio:.2f}x numpy's time (target <= {TARGET_SAXPY_RATIO:.0f}x: {ok})"
          + (" — --quick size, not the target's 2^24" if n != 1 << 24 else ""))

    if args.profile:
        profile_compile(repeat)
    print(f"\n(total {time.perf_counter() - started:.1f} s; at the end, {load_average()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
