"""numba.cuda.utils (and numba.core.utils) under ``--numba``: the helpers numba code reads from it."""
from __future__ import annotations

import operator
import os

from kdebug.lang.missing import missing_name
from kdebug.numba.core.config import MACHINE_BITS, PYVERSION  # noqa: F401

INT_TYPES = (int,)

BINOPS_TO_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "/": operator.truediv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
    "in": operator.contains, "@": operator.matmul,
}


def bit_length(intval):
    """numba's bit length of an int: of its absolute value, one less for a negative power of two."""
    assert isinstance(intval, int)
    return intval.bit_length() if intval >= 0 else (-intval - 1).bit_length()


def safe_relpath(path, start=os.curdir):
    """os.path.relpath, or the path itself where there is none (another drive)."""
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return path


def __getattr__(name):
    return missing_name(__name__, name, 2)
