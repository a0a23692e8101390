"""Start-up of a small numba.cuda script: ``kdebug run --numba`` against the same script under numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1 python script.py`` with real numba-cuda), side by side, in turn.

    python benchmarks/bench_startup_vs_simulator.py --simulator-python PYTHON [--runs 7]

PYTHON is an interpreter with numba and numba-cuda installed (numba-cuda 0.30.4 still has the simulator;
numba-cuda-mlir removed it), e.g. a scratch venv: ``python3 -m venv /tmp/sim && /tmp/sim/bin/pip install
numba numba-cuda``. kdebug runs from this checkout's interpreter, headless (``--headless``: the report a
CI log gets; ``--report summary``), once with ``--numba=all`` (kdebug's stand-in for all of numba, what
runs where numba is not installed) and, when the simulator's interpreter also has kdebug installed
(``pip install -e .`` there), once with ``--numba=cuda-only`` from that interpreter (numba's CPU JIT
imported too). Each figure is the median wall seconds of RUNS whole processes. The issue's goal: kdebug
within 1.3x of the simulator. Figures are printed, not asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """\
import numpy as np
from numba import cuda


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


n = 4096
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
out = np.zeros_like(x)
saxpy[n // 256, 256](np.float32(2.0), x, y, out)
assert np.allclose(out, 2 * x + y)
print("ok")
"""


def timed(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    dt = time.perf_counter() - t0
    if r.returncode != 0 or "ok" not in r.stdout:
        raise SystemExit(f"bench: {' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return dt


def has_kdebug(python: str) -> bool:
    return subprocess.run([python, "-c", "import kdebug"], capture_output=True, timeout=120).returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--simulator-python", required=True, help="an interpreter with numba and numba-cuda")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    sim_env = dict(env, NUMBA_ENABLE_CUDASIM="1")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "saxpy_numba.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        rows = {
            "numba-cuda's simulator (python script.py)": ([args.simulator_python, script], sim_env),
            "kdebug run --numba=all --headless": ([sys.executable, "-m", "kdebug.cli", "run", "--numba=all", "--headless",
                                                   "--report", "summary", "--backend", "cpu", script], env),
        }
        if has_kdebug(args.simulator_python):
            rows["kdebug run --numba=cuda-only --headless (numba installed)"] = (
                [args.simulator_python, "-m", "kdebug.cli", "run", "--numba=cuda-only", "--headless", "--report", "summary",
                 "--backend", "cpu", script], env)
        times: dict[str, list[float]] = {name: [] for name in rows}
        for name, (argv, e) in rows.items():  # one warm-up each: the file system's caches
            timed(argv, e)
        for _ in range(args.runs):  # in turn, so load drifts hit every row alike
            for name, (argv, e) in rows.items():
                times[name].append(timed(argv, e))
    base = statistics.median(times["numba-cuda's simulator (python script.py)"])
    print(f"| start-up, a 4096-element saxpy script, median of {args.runs} | wall s | min | max | x simulator |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.3f} | {min(ts):.3f} | {max(ts):.3f} | {med / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
