"""``from kdebug import cuda``: the numba.cuda-compatible kernel API (also ``numba.cuda`` under ``--numba``).

Its submodules are numba.cuda's: ``args``, ``types``, ``cg``, ``fp16``, ``random``, ``typing``, ``testing``. A name kdebug
does not provide fails with an ImportError/AttributeError that names it (see ``missing_name``).

A face, like the command line: it stands above the session (``compile_ptx`` assembles a compile-only
PTX driver) and reaches the running session through the seam in ``kdebug/lang/seam.py``."""
from __future__ import annotations

from kdebug.lang.args import In, InOut, Out  # noqa: F401
from kdebug.lang.dispatcher import jit  # noqa: F401
from kdebug.lang.devices import (close, current_context, current_device, detect, get_context, gpus,  # noqa: F401
                                 list_devices, profile_start, profile_stop, profiling, select_device)
from kdebug.lang.foreign_arrays import as_cuda_array, is_cuda_array, mapped, pinned  # noqa: F401
from kdebug.lang.host import (DeviceNDArray, device_array, device_array_like, mapped_array,  # noqa: F401
                              mapped_array_like, managed_array, pinned_array, pinned_array_like, to_device)
from kdebug.lang.vectorize import Reduce, guvectorize, reduce, vectorize  # noqa: F401
from kdebug.lang.streams import (default_stream, event, event_elapsed_time, external_stream,  # noqa: F401
                                 legacy_default_stream, per_thread_default_stream, stream)
from kdebug.lang.intrinsics import (atomic, blockDim, blockIdx, brev, cbrt, clz, const, ffs, fma,  # noqa: F401
                                    grid, gridDim, gridsize, laneid, libdevice, local, popc, selp, shared,
                                    syncthreads, syncthreads_and, syncthreads_count,
                                    syncthreads_or, syncwarp, threadfence, threadfence_block,
                                    threadfence_system, threadIdx, warpsize)
from kdebug.lang.intrinsics import (activemask, all_sync, any_sync, ballot_sync, eq_sync, lanemask_lt,  # noqa: F401
                                    match_all_sync, match_any_sync, shfl_down_sync, shfl_sync, shfl_up_sync,
                                    shfl_xor_sync)
from kdebug.lang.intrinsics import literal_unroll  # noqa: F401
from kdebug.lang.types import (b1, bool_, boolean, complex64, complex128, float16, float32, float64,  # noqa: F401
                               int8, int16, int32, int64, intp, uint8, uint16, uint32, uint64, uintp, void)
from kdebug.cuda import args, cg, fp16, random, types, vector_types  # noqa: F401
from kdebug.lang.vector_types import ALL as _VECTOR_CONSTRUCTORS
globals().update(_VECTOR_CONSTRUCTORS)  # cuda.float32x4, cuda.float4, ...
from kdebug.lang.missing import missing_name
from kdebug.session import ptx_compile

f2, f4, f8, i4, i8 = float16, float32, float64, int32, int64
c8, c16 = complex64, complex128


def synchronize() -> None:
    """Wait for all launches to finish (launches here complete before they return)."""


def is_available() -> bool:
    """True: kdebug always has a backend (the GPU through pycuda, else the CPU emulation)."""
    return True


def compile_ptx(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False, cc=None, opt=None,
                abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx (same parameters): ``(ptx, result type)``, no GPU needed. Only ``device``
    and ``cc`` change the PTX here; the others are accepted for numba's callers."""
    return ptx_compile.compile_ptx(pyfunc, sig, device=device, cc=cc)


def compile_ptx_for_current_device(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False,
                                   opt=None, abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx_for_current_device: for the GPU's architecture (sm_90 without one)."""
    return ptx_compile.compile_ptx_for_current_device(pyfunc, sig, device=device)


def get_current_device():
    """The device kernels run on: the GPU's (pycuda), or the emulated sm_90 of the CPU backend."""
    return current_device()


def __getattr__(name):
    # a submodule not imported yet (numba.cuda.random...), else a name kdebug lacks
    return missing_name(__name__, name, 2)
