"""Compiles with Python's garbage collector paused (kdebug/gc_pause.py) against compiles with it on, side by side.

    python benchmarks/bench_gc_pause.py                     # 3 processes of each variant, in turn
    python benchmarks/bench_gc_pause.py --objects 1000000   # processes that hold a million more objects
    python benchmarks/bench_gc_pause.py --quick             # 1 process of each, fewer compiles

A workload is what a test of many kernels or a script of several does: compiles one after the other in one
process, each in a new session with the frontend's caches cleared (as bench_launch.py's warm compiles),
saxpy and matmul_tiled in turn, untiered (as the TUI, ``--trace`` and the tests compile). Each variant runs
in processes of its own, alternating, so that neither pays the other's garbage; the figure is the
process's CPU time for the whole workload, its collections included (``gc.callbacks`` counts them and their
time). No assertion: the ratios are printed.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import runpy
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]


def workload(variant: str, compiles: int, objects: int) -> dict:
    """In this process: ``compiles`` compiles, the collector paused or on; CPU time, collections, their time."""
    import numpy as np

    import bench_launch as BL
    from kdebug import cuda, gc_pause
    from kdebug.lang import types as T

    ballast = [[i, str(i), {i: i}] for i in range(objects)]  # a script's data, held to the end
    samples = os.path.join(ROOT, "sample_kernels")
    saxpy = runpy.run_path(os.path.join(samples, "saxpy.py"), run_name="kdebug_bench")["saxpy"]
    matmul = runpy.run_path(os.path.join(samples, "matmul_tiled.py"), run_name="kdebug_bench")["matmul_tiled"]
    vec, mat = T.typeof(cuda.device_array(4, np.float32)), T.typeof(cuda.device_array((4, 4), np.float32))
    cases = [(saxpy, (T.float32, vec, vec, vec)), (matmul, (mat, mat, mat))]
    if variant == "collector on":
        gc_pause.paused = contextlib.nullcontext
    BL._fresh_session(tiered=False).compile_kernel(*cases[0])  # imports and first-time set-up, not counted
    collections, in_gc, started = [0], [0.0], [0.0]

    def count(phase, info):
        if phase == "start":
            started[0] = time.thread_time()
        else:
            collections[0] += 1
            in_gc[0] += time.thread_time() - started[0]

    gc.callbacks.append(count)
    t = time.process_time()
    for k in range(compiles):
        BL._fresh_session(tiered=False).compile_kernel(*cases[k % 2])
    cpu = time.process_time() - t
    gc.callbacks.remove(count)
    del ballast
    return {"cpu": cpu, "collections": collections[0], "gc": in_gc[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--objects", type=int, default=0, help="objects each process holds besides (a script's data)")
    p.add_argument("--compiles", type=int, default=None, help="compiles a workload makes (default 40)")
    p.add_argument("--processes", type=int, default=None, help="processes of each variant (default 3)")
    p.add_argument("--quick", action="store_true", help="1 process of each, 8 compiles")
    p.add_argument("--workload", help=argparse.SUPPRESS)  # a child's: the variant it runs
    args = p.parse_args()
    compiles = args.compiles or (8 if args.quick else 40)
    if args.workload:
        print(json.dumps(workload(args.workload, compiles, args.objects)))
        return
    import bench_launch as BL
    runs: dict[str, list[dict]] = {"collector on": [], "paused": []}
    for _ in range(args.processes or (1 if args.quick else 3)):
        for variant in runs:
            out = subprocess.run([sys.executable, __file__, "--workload", variant, "--compiles", str(compiles),
                                  "--objects", str(args.objects)], capture_output=True, text=True, check=True)
            runs[variant].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"# {compiles} untiered compiles in a row (saxpy and matmul_tiled in turn), {args.objects:,} objects held "
          f"besides; each variant in processes of its own, in turn; load average {BL._load()}\n")
    print("| variant | process CPU (each process) | median | collections | time in collections |")
    print("|---|---|---:|---:|---:|")
    for variant, rs in runs.items():
        each = " / ".join(f"{r['cpu']:.2f} s" for r in rs)
        print(f"| {variant} | {each} | {statistics.median(r['cpu'] for r in rs):.2f} s | "
              f"{statistics.median(r['collections'] for r in rs):.0f} | {statistics.median(r['gc'] for r in rs):.2f} s |")
    on = statistics.median(r["cpu"] for r in runs["collector on"])
    print(f"\npaused / on, process CPU: {statistics.median(r['cpu'] for r in runs['paused']) / on:.2f}x")


if __name__ == "__main__":
    main()
