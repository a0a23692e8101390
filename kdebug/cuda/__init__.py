"""``from kdebug import cuda``: the numba.cuda-compatible kernel API (also ``numba.cuda`` under ``--numba``).

Its submodules are numba.cuda's: ``args``, ``types``, ``cg``, ``fp16``, ``random``, ``typing``, ``testing``. A name kdebug
does not provide fails with an ImportError/AttributeError that names it (see ``missing_name``).

A face, like the command line: it stands above the session (``compile_ptx`` assembles a compile-only
PTX driver) and reaches the running session through the seam in ``kdebug/lang/seam.py``."""
from __future__ import annotations

from kdebug.lang.args import In, InOut, Out  # noqa: F401
from kdebug.lang.dispatcher import jit  # noqa: F401
from kdebug.lang.extern import ExternFunction, declare_device  # noqa: F401
from kdebug.lang.devices import (close, current_device, detect, gpus,  # noqa: F401
                                 list_devices, profile_start, profile_stop, profiling, select_device)
from kdebug.cuda.cudadrv.driver import current_context, defer_cleanup, get_context  # noqa: F401
from kdebug.cuda.cudadrv.linkable_code import (LTOIR, Archive, CUSource, Cubin, Fatbin, LinkableCode,  # noqa: F401
                                              Object, PTXSource)
from kdebug.lang.foreign_arrays import (as_cuda_array, from_cuda_array_interface, is_cuda_array,  # noqa: F401
                                       mapped, pinned)
from kdebug.lang.host import (DeviceNDArray, device_array, device_array_like, mapped_array,  # noqa: F401
                              mapped_array_like, managed_array, pinned_array, pinned_array_like, to_device)
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
# numba's C and numpy aliases, which numba.cuda has from ``from numba.cuda.types import *`` (cuda.double...)
from kdebug.lang.types import (byte, i1, i2, none, u1, u2, u4, u8)  # noqa: F401
from kdebug.lang.types import NUMBA_NAMES as _NUMBA_TYPE_NAMES
(char, uchar, short, ushort, int_, uint, long_, ulong, longlong, ulonglong, intc, uintc, ssize_t, size_t,
 double) = (_NUMBA_TYPE_NAMES[n] for n in ("char", "uchar", "short", "ushort", "int_", "uint", "long_", "ulong",
                                           "longlong", "ulonglong", "intc", "uintc", "ssize_t", "size_t", "double"))
from kdebug.lang.missing import missing_name

# Loaded on first use (start-up time: a script that never touches them does not pay for them), and
# still in dir() and ``from kdebug.cuda import *``: the submodules, the ufunc builders, and the
# vector types' constructors (cuda.float32x4, cuda.float4, ...: every name of lang.vector_types.ALL).
_LAZY_SUBMODULES = ("args", "cg", "compiler", "fp16", "launchconfig", "random", "types", "vector_types")
_LAZY_NAMES = {"Reduce": "kdebug.lang.vectorize", "guvectorize": "kdebug.lang.vectorize",
               "reduce": "kdebug.lang.vectorize", "vectorize": "kdebug.lang.vectorize",
               "ptx_compile": "kdebug.session"}  # the module kdebug.session.ptx_compile

f2, f4, f8, i4, i8 = float16, float32, float64, int32, int64
HAS_NUMBA = True  # numba-cuda: whether the base numba package is there; under --numba, numba.jit/njit are
c8, c16 = complex64, complex128


def synchronize() -> None:
    """Wait for all launches to finish (launches here complete before they return)."""


def is_available() -> bool:
    """True: kdebug always has a backend (the GPU through pycuda, else the CPU emulation)."""
    return True


def compile_ptx(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False, cc=None, opt=None,
                abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx (same parameters): ``(ptx, result type)``, no GPU needed. Only ``device``,
    ``cc``, ``fastmath`` and ``lineinfo`` (``.file``/``.loc`` lines) change the PTX here; the others are
    accepted for numba's callers."""
    from kdebug.cuda import compiler  # kept lazy for start-up time: the compiler loads with the first compile
    return compiler.compile_ptx(pyfunc, sig, lineinfo=lineinfo, device=device, cc=cc, fastmath=fastmath)


def compile_ptx_for_current_device(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False,
                                   opt=None, abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx_for_current_device: for the GPU's architecture (sm_90 without one)."""
    from kdebug.cuda import compiler  # kept lazy for start-up time: the compiler loads with the first compile
    return compiler.compile_ptx_for_current_device(pyfunc, sig, lineinfo=lineinfo, device=device, fastmath=fastmath)


def compile(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, cc=None, opt=None, abi="c",
            abi_info=None, output="ptx", forceinline=False, launch_bounds=None):
    """numba.cuda.compile: ``(code, resty)``, PTX (numba.cuda.compiler's)."""
    from kdebug.cuda import compiler  # kept lazy for start-up time: the compiler loads with the first compile
    return compiler.compile(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device, fastmath=fastmath, cc=cc,
                            opt=opt, abi=abi, abi_info=abi_info, output=output, forceinline=forceinline,
                            launch_bounds=launch_bounds)


def compile_for_current_device(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, opt=None,
                               abi="c", abi_info=None, output="ptx", forceinline=False, launch_bounds=None):
    """numba.cuda.compile_for_current_device."""
    from kdebug.cuda import compiler  # kept lazy for start-up time: the compiler loads with the first compile
    return compiler.compile_for_current_device(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device,
                                               fastmath=fastmath, opt=opt, abi=abi, abi_info=abi_info, output=output,
                                               forceinline=forceinline, launch_bounds=launch_bounds)


def get_current_device():
    """The device kernels run on: the GPU's (pycuda), or the emulated sm_90 of the CPU backend."""
    return current_device()


def _vector_constructors() -> dict:
    import importlib
    return importlib.import_module("kdebug.lang.vector_types").ALL


# numba-cuda 0.30's own homes of numba's modules, read as attributes (``from numba.cuda import config``)
_NUMBA_MODULES = {"config": "kdebug.numba.core.config", "core": "kdebug.numba.core", "np": "kdebug.numba.np",
                  "utils": "kdebug.numba.core.utils"}


def __getattr__(name):
    if name in _NUMBA_MODULES:
        import importlib
        value = importlib.import_module(_NUMBA_MODULES[name])
    elif name in _LAZY_NAMES:
        import importlib
        module = importlib.import_module(_LAZY_NAMES[name])
        value = getattr(module, name, None) or importlib.import_module(f"{module.__name__}.{name}")
    elif name == "__all__":  # ``from kdebug.cuda import *``: every public name, the lazy ones too
        return [n for n in __dir__() if not n.startswith("_")]
    elif name in _LAZY_SUBMODULES or name.startswith("__"):
        return missing_name(__name__, name, 2)  # imports the submodule (numba.cuda.random...)
    else:
        value = _vector_constructors().get(name)
        if value is None:  # a submodule not imported yet (numba.cuda.testing...), else a name kdebug lacks
            return missing_name(__name__, name, 2)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) | set(_LAZY_NAMES) | set(_vector_constructors()))
