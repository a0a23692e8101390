"""numba.cuda.cg: cooperative groups (``cg.this_grid().sync()``; the kernel language compiles them)."""
from __future__ import annotations

from kdebug.lang import intrinsics as _I
from kdebug.lang.missing import missing_name

this_grid = _I.cg.this_grid


def __getattr__(name):
    if hasattr(_I.cg, name):  # group functions the intrinsics gain later
        return getattr(_I.cg, name)
    return missing_name(__name__, name, 2)


_missing_attribute = _I.cg._missing_attribute  # kernels' message for a cg name numba lacks
