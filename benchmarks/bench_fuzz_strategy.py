"""``kdebug fuzz-strategy``'s throughput: random programs run and checked per second, for the worklist and
the recursive strategies, against the same programs as the shrinker's warm trials run them, side by side.

    python benchmarks/bench_fuzz_strategy.py [--count 20] [--jobs 2] [--seed 7] [--quick]

The programs are ``random_graph``'s (kdebug/driver/workbench.py), the same COUNT for every row (one seed).
*fuzz-strategy* is what the command does for each: a ``kdebug run --headless --trace`` child started cold,
its trace read for the invariants (``workbench.fuzz``, JOBS at a time). *warm trial* is how the shrinker
judges a candidate: a debuggee forked from a warm server (``kdebug.reduce.trials.TrialRunner``), JOBS at a
time. Printed: wall seconds, programs per second, the kinds of finding seen; and the generator alone. The
ratio is the price of a cold, traced process per program. Figures are printed, not asserted.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kdebug.driver import invariants, workbench  # noqa: E402
from kdebug.reduce.properties import Property  # noqa: E402
from kdebug.reduce.trials import TrialRunner  # noqa: E402
from kdebug.session.options import RunOptions  # noqa: E402

STRATEGIES = ("worklist", "recursive")


def fuzz_row(strategy: str, count: int, seed: int, jobs: int) -> tuple[float, set[str]]:
    t0 = time.perf_counter()
    results = workbench.fuzz(strategy, count, seed, jobs=jobs, timeout=120)
    seconds = time.perf_counter() - t0
    return seconds, {kind for r in results for kind in workbench.findings(r)}


def warm_row(strategy: str, sources: list[str], jobs: int) -> tuple[float, set[str]]:
    with tempfile.TemporaryDirectory(prefix="kdebug-bench-fuzz-") as folder:
        options = RunOptions(script=os.path.join(folder, "fuzz.py"), backend="cpu", strategy=strategy,
                             memcheck=False, snapshots=False)
        runner = TrialRunner(options, [Property("error", "^invariant ")], timeout=120, jobs=jobs, cwd=folder)
        kinds: set[str] = set()
        try:
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                outcomes = list(pool.map(runner.outcomes, sources))
            seconds = time.perf_counter() - t0
            for runs in outcomes:
                for d in runs[strategy].diagnostics():
                    name = invariants.broken_in(d.message or "")
                    if name:
                        kinds.add(name)
                    elif d.category == "reentrant" and (d.message or "").endswith("(stopped)"):
                        kinds.add(workbench.LOOP)
        finally:
            runner.close()
    return seconds, kinds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--count", type=int, default=20, help="random programs per row (default 20)")
    p.add_argument("--jobs", type=int, default=2, help="programs run at a time (default 2)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="2 programs a row (the smoke test)")
    args = p.parse_args(argv)
    count = 2 if args.quick else args.count
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    sources = [workbench.random_graph(rng).render() for _ in range(count)]
    generate = time.perf_counter() - t0
    print(f"{count} random programs (seed {args.seed}), {args.jobs} at a time; {os.cpu_count()} cores")
    print()
    print("| strategy | runner | programs | wall (s) | programs / s | findings seen |")
    print("|---|---|---|---|---|---|")
    rates = {}
    for strategy in STRATEGIES:
        for label, row in (("fuzz-strategy (cold traced child)", lambda: fuzz_row(strategy, count, args.seed,
                                                                                   args.jobs)),
                           ("warm trial (forked debuggee)", lambda: warm_row(strategy, sources, args.jobs))):
            seconds, kinds = row()
            rates[strategy, label] = count / seconds
            print(f"| {strategy} | {label} | {count} | {seconds:.1f} | {count / seconds:.2f} | "
                  f"{', '.join(sorted(kinds)) or 'none'} |", flush=True)
    print(f"| - | the generator alone (random_graph + render) | {count} | {generate:.4f} | "
          f"{count / max(generate, 1e-9):.0f} | - |")
    print()
    for strategy in STRATEGIES:
        cold = rates[strategy, "fuzz-strategy (cold traced child)"]
        warm = rates[strategy, "warm trial (forked debuggee)"]
        print(f"{strategy}: fuzz-strategy runs {cold:.2f} programs/s; a warm trial {warm / cold:.1f}x as many")
    return 0


if __name__ == "__main__":
    sys.exit(main())
