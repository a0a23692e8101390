"""numba.cuda.cudadrv.error under ``--numba``: the exception classes of numba-cuda's driver layer, for code
that catches them (``except CudaSupportError``), as numba-cuda 0.30 defines them."""
from __future__ import annotations

from kdebug.lang.missing import missing_name


class CudaDriverError(Exception):
    pass


class CudaRuntimeError(Exception):
    pass


class CudaSupportError(ImportError):
    pass


class NvvmError(Exception):
    def __str__(self):
        return "\n".join(map(str, self.args))


class NvvmSupportError(ImportError):
    pass


class NvvmWarning(Warning):
    pass


class NvrtcError(Exception):
    def __str__(self):
        return "\n".join(map(str, self.args))


class NvrtcCompilationError(NvrtcError):
    pass


class NvrtcBuiltinOperationFailure(NvrtcError):
    pass


class NvrtcSupportError(ImportError):
    pass


class CCSupportError(RuntimeError):
    pass


def __getattr__(name):
    return missing_name(__name__, name, 2)
