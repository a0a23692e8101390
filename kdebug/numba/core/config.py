"""numba.config (also numba.core.config, numba.cuda.core.config, numba.cuda.config) under ``--numba``:
the settings numba code and numba-cuda's tests read, with the values they have under kdebug. Assigning
them is allowed (``override_config``) and changes nothing in kdebug's compiler.

The settings numba documents as read from the environment (``NUMBA_NUM_THREADS``, ``NUMBA_CACHE_DIR``...)
are read from it here too, with numba's defaults; ``DISABLE_JIT`` stays 0 whatever ``NUMBA_DISABLE_JIT``
says: kdebug always compiles kernels (and runs ``njit`` functions as Python on the host)."""
from __future__ import annotations

import os
import sys

from kdebug.lang import numba_settings


def _env(name: str, default, kind=int):
    """numba's reading of ``NUMBA_<name>``: the environment's value as ``kind``, else ``default``."""
    text = os.environ.get("NUMBA_" + name)
    if text is None or text == "":
        return default
    try:
        return kind(text)
    except ValueError:
        return default

IS_WIN32 = sys.platform.startswith("win32")
IS_OSX = sys.platform.startswith("darwin")
MACHINE_BITS = tuple.__itemsize__ * 8
IS_32BITS = MACHINE_BITS == 32
PYVERSION = sys.version_info[:2]

ENABLE_CUDASIM = 0  # kdebug compiles kernels; it is not numba's simulator
DISABLE_JIT = 0
CUDA_ENABLE_NRT = 0  # kernels allocate nothing
CUDA_DEBUGINFO_DEFAULT = 0
CUDA_LOW_OCCUPANCY_WARNINGS = 1
CUDA_WARN_ON_IMPLICIT_COPY = 1
CUDA_DEFAULT_PTX_CC = (5, 0)
CUDA_USE_NVIDIA_BINDING = 0
CUDA_PER_THREAD_DEFAULT_STREAM = 0
CUDA_ENABLE_PYNVJITLINK = 0
CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY = 0
CUDA_LOG_LEVEL = ""
CUDA_LOG_API_ARGS = 0
CUDA_ARRAY_INTERFACE_SYNC = 1
CUDA_DEBUG_POLY = 0
CUDA_DEBUG_POLY_USE_TYPED_CONST = 1
DISABLE_PERFORMANCE_WARNINGS = 0
DEBUG = 0
DEBUGINFO_DEFAULT = 0


class _OptLevel(int):
    """numba's ``NUMBA_OPT`` value: an int (``"max"`` is 3) that remembers whether it was ``"max"``
    (``is_opt_max``); ``override_config("OPT", config._OptLevel(0))`` sets it."""

    def __new__(cls, value):
        new = super().__new__(cls, 3 if value == "max" else int(value))
        new._raw_value = value if value == "max" else int(value)
        return new

    @property
    def is_opt_max(self) -> bool:
        return self._raw_value == "max"

    def __repr__(self) -> str:
        return f"_OptLevel({self._raw_value!r})"


OPT = _OptLevel(3)
_OPT = OPT
HTML = None
DUMP_ASSEMBLY = 0
DUMP_LLVM = 0
DUMP_OPTIMIZED = 0
BOUNDSCHECK = None
FULL_TRACEBACKS = 0
SHOW_HELP = 0
COLOR_SCHEME = "no_color"
# numba's thread pool of the parallel CPU target: the number of CPU cores, unless NUMBA_NUM_THREADS says
NUMBA_DEFAULT_NUM_THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                else (os.cpu_count() or 1))
NUMBA_NUM_THREADS = _env("NUM_THREADS", NUMBA_DEFAULT_NUM_THREADS)
THREADING_LAYER = _env("THREADING_LAYER", "default", str)
THREADING_LAYER_PRIORITY = ["tbb", "omp", "workqueue"]
CACHE_DIR = _env("CACHE_DIR", "", str)  # numba's default "": caches beside the sources
DEVELOPER_MODE = _env("DEVELOPER_MODE", 0)
DISABLE_JIT_WARNINGS = 0
ENABLE_AVX = 1
CPU_NAME = None
CPU_FEATURES = None
PARALLEL_DIAGNOSTICS = 0
DEBUG_CACHE = _env("DEBUG_CACHE", 0)
WARNINGS = _env("WARNINGS", 0)
CAPTURED_ERRORS = "new_style"
USE_LLVMLITE_MEMORY_MANAGER = None
CUDA_DEALLOCS_COUNT = _env("CUDA_MAX_PENDING_DEALLOCS_COUNT", 10)  # numba-cuda's pending deallocations
CUDA_DEALLOCS_RATIO = _env("CUDA_MAX_PENDING_DEALLOCS_RATIO", 0.2, float)
CUDA_MEMORY_MANAGER = "default"


def reload_config():
    """numba re-reads its environment variables here; kdebug's settings come from its options."""


numba_settings.register(sys.modules[__name__])  # cuda.jit's defaults and the CUDA Array Interface read it
