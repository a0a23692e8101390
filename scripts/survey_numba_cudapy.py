"""Run numba-cuda's own kernel-language test files (``numba/cuda/tests/cudapy/test_*.py`` of its wheel)
under ``kdebug run --numba --headless --backend cpu``, one file at a time, and print a table: tests run,
passed, failed, errors, skipped, or why the file did not get as far as its tests.

    pip download --no-deps numba-cuda==0.30.4 && python -m zipfile -e numba_cuda-0.30.4-*.whl wheel
    pip install cffi   # numba's own test dependency: test_device_func and test_cooperative_groups import it
    python scripts/survey_numba_cudapy.py wheel [--timeout 300] [--only test_math,test_enums] [--jobs 1]

Each file runs through ``scripts/run_numba_test_file.py`` (unittest's loader, as numba's runner
collects them, with the file's folder as ``numba.cuda.tests.cudapy``); its last line gives the counts. The table is what the closing notes of the numba
compatibility issues cite ("before and after"); nothing here is asserted.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "scripts", "run_numba_test_file.py")
CUDAPY = os.path.join("numba_cuda", "numba", "cuda", "tests", "cudapy")
COUNTS = re.compile(r"doc example \S+: ran=(\d+) failures=(\d+) errors=(\d+) skipped=(\d+)")


def run_file(path: str, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "kdebug.cli", "run", "--numba", "--headless", "--backend", "cpu",
           f"--timeout={int(timeout)}", RUNNER, path]
    env = dict(os.environ, PYTHONPATH=ROOT)  # this checkout's kdebug, also in the debuggee child
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout + 60, env=env)
    except subprocess.TimeoutExpired:
        return {"file": os.path.basename(path), "why": "timed out"}
    m = COUNTS.search(r.stdout)
    if not m:
        # the exception that stopped the file: the last "SomethingError: ..." line of its traceback
        lines = [ln.strip() for ln in (r.stdout + r.stderr).splitlines()
                 if re.match(r"\s*[\w.]*(Error|Exception|NotFound)\w*: ", ln)]
        return {"file": os.path.basename(path), "why": (lines[-1] if lines else f"exit {r.returncode}")[:150]}
    ran, failures, errors, skipped = map(int, m.groups())
    # errors in a class's setUpClass are counted without a test run: passed is never below 0
    return {"file": os.path.basename(path), "ran": ran, "passed": max(0, ran - failures - errors - skipped),
            "failed": failures, "errors": errors, "skipped": skipped}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("wheel", help="the folder numba-cuda's wheel was unpacked to")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--only", default=None, help="comma-separated file stems")
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_args(argv)
    folder = os.path.join(args.wheel, CUDAPY)
    names = sorted(n for n in os.listdir(folder) if n.startswith("test_") and n.endswith(".py"))
    if args.only:
        wanted = set(args.only.split(","))
        names = [n for n in names if n[:-3] in wanted]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda n: run_file(os.path.join(folder, n), args.timeout), names))
    total = {k: 0 for k in ("ran", "passed", "failed", "errors", "skipped")}
    print(f"{'file':<42} {'ran':>4} {'pass':>4} {'fail':>4} {'err':>4} {'skip':>4}")
    for row in rows:
        if "why" in row:
            print(f"{row['file']:<42} {row['why']}")
            continue
        print(f"{row['file']:<42} {row['ran']:>4} {row['passed']:>4} {row['failed']:>4} {row['errors']:>4} "
              f"{row['skipped']:>4}")
        for k in total:
            total[k] += row[k]
    ran_files = sum(1 for r in rows if "why" not in r)
    print(f"{'total: ' + str(ran_files) + ' of ' + str(len(rows)) + ' files ran':<42} {total['ran']:>4} "
          f"{total['passed']:>4} {total['failed']:>4} {total['errors']:>4} {total['skipped']:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
