"""``kdebug reduce`` against a plain line-based ddmin, side by side, on one buried re-entrant cycle.

    python benchmarks/bench_reduce.py [--jobs 2] [--kernels 10] [--max-line-trials 3000]

The script (written here, about 150 lines): a re-entrant cycle kernel_a -> kernel_b -> kernel_c ->
kernel_a among KERNELS unrelated kernels, each launched and checked by host code. Both reducers keep
``--until reentrant:kernel_a,kernel_b,kernel_c`` and judge each candidate with the same trial runner
(a debuggee child per trial, JOBS at a time, each source tried once). The line-based ddmin is what a
user writes by hand: Zeller's ddmin over the file's lines, the complements of each chunk tried in
order. Printed: wall time, trials (debuggee runs) and the result's code lines (not blank, not a
comment); the targets are at most 25 code lines, under 120 s on 2 cores and fewer trials than the
line-based ddmin. Figures are printed, not asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kdebug.reduce import passes  # noqa: E402
from kdebug.reduce.job import reduce_script  # noqa: E402
from kdebug.reduce.properties import parse_property  # noqa: E402
from kdebug.reduce.trials import TrialRunner  # noqa: E402
from kdebug.session.options import RunOptions  # noqa: E402

UNRELATED = [
    ("saxpy", "out, x, y", "out[i] = 2.0 * x[i] + y[i]", "out, x, y", "out[3] == 2.0 * 3 + 1"),
    ("scale", "out, x, y", "out[i] = x[i] * 3.0", "out, x, y", "out[2] == 6.0"),
    ("square", "out, x, y", "out[i] = x[i] * x[i]", "out, x, y", "out[4] == 16.0"),
    ("add", "out, x, y", "out[i] = x[i] + y[i]", "out, x, y", "out[5] == 6.0"),
    ("negate", "out, x, y", "out[i] = -x[i]", "out, x, y", "out[7] == -7.0"),
    ("clamp", "out, x, y", "out[i] = min(max(x[i], 2.0), 9.0)", "out, x, y", "out[0] == 2.0"),
    ("halve", "out, x, y", "out[i] = x[i] / 2.0", "out, x, y", "out[8] == 4.0"),
    ("shift", "out, x, y", "out[i] = x[i] + 10.0", "out, x, y", "out[1] == 11.0"),
    ("blend", "out, x, y", "out[i] = 0.25 * x[i] + 0.75 * y[i]", "out, x, y", "out[4] == 1.75"),
    ("cube", "out, x, y", "out[i] = x[i] * x[i] * x[i]", "out, x, y", "out[3] == 27.0"),
    ("fma", "out, x, y", "out[i] = x[i] * y[i] + x[i]", "out, x, y", "out[6] == 12.0"),
    ("diff", "out, x, y", "out[i] = x[i] - y[i]", "out, x, y", "out[9] == 8.0"),
]


def buried_cycle(kernels: int) -> str:
    """The benchmark's script: the cycle in the middle of ``kernels`` unrelated kernels."""
    lines = ['"""A program with many kernels; three of them launch each other in a cycle."""',
             "import numpy as np", "", "from kdebug import cuda", "", "N = 64", ""]
    chosen = UNRELATED[:kernels]
    half = len(chosen) // 2
    for name, params, body, _args, _check in chosen[:half]:
        lines += ["", f"# {name}: one element a thread", "@cuda.jit", f"def {name}({params}):",
                  "    i = cuda.grid(1)", "    if i < out.size:", f"        {body}", ""]
    lines += ["", "# the cycle: a launches b, b launches c, c launches a once more", "@cuda.jit",
              "def kernel_a(out, depth, again):", "    out[depth] = 97", "    kernel_b[1, 1](out, depth + 1, again)",
              "", "", "@cuda.jit", "def kernel_b(out, depth, again):", "    out[depth] = 98",
              "    kernel_c[1, 1](out, depth + 1, again)", "", "", "@cuda.jit",
              "def kernel_c(out, depth, again):", "    out[depth] = 99", "    if again:",
              "        kernel_a[1, 1](out, depth + 1, False)", ""]
    for name, params, body, _args, _check in chosen[half:]:
        lines += ["", f"# {name}: one element a thread", "@cuda.jit", f"def {name}({params}):",
                  "    i = cuda.grid(1)", "    if i < out.size:", f"        {body}", ""]
    lines += ["", "def run_all():", "    x = np.arange(N, dtype=np.float32)", "    y = np.ones(N, dtype=np.float32)"]
    for k, (name, _params, _body, args, check) in enumerate(chosen):
        lines += ["    out = np.zeros(N, dtype=np.float32)", f"    {name}[2, 32]({args})", f"    assert {check}, {name!r}"]
        if k == half:
            lines += ["    letters = np.zeros(6, dtype=np.int32)", "    kernel_a[1, 1](letters, 0, True)",
                      "    print(' '.join(chr(c) for c in letters))"]
    lines += ["    print('all kernels checked')", "", "", 'if __name__ == "__main__":', "    run_all()", ""]
    return "\n".join(lines)


