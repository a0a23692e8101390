"""GPU throughput of kdebug's gpu backend, against references run side by side on the same GPU.

    python benchmarks/bench_gpu.py [--quick] [--json PATH] [--numba-python PY]

1. saxpy (out = a*x + y, float32) compiled by kdebug, its bandwidth (bytes read and
   written per second) against a device-to-device copy of the same number of bytes
   (cuMemcpyDtoD): the ratio says how close the kernel gets to the memory system.
2. A tiled matrix product (float32, 16x16 tiles in shared memory, the numba
   documentation's kernel) compiled by kdebug and by numba-cuda from the *same
   source text*: device time per launch, and the ratio kdebug / numba-cuda.

Kernels are timed on the device with CUDA events around back-to-back launches of
the loaded kernel (kdebug's host-side argument handling is not in the figure).
numba-cuda runs in a child process under ``--numba-python`` (default: this
interpreter, without kdebug's PYTHONPATH additions): kdebug needs llvmlite 0.50,
numba its own. Needs a GPU and pycuda; prints a short table last. Only the
standard library is imported at module level.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MATMUL_SOURCE = '''
TPB = 16


@cuda.jit
def matmul(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = float32(0.)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp
'''

SAXPY_SOURCE = '''
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]
'''


def load_kernels(api: str, source: str) -> dict:
    """``source`` as a module importing ``cuda`` and ``float32`` from ``api`` (kdebug or numba): both
    compilers read kernel source from a file, so the same text goes through a temporary one."""
    import importlib.util
    import tempfile

    folder = tempfile.mkdtemp(prefix="kdebug-bench-")
    path = os.path.join(folder, f"bench_kernels_{api}.py")
    header = ("from kdebug import cuda\nfrom kdebug.cuda import float32\n" if api == "kdebug"
              else "from numba import cuda, float32\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + source)
    spec = importlib.util.spec_from_file_location(f"bench_kernels_{api}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def _events_ms(launch, repeat: int) -> float:
    """Mean device milliseconds per launch over ``repeat`` back-to-back launches (pycuda events)."""
    import pycuda.driver as drv
    launch()
    drv.Context.synchronize()
    start, end = drv.Event(), drv.Event()
    start.record()
    for _ in range(repeat):
        launch()
    end.record()
    end.synchronize()
    return start.time_till(end) / repeat


def kdebug_side(quick: bool) -> dict:
    import numpy as np

    sys.path.insert(0, ROOT)
    from kdebug import cuda
    from kdebug.session.live import Session, set_session
    from kdebug.runtime.gpu import pack_params
    import pycuda.driver as drv

    session = Session(backend="gpu")
    set_session(session)
    out: dict = {"device": session.runtime.device.name(), "arch": session.target.arch}
    repeat = 5 if quick else 50

    # 1. saxpy bandwidth against a device-to-device copy of as many bytes
    saxpy = load_kernels("kdebug", SAXPY_SOURCE)["saxpy"]
    n = 1 << (22 if quick else 26)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(y), cuda.device_array_like(x)
    threads = 256
    grid = ((n + threads - 1) // threads, 1, 1)
    saxpy[grid[0], threads](np.float32(2.5), d_x, d_y, d_out)  # compiles, and checks the result
    np.testing.assert_allclose(d_out.copy_to_host(), np.float32(2.5) * x + y, rtol=1e-5)
    compiled = _compiled(session, "saxpy")
    argtypes = compiled.record.argtypes
    params = pack_params(argtypes, [np.float32(2.5)] + [(a.device_address(), a.shape) for a in (d_x, d_y, d_out)])
    fn = compiled.entry_address
    ms = _events_ms(lambda: fn._launch_kernel(grid, (threads, 1, 1), params, 0, None), repeat)
    moved = 3 * n * 4  # read x and y, write out
    out["saxpy_n"] = n
    out["saxpy_ms"] = ms
    out["saxpy_gbs"] = moved / ms / 1e6
    src, dst = session.runtime.allocate(moved // 2), session.runtime.allocate(moved // 2)
    copy_ms = _events_ms(lambda: drv.memcpy_dtod(dst.ptr, src.ptr, moved // 2), repeat)
    out["copy_gbs"] = moved / copy_ms / 1e6  # half the bytes read, half written
    out["saxpy_ptxas"] = compiled.record.snapshots.get("ptxas", "")

    # 2. the tiled matrix product
    ns = load_kernels("kdebug", MATMUL_SOURCE)
    matmul, tpb = ns["matmul"], ns["TPB"]
    m = 512 if quick else 2048
    a = rng.standard_normal((m, m)).astype(np.float32)
    b = rng.standard_normal((m, m)).astype(np.float32)
    d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.device_array((m, m), np.float32)
    blocks = ((m + tpb - 1) // tpb, (m + tpb - 1) // tpb, 1)
    t0 = time.perf_counter()
    matmul[blocks[:2], (tpb, tpb)](d_a, d_b, d_c)
    out["matmul_first_launch_s"] = time.perf_counter() - t0  # compile + load + run
    np.testing.assert_allclose(d_c.copy_to_host(), a @ b, rtol=1e-3, atol=1e-2 * np.sqrt(m))
    compiled = _compiled(session, "matmul")
    params = pack_params(compiled.record.argtypes, [(t.device_address(), t.shape) for t in (d_a, d_b, d_c)])
    fn = compiled.entry_address
    out["matmul_n"] = m
    out["matmul_ms"] = _events_ms(lambda: fn._launch_kernel(blocks, (tpb, tpb, 1), params, 0, None), repeat)
    return out


def _compiled(session, name: str):
    """The loaded kernel the first launch compiled (its pycuda Function is ``entry_address``)."""
    return next(c for c in session.driver.cache.values() if c.record.name == name)


def numba_side(quick: bool) -> dict:
    """The same matmul source under numba-cuda (run in a child process)."""
    import numpy as np
    from numba import cuda

    ns = load_kernels("numba", MATMUL_SOURCE)
    matmul, tpb = ns["matmul"], ns["TPB"]
    m = 512 if quick else 2048
    repeat = 5 if quick else 50
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, m)).astype(np.float32)
    b = rng.standard_normal((m, m)).astype(np.float32)
    d_a, d_b, d_c = cuda.to_device(a), cuda.to_device(b), cuda.device_array((m, m), np.float32)
    blocks = ((m + tpb - 1) // tpb, (m + tpb - 1) // tpb)
    t0 = time.perf_counter()
    matmul[blocks, (tpb, tpb)](d_a, d_b, d_c)
    cuda.synchronize()
    first = time.perf_counter() - t0
    np.testing.assert_allclose(d_c.copy_to_host(), a @ b, rtol=1e-3, atol=1e-2 * np.sqrt(m))
    start, end = cuda.event(), cuda.event()
    start.record()
    for _ in range(repeat):
        matmul[blocks, (tpb, tpb)](d_a, d_b, d_c)
    end.record()
    end.synchronize()
    import numba
    return {"matmul_ms": cuda.event_elapsed_time(start, end) / repeat, "matmul_first_launch_s": first,
            "numba": numba.__version__}


def pycuda_missing() -> str:
    """Why pycuda cannot drive a GPU here, or '' when it can (its driver initialises)."""
    try:
        import pycuda.driver as drv
        drv.init()
    except Exception as e:  # ImportError without pycuda, a driver error without a GPU
        return f"{type(e).__name__}: {e}"
    return ""


def run_numba(python: str, quick: bool) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # numba's own llvmlite, not the one carried for kdebug
    args = [python, os.path.abspath(__file__), "--numba-child"] + (["--quick"] if quick else [])
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "numba-cuda did not finish in 300 s"}
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr or r.stdout).splitlines() if ln.strip()]
        raised = [ln for ln in lines if re.match(r"[\w.]+(Error|Exception)\b", ln)]
        return {"error": f"numba-cuda failed: {(raised or lines or ['no output'])[-1][:120]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def table(k: dict, nb: dict) -> str:
    rows = [("benchmark", "kdebug", "reference", "ratio")]
    rows.append((f"saxpy 2^{k['saxpy_n'].bit_length() - 1} f32, GB/s", f"{k['saxpy_gbs']:.0f}",
                 f"d2d copy {k['copy_gbs']:.0f}", f"{k['saxpy_gbs'] / k['copy_gbs']:.2f}"))
    if "error" in nb:
        ref, ratio = nb["error"], "n/a"
    else:
        ref, ratio = f"numba-cuda {nb['matmul_ms']:.3f}", f"{k['matmul_ms'] / nb['matmul_ms']:.2f}"
    rows.append((f"tiled matmul {k['matmul_n']} f32, ms", f"{k['matmul_ms']:.3f}", ref, ratio))
    if "error" not in nb:
        rows.append(("matmul first launch (compile+load), s", f"{k['matmul_first_launch_s']:.3f}",
                     f"numba-cuda {nb['matmul_first_launch_s']:.3f}",
                     f"{k['matmul_first_launch_s'] / nb['matmul_first_launch_s']:.2f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    p.add_argument("--numba-python", default=sys.executable, help="the interpreter that has numba-cuda")
    p.add_argument("--numba-child", action="store_true", help=argparse.SUPPRESS)
    opts = p.parse_args(argv)
    if opts.numba_child:
        print(json.dumps(numba_side(opts.quick)))
        return 0
    missing = pycuda_missing()
    if missing:
        print(f"bench_gpu.py needs a CUDA GPU and pycuda: {missing}", file=sys.stderr)
        return 1
    k = kdebug_side(opts.quick)
    nb = run_numba(opts.numba_python, opts.quick)
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump({"kdebug": k, "numba_cuda": nb}, f, indent=1)
    print(f"device: {k['device']} ({k['arch']})")
    print(k["saxpy_ptxas"].split("--- ptxas log ---")[0].strip())
    print()
    print(table(k, nb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
