"""Pickling what ``@cuda.jit``, ``@cuda.vectorize`` and ``@intrinsic`` return, as numba does
(numba-cuda's ``serialize.ReduceMixin``): by value, the Python function with its closure and globals,
so that a kernel defined inside a function pickles too (``multiprocessing``, a task queue). Compiled
code is not kept: the rebuilt object compiles again where it is launched, as numba's does.

``by_value(rebuild, states)`` is the ``__reduce__`` of such an object: the states go through
cloudpickle (what numba vendors for the same job) inside a plain pickle, so ``pickle.dumps`` works
on them as numba's do."""
from __future__ import annotations

import inspect
import linecache
import os
import pickle


def by_value(rebuild, states: dict):
    """A ``__reduce__`` value: unpickling calls ``rebuild(**states)``."""
    import cloudpickle  # only when something is pickled: not a start-up cost

    return _rebuild_by_value, (cloudpickle.dumps((rebuild, states)),)


def _rebuild_by_value(payload: bytes):
    rebuild, states = pickle.loads(payload)
    return rebuild(**states)


def source_of(fn) -> tuple[str, int, list[str]] | None:
    """(file, first line, lines) of ``fn``'s definition, pickled beside it: kdebug compiles source, and a
    function rebuilt by cloudpickle has lost its file's name (its code says ``<dynamic-code>``)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn) or fn.__code__.co_filename, first, lines
    except (OSError, TypeError, AttributeError):
        return None


def with_source(fn, source):
    """``fn`` rebuilt, its code pointed at its own file again; where that file is not here (unpickled on
    another machine) the pickled lines stand in for it, so that it compiles and its errors name its lines."""
    code = getattr(fn, "__code__", None)
    if source is None or code is None:
        return fn
    file, first, lines = source
    if code.co_filename != file:
        fn.__code__ = code.replace(co_filename=file)
    if not os.path.exists(file) and file not in linecache.cache:
        padded = ["\n"] * (first - 1) + list(lines)
        linecache.cache[file] = (sum(map(len, padded)), None, padded, file)  # no mtime: never checked
    return fn
