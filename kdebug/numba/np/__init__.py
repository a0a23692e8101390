"""numba.np (and numba.cuda.np) under ``--numba``: ``numpy_support``."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.numba.np import numpy_support  # noqa: F401


def __getattr__(name):
    return missing_name(__name__, name, 2)
