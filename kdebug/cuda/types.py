"""numba.cuda.types (also numba.types and numba.core.types under ``--numba``): numba's type objects.

Scalar types are casts in kernels and numpy scalars on the host; ``float32[:]`` is an array type and
``void(float32[:], int32)`` a signature, as in numba."""
from __future__ import annotations

from kdebug.lang import types as _T
from kdebug.lang.missing import missing_name
from kdebug.lang.types import Array, Scalar, Tuple, Type  # noqa: F401

globals().update(_T.NUMBA_NAMES)
UniTuple = Tuple


def __getattr__(name):
    return missing_name(__name__, name, 2)
