"""numba.cuda.cudadrv.driver under ``--numba``: ``_have_nvjitlink()`` is False: kdebug links device code
with ptxas and nvlink (the PTX target) or its CPU backend, never through nvJitLink."""
from __future__ import annotations

from kdebug.lang.missing import missing_name


def _have_nvjitlink() -> bool:
    return False


def __getattr__(name):
    return missing_name(__name__, name, 2)
