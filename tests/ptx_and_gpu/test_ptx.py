"""The PTX target without a GPU: every sample's PTX, ptxas and nvlink where the toolkit is present,
numba's compile_ptx API, the finish pass's kernel entries, libdevice, constants."""
from __future__ import annotations

import glob
import json
import math
import os
import re
import subprocess

import llvmlite.binding as llvm
import numpy as np
import pytest

from conftest import SAMPLES, run_kdebug
from kdebug import cuda
from kdebug.lang import types as T
from kdebug.targets import ptx as P

SAMPLE_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SAMPLES, "*.py")))
PTXAS = P.cuda_tool("ptxas")
NVLINK = P.cuda_tool("nvlink")
LIBDIR = P.cuda_libdir()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH and CUDA_HOME has none: "
                                                        "PTX cannot be assembled here")
needs_libdevice = pytest.mark.skipif(P.libdevice_path() is None,
                                     reason="libdevice.10.bc not found (no CUDA toolkit; set CUDA_HOME)")


def ptxas(ptx: str, tmp_path, relocatable: bool) -> subprocess.CompletedProcess:
    src = tmp_path / "m.ptx"
    src.write_text(ptx)
    args = [PTXAS, "-arch=sm_90", "-v"] + (["-c"] if relocatable else []) + [str(src), "-o", str(tmp_path / "m.o")]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def dump_ptx(sample: str, out) -> dict:
    """kdebug dump --target ptx: {job stem: {phase: text}} and the trace's events."""
    trace = out / "trace.jsonl"
    r = run_kdebug("dump", os.path.join("sample_kernels", sample), "--target", "ptx", "--backend", "cpu",
                   "--out", str(out / "dump"), "--no-passes", "--trace", str(trace), timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    files: dict[str, dict] = {}
    for path in glob.glob(str(out / "dump" / "*")):
        if re.search(r"-pass(\d{4,}-\w+\.ll|es\.txt)$|_remarks\.txt$", path):
            continue  # none with --no-passes (tests/driver/test_passes.py); LLVM's remarks (test_debug_info.py)
        m = re.match(r"(\d+_\w+?)_\d\d-(\w+)(?:\.excerpt)?\.\w+$", os.path.basename(path))
        files.setdefault(m.group(1), {})[m.group(2)] = open(path, encoding="utf-8").read()
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return {"files": files, "events": events}


@pytest.fixture(scope="module")
def sample_ptx(tmp_path_factory):
    """``sample_ptx("saxpy.py")``: ``dump_ptx`` of that sample, dumped once per module (the tests only
    read what it returns)."""
    cache: dict[str, dict] = {}

    def dumped(sample: str) -> dict:
        if sample not in cache:
            cache[sample] = dump_ptx(sample, tmp_path_factory.mktemp("ptx-dump"))
        return cache[sample]
    return dumped


# ---- every sample, through dump --target ptx -------------------------------------------------
@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_sample_ptx_dumps_assembles_and_links(sample, tmp_path, sample_ptx):
    """Every job's PTX once in the dump; where the toolkit is here, each module assembles with ptxas
    and a module with device-side launches links with nvlink -lcudadevrt (see test_toolkit_present)."""
    got = sample_ptx(sample)
    requested = [e for e in got["events"] if e["event"] == "job_requested"]
    assert requested, "the sample compiled nothing"
    assert all(e["target"] == "cpu" for e in requested), "the PTX side pipeline must not add jobs to the tree"
    assert len(got["files"]) == len({e["job"] for e in requested})
    for stem, phases in got["files"].items():
        assert "ptx" in phases, f"job {stem} has no PTX"
        assert re.search(r"^\.version \d+\.\d+$", phases["ptx"], re.M)
        assert re.search(r"\.(entry|func)\b", phases["ptx"])
    snaps = [e for e in got["events"] if e["event"] == "snapshot" and e["phase"] == "ptx"]
    assert all(e["language"] == "ptx" for e in snaps)
    assert len(snaps) == len(got["files"])  # once per job
    if PTXAS is None:
        return
    toplevels = [e["job"] for e in requested if e["parent"] is None]
    stems = {int(s.split("_")[0]): s for s in got["files"]}
    for job in toplevels:
        phases = got["files"][stems[job]]
        report = phases["ptxas"]
        assert report.splitlines()[0].endswith(": ok"), report
        ptx = phases["ptx"]
        relocatable = P.CDP2_LAUNCH in ptx
        assert ("-c" in report.splitlines()[0].split(":")[0].split()) == relocatable
        r = ptxas(ptx, tmp_path, relocatable)
        assert r.returncode == 0, r.stderr
        assert "Used" in r.stdout + r.stderr
        if relocatable and NVLINK is not None and LIBDIR is not None:  # link the device runtime, as the driver would
            link = subprocess.run([NVLINK, "-arch=sm_90", f"-L{LIBDIR}", "-lcudadevrt", str(tmp_path / "m.o"),
                                   "-o", str(tmp_path / "m.cubin")], capture_output=True, text=True, timeout=120)
            assert link.returncode == 0, link.stderr


def test_toolkit_present():
    """Says, as a skip, when the sample tests above could not assemble or link (no CUDA toolkit here)."""
    missing = [what for what, ok in (("ptxas", PTXAS), ("nvlink", NVLINK), ("libcudadevrt.a", LIBDIR)) if not ok]
    if missing:
        pytest.skip(f"{', '.join(missing)} not found (PATH, CUDA_HOME): sample PTX was not assembled or linked")
    r = subprocess.run([PTXAS, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ptxas" in r.stdout.lower() + r.stderr.lower()


def test_device_launch_samples_use_cdp2(sample_ptx):
    launching = [s for s in SAMPLE_FILES if "launch" in s or "parallel" in s]
    if not launching:
        pytest.skip("no device-side launch sample in sample_kernels/")
    got = sample_ptx(launching[0])
    top = next(p for s, p in got["files"].items() if s.startswith("001_"))
    ptx = top["ptx"]
    assert f".extern .func  (.param .b64 func_retval0) {P.CDP2_GET_BUFFER}" in ptx
    assert P.CDP2_LAUNCH in ptx
    assert "cudaGetParameterBuffer(" not in ptx  # the legacy CDP1 names do not exist on sm_90


# ---- numba's compile-only API --------------------------------------------------------------
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def test_compile_ptx_kernel_returns_ptx_and_void():
    ptx, resty = cuda.compile_ptx(saxpy, "void(float32, float32[:], float32[:], float32[:])")
    assert resty == T.void
    assert ".target sm_90" in ptx and ".address_size 64" in ptx
    m = re.search(r"\.visible \.entry (\w+)\(([^)]*)\)", ptx)
    assert m and m.group(1).startswith("saxpy_") and m.group(1).endswith("_kernel")
    params = re.findall(r"\.param \.(\w+)", m.group(2))
    # a, then (data, shape[0]) for each array: flat parameters
    assert params == ["f32", "u64", "u64", "u64", "u64", "u64", "u64"]
    assert ".ptr .global" in m.group(2)


def test_compile_ptx_cc_and_current_device():
    ptx, _ = cuda.compile_ptx(saxpy, "void(float32, float32[:], float32[:], float32[:])", cc=(8, 0))
    assert ".target sm_80" in ptx
    ptx, _ = cuda.compile_ptx_for_current_device(saxpy, "void(float32, float32[:], float32[:], float32[:])")
    assert ".target sm_" in ptx


def test_compile_ptx_device_function_returns_its_type():
    def mad(a, b):
        return a * b + 1

    ptx, resty = cuda.compile_ptx(mad, "float64(float64, int32)", device=True)
    assert resty == T.float64
    assert re.search(r"\.visible \.func\s+\(\.param \.b64 func_retval0\) mad_\w+\(", ptx)
    assert ".entry" not in ptx


def test_compile_ptx_rejects_a_kernel_with_a_result():
    with pytest.raises(TypeError, match="void"):
        cuda.compile_ptx(saxpy, "float32(float32, float32[:], float32[:], float32[:])")


def test_compile_ptx_reports_bad_kernels_as_compile_errors():
    from kdebug.errors import CompileError

    def bad(x):
        x[0] = undefined_name  # noqa: F821

    with pytest.raises(CompileError):
        cuda.compile_ptx(bad, "void(float32[:])")


# ---- the finish pass: golden checks on before/after ------------------------------------------
def _snapshots(fn, sig):
    from kdebug.session.ptx_compile import ptx_driver
    driver = ptx_driver("sm_90", snapshots=True)
    from kdebug.lang.dispatcher import Dispatcher
    from kdebug.lang.signature import parse_signature
    compiled = driver.compile_kernel(Dispatcher(fn), parse_signature(sig).argtypes)
    return compiled.record, compiled


def test_finish_gives_kernels_the_ptx_kernel_entry():
    rec, compiled = _snapshots(saxpy, "void(float32, float32[:], float32[:], float32[:])")
    before, after = rec.snapshots["before_finish"], rec.snapshots["after_finish"]
    name = P.kernel_name(rec)
    assert "ptx_kernel" not in before and name not in before
    assert re.search(rf"^define void @{rec.entry}\(float %arg.a, {{ ptr, \[1 x i64\] }} %arg.x,", before, re.M)
    assert re.search(re.escape(f"define ptx_kernel void @{name}(float %a, ptr addrspace(1) %x.data, i64 %x.shape0, "
                               f"ptr addrspace(1) %y.data, i64 %y.shape0, ptr addrspace(1) %out.data, "
                               f"i64 %out.shape0)") + r"( !dbg !\d+)? \{", after)  # !dbg: its subprogram (lineinfo)
    assert re.search(rf"^define internal void @{rec.entry}\(.*\) #\d+( !dbg !\d+)? {{", after, re.M)  # the body: internal
    assert "alwaysinline" in after
    assert "addrspacecast" in after
    llvm.parse_assembly(after).verify()  # the snapshot is valid IR
    assert compiled.artifact.kernels == {rec.id: name}


def test_finish_flattens_tuples_booleans_and_2d_arrays():
    def k(a, flag, pair, out):
        i, j = cuda.grid(2)
        if flag and i < a.shape[0] and j < a.shape[1]:
            out[i, j] = a[i, j] * pair[0] + pair[1]

    types = (T.Array(T.float64, 2), T.boolean, T.Tuple((T.float64, T.int32)), T.Array(T.float64, 2))
    ptx, _ = cuda.compile_ptx(k, types)
    params = re.findall(r"\.param \.(\w+)", re.search(r"\.entry \w+\(([^)]*)\)", ptx).group(1))
    assert params == ["u64", "u64", "u64", "u8", "f64", "u32", "u64", "u64", "u64"]
    dtypes = [d for t in types for d in P.flat_param_dtypes(t)]
    assert [d.itemsize for d in dtypes] == [8, 8, 8, 1, 8, 4, 8, 8, 8]


def test_param_offsets_are_natural_alignment():
    assert P.param_offsets([4, 8, 1, 8, 4, 2]) == ([0, 8, 16, 24, 32, 36], 38)


# ---- math through libdevice, constants ------------------------------------------------------
@needs_libdevice
def test_math_goes_through_libdevice_and_assembles(tmp_path):
    def k(x, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out[i] = math.sin(v) + math.exp(v) + math.pow(v, 1.5) + math.tan(v) + math.erf(v) + math.log(v + 2.0)

    ptx, _ = cuda.compile_ptx(k, "void(float32[:], float32[:])")
    assert ".extern" not in ptx  # libdevice linked in: nothing left to resolve
    ptx64, _ = cuda.compile_ptx(k, "void(float64[:], float64[:])")
    assert ".extern" not in ptx64
    if PTXAS is not None:
        assert ptxas(ptx, tmp_path, False).returncode == 0
        assert ptxas(ptx64, tmp_path, False).returncode == 0


def test_missing_libdevice_is_a_clear_error(monkeypatch):
    from kdebug.errors import CompileError
    from kdebug.targets.ptx import toolkit
    monkeypatch.setattr(toolkit, "libdevice_path", lambda: None)

    def k(x):
        x[0] = math.sin(x[0])

    with pytest.raises(CompileError, match="libdevice"):
        cuda.compile_ptx(k, "void(float32[:])")


TABLE = np.arange(16, dtype=np.float32)
BIG = np.arange(20000, dtype=np.float32)  # 80 KB: more than constant memory takes
MID_A = np.arange(6000, dtype=np.float32)
MID_B = np.arange(6000, dtype=np.float32) + 1


def test_module_level_arrays_become_const_and_global_memory():
    def k(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = TABLE[i % 16] + BIG[i]

    ptx, _ = cuda.compile_ptx(k, "void(float32[:])")
    assert re.search(r"^\.const \.align 16 \.b8 kdebug_const_\w+\[64\]", ptx, re.M)
    assert re.search(r"^\.global \.align 16 \.b8 kdebug_const_\w+\[80000\]", ptx, re.M)

    def two(out):  # 2 x 24 KB: the second no longer fits the module's constant memory
        i = cuda.grid(1)
        if i < out.size:
            out[i] = MID_A[i] + MID_B[i]

    ptx, _ = cuda.compile_ptx(two, "void(float32[:])")
    assert len(re.findall(r"^\.const .*\[24000\]", ptx, re.M)) == 1
    assert len(re.findall(r"^\.global .*\[24000\]", ptx, re.M)) == 1
    assert ".visible .global" not in ptx and ".visible .const" not in ptx  # internalised


def test_ptxas_report_parsing():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k_j1_kernel' for 'sm_90'
ptxas info    : Function properties for k_j1_kernel
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]"""
    funcs = P.parse_ptxas_log(log)
    assert funcs == {"k_j1_kernel": {"registers": 12, "shared": 1024, "stack": 8, "spill_stores": 4, "spill_loads": 4}}
    text = P.format_ptxas({"available": True, "command": "ptxas -arch=sm_90 -v", "ok": True, "functions": funcs,
                           "log": log})
    assert "k_j1_kernel" in text and "12" in text


def test_without_ptxas_dump_says_so_once(tmp_path):
    trace = tmp_path / "t.jsonl"
    env = {"PATH": os.path.dirname(os.sys.executable), "CUDA_HOME": "", "CUDA_PATH": "", "CUDA_ROOT": ""}
    r = run_kdebug("dump", "sample_kernels/saxpy.py", "--target", "ptx", "--backend", "cpu", "--out",
                   str(tmp_path / "d"), "--trace", str(trace), env=env)
    assert r.returncode == 0, r.stderr
    notes = [e for e in map(json.loads, trace.read_text().splitlines())
             if e["event"] == "diagnostic" and "ptxas is not on PATH" in e["message"]]
    assert len(notes) == 1
    assert glob.glob(str(tmp_path / "d" / "*-ptx.ptx"))


def test_cuda_toolkit_found_through_a_wrapper_script(tmp_path, monkeypatch):
    real = tmp_path / "toolkit" / "bin"
    real.mkdir(parents=True)
    (real / "ptxas").write_text("#!/bin/sh\necho real\n")
    (real / "ptxas").chmod(0o755)
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    (wrappers / "ptxas").write_text(f'#!/bin/sh\nexec {real / "ptxas"} "$@"\n')
    (wrappers / "ptxas").chmod(0o755)
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(wrappers))
    assert P.cuda_home() == str(tmp_path / "toolkit")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert P.cuda_home() == str(tmp_path)


# ---- block-level intrinsics: shared memory, barriers, votes, atomics --------------------------------
TPB = 16


def _has_intrinsics(*names) -> bool:
    from kdebug.frontend.intrinsics import REGISTRY
    return all(n in REGISTRY for n in names)


needs_block_intrinsics = pytest.mark.skipif(
    not _has_intrinsics("shared.array", "syncthreads", "syncthreads_count", "atomic.add", "cg.this_grid.sync"),
    reason="this build's frontend has no shared arrays, barriers or atomics yet")


def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TPB, TPB), dtype=np.float32)
    sB = cuda.shared.array((TPB, TPB), dtype=np.float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = np.float32(0.)
    for i in range(cuda.gridDim.x):
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


@needs_block_intrinsics
def test_shared_arrays_and_barriers(tmp_path):
    ptx, _ = cuda.compile_ptx(tiled_matmul, "void(float32[:, :], float32[:, :], float32[:, :])")
    assert len(re.findall(r"\.shared \.align 16 \.b8 kdebug_shared_\w+\[1024\]", ptx)) == 2
    assert ptx.count("bar.sync") == 2
    assert "ld.shared" in ptx and "st.shared" in ptx
    if PTXAS is not None:
        report = P.run_ptxas(ptx, "sm_90", False)
        assert report["ok"], report["log"]
        (fn,) = report["functions"].values()
        assert fn["shared"] == 2048


@needs_block_intrinsics
def test_votes_and_atomics(tmp_path):
    def votes(x, out, f):
        i = cuda.grid(1)
        c = cuda.syncthreads_count(x[i] > 0)
        cuda.atomic.add(out, 0, c)
        cuda.atomic.max(out, 1, i)
        cuda.atomic.add(f, 0, x[i])

    ptx, _ = cuda.compile_ptx(votes, "void(float32[:], int32[:], float32[:])")
    assert "bar.red.popc.u32" in ptx
    assert "atom.global.add.u32" in ptx and "atom.global.max.s32" in ptx and "atom.global.add.f32" in ptx
    if PTXAS is not None:
        assert ptxas(ptx, tmp_path, False).returncode == 0


@needs_block_intrinsics
def test_grid_sync_is_a_clear_error_on_ptx():
    from kdebug.errors import CompileError

    def k(x):
        cuda.cg.this_grid().sync()

    with pytest.raises(CompileError, match="not supported on the ptx target"):
        cuda.compile_ptx(k, "void(float32[:])")


# ---- the CDP2 protocol, against nvcc's own device-side launch --------------------------------------
@cuda.jit
def cdp_child(data, start, f, flag):
    i = start + cuda.grid(1)
    if flag and i < data.size:
        data[i] = data[i] * f


def cdp_parent(data):
    if cuda.threadIdx.x == 0:
        cdp_child[(data.size + 63) // 64, 64](data, 5, 3.0, True)


CDP_CUDA_C = """
__global__ void child(double* data, long shape0, long start, double f, bool flag) {
  long i = start + blockIdx.x * blockDim.x + threadIdx.x;
  if (flag && i < shape0) data[i] *= f;
}
__global__ void parent(double* data, long shape0) {
  if (threadIdx.x == 0) child<<<(shape0 + 63) / 64, 64>>>(data, shape0, 5, 3.0, true);
}
"""


def _launch_stores(ptx: str) -> list[tuple[int, int]]:
    """(offset, bits) of the stores into the parameter buffer, between the two CDP2 calls."""
    body = ptx[ptx.index(P.CDP2_GET_BUFFER + ","):]
    body = body[:body.index(P.CDP2_LAUNCH + ",")]
    stores = re.findall(r"\bst\.[ub](\d+)\s+\[%rd\d+(?:\+(\d+))?\]", body)
    return sorted((int(off or 0), int(bits)) for bits, off in stores)


def test_device_launch_lays_out_parameters_as_nvcc_does(tmp_path):
    nvcc = P.cuda_tool("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found (PATH, CUDA_HOME): no reference PTX for a device-side launch")
    src = tmp_path / "k.cu"
    src.write_text(CDP_CUDA_C)
    r = subprocess.run([nvcc, "-arch=sm_90", "-rdc=true", "-ptx", str(src), "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        pytest.skip(f"nvcc could not build the reference: {r.stderr.strip()[:200]}")
    reference = (tmp_path / "k.ptx").read_text()
    ptx, _ = cuda.compile_ptx(cdp_parent, (T.Array(T.float64, 1),))
    # the flat child parameters (data, shape0, start, f, flag) at the offsets nvcc uses for the same list
    assert _launch_stores(ptx) == _launch_stores(reference) == [(0, 64), (8, 64), (16, 64), (24, 64), (32, 8)]
    for text in (ptx, reference):  # a null buffer skips the launch; the default stream
        assert re.search(r"setp\.eq\.[sbu]64\s+%p\d+, %rd\d+, 0;", text)


def test_dump_arch_option(tmp_path):
    r = run_kdebug("dump", "sample_kernels/saxpy.py", "--target", "ptx", "--arch", "sm_80", "--backend", "cpu",
                   "--out", str(tmp_path / "d"))
    assert r.returncode == 0, r.stderr
    (ptx,) = glob.glob(str(tmp_path / "d" / "*-ptx.ptx"))
    assert ".target sm_80" in open(ptx).read()
    r = run_kdebug("dump", "sample_kernels/saxpy.py", "--target", "ptx", "--arch", "gfx90a", "--out", str(tmp_path))
    assert r.returncode == 2 and "'gfx90a' is not a GPU architecture" in r.stderr
    with pytest.raises(ValueError, match="not a GPU architecture"):
        cuda.compile_ptx(saxpy, "void(float32, float32[:], float32[:], float32[:])", cc="nine")


def test_compile_ptx_takes_numbas_parameters():
    import inspect
    params = list(inspect.signature(cuda.compile_ptx).parameters)
    assert params[:7] == ["pyfunc", "sig", "debug", "lineinfo", "device", "fastmath", "cc"]
    ptx, resty = cuda.compile_ptx(saxpy, "void(float32, float32[:], float32[:], float32[:])", None, True, False,
                                  fastmath=True, opt=True)
    assert ".entry" in ptx and resty == T.void


class _Spawns:
    """subprocess.Popen, counting what it starts (subprocess.run goes through it)."""

    def __init__(self, monkeypatch) -> None:
        self.commands: list = []
        original = subprocess.Popen

        def counting(args, *a, **kw):
            self.commands.append(args)
            return original(args, *a, **kw)

        monkeypatch.setattr(subprocess, "Popen", counting)


def _axpy_for_ptx(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = a * x[i] + y[i]


def test_compile_ptx_without_a_resource_request_runs_no_subprocess(monkeypatch):
    spawns = _Spawns(monkeypatch)
    ptx, resty = cuda.compile_ptx(_axpy_for_ptx, "void(float32[::1], float32, float32[::1], float32[::1])",
                                  cc=(9, 0))
    assert ".entry" in ptx and resty == T.void
    assert spawns.commands == []  # ptxas is not run for a compile_ptx: numba's does not assemble either


@needs_ptxas
def test_ptxas_runs_once_when_its_report_is_asked_for(monkeypatch):
    from kdebug.session.ptx_compile import ptx_driver
    from kdebug.lang.dispatcher import Dispatcher
    driver = ptx_driver("sm_90")
    sig = (T.float32[::1], T.float32, T.float32[::1], T.float32[::1])
    spawns = _Spawns(monkeypatch)
    compiled = driver.compile_kernel(Dispatcher(_axpy_for_ptx), sig)
    assert spawns.commands == [] and compiled.artifact.ptxas is None
    report = driver.target.ptxas_report(compiled.artifact)
    assert report["ok"] and report["cubin"]
    entry = compiled.artifact.kernels[compiled.record.id]
    assert report["functions"][entry]["registers"] > 0
    assert len(spawns.commands) == 1 and os.path.basename(spawns.commands[0][0]) == "ptxas"
    assert driver.target.ptxas_report(compiled.artifact) is report and len(spawns.commands) == 1  # kept
