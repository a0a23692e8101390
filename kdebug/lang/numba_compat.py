"""``kdebug --numba``: make ``numba``, ``numba.cuda`` and numba's types resolve to kdebug's."""
from __future__ import annotations

import sys
import types as pytypes

from kdebug.lang import types as T


def _host_jit(*args, **kwargs):
    """``numba.njit`` / ``numba.jit`` for host code: the function stays a plain Python function."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def install() -> None:
    """Insert a stand-in ``numba`` package into sys.modules for the running script."""
    import kdebug.cuda as kcuda

    numba = pytypes.ModuleType("numba")
    numba.__path__ = []  # a package, so "import numba.cuda" works
    numba.__kdebug__ = True
    numba.cuda = kcuda
    typesmod = pytypes.ModuleType("numba.types")
    for name, t in T.NUMBA_NAMES.items():
        setattr(numba, name, t)
        setattr(typesmod, name, t)
    typesmod.Array = T.Array
    numba.types = typesmod
    numba.njit = numba.jit = _host_jit  # host-side helpers of a numba.cuda script run as plain Python
    numba.prange = range
    numba.__version__ = "0.0+kdebug"
    sys.modules["numba"] = numba
    sys.modules["numba.cuda"] = kcuda
    sys.modules["numba.types"] = typesmod
    core = pytypes.ModuleType("numba.core")
    core.types = typesmod
    sys.modules["numba.core"] = core
    sys.modules["numba.core.types"] = typesmod
