"""benchmarks/bench_compile.py --quick still runs and prints its tables (no timed assertions)."""
import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "benchmarks", "bench_compile.py")


def test_bench_compile_quick_runs_and_prints_its_tables():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, SCRIPT, "--quick"],
                       capture_output=True, text=True, timeout=90, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = r.stdout
    assert "| sample | kernel | import+init | cold compile | warm compile | warm through optimize |" in out
    assert "| saxpy.py | saxpy(float32, float32[::1], float32[::1], float32[::1]) |" in out
    assert "| saxpy, n = 2^16 float32 | time (ms) | ratio to numpy |" in out
    assert "warm compile of saxpy through optimize:" in out
    # the side-by-side table and its targets (numba-cuda may be absent: its cells say so)
    assert "| saxpy | kdebug CPU | kdebug PTX | numba-cuda compile_ptx | ratio numba / kdebug (CPU / PTX) | target |" in out
    assert "| warm compile, CPU through load |" in out
    assert "warm compile of saxpy on the CPU target through load:" in out
    assert "launch of a compiled kernel (one block of 256 threads, device arrays):" in out
    assert "Traceback" not in out + r.stderr


def test_bench_warp_quick_runs_and_prints_its_table():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_warp.py"), "--quick"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| kernel | memcheck | form | kdebug | numpy sum | kdebug / numpy |" in r.stdout
    assert "| strided | on | region form, rounds |" in r.stdout and "| chunked | off | region form |" in r.stdout
    assert "| strided | off | coroutines, lockstep |" in r.stdout
    assert "| strided | off | region form, lockstep off |" in r.stdout


def test_bench_grad_quick_runs_and_prints_its_table():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_grad.py"), "--quick"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| kernel over 2^16 float64 elements (CPU backend) | ns / element | ratio to f |" in r.stdout
    for row in ("| f (primal) |", "| grad(f) |", "| grad(grad(f)) |", "| numpy, analytic d f / d x |",
                "| saxpy | numpy's own (page-aligned) |", "| block reduction (shared, barriers; outside the target) |"):
        assert row in r.stdout


def test_bench_sanitizers_quick_prints_the_side_by_side_table():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_sanitizers.py"), "--quick"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| kernel | none (ms) | memcheck (ms) | racecheck (ms) | initcheck (ms) |" in r.stdout
    assert "| tiled matmul 128x128 |" in r.stdout and "| reduction, 2^16 float32 |" in r.stdout
    assert "target: racecheck at most 10x" in r.stdout


def test_bench_export_quick_prints_its_table():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_export.py"), "--quick"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| session | trace | page (target < 10 MB) | read the trace, build the model |" in r.stdout
    assert "| 100 jobs, 0 passes a job |" in r.stdout and "| 100 jobs, 30 passes a job |" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_bench_record_quick_prints_both_ways_and_that_they_agree():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_record.py"), "--quick"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "two-step wall" in r.stdout and "whole wall" in r.stdout
    row = [line for line in r.stdout.splitlines() if line.startswith("nested_deferred.py")]
    assert len(row) == 1 and row[0].endswith("yes"), r.stdout  # the two ways record the same passes and modules


