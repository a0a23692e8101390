"""Recording every pass of a sample's pipelines (``--trace``, ``--html``, ``kdebug dump``): the two-step print
(kdebug/targets/pass_dumps.py: each pass's unit, then the whole module only after the passes that changed it,
printed by a fork) against the whole module printed after every pass, side by side.

    python benchmarks/bench_record.py [--rounds 3] [--quick] [SAMPLE ...]

Each run records the sample as a ``--trace`` run's debuggee does (``run_in_process``, every snapshot and pass)
in a process of its own; the two ways alternate, round after round. Printed: the least wall and CPU seconds
(the process and the children it waited for: the fork is one) of each, their ratio, and whether the two
traces hold the same passes, marks and modules (coroutine-form kernels may differ between any two runs, either
way: LLVM's CoroSplitPass orders a block's predecessors differently from run to run).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = ["gradient_hvp.py", "matmul_tiled.py", "grad_taylor.py", "sanitizers/histogram_race.py"]
ONE = """
import sys
sys.path.insert(0, {root!r})
from kdebug.session.options import RunOptions
from kdebug.session.runner import run_in_process
from kdebug.session.trace import TraceWriter
from kdebug.targets import pass_dumps
if sys.argv[1] == "whole":
    pass_dumps.TWO_STEP_BYTES = 1 << 60
writer = TraceWriter(sys.argv[3])
try:
    run_in_process(RunOptions(script=sys.argv[2], backend="cpu"), [writer])
finally:
    writer.close()
"""


def run_once(way: str, sample: str, trace: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one recording in a process of its own."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", ONE.format(root=ROOT), way, os.path.join(ROOT, "sample_kernels", sample),
                    trace], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def passes(trace: str) -> list:
    kept = []
    with open(trace) as f:
        for line in f:
            event = json.loads(line)
            if event["event"] in ("pass_list", "pass_snapshot", "remarks"):
                event.pop("t", None)
                kept.append(event)
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="*", default=SAMPLES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round, nested_deferred.py only (the suite's smoke run)")
    args = parser.parse_args()
    samples, rounds = (["nested_deferred.py"], 1) if args.quick else (args.samples, args.rounds)
    print(f"{'sample':32} {'two-step wall':>13} {'cpu':>6} {'whole wall':>10} {'cpu':>6} {'wall ratio':>10}  same")
    with tempfile.TemporaryDirectory(prefix="kdebug-bench-record-") as folder:
        for sample in samples:
            best = {"two": (float("inf"), float("inf")), "whole": (float("inf"), float("inf"))}
            for _ in range(rounds):
                for way in ("two", "whole"):
                    wall, cpu = run_once(way, sample, os.path.join(folder, f"{way}.jsonl"))
                    best[way] = (min(best[way][0], wall), min(best[way][1], cpu))
            same = passes(os.path.join(folder, "two.jsonl")) == passes(os.path.join(folder, "whole.jsonl"))
            (tw, tc), (ww, wc) = best["two"], best["whole"]
            print(f"{sample:32} {tw:13.2f} {tc:6.2f} {ww:10.2f} {wc:6.2f} {tw / ww:10.2f}  {'yes' if same else 'no'}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
