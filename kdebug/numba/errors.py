"""numba.core.errors (also numba.errors) under ``--numba``: numba's error and warning classes.

The errors are kdebug's own classes, so ``except TypingError`` catches the typing error kdebug raises
for a kernel, and ``except NumbaError`` any error kdebug reports."""
from __future__ import annotations

from kdebug.errors import (CompileError, KdebugError, LoweringError, NumbaInvalidConfigWarning,  # noqa: F401
                           NumbaWarning, TypingError)
from kdebug.lang.missing import missing_name

NumbaError = KdebugError


class UnsupportedError(CompileError):
    """A Python construct kernels do not support."""


class CompilerError(CompileError):
    pass


class InternalError(CompileError):
    pass


class NumbaValueError(TypingError, ValueError):
    pass


class NumbaTypeError(TypingError, TypeError):
    pass


class NumbaNotImplementedError(TypingError, NotImplementedError):
    pass


class NumbaPerformanceWarning(NumbaWarning):
    pass


class NumbaDeprecationWarning(NumbaWarning, DeprecationWarning):
    pass


class NumbaPendingDeprecationWarning(NumbaWarning, PendingDeprecationWarning):
    pass


class NumbaExperimentalFeatureWarning(NumbaWarning):
    pass


def __getattr__(name):
    return missing_name(__name__, name, 2)
