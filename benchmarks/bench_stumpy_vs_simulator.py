"""stumpy 1.14.1's GPU test files, one at a time: under kdebug (the one command docs/guide/numba.md gives a
project's CI) against the same file under numba-cuda's CUDA simulator, side by side, in turn.

    python benchmarks/bench_stumpy_vs_simulator.py [--simulator-python PYTHON] [--stumpy-src DIR]
                                                   [--only PATTERN] [--timeout SECONDS]
                                                   [--simulator-timeout SECONDS]

For each of stumpy's ``tests/test_gpu_*.py`` (8 files, 134 tests), in stumpy's source folder:

- kdebug: ``python -m kdebug.cli run --numba -m pytest -q FILE`` from this checkout's interpreter
  (``KDEBUG_BACKEND=cpu``), as tests/numba/test_stumpy_suite.py runs the whole suite;
- simulator: ``PYTHON -m pytest -q FILE`` with ``NUMBA_ENABLE_CUDASIM=1``, where PYTHON has numba, numba-cuda
  0.30.4 (the last with the simulator), pytest, scipy and pandas, e.g. ``python3 -m venv /tmp/sim &&
  /tmp/sim/bin/pip install numba numba-cuda==0.30.4 pytest scipy pandas``. Without --simulator-python that
  column is skipped (the table says why).

Each figure is one whole process's wall seconds (start-up, imports and compiles included). *tests* is what
pytest collects in the file (one ``--collect-only`` run under kdebug); *passed* is from pytest's summary line
(failures, errors and skips said beside it). A file that runs past --timeout (per file, per side; default
1800 s) is killed with its process group and its cells say "timed out after N s" (with the tests that had
passed by then); --simulator-timeout gives the simulator's side a limit of its own. The ratio is the
simulator's wall time over kdebug's. The machine's load average is printed at the start and the end. Figures
are printed, not asserted.

stumpy's sdist is taken from --stumpy-src (an unpacked sdist), or else downloaded with pip as the test does
into a temporary folder removed at the end, with stumpy's dependencies (scipy, pandas, ...) installed beside
it (``pip install --target``) where this interpreter lacks them. Needs the network unless --stumpy-src is
given and this interpreter has scipy and pandas.
"""
from __future__ import annotations

import argparse
import fnmatch
import glob
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STUMPY = "stumpy==1.14.1"
# stumpy's imports beyond numpy and numba (which kdebug stands for): its own and its tests'
DEPENDENCIES = ("scipy", "pandas", "python-dateutil", "six", "tzdata", "pytz")
SIMULATOR_MODULES = ("numba", "numba_cuda", "pytest", "scipy", "pandas")
OUTCOMES = ("passed", "failed", "errors", "error", "skipped", "xfailed", "xpassed")


def load_average() -> str:
    if not hasattr(os, "getloadavg"):
        return "load average: unknown"
    return "load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()) + \
        f" on {os.cpu_count()} cores"


def run(argv: list[str], cwd: str, env: dict, timeout: float) -> tuple[int | None, float, str]:
    """(exit status or None when it timed out, wall seconds, stdout + stderr). A process that runs past
    ``timeout`` is killed with its whole process group (kdebug's supervisor and its debuggee child)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, time.perf_counter() - t0, out
    except subprocess.TimeoutExpired:
        dt = time.perf_counter() - t0
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = p.communicate()
        return None, dt, out or ""


def pytest_summary(out: str) -> dict[str, int] | None:
    """pytest's counts from its last summary line (``12 passed, 1 failed, 2 warnings in 3.4s``)."""
    found = None
    for line in out.splitlines():
        m = re.match(r"^[=\s]*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+s", line.strip())
        counts = {w: int(n) for n, w in re.findall(r"(\d+) ([a-z]+)", m.group(1))} if m else {}
        if any(w in OUTCOMES for w in counts):  # pytest's, not another tool's "N things in S s"
            found = counts
    return found


def passed_so_far(out: str) -> int:
    """Tests that passed before a timeout: the dots of ``-q``'s progress lines."""
    return sum(line.split("[")[0].count(".") for line in out.splitlines()
               if re.fullmatch(r"[.FEsxX]+\s*(\[\s*\d+%\])?", line.strip()))


