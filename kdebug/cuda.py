"""``from kdebug import cuda``: the numba.cuda-compatible kernel API."""
from __future__ import annotations

from kdebug.lang.dispatcher import jit  # noqa: F401
from kdebug.lang.host import (DeviceNDArray, device_array, device_array_like, mapped_array,  # noqa: F401
                              managed_array, pinned_array, to_device)
from kdebug.lang.intrinsics import (atomic, blockDim, blockIdx, cg, const, grid, gridDim, gridsize,  # noqa: F401
                                    laneid, local, shared, syncthreads, syncthreads_and, syncthreads_count,
                                    syncthreads_or, syncwarp, threadfence, threadfence_block,
                                    threadfence_system, threadIdx, warpsize)
from kdebug.lang.types import (b1, bool_, boolean, float32, float64, int8, int16, int32, int64,  # noqa: F401
                               intp, uint8, uint16, uint32, uint64, uintp, void)
from kdebug.lang import types  # noqa: F401

f4, f8, i4, i8 = float32, float64, int32, int64


def synchronize() -> None:
    """Wait for all launches to finish (launches here complete before they return)."""


def is_available() -> bool:
    """True: kdebug always has a backend (the GPU through pycuda, else the CPU emulation)."""
    return True


def is_cuda_array(obj) -> bool:
    return isinstance(obj, DeviceNDArray)


def stream():
    return 0


def default_stream():
    return 0


def compile_ptx(pyfunc, sig, device: bool = False, cc=None, fastmath: bool = False, opt: bool = True, **kw):
    """numba.cuda.compile_ptx: PTX and the result type (provided by the ptx target)."""
    from kdebug.targets.ptx import compile_ptx as _compile_ptx
    return _compile_ptx(pyfunc, sig, device=device, cc=cc)


def compile_ptx_for_current_device(pyfunc, sig, device: bool = False, **kw):
    from kdebug.targets.ptx import compile_ptx as _compile_ptx
    return _compile_ptx(pyfunc, sig, device=device, cc=None)


def get_current_device():
    from kdebug.driver.active import get_session
    runtime = get_session().runtime
    if getattr(runtime, "name", "") == "gpu":
        return runtime.current_device()

    class _Device:
        name = b"kdebug CPU emulation"
        compute_capability = (9, 0)
        MAX_THREADS_PER_BLOCK = 1024
        WARP_SIZE = 32
    return _Device()