def test_ptxas_timer_counts_calls_through_any_binding(monkeypatch):
    """bench_compile's ptxas column: a caller holding ``run_ptxas`` by a ``from ... import`` binding
    (as the package's re-export does) is timed too, not only calls through the defining module."""
    import importlib.util
    import time
    import types

    import kdebug.targets.ptx.ptxas as ptxas

    spec = importlib.util.spec_from_file_location("bench_compile_under_test", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    calls = []

    def fake_run_ptxas(*args, **kwargs):
        calls.append(args)
        time.sleep(0.002)
        return {}

    monkeypatch.setattr(ptxas, "run_ptxas", fake_run_ptxas)
    holder = types.ModuleType("kdebug._ptxas_binding_probe")
    holder.run_ptxas = fake_run_ptxas  # what `from kdebug.targets.ptx.ptxas import run_ptxas` leaves
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    spent = bench._time_ptxas()
    holder.run_ptxas("ptx", "sm_90", False)
    assert calls and spent[0] > 0
    through_module = spent[0]
    ptxas.run_ptxas("ptx", "sm_90", False)
    assert len(calls) == 2 and spent[0] > through_module


def test_bench_gpu_without_a_gpu_says_what_it_needs():
    """Where pycuda cannot drive a GPU, bench_gpu.py says so in one line instead of a traceback."""
    import pytest
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_gpu
    finally:
        sys.path.pop(0)
    if not bench_gpu.pycuda_missing():
        pytest.skip("pycuda drives a GPU here: bench_gpu.py runs for real (scripts/gpu_check.sh)")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_gpu.py"), "--quick"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 1
    assert r.stderr.startswith("bench_gpu.py needs a CUDA GPU and pycuda: ")
    assert "Traceback" not in r.stdout + r.stderr


def test_bench_launch_quick_prints_its_tables():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_launch.py"), "--quick"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = r.stdout
    assert "| launch | wall | thread CPU | CPU / empty ctypes call | CPU / the launcher's own call |" in out
    for row in ("| kdebug launch |", "| kdebug launch, somebody listening |", "| empty ctypes call (labs) |",
                "| saxpy |", "| steady state (median) |"):
        assert row in out
    assert "target: launch overhead <= 10 µs of CPU time:" in out
    assert "target: warm compile of saxpy through load <= 10 ms:" in out
    assert "Traceback" not in out + r.stderr


def test_bench_fuzz_strategy_quick_prints_its_table():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_fuzz_strategy.py"), "--quick"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| strategy | runner | programs | wall (s) | programs / s | findings seen |" in r.stdout
    assert "| worklist | fuzz-strategy (cold traced child) | 2 |" in r.stdout
    assert "| recursive | warm trial (forked debuggee) | 2 |" in r.stdout
    assert "recursive: fuzz-strategy runs " in r.stdout and "Traceback" not in r.stdout + r.stderr


def test_bench_stumpy_vs_simulator_help_lists_its_options():
    """Its real run downloads stumpy and takes minutes: only the argument parser is checked here."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_stumpy_vs_simulator.py"), "--help"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for option in ("--simulator-python", "--stumpy-src", "--only", "--timeout", "--simulator-timeout"):
        assert option in r.stdout


def test_bench_startup_runs_and_prints_its_table():
    """(It had stopped running: its in-process variant passed a run option that no longer exists.)"""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_startup.py"), "--runs", "1"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "child wall" in r.stdout and "trivial.py" in r.stdout and "saxpy.py" in r.stdout, r.stdout



def test_bench_kernel_forms_quick_prints_every_form_and_the_goals():
    """It had stopped running: its report read the regions' thread bounds from where they no longer are.
    Each form is timed at two placements here (fresh arrays, the heap moved): the figure shown is their
    median, within the range printed beside it."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_kernel_forms.py"), "--quick",
                        "--placements", "2", "--repeat", "1"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "best of 1 launches at each of 2 placements, the median shown" in r.stdout, r.stdout[:500]
    assert r.stdout.count("at each form's fastest placement:") == 6, r.stdout[-2000:]  # 3 kernels, memcheck on/off
    for kernel, forms in (("reduction", 5), ("matmul", 4), ("scan", 4)):
        rows = [line for line in r.stdout.splitlines() if line.startswith(f"| {kernel} |")]
        assert len(rows) == forms, (kernel, rows)
        assert all("| regions" in row for row in rows), rows  # how each form ran, from its compile record
        for row in rows:
            cells = [c.strip() for c in row.split("|")]
            on, off = (float(cells[k].split()[0]) * (1e3 if cells[k].endswith("us") else 1) for k in (5, 6))
            (lo_on, hi_on), (lo_off, hi_off) = (map(float, part.split("-")) for part in cells[11].split(", "))
            assert lo_on * 0.999 <= on <= hi_on * 1.001 and lo_off * 0.999 <= off <= hi_off * 1.001, row
    assert "thread loops narrowed" in r.stdout
    assert "goals (reported, not asserted):" in r.stdout and "Traceback" not in r.stdout + r.stderr
