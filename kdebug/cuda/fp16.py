"""numba.cuda.fp16: half-precision functions for kernels (kdebug/lang/fp16.py)."""
from __future__ import annotations

from kdebug.lang import fp16 as _impl
from kdebug.lang.fp16 import *  # noqa: F401,F403
from kdebug.lang.missing import missing_name

__all__ = list(_impl.__all__)
globals().update({n: getattr(_impl, n) for n in _impl.__all__})  # the __h* names, which * skips


def __getattr__(name):
    return missing_name(__name__, name, 2)
