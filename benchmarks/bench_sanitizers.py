"""The sanitizers' cost, side by side in one run: no sanitizer, memcheck, racecheck, initcheck.

    python benchmarks/bench_sanitizers.py            # 512x512 tiled matmul, 2^20-element reduction
    python benchmarks/bench_sanitizers.py --quick    # small sizes, compiles not recorded (the smoke test runs this)

Kernels: the tiled matmul of sample_kernels/matmul_tiled.py and the block tree
reduction of sample_kernels/reduction.py, both correct (the sanitizers find
nothing: the cost measured is that of watching). Each configuration compiles
its own code (the checks are compiled in); times are the best of several
launches after a warm-up launch, taken in interleaved rounds (one launch of each
configuration per round) so that a busy machine's noise falls on all of them. "none" has every check off, including
memcheck; racecheck and initcheck run without memcheck, so each column is one
tool's cost alone.

Targets (reported, never asserted): racecheck at most 10x the unsanitized run
(compute-sanitizer's racecheck costs far more), memcheck at most 1.5x.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

CONFIGS = {  # name: the session's checks
    "none": {"memcheck": False, "racecheck": False, "initcheck": False},
    "memcheck": {"memcheck": True, "racecheck": False, "initcheck": False},
    "racecheck": {"memcheck": False, "racecheck": True, "initcheck": False},
    "initcheck": {"memcheck": False, "racecheck": False, "initcheck": True},
}
TARGETS = {"memcheck": 1.5, "racecheck": 10.0}


def load_sample(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "sample_kernels", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def best_times(fn, sessions: dict, rounds: int) -> dict:
    """The best time of each configuration, measured in interleaved rounds (A B C D, A B C D, ...) so that
    the noise of a busy machine falls on every column alike; each session compiled its code in a warm-up."""
    from kdebug.session.live import set_session

    best = {}
    for name, session in sessions.items():  # warm-up: each configuration compiles its own checks
        set_session(session)
        fn()
    for _ in range(rounds):
        for name, session in sessions.items():
            set_session(session)
            t0 = time.perf_counter()
            fn()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    return best


def workloads(quick: bool):
    import numpy as np

    mm, red = load_sample("matmul_tiled"), load_sample("reduction")
    n = 128 if quick else 512
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    grid = ((n + mm.TPB - 1) // mm.TPB, (n + mm.TPB - 1) // mm.TPB)

    def matmul():
        mm.matmul_tiled[grid, (mm.TPB, mm.TPB)](A, B, C)

    m = 1 << (16 if quick else 20)
    x = rng.random(m).astype(np.float32)
    blocks = (m + red.TPB - 1) // red.TPB
    partial = np.zeros(blocks, np.float32)

    def reduction():
        red.block_sum[blocks, red.TPB](x, partial)

    return [(f"tiled matmul {n}x{n}", matmul), (f"reduction, 2^{m.bit_length() - 1} float32", reduction)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = p.parse_args(argv)
    os.environ.setdefault("KDEBUG_BACKEND", "cpu")
    from kdebug.session.live import Session

    # --quick: the sessions record nothing (no snapshots, no per-pass recording: most of a compile's time
    # here), with lineinfo on and tiers off as a recording session has them, so the code timed is the same
    quick = {"snapshots": False, "lineinfo": True, "tiered": False} if args.quick else {}
    sessions = {name: Session(backend="cpu", **options, **quick) for name, options in CONFIGS.items()}
    rounds = 2 if args.quick else 5
    rows = [(label, best_times(fn, sessions, rounds)) for label, fn in workloads(args.quick)]
    hazards = [h for s in sessions.values() for h in s.hazards]
    if hazards:
        print("unexpected hazards in the benchmark kernels:", file=sys.stderr)
        for h in hazards:
            print(h.text, file=sys.stderr)
        return 1
    names = list(CONFIGS)
    print("| kernel | " + " | ".join(f"{n} (ms)" for n in names) + " | " +
          " | ".join(f"{n} / none" for n in names[1:]) + " |")
    print("|" + "---|" * (1 + 2 * len(names) - 1))
    for label, t in rows:
        cells = [f"{t[n] * 1e3:.1f}" for n in names] + [f"{t[n] / t['none']:.2f}x" for n in names[1:]]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    for name, target in TARGETS.items():
        worst = max(t[name] / t["none"] for _, t in rows)
        verdict = "met" if worst <= target else "NOT met"
        print(f"target: {name} at most {target:g}x the unsanitized run: worst {worst:.2f}x, {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
