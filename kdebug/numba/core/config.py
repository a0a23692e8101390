"""numba.cuda.core.config (also numba.cuda.config, numba.core.config) under ``--numba``: the settings
numba code and numba-cuda's tests read, with the values they have under kdebug. Assigning them is
allowed (``override_config``) and changes nothing in kdebug's compiler."""
from __future__ import annotations

import sys

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
OPT = 3
_OPT = OPT
HTML = None
DUMP_ASSEMBLY = 0
DUMP_LLVM = 0
DUMP_OPTIMIZED = 0
BOUNDSCHECK = None
FULL_TRACEBACKS = 0
SHOW_HELP = 0
COLOR_SCHEME = "no_color"
NUMBA_NUM_THREADS = 1


def reload_config():
    """numba re-reads its environment variables here; kdebug's settings come from its options."""
