"""``print(...)`` in kernels, as numba-cuda formats it: a line's pieces (constant texts, the frontend's
separators and tuple brackets among them) written one after the other, signed integers as ``%lld``, unsigned
as ``%llu``, floats as ``%f`` (a double), booleans ``True``/``False``, one line per call."""
from __future__ import annotations

from kdebug.lang import types as T


def kind_of(t: T.Scalar) -> str:
    """'i' signed, 'u' unsigned, 'f' float, 'b' boolean."""
    return "b" if t.is_bool else "f" if t.is_float else "i" if t.signed else "u"


_SPECS = {"i": "%lld", "u": "%llu", "f": "%f", "b": "%s"}


def c_format(items) -> str:
    """The printf format of one print line (for vprintf on the GPU)."""
    return "".join(v.replace("%", "%%") if k == "s" else _SPECS[kind_of(k)] for k, v in items) + "\n"