def line_ddmin(runner: TrialRunner, lines: list[str], max_trials: int) -> tuple[list[str], bool]:
    """Zeller's ddmin over lines (complements, granularity doubling), the runner's trials; capped."""
    keep = list(lines)
    n = 2
    while len(keep) >= 2:
        if runner.trials >= max_trials:
            return keep, True
        size, extra = divmod(len(keep), n)
        chunks, at = [], 0
        for i in range(n):
            step = size + (1 if i < extra else 0)
            chunks.append((at, at + step))
            at += step
        candidates = ["\n".join(keep[:a] + keep[b:]) + "\n" for a, b in chunks if b > a]
        hit = runner.first_passing(candidates)
        if hit is not None:
            a, b = [c for c in chunks if c[1] > c[0]][hit]
            keep = keep[:a] + keep[b:]
            n = max(n - 1, 2)
            continue
        if n >= len(keep):
            break
        n = min(2 * n, len(keep))
    return keep, False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--kernels", type=int, default=10, help="unrelated kernels around the cycle (at most 12)")
    p.add_argument("--max-line-trials", type=int, default=3000, help="where the line-based ddmin is stopped")
    args = p.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="kdebug-bench-reduce-")
    script = os.path.join(folder, "buried_cycle.py")
    source = buried_cycle(args.kernels)
    with open(script, "w") as f:
        f.write(source)
    until = "reentrant:kernel_a,kernel_b,kernel_c"
    props = [parse_property(until, ("worklist", "toplevel", "recursive"))]
    options = RunOptions(script=script, backend="cpu", snapshots=False)
    total = len(source.splitlines())
    print(f"script: {total} lines, {passes.code_lines(source)} code lines, {args.kernels} unrelated kernels; "
          f"--until {until}; {args.jobs} trials at once; {os.cpu_count()} cores")

    t0 = time.perf_counter()
    result = reduce_script(options, props, os.path.join(folder, "buried_cycle.reduced.py"), jobs=args.jobs,
                           timeout=60)
    ast_seconds = time.perf_counter() - t0
    print("\nkdebug reduce's result:\n" + result.source)

    runner = TrialRunner(options, props, timeout=60, jobs=args.jobs)
    try:
        t0 = time.perf_counter()
        kept, capped = line_ddmin(runner, source.splitlines(), args.max_line_trials)
        line_seconds = time.perf_counter() - t0
        line_source = "\n".join(kept) + "\n"
        line_out = os.path.join(folder, "line.reduced.py")
        with open(line_out, "w") as f:
            f.write(line_source)
        line_holds = runner.holds(runner.outcomes(line_source, path=line_out, plain=True))
        line_trials = runner.trials
    finally:
        runner.close()
    print("line-based ddmin's result:\n" + line_source)

    print("| reducer | wall (s) | trials | debuggee runs | result code lines | shows the property |")
    print("|---|---|---|---|---|---|")
    print(f"| kdebug reduce (syntax tree) | {ast_seconds:.1f} | {result.trials} | {result.runs} | {result.lines} | "
          f"{'yes' if result.holds else 'NO'} |")
    print(f"| line-based ddmin | {line_seconds:.1f}{' (stopped)' if capped else ''} | {line_trials} | "
          f"{line_trials} | {passes.code_lines(line_source)} | {'yes' if line_holds else 'NO'} |")
    print(f"\ntarget: at most 25 code lines ({result.lines}), under 120 s on 2 cores ({ast_seconds:.0f} s), "
          f"fewer trials than line-based ddmin ({result.trials} vs {line_trials}); "
          f"ratio of wall times line / tree: {line_seconds / ast_seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
