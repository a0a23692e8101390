"""Headless start-up: ``kdebug --headless`` (the script in the debuggee child, the report from the
parent) against the same script run by the runner in one process (what headless runs did before
they went through the child; with the options a headless run without ``--trace`` has: no snapshots),
side by side, in turn.

    python benchmarks/bench_startup.py [--runs 10] [--script sample_kernels/saxpy.py]

Both are whole processes started from here; each figure is the median wall and CPU (user + system
of the process and its children) seconds of RUNS runs. The ratio is the price of a report that
survives a crash. Figures are printed, not asserted.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IN_PROCESS = """\
import sys
from kdebug.session.model import SessionModel
from kdebug.session.options import RunOptions
from kdebug.session.runner import run_in_process
from kdebug.session.headless import render
model = SessionModel()
status = run_in_process(RunOptions(script=sys.argv[1], backend="cpu", snapshots=False), [model.apply])
print(render(model))
sys.exit(status)
"""


def _timed(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=dict(os.environ, KDEBUG_BACKEND="cpu"))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--script", default=None, help="default: a one-line script, then sample_kernels/saxpy.py")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trivial = os.path.join(tmp, "trivial.py")
        with open(trivial, "w", encoding="utf-8") as f:
            f.write("print('hi')\n")
        scripts = [args.script] if args.script else [trivial, os.path.join(ROOT, "sample_kernels", "saxpy.py")]
        print(f"{'script':<12} {'child wall':>11} {'in-process':>11} {'ratio':>6}   {'child cpu':>10} "
              f"{'in-process':>11} {'ratio':>6}")
        for script in scripts:
            headless = [sys.executable, "-m", "kdebug.cli", "--headless", script]
            inproc = [sys.executable, "-c", IN_PROCESS, script]
            _timed(headless), _timed(inproc)  # warm the file cache
            a, b = [], []
            for _ in range(args.runs):  # in turn, so that a drifting machine moves both
                a.append(_timed(headless))
                b.append(_timed(inproc))
            aw, ac = statistics.median(x[0] for x in a), statistics.median(x[1] for x in a)
            bw, bc = statistics.median(x[0] for x in b), statistics.median(x[1] for x in b)
            name = os.path.basename(script)
            print(f"{name:<12} {aw * 1e3:>9.0f}ms {bw * 1e3:>9.0f}ms {aw / bw:>6.2f}   {ac * 1e3:>8.0f}ms "
                  f"{bc * 1e3:>9.0f}ms {ac / bc:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
