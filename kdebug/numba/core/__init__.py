"""numba.core (and numba.cuda.core) under ``--numba``: ``types``, ``errors`` and ``config``."""
from __future__ import annotations

from kdebug.cuda import types  # noqa: F401
from kdebug.lang.missing import missing_name
from kdebug.numba import errors  # noqa: F401
from kdebug.numba.core import config  # noqa: F401


def __getattr__(name):
    return missing_name(__name__, name, 2)
