"""The gpu backend.

Two halves: the host side of the gpu runtime against a stand-in for pycuda's
driver module (device memory as host bytes, launches recorded and emulated in
Python), which runs everywhere; and the same samples on a real GPU through
pycuda, skipped with the reason when pycuda or a device is missing
(scripts/gpu_check.sh runs them on a GPU machine).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import ROOT, SAMPLES, run_kdebug
from kdebug.session.live import Session, gpu_available, set_session
from kdebug.errors import BackendUnavailable, LaunchError
from kdebug.lang import types as T
from kdebug.targets import ptx as P

GPU_OK, GPU_WHY = gpu_available()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"no GPU backend here: {GPU_WHY}")
SAMPLE_FILES = sorted(f for f in os.listdir(SAMPLES) if f.endswith(".py"))


# ---- a stand-in for pycuda.driver ----------------------------------------------------------------
class FakeCuda:
    """Device memory as bytearrays keyed by address; launches recorded, emulated by Python functions."""

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}
        self.next = 0x7F0000000000
        self.launches: list[dict] = []
        self.modules: list[dict] = []
        self.emulators: dict = {}  # kernel name prefix -> fn(fake, params bytes, grid, block)
        self.fail_with = None

    def driver(self) -> types.ModuleType:
        fake = self
        drv = types.ModuleType("pycuda.driver")

        class Error(Exception):
            pass

        class LaunchError_(Error):
            pass

        drv.Error, drv.LaunchError = Error, LaunchError_
        drv.init = lambda: None
        drv.device_attribute = types.SimpleNamespace(MAX_THREADS_PER_BLOCK="MAX_THREADS_PER_BLOCK",
                                                     MULTIPROCESSOR_COUNT="MULTIPROCESSOR_COUNT",
                                                     WARP_SIZE="WARP_SIZE")
        drv.jit_input_type = types.SimpleNamespace(PTX="ptx", LIBRARY="library")

        class Device:
            @staticmethod
            def count():
                return 1

            def compute_capability(self):
                return (9, 0)

            def name(self):
                return "Fake H200"

            def get_attribute(self, attr):
                return {"MAX_THREADS_PER_BLOCK": 1024, "MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32}[attr]

        class Context:
            @staticmethod
            def get_device():
                return Device()

            @staticmethod
            def synchronize():
                if fake.fail_with:
                    raise LaunchError_(fake.fail_with)

        drv.Device, drv.Context = Device, Context

        class Event:
            def record(self, stream=None):
                self.t = len(fake.launches)

            def synchronize(self):
                pass

            def time_till(self, other):
                return 0.5 * max(other.t - self.t, 1)  # milliseconds: 0.5 per launch recorded between

        drv.Event = Event

        class Alloc(int):
            pass

        def mem_alloc(n):
            ptr = fake.next
            fake.next += (n + 255) // 256 * 256
            fake.memory[ptr] = bytearray(n)
            return Alloc(ptr)

        def memcpy_htod(ptr, arr):
            data = np.ascontiguousarray(arr).tobytes()
            mem, at = fake.locate(ptr)
            mem[at:at + len(data)] = data

        def memcpy_dtoh(arr, ptr):
            view = arr.reshape(-1).view(np.uint8)
            mem, at = fake.locate(ptr)
            view[:] = np.frombuffer(bytes(mem[at:at + arr.nbytes]), dtype=np.uint8)

        def memcpy_dtod(dst, src, n):
            fake.memory[int(dst)][:n] = fake.memory[int(src)][:n]

        drv.mem_alloc, drv.memcpy_htod, drv.memcpy_dtoh, drv.memcpy_dtod = mem_alloc, memcpy_htod, memcpy_dtoh, memcpy_dtod

        class Function:
            def __init__(self, name, module):
                self.name, self.module = name, module

            def _launch_kernel(self, grid, block, params, shared, stream):
                fake.launches.append({"name": self.name, "grid": grid, "block": block, "params": params,
                                      "shared": shared, "module": self.module})
                for prefix, emulate in fake.emulators.items():
                    if self.name.startswith(prefix):
                        emulate(fake, params)

        class Module:
            def __init__(self, ptx, linked):
                self.record = {"ptx": ptx.decode(), "libraries": linked}
                fake.modules.append(self.record)

            def get_function(self, name):
                assert re.search(rf"\.entry {re.escape(name)}\(", self.record["ptx"]), f"no kernel {name}"
                return Function(name, self.record)

        drv.module_from_buffer = lambda ptx: Module(ptx, [])

        compiler = types.ModuleType("pycuda.compiler")

        class DynamicModule:
            def __init__(self, cuda_libdir=None, **kw):
                self.libdir, self.data, self.libs = cuda_libdir, b"", []

            def add_data(self, data, kind, name):
                self.data += data
                return self

            def add_stdlib(self, name):
                path = os.path.join(self.libdir, f"lib{name}.a")
                assert os.path.isfile(path), path
                self.libs.append(path)
                return self

            def link(self):
                self.module = Module(self.data, self.libs)
                return self

            def get_function(self, name):
                return self.module.get_function(name)

        compiler.DynamicModule = DynamicModule
        self.compiler = compiler
        return drv

    def array(self, ptr, dtype, n) -> np.ndarray:
        """A live view of fake device memory."""
        mem, at = self.locate(ptr)
        return np.frombuffer(mem, dtype=dtype, count=n, offset=at)

    def locate(self, ptr) -> tuple[bytearray, int]:
        """The allocation holding device address ``ptr`` and the offset in it (a view's address)."""
        ptr = int(ptr)
        for base, mem in self.memory.items():
            if base <= ptr < base + max(len(mem), 1):
                return mem, ptr - base
        raise AssertionError(f"no allocation holds {ptr:#x}")


@pytest.fixture
def fake_gpu(monkeypatch):
    fake = FakeCuda()
    drv = fake.driver()
    pkg = types.ModuleType("pycuda")
    pkg.__path__ = []
    pkg.driver, pkg.compiler = drv, fake.compiler
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", fake.compiler)
    monkeypatch.setitem(sys.modules, "pycuda.autoprimaryctx", types.ModuleType("pycuda.autoprimaryctx"))
    session = Session(backend="gpu")
    set_session(session)
    yield fake, session
    set_session(None)


def entry_params(ptx: str, name: str) -> list[int]:
    """The sizes of a kernel entry's parameters, read from its PTX."""
    sig = re.search(rf"\.entry {re.escape(name)}\(([^)]*)\)", ptx).group(1)
    sizes = {"u8": 1, "b8": 1, "u16": 2, "u32": 4, "f32": 4, "b32": 4, "u64": 8, "f64": 8, "b64": 8}
    return [sizes[t] for t in re.findall(r"\.param \.(\w+)", sig)]


def unpack(params: bytes, ptx: str, name: str, fmt: str) -> tuple:
    """Read the parameter buffer at the offsets the PTX entry implies (natural alignment)."""
    sizes = entry_params(ptx, name)
    offsets, total = P.param_offsets(sizes)
    assert len(params) == total
    assert len(fmt) == len(sizes)
    return tuple(np.frombuffer(params[o:o + s], dtype=np.dtype(c))[0] for o, s, c in zip(offsets, sizes, fmt))


# ---- the host side, against the stand-in ------------------------------------------------------------
def test_gpu_session_uses_ptx_target_and_device_memory(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda
    assert session.backend == "gpu" and session.target.name == "ptx" and session.target.arch == "sm_90"
    x = np.arange(10, dtype=np.float32)
    d = cuda.to_device(x)
    assert d._dev is not None and d.device_address() in fake.memory
    np.testing.assert_array_equal(fake.array(d.device_address(), np.float32, 10), x)
    d[3] = 42
    assert fake.array(d.device_address(), np.float32, 10)[3] == 42
    assert d[3] == 42
    np.testing.assert_array_equal(d.copy_to_host()[:3], x[:3])
    e = cuda.device_array_like(d)
    e.copy_to_device(d)
    assert e.copy_to_host()[3] == 42
    assert d.reshape(2, 5).device_address() == d.device_address()
    dev = cuda.get_current_device()
    assert dev.name == b"Fake H200" and dev.compute_capability == (9, 0) and dev.MULTIPROCESSOR_COUNT == 132


def test_gpu_launch_packs_flat_parameters_and_copies_back(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    def emulate(fake, params):
        ptx = fake.modules[-1]["ptx"]
        a, px, nx, py, ny, pout, nout = unpack(params, ptx, fake.launches[-1]["name"], "fQqQqQq")
        x, y, out = (fake.array(int(p), np.float32, int(n)) for p, n in ((px, nx), (py, ny), (pout, nout)))
        out[:] = a * x + y

    fake.emulators["saxpy"] = emulate
    n = 1000
    x = np.arange(n, dtype=np.float32)
    d_y = cuda.to_device(np.ones(n, dtype=np.float32))
    out = np.zeros(n, dtype=np.float32)  # a host array: staged on the device, copied back
    saxpy[4, 256](np.float32(2.0), x, d_y, out)
    np.testing.assert_allclose(out, 2 * x + 1)
    launch = fake.launches[-1]
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1)
    assert launch["name"] == saxpy_kernel_name(session)
    assert "ptxas" in next(iter(session.driver.cache.values())).record.snapshots or P.cuda_tool("ptxas") is None


def saxpy_kernel_name(session) -> str:
    rec = next(iter(session.driver.cache.values())).record
    return P.kernel_name(rec)


def test_gpu_launch_packs_booleans_tuples_and_2d(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda

    @cuda.jit
    def k(a, flag, pair, out):
        i, j = cuda.grid(2)
        if flag and i < a.shape[0] and j < a.shape[1]:
            out[i, j] = a[i, j] * pair[0] + pair[1]

    seen = {}

    def emulate(fake, params):
        ptx = fake.modules[-1]["ptx"]
        seen["v"] = unpack(params, ptx, fake.launches[-1]["name"], "QqqBdqQqq")

    fake.emulators["k_"] = emulate
    a = cuda.to_device(np.ones((3, 5)))
    out = cuda.device_array((3, 5))
    k[(1, 1), (4, 8)](a, True, (2.5, 7), out)
    ptr, s0, s1, flag, p0, p1, optr, o0, o1 = seen["v"]
    assert (ptr, s0, s1) == (a.device_address(), 3, 5) and (optr, o0, o1) == (out.device_address(), 3, 5)
    assert flag == 1 and p0 == 2.5 and p1 == 7


def test_device_launches_link_cudadevrt(fake_gpu):
    fake, session = fake_gpu
    if P.cuda_libdir() is None:
        pytest.skip("libcudadevrt.a not found (no CUDA toolkit; set CUDA_HOME)")
    from kdebug import cuda

    @cuda.jit
    def child(data, factor):
        i = cuda.grid(1)
        if i < data.size:
            data[i] = data[i] * factor

    @cuda.jit
    def parent(data):
        if cuda.grid(1) == 0:
            child[(data.size + 63) // 64, 64](data, 3.0)

    d = cuda.to_device(np.arange(100, dtype=np.float64))
    parent[1, 32](d)
    mod = fake.modules[-1]
    assert [os.path.basename(p) for p in mod["libraries"]] == ["libcudadevrt.a"]
    assert P.CDP2_LAUNCH in mod["ptx"]
    assert fake.launches[-1]["name"].startswith("parent_")


def test_cuda_errors_are_reported_against_the_launch(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda

    @cuda.jit
    def boom(x):
        x[0] = 1.0

    fake.fail_with = "cuCtxSynchronize failed: an illegal memory access was encountered"
    with pytest.raises(LaunchError, match=r"CUDA error in boom\[\(2, 1, 1\), \(32, 1, 1\)\]: .*illegal memory"):
        boom[2, 32](np.zeros(4))
    assert session.failed


def test_backend_gpu_fails_clearly_without_pycuda(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(BackendUnavailable, match="needs pycuda and a CUDA device: pycuda is not importable"):
        Session(backend="gpu")
    assert Session(backend="auto").backend == "cpu"


def test_cli_backend_gpu_without_a_gpu_exits_1():
    if GPU_OK:
        pytest.skip("a GPU is present here: --backend gpu works")
    r = run_kdebug("run", "--headless", "--backend", "gpu", "sample_kernels/saxpy.py")
    assert r.returncode == 1
    assert "the gpu backend needs pycuda and a CUDA device" in r.stderr
    assert "Traceback" not in r.stderr


def test_pack_params_layout():
    from kdebug.runtime.gpu import pack_params
    argtypes = (T.float32, T.Array(T.float64, 2), T.boolean, T.int16)
    buf = pack_params(argtypes, [np.float32(1.5), (0x1000, (3, 4)), True, 7])
    assert len(buf) == 4 + 4 + 8 * 3 + 1 + 1 + 2
    assert np.frombuffer(buf[0:4], np.float32)[0] == 1.5
    assert np.frombuffer(buf[8:32], np.int64).tolist() == [0x1000, 3, 4]
    assert buf[32] == 1 and np.frombuffer(buf[34:36], np.int16)[0] == 7


# ---- device-array slices are views (numba's DeviceNDArray: base address + offset, strides, shape) ----------
def _views_of(d):
    """Slices of a 3x4 float64 device array: (the slice, numba's offset in bytes, strides, shape)."""
    return [(d[:, 1], 8, (32,), (3,)), (d[1:, 2:], 48, (32, 8), (2, 2)), (d[::-1], 64, (-32, 8), (3, 4)),
            (d[2], 64, (8,), (4,)), (d[::2, ::3], 0, (64, 24), (2, 2)), (d[1:, 2:][1:, ::-1], 88, (32, -8), (1, 2))]


def _check_views(d, base_address, device_bytes):
    """The view arithmetic, and writes through views landing in the allocation (``device_bytes()``)."""
    for view, offset, strides, shape in _views_of(d):
        assert (view.device_address() - base_address, view.strides, view.shape) == (offset, strides, shape)
    col = d[:, 1]
    col[1] = 50.0  # an element write through the view
    col2 = d[1:, 2:]
    col2.copy_to_device(np.array([[-1.0, -2.0], [-3.0, -4.0]]))
    expected = np.arange(12.0).reshape(3, 4)
    expected[1, 1] = 50
    expected[1:, 2:] = [[-1, -2], [-3, -4]]
    np.testing.assert_array_equal(device_bytes(), expected)
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    np.testing.assert_array_equal(d[::-1][:, 1].copy_to_host(), expected[::-1, 1])
    assert d[:, 1][2] == expected[2, 1]
    with pytest.raises(NotImplementedError, match="ravel on non-contiguous array"):
        col.ravel()


def test_gpu_device_array_slices_are_views_of_the_allocation(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda
    d = cuda.to_device(np.arange(12.0).reshape(3, 4))
    base = d.device_address()
    assert base in fake.memory and len(fake.memory) == 1
    _check_views(d, base, lambda: fake.array(base, np.float64, 12).reshape(3, 4))
    assert len(fake.memory) == 1  # no allocation for any view


def test_cpu_device_array_slices_are_the_same_views():
    from kdebug import cuda
    set_session(Session(backend="cpu"))
    try:
        d = cuda.to_device(np.arange(12.0).reshape(3, 4))
        _check_views(d, d.device_address(), lambda: d._host)
    finally:
        set_session(None)


def test_gpu_launch_passes_a_view_with_its_strides(fake_gpu):
    fake, session = fake_gpu
    from kdebug import cuda

    @cuda.jit
    def add_index(v):
        for i in range(v.shape[0]):
            v[i] += i

    seen = {}

    def emulate(fake, params):
        ptx = fake.modules[-1]["ptx"]
        ptr, n, stride = seen["v"] = unpack(params, ptx, fake.launches[-1]["name"], "Qqq")
        mem, at = fake.locate(ptr)
        elems = np.frombuffer(mem, np.float64)
        for i in range(int(n)):
            elems[at // 8 + i * int(stride)] += i

    fake.emulators["add_index"] = emulate
    d = cuda.to_device(np.zeros((3, 4)))
    add_index[1, 1](d[:, 2])
    assert seen["v"] == (d.device_address() + 16, 3, 4)  # the view's address, shape and stride in elements
    assert [repr(s[0]) for s in add_index.signatures] == ["Array(float64, 1, 'A', False, aligned=True)"]
    host = np.zeros((3, 4))
    host[:, 2] = [0, 1, 2]
    np.testing.assert_array_equal(d.copy_to_host(), host)
    m = np.zeros((4, 3))
    add_index[1, 1](m[::2, 1])  # a strided host array: staged contiguous (stride 1), written into the view
    assert seen["v"][1:] == (2, 1)
    expected = np.zeros((4, 3))
    expected[::2, 1] = [0, 1]
    np.testing.assert_array_equal(m, expected)


def test_pack_params_of_a_strided_view():
    from kdebug.runtime.gpu import array_value, pack_params
    t = T.Array(T.float32, 2, "A", strided=True)
    view = np.zeros((4, 6), np.float32)[::2, 1::2]
    buf = pack_params((T.int8, t), [3, array_value(t, 0x2000, view)])
    assert len(buf) == 8 + 8 * 5
    assert np.frombuffer(buf[8:], np.int64).tolist() == [0x2000, 2, 3, 12, 2]  # data, shape, strides in elements


@needs_gpu
def test_gpu_device_array_views_in_kernels_match_the_cpu_backend():
    """The pycuda half of the view tests above: a kernel writing through device-array views on a GPU."""
    from kdebug import cuda
    results = []
    for backend in ("cpu", "gpu"):
        set_session(Session(backend=backend))

        @cuda.jit
        def add_index(v):
            for i in range(v.shape[0]):
                v[i] += i

        d = cuda.to_device(np.arange(12.0).reshape(3, 4))
        add_index[1, 1](d[:, 2])
        add_index[1, 1](d[::-1, 0])
        add_index[1, 1](d[1])
        results.append(d.copy_to_host())
    set_session(None)
    np.testing.assert_array_equal(results[0], results[1])


# ---- on a real GPU ---------------------------------------------------------------------------------
def _script_output(sample: str, backend: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KDEBUG_BACKEND=backend, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, os.path.join(SAMPLES, sample)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)


@needs_gpu
@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_sample_gives_the_same_result_on_gpu_and_cpu(sample):
    cpu = _script_output(sample, "cpu")
    gpu = _script_output(sample, "gpu")
    assert cpu.returncode == 0, cpu.stderr
    assert gpu.returncode == 0, gpu.stderr
    assert same_output(cpu.stdout, gpu.stdout), (cpu.stdout, gpu.stdout)


def same_output(a: str, b: str) -> bool:
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from compare_outputs import same_output as same
    finally:
        sys.path.pop(0)
    return same(a, b)


def test_sample_outputs_compare_numbers_with_a_tolerance():
    assert same_output("reduction: sum matches (131005.234)\n", "reduction: sum matches (131005.236)\n")
    assert not same_output("sum (131005.234)", "sum (131999.0)")
    assert not same_output("a b c a b c", "a b c a b")
    assert same_output("self_launch: [0, 10, 20]", "self_launch: [0, 10, 20]")
    assert not same_output("self_launch: [0, 10, 20]", "self_launch: [0, 10, 21]")


@needs_gpu
def test_gpu_saxpy_and_device_arrays():
    from kdebug import cuda
    set_session(Session(backend="gpu"))

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    n = 1 << 20
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    d_x, d_y, d_out = cuda.to_device(x), cuda.to_device(x), cuda.device_array_like(x)
    saxpy[(n + 255) // 256, 256](np.float32(3), d_x, d_y, d_out)
    np.testing.assert_allclose(d_out.copy_to_host(), 4 * x, rtol=1e-6)
    out = np.zeros_like(x)
    saxpy[(n + 255) // 256, 256](np.float32(3), x, x, out)  # host arrays: copied in and back
    np.testing.assert_allclose(out, 4 * x, rtol=1e-6)


@needs_gpu
def test_gpu_headless_run_reports_gpu_launches():
    r = run_kdebug("run", "--headless", "--backend", "gpu", "sample_kernels/dynamic_parallel.py", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "gpu" in r.stdout


# ---- the GPU check script and benchmark, as far as a machine without a GPU allows --------------------
GPU_CHECK = os.path.join(ROOT, "scripts", "gpu_check.sh")


def _gpu_check(*args, env=None):
    return subprocess.run(["bash", GPU_CHECK, *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, **(env or {})))


def test_gpu_check_usage():
    r = _gpu_check("--help")
    assert r.returncode == 0 and "--steps LIST" in r.stdout and "fetch_gpu_deps.sh" in r.stdout
    r = _gpu_check("--frobnicate")
    assert r.returncode == 2 and "unknown option: --frobnicate" in r.stderr
    r = _gpu_check("--steps", "build,launch")
    assert r.returncode == 2 and "unknown step 'launch'" in r.stderr


def test_fetch_gpu_deps_usage():
    script = os.path.join(ROOT, "scripts", "fetch_gpu_deps.sh")
    r = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "pip download --no-deps --no-binary=:all: --no-build-isolation -d DEST pycuda==" in r.stdout
    r = subprocess.run(["bash", script, "--bogus"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr


def test_gpu_check_build_fails_clearly_without_a_driver(tmp_path):
    if GPU_OK:
        pytest.skip("a GPU driver is present here: the build step would build pycuda")
    r = _gpu_check("--steps", "build", "--work", str(tmp_path), "--wheels", str(tmp_path / "none"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert re.search(r"gpu_check: (no CUDA toolkit found|no pycuda sdist in|no libcuda\.so\.1)", r.stderr), r.stderr
    r = _gpu_check("--steps", "samples", "--work", str(tmp_path))
    assert r.returncode == 2 and "pycuda does not start here" in r.stderr or "no CUDA toolkit" in r.stderr


def test_gpu_check_samples_step_compares_two_backends(tmp_path):
    # the interpreter running the suite, so the samples see this environment's kdebug (not whatever
    # `python3` is first on PATH)
    r = _gpu_check("--steps", "samples", "--compare", "cpu,cpu", "--samples", "saxpy,recursive_launch",
                   "--python", sys.executable, "--work", str(tmp_path), env={"OUT": str(tmp_path / "out")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  saxpy: same (saxpy: 65536 elements match numpy)" in r.stdout
    assert r.stdout.rstrip().endswith("samples  ok (2/2 same on cpu and cpu)")
    assert (tmp_path / "out" / "saxpy.1-cpu.out").is_file()  # logs go to $OUT


def test_bench_gpu_kdebug_side_against_the_stand_in(fake_gpu):
    """bench_gpu.py's kdebug half runs through (the kernels emulated in numpy), so a GPU session's
    minutes are not spent on a typo."""
    from kdebug.frontend.intrinsics import REGISTRY
    if "shared.array" not in REGISTRY:
        pytest.skip("this build's frontend has no shared arrays yet (the tiled matmul needs them)")
    fake, _ = fake_gpu
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_gpu
    finally:
        sys.path.pop(0)

    def saxpy(fake, params):
        a, px, n, py, _, pout, _ = unpack(params, fake.modules[-1]["ptx"], fake.launches[-1]["name"], "fQqQqQq")
        x, y, out = (fake.array(int(p), np.float32, int(n)) for p in (px, py, pout))
        out[:] = a * x + y

    def matmul(fake, params):
        pa, m, k, pb, _, n, pc, _, _ = unpack(params, fake.modules[-1]["ptx"], fake.launches[-1]["name"],
                                              "QqqQqqQqq")
        a = fake.array(int(pa), np.float32, int(m * k)).reshape(int(m), int(k))
        b = fake.array(int(pb), np.float32, int(k * n)).reshape(int(k), int(n))
        fake.array(int(pc), np.float32, int(m * n)).reshape(int(m), int(n))[:] = a @ b

    fake.emulators.update({"saxpy": saxpy, "matmul": matmul})
    k = bench_gpu.kdebug_side(quick=True)
    assert k["device"] == "Fake H200" and k["arch"] == "sm_90"
    assert k["saxpy_ms"] == 0.5 and k["saxpy_gbs"] > 0 and k["copy_gbs"] > 0
    assert k["matmul_n"] == 512 and k["matmul_ms"] == 0.5
    assert "matmul" in [launch["name"].split("_j")[0] for launch in fake.launches]
    assert "numba" in bench_gpu.run_numba(sys.executable, True).get("error", "numba")


def test_bench_gpu_table():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_gpu
    finally:
        sys.path.pop(0)
    k = {"saxpy_n": 1 << 26, "saxpy_gbs": 3600.0, "copy_gbs": 4000.0, "matmul_n": 2048, "matmul_ms": 3.0,
         "matmul_first_launch_s": 0.2}
    text = bench_gpu.table(k, {"matmul_ms": 2.0, "matmul_first_launch_s": 0.4})
    lines = text.splitlines()
    assert lines[0].split() == ["benchmark", "kdebug", "reference", "ratio"]
    assert "saxpy 2^26 f32, GB/s" in lines[2] and lines[2].endswith("0.90")
    assert "numba-cuda 2.000" in lines[3] and lines[3].endswith("1.50")
    assert bench_gpu.table(k, {"error": "numba-cuda failed: boom"}).splitlines()[3].endswith("n/a")


def test_dump_target_ptx_on_the_gpu_backend_snapshots_its_own_ptx(fake_gpu):
    fake, _ = fake_gpu
    from kdebug import cuda
    session = Session(backend="gpu", emit_ptx=True)
    set_session(session)

    @cuda.jit
    def child(data, factor):
        i = cuda.grid(1)
        if i < data.size:
            data[i] = data[i] * factor

    @cuda.jit
    def parent(data):
        if cuda.grid(1) == 0:
            child[(data.size + 63) // 64, 64](data, 3.0)

    if P.cuda_libdir() is None:
        pytest.skip("libcudadevrt.a not found (no CUDA toolkit; set CUDA_HOME)")
    parent[1, 32](cuda.to_device(np.arange(100, dtype=np.float64)))
    recs = sorted(session.driver.records.values(), key=lambda r: r.id)
    assert [r.name for r in recs] == ["parent", "child"]  # compiled once: no side pipeline on a GPU
    assert recs[0].snapshots["ptx"] == recs[0].snapshots["emit"]
    assert re.search(r"^\.visible \.entry child_j2_kernel\(", recs[1].snapshots["ptx"], re.M)
    assert ".entry parent_" not in recs[1].snapshots["ptx"]
