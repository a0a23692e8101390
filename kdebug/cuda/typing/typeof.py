"""numba.cuda.typing.typeof (and numba.core.typing.typeof) under ``--numba``: ``typeof(value)``, the
type a kernel gives a value (``float64[::1]`` for a 1-D float64 array), as ``numba.typeof``."""
from __future__ import annotations

from kdebug.lang import types as _T
from kdebug.lang.missing import missing_name


class Purpose:
    """numba's typeof purposes: what the type is for (kdebug types arguments and constants alike)."""

    argument = 1
    constant = 2


def typeof(val, purpose=Purpose.argument):
    """The kernel-language type of ``val``; numba's ValueError for a value kernels cannot take."""
    t = _T.typeof(val)
    if t is None:
        raise ValueError(f"cannot determine Numba type of {type(val)}")
    return t


def __getattr__(name):
    return missing_name(__name__, name, 2)
