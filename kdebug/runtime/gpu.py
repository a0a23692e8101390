"""The gpu runtime: kernels run on an NVIDIA GPU through pycuda (the optional ``gpu`` extra).

pycuda is imported only when a session runs on the gpu backend. Device arrays
(``cuda.to_device``, ``device_array``) then live in device memory
(``DeviceBuffer``); numpy arrays passed to a launch are copied to the device
and back, as numba does. Each compiled module becomes a CUmodule: PTX that
launches kernels from the device is linked with the device runtime
(``libcudadevrt.a``) through pycuda's ``DynamicModule``.
"""
from __future__ import annotations

import types

import numpy as np

from kdebug.errors import CompileError, LaunchError
from kdebug.lang import types as T
from kdebug.lang.host import DeviceNDArray
from kdebug.runtime.artifacts import PtxArtifact
from kdebug.runtime.kernel_params import element_strides, flat_param_dtypes, param_offsets


def _drv():
    import pycuda.driver as drv
    return drv


class DeviceBuffer:
    """One device allocation. ``ptr`` is its device address."""

    def __init__(self, nbytes: int) -> None:
        drv = _drv()
        self.nbytes = int(nbytes)
        self._alloc = drv.mem_alloc(max(self.nbytes, 1))
        self.ptr = int(self._alloc)

    def to_host(self, arr: np.ndarray) -> None:
        if arr.nbytes:
            _drv().memcpy_dtoh(arr, self.ptr)

    def from_host(self, arr: np.ndarray) -> None:
        if arr.nbytes:
            _drv().memcpy_htod(self.ptr, np.ascontiguousarray(arr))

    def read(self, mirror: np.ndarray, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of the allocation into the same bytes of ``mirror`` (a view's extent)."""
        if hi > lo:
            _drv().memcpy_dtoh(mirror[lo:hi], self.ptr + lo)

    def write(self, mirror: np.ndarray, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of ``mirror`` to the allocation."""
        if hi > lo:
            _drv().memcpy_htod(self.ptr + lo, mirror[lo:hi])

    def copy_from(self, other: "DeviceBuffer") -> None:
        if self.nbytes:
            _drv().memcpy_dtod(self.ptr, other.ptr, min(self.nbytes, other.nbytes))


class GpuRuntime:
    """Loads PTX modules and launches kernels on the current device's primary context."""

    name = "gpu"

    def __init__(self) -> None:
        drv = _drv()
        drv.init()
        try:
            import pycuda.autoprimaryctx  # noqa: F401 - shares the primary context with numba, CuPy, torch
        except ImportError:
            import pycuda.autoinit  # noqa: F401 - older pycuda
        self.device = drv.Context.get_device()
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.modules: list = []  # keep every loaded module alive

    def current_device(self):
        """numba's cuda.get_current_device(): name, compute_capability and a few limits."""
        drv = _drv()
        attr = drv.device_attribute
        return types.SimpleNamespace(
            name=self.device.name().encode(), compute_capability=self.device.compute_capability(), id=0,
            MAX_THREADS_PER_BLOCK=self.device.get_attribute(attr.MAX_THREADS_PER_BLOCK),
            MULTIPROCESSOR_COUNT=self.device.get_attribute(attr.MULTIPROCESSOR_COUNT),
            WARP_SIZE=self.device.get_attribute(attr.WARP_SIZE))

    def load_module(self, artifact: PtxArtifact, jobs) -> dict:
        """The PTX target's loader: {job id: pycuda Function}; the module is kept alive here."""
        module, entries = _load_ptx(artifact, jobs)
        self.modules.append(module)
        return entries

    # ---- memory ---------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        return DeviceBuffer(nbytes)

    # ---- launches --------------------------------------------------------------
    def launch(self, compiled, args, argtypes, grid, block, shared: int = 0, **_cpu_options) -> list:
        """Run a loaded kernel to completion (CPU-backend options such as shuffle, and the launch context
        of its callbacks, mean nothing here). Finds nothing besides an error: returns []."""
        drv = _drv()
        fn = compiled.entry_address  # a pycuda Function
        name = compiled.record.name
        copy_back: list = []
        values = [self._device_value(t, v, copy_back) for t, v in zip(argtypes, args)]
        params = pack_params(argtypes, values)
        try:
            fn._launch_kernel(tuple(grid), tuple(block), params, int(shared), None)
            drv.Context.synchronize()  # errors of the launch surface here, against it
        except drv.Error as exc:
            raise LaunchError(f"CUDA error in {name}[{tuple(grid)}, {tuple(block)}]: {exc}",
                              hint="run the same launch with --backend cpu: its memcheck names the "
                                   "thread and index of an out-of-bounds access") from None
        finally:
            for host, buf, staged in copy_back:
                try:
                    buf.to_host(staged)
                except drv.Error:
                    continue
                if staged is not host:  # a strided host array went as a contiguous copy
                    np.copyto(host, staged)
        return []

    def _device_value(self, t, value, copy_back):
        """Arrays become (device address, shape); host memory is staged on the device for the launch."""
        if isinstance(t, T.Array):
            if isinstance(value, DeviceNDArray) and value._dev is not None:
                return array_value(t, value.device_address(), value)
            host = value._host if isinstance(value, DeviceNDArray) else value
            staged = host if host.flags.c_contiguous else np.ascontiguousarray(host)
            buf = DeviceBuffer(staged.nbytes)
            buf.from_host(staged)
            if host.flags.writeable:  # written back after the launch, into the caller's view when strided
                copy_back.append((host, buf, staged))
            return array_value(t, buf.ptr, staged)
        if isinstance(t, T.Tuple):
            return tuple(self._device_value(x, v, copy_back) for x, v in zip(t.types, value))
        if isinstance(t, T.CPointer) and isinstance(value, DeviceNDArray):
            return value.device_address()  # a raw pointer argument: the array's device address
        return value


def array_value(t: T.Array, ptr: int, arr) -> tuple:
    """An array argument as the launch passes it: (device address, shape), and a strided type's strides
    in elements (numba's 'A' and 'F' arguments)."""
    return (ptr, arr.shape) + ((element_strides(arr),) if t.strided else ())


def flat_host_values(t, value) -> list:
    """One argument as the kernel entry's flat parameters (see kdebug/targets/ptx/abi.py)."""
    if isinstance(t, T.EnumMember):
        return flat_host_values(t.dtype, value.value)
    if isinstance(t, T.Array):
        ptr, *dims = value
        return [ptr] + [int(n) for part in dims for n in part]
    if isinstance(t, T.Tuple):
        return [p for x, v in zip(t.types, value) for p in flat_host_values(x, v)]
    if isinstance(t, T.Scalar) and t.is_complex:  # its two parts (targets/ptx/abi.py)
        z = complex(value)
        return [z.real, z.imag]
    if isinstance(t, T.Scalar):
        return [int(bool(value))] if t.is_bool else [value]
    return [int(value)]


def pack_params(argtypes, values) -> bytes:
    """The kernel parameter buffer: every flat parameter at its natural alignment."""
    dtypes = [d for t in argtypes for d in flat_param_dtypes(t)]
    flat = [v for t, v in zip(argtypes, values) for v in flat_host_values(t, v)]
    offsets, size = param_offsets([d.itemsize for d in dtypes])
    buf = bytearray(size)
    for d, off, v in zip(dtypes, offsets, flat):
        buf[off:off + d.itemsize] = np.array(v).astype(d).tobytes()
    return bytes(buf)


def _load_ptx(artifact: PtxArtifact, jobs) -> tuple[object, dict]:
    """Load a PTX module: the module and {job id: pycuda Function} for its kernel jobs."""
    drv = _drv()
    ptx = artifact.ptx.encode()
    try:
        if artifact.needs_cudadevrt:
            from pycuda.compiler import DynamicModule
            libdir = artifact.cudadevrt_dir  # found by the PTX target, which knows the toolkit
            if libdir is None:
                raise CompileError("device-side launches need the CUDA device runtime (libcudadevrt.a), "
                                   "and no CUDA toolkit was found",
                                   hint="set CUDA_HOME to the toolkit (its lib64 holds libcudadevrt.a)")
            module = DynamicModule(cuda_libdir=libdir)
            module.add_data(ptx, drv.jit_input_type.PTX, "kdebug.ptx")
            module.add_stdlib("cudadevrt")
            module.link()
        else:
            module = drv.module_from_buffer(ptx)
    except drv.Error as exc:
        raise CompileError(f"the CUDA driver rejected the PTX: {exc}",
                           hint="kdebug dump FILE.py --target ptx writes the PTX and ptxas's report") from None
    kernels = artifact.kernels
    return module, {j.id: module.get_function(kernels[j.id]) if j.id in kernels else None for j in jobs}
