"""Compile time of many small kernels from one ``exec``'d source against the same kernels from a file,
side by side: the cost of a kernel must grow with the kernel, not with the text around it.

    python benchmarks/bench_exec_source.py [--kernels 250,500,1000] [--runs 1]

Each row is a whole ``kdebug run --headless --backend cpu`` process that defines N one-line kernels and
launches each once: from a ``.py`` file, and from one string given to ``exec(compile(...))``. Figures are
the median wall and CPU (user + system) seconds of RUNS runs; the ratio exec/file is near 1 when nothing
re-reads the whole source per kernel. Printed, not asserted.
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


def kernels_source(n: int) -> str:
    lines = ["from kdebug import cuda", "import numpy as np"]
    for i in range(n):
        lines += ["@cuda.jit", f"def k{i}(a):", "    j = cuda.grid(1)", "    if j < a.size:",
                  f"        a[j] += {i}", ""]
    lines += ["a = np.zeros(4)"] + [f"k{i}[1, 4](a)" for i in range(n)]
    lines += [f"assert a[0] == {n * (n - 1) // 2}, a", "print('ok', a[0])"]
    return "\n".join(lines) + "\n"


def _timed(script: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--headless", "--backend", "cpu", "--timeout=3000",
                    script], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--kernels", default="250,500,1000", help="comma-separated kernel counts")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args(argv)
    print(f"{'kernels':>7} {'file wall':>10} {'exec wall':>10} {'ratio':>6}   {'file cpu':>9} {'exec cpu':>9} "
          f"{'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(k) for k in args.kernels.split(",")]:
            body = kernels_source(n)
            from_file = os.path.join(tmp, f"kernels_{n}.py")
            from_exec = os.path.join(tmp, f"exec_{n}.py")
            with open(from_file, "w", encoding="utf-8") as f:
                f.write(body)
            with open(from_exec, "w", encoding="utf-8") as f:
                f.write(f"SOURCE = {body!r}\nexec(compile(SOURCE, '<generated kernels>', 'exec'))\n")
            rows = {name: [_timed(path) for _ in range(args.runs)]
                    for name, path in (("file", from_file), ("exec", from_exec))}
            fw, fc = (statistics.median(r[i] for r in rows["file"]) for i in (0, 1))
            ew, ec = (statistics.median(r[i] for r in rows["exec"]) for i in (0, 1))
            print(f"{n:>7} {fw:>9.1f}s {ew:>9.1f}s {ew / fw:>6.2f}   {fc:>8.1f}s {ec:>8.1f}s {ec / fc:>6.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
