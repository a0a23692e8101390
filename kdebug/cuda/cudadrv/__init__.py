"""numba.cuda.cudadrv under ``--numba``: what a test file reads of numba's driver bindings."""
from __future__ import annotations

from kdebug.lang.missing import missing_name


def __getattr__(name):
    return missing_name(__name__, name, 2)
