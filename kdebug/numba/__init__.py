"""``numba`` under ``kdebug --numba``: the parts of numba's top level a numba.cuda script uses.

``numba.cuda`` is kdebug.cuda; ``numba.types``/``numba.core.types`` are kdebug.cuda.types;
``numba.errors``/``numba.core.errors`` kdebug.numba.errors; ``numba.config`` is ``numba.core.config``.
``numba.jit``/``njit`` functions (numba's CPU dispatchers: ``targetoptions``, ``enable_caching()``,
``recompile()``) run as Python on the host and compile as device functions when a kernel calls them."""
from __future__ import annotations

import numpy  # not "as np": the package numba.np (kdebug/numba/np) is this module's attribute np once imported

from kdebug import cuda  # noqa: F401
from kdebug.cuda import types  # noqa: F401
from kdebug.lang import types as _T
from kdebug.lang.intrinsics import literal_unroll  # noqa: F401
from kdebug.lang.missing import missing_name
from kdebug.lang.signature import parse_signature
from kdebug.numba import core, errors  # noqa: F401
from kdebug.numba.core import config  # noqa: F401
from kdebug.numba.core.dispatcher import jit, njit  # noqa: F401

globals().update(_T.NUMBA_NAMES)
prange = range  # parallel loops of host code run as plain loops
__version__ = "0.0+kdebug"


def vectorize(signatures=(), target="cpu", **options):
    """numba.vectorize: with target='cuda', cuda.vectorize; other targets give a numpy ufunc-like
    function running the Python function per element (numba's CPU ufuncs compile it)."""
    if target == "cuda":
        return cuda.vectorize(signatures, **options)
    return lambda fn: _host_ufunc(fn, signatures)


def guvectorize(signatures, layout, target="cpu", **options):
    """numba.guvectorize: with target='cuda', cuda.guvectorize; other targets run numpy's vectorize with
    the layout as its signature."""
    if target == "cuda":
        return cuda.guvectorize(signatures, layout, **options)
    return lambda fn: numpy.vectorize(fn, signature=layout.replace(" ", ""))


def _host_ufunc(fn, signatures):
    sigs = [signatures] if isinstance(signatures, str) else list(signatures)
    if not sigs:
        return numpy.vectorize(fn)
    return numpy.vectorize(fn, otypes=[parse_signature(sigs[0]).restype.np_dtype])


_num_threads = [config.NUMBA_NUM_THREADS]


def get_num_threads() -> int:
    """numba.get_num_threads: the threads numba's parallel regions would use (``set_num_threads``'s value,
    at first ``config.NUMBA_NUM_THREADS``); ``prange`` loops run as plain loops here."""
    return _num_threads[0]


def set_num_threads(n) -> None:
    """numba.set_num_threads, with numba's checks."""
    if not isinstance(n, (int, numpy.integer)):
        raise TypeError("The number of threads specified must be an integer")
    if not 1 <= n <= config.NUMBA_NUM_THREADS:
        raise ValueError("The number of threads must be between 1 and %s" % config.NUMBA_NUM_THREADS)
    _num_threads[0] = int(n)


def get_thread_id() -> int:
    """numba.get_thread_id: the id of the thread running a parallel region (0: they run on this one)."""
    return 0


def typeof(value):
    """numba.typeof: the type a kernel gives ``value`` (``float64[::1]`` for a 1-D float64 array)."""
    t = _T.typeof(value)
    if t is None:
        raise ValueError(f"cannot determine Numba type of {type(value)} (kdebug's kernels take numbers, "
                         f"booleans, tuples of numbers and arrays of numbers)")
    return t


def from_dtype(dtype):
    """numba.from_dtype: the numba type of a numpy dtype."""
    t = _T.from_dtype(numpy.dtype(dtype))
    if t is None:
        raise errors.NumbaNotImplementedError(f"{numpy.dtype(dtype)}: kdebug has no numba type for this dtype")
    return t


def __getattr__(name):
    return missing_name(__name__, name, 2)