def outcome(code: int | None, dt: float, out: str, timeout: float) -> tuple[str, str, float | None]:
    """(passed cell, wall cell, wall seconds for the ratio or None)."""
    if code is None:
        return f"timed out after {timeout:.0f} s ({passed_so_far(out)} passed by then)", \
            f"timed out after {timeout:.0f} s", None
    counts = pytest_summary(out)
    if counts is None:
        tail = (out.strip().splitlines() or ["no output"])[-1][:100]
        return f"no pytest summary (exit {code}: {tail})", f"{dt:.1f}", None
    cell = str(counts.get("passed", 0))
    others = [f"{counts[k]} {k}" for k in OUTCOMES[1:] if counts.get(k)]
    if others:
        cell += " (" + ", ".join(others) + ")"
    return cell, f"{dt:.1f}", dt


def progress(cells: tuple[str, str, float | None]) -> str:
    return cells[0] if cells[0].startswith("timed out") else f"passed {cells[0]}, {cells[1]} s"


def pip(python: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)


def missing_modules(python: str, modules: tuple[str, ...]) -> list[str]:
    code = f"import importlib.util as u; print(' '.join(m for m in {modules!r} if u.find_spec(m) is None))"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return list(modules)
    return r.stdout.split()


def fetch_stumpy(scratch: str) -> str:
    """Download and unpack stumpy's sdist into ``scratch``; its source folder."""
    r = pip(sys.executable, "download", STUMPY, "--no-deps", "--no-binary", ":all:", "-d", scratch, timeout=300)
    archives = glob.glob(os.path.join(scratch, "stumpy-*.tar.gz"))
    if r.returncode != 0 or not archives:
        raise SystemExit(f"bench: cannot download {STUMPY}'s sdist: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(scratch, filter="data")
    return os.path.join(scratch, os.path.basename(archives[0])[:-len(".tar.gz")])


def simulator_problem(python: str | None) -> str | None:
    """Why the simulator column cannot be run, or None."""
    if not python:
        return ("no --simulator-python given: numba-cuda's simulator needs an interpreter with numba, "
                "numba-cuda 0.30.4, pytest, scipy and pandas (this one has kdebug, not numba-cuda)")
    try:
        missing = missing_modules(python, SIMULATOR_MODULES)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {python}: {e}"
    if missing:
        return f"{python} lacks {', '.join(missing)} (pip install numba numba-cuda==0.30.4 pytest scipy pandas)"
    return None


def simulator_version(python: str) -> str:
    r = subprocess.run([python, "-c", "import numba, numba_cuda, platform; "
                        "print(platform.python_version(), numba.__version__, numba_cuda.__version__)"],
                       capture_output=True, text=True, timeout=120)
    py, nb, nc = (r.stdout.split() + ["?"] * 3)[:3]
    return f"Python {py}, numba {nb}, numba-cuda {nc}"


def collect(source: str, files: list[str], env: dict, timeout: float) -> dict[str, int]:
    """Tests per file, as pytest collects them (under kdebug, so no numba-cuda is needed); a file whose
    collection did not finish is left out."""
    code, _, out = run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "-m", "pytest",
                        "-p", "no:cacheprovider", "--collect-only", "-q", *files], source, env, timeout)
    counts = {f: 0 for f in files}
    for line in out.splitlines():
        name = line.split("::")[0].strip()
        if "::" in line and name in counts:
            counts[name] += 1
    return counts if code is not None else {f: n for f, n in counts.items() if n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--simulator-python", help="an interpreter with numba, numba-cuda 0.30.4, pytest, scipy, pandas "
                    "(default: the simulator column is skipped)")
    ap.add_argument("--stumpy-src", help="stumpy 1.14.1's unpacked sdist (default: download it into a temporary folder)")
    ap.add_argument("--only", metavar="PATTERN", help="only the test files whose name matches this glob "
                    "(or contains it), e.g. 'test_gpu_aamp*' or 'mpdist'")
    ap.add_argument("--timeout", type=float, default=1800, metavar="SECONDS",
                    help="per file, per side (default 1800)")
    ap.add_argument("--simulator-timeout", type=float, metavar="SECONDS",
                    help="per file on the simulator's side (default: --timeout)")
    args = ap.parse_args()
    sim_timeout = args.simulator_timeout or args.timeout

    print(f"start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-stumpy-") as scratch:
        source = os.path.abspath(args.stumpy_src) if args.stumpy_src else fetch_stumpy(scratch)
        files = sorted(os.path.relpath(p, source) for p in glob.glob(os.path.join(source, "tests", "test_gpu_*.py")))
        if not files:
            raise SystemExit(f"bench: no tests/test_gpu_*.py in {source}")
        if args.only:
            files = [f for f in files if fnmatch.fnmatch(os.path.basename(f), args.only) or args.only in f]
            if not files:
                raise SystemExit(f"bench: no test file matches --only {args.only!r}")
        deps = None
        if missing_modules(sys.executable, ("scipy", "pandas")):
            deps = os.path.join(scratch, "deps")
            r = pip(sys.executable, "install", "--no-deps", "--target", deps, *DEPENDENCIES, timeout=900)
            if r.returncode != 0:
                raise SystemExit(f"bench: cannot install stumpy's dependencies ({', '.join(DEPENDENCIES)}): "
                                 f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")

        base = dict(os.environ, PYTHONUNBUFFERED="1")
        for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "NUMBA_ENABLE_CUDASIM", "PYTHONPATH"):
            base.pop(name, None)
        path = os.pathsep.join([ROOT] + ([deps] if deps else []) + [os.environ.get("PYTHONPATH", "")])
        kd_env = dict(base, PYTHONPATH=path.rstrip(os.pathsep), KDEBUG_BACKEND="cpu")
        sim_env = dict(base, NUMBA_ENABLE_CUDASIM="1")
        if os.environ.get("PYTHONPATH"):
            sim_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        why_no_sim = simulator_problem(args.simulator_python)
        print(f"stumpy: {source}", flush=True)
        print(f"kdebug: {sys.executable} (Python {sys.version.split()[0]}), "
              f"`python -m kdebug.cli run --numba -m pytest -q FILE`, KDEBUG_BACKEND=cpu", flush=True)
        if why_no_sim:
            print(f"simulator: skipped: {why_no_sim}", flush=True)
        else:
            print(f"simulator: {args.simulator_python} ({simulator_version(args.simulator_python)}), "
                  "`NUMBA_ENABLE_CUDASIM=1 python -m pytest -q FILE`", flush=True)

        tests = collect(source, files, kd_env, args.timeout)
        rows = []
        for f in files:  # each file under both, in turn, so load drifts hit both sides alike
            code, dt, out = run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "-m", "pytest",
                                 "-p", "no:cacheprovider", "-q", f], source, kd_env, args.timeout)
            kd = outcome(code, dt, out, args.timeout)
            print(f"  {f}: kdebug {progress(kd)}", flush=True)
            if why_no_sim:
                sim = ("not run", "not run", None)
            else:
                code, dt, out = run([args.simulator_python, "-m", "pytest", "-p", "no:cacheprovider", "-q", f],
                                    source, sim_env, sim_timeout)
                sim = outcome(code, dt, out, sim_timeout)
                print(f"  {f}: simulator {progress(sim)}", flush=True)
            rows.append((f, tests.get(f, "?"), kd, sim))

    print()
    print("| file | tests | passed, kdebug | wall s, kdebug | passed, simulator | wall s, simulator | simulator / kdebug |")
    print("|---|---:|---|---:|---|---:|---:|")
    for f, n, kd, sim in rows:
        ratio = f"{sim[2] / kd[2]:.1f}x" if kd[2] and sim[2] else "-"
        print(f"| {os.path.basename(f)} | {n} | {kd[0]} | {kd[1]} | {sim[0]} | {sim[1]} | {ratio} |")
    both = [(kd[2], sim[2]) for _, _, kd, sim in rows if kd[2] and sim[2]]
    kd_total = sum(kd[2] for _, _, kd, _ in rows if kd[2])
    n_all = sum(n for _, n, _, _ in rows if isinstance(n, int))
    kd_done = sum(1 for _, _, kd, _ in rows if kd[2])
    kd_cell = f"{kd_total:.1f}" + ("" if kd_done == len(rows) else f" (the {kd_done} files it finished)")
    total = f"| all ({len(rows)} file{'s' if len(rows) != 1 else ''}) | {n_all} | | {kd_cell} | | "
    if both:
        k, s = sum(b[0] for b in both), sum(b[1] for b in both)
        total += f"{s:.1f} (the {len(both)} files both finished) | {s / k:.1f}x (those {len(both)} files) |"
    else:
        total += "- | - |"
    print(total)
    if why_no_sim:
        print(f"\nsimulator column skipped: {why_no_sim}")
    print(f"\nend: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
