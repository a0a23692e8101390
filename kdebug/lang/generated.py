"""Functions kdebug writes in the kernel language (ufunc loops, vectorize and reduce kernels).

Their source goes into linecache under a descriptive name, so the frontend reads it like a file's and
errors and the Source view show it."""
from __future__ import annotations

import itertools
import linecache

_serial = itertools.count(1)


def make_function(name: str, text: str, namespace: dict, what: str):
    """Define ``name`` from ``text`` (a ``def``) with ``namespace`` as its globals."""
    filename = f"<kdebug: {what} #{next(_serial)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]
