"""User-facing errors. Each carries a source location and says what to do instead.

Errors from user input are never shown as a Python traceback from inside the
compiler: the CLI prints ``str(error)``, which is the located message.
"""
from __future__ import annotations

import linecache
from typing import Callable

from kdebug.lazy_dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    col: int  # 1-based, as editors show it

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "col": self.col}


def _own_class(cls: type) -> type:
    return cls


_made_as: Callable[[type], type] = _own_class  # the class a kdebug error or warning is made as


def make_errors_as(made_as: Callable[[type], type] | None) -> None:
    """From now on, make each kdebug error and warning of class C an instance of ``made_as(C)``, C or a class
    deriving from it (``kdebug run --numba=cuda-only``: from numba's class of its name too, so that
    ``except numba.core.errors.TypingError`` catches kdebug's; kdebug/lang/numba_compat.py). None: of C."""
    global _made_as
    _made_as = made_as or _own_class


class KdebugError(Exception):
    """Base of every error kdebug reports to a user."""

    kind = "error"

    def __new__(cls, *args, **kwargs):
        return super().__new__(_made_as(cls), *args)

    def __init__(self, message: str, loc: SourceLocation | None = None, hint: str | None = None):
        # Exception's, not the next class's: made as numba's class too, numba's NumbaError.__init__ would follow
        Exception.__init__(self, message)
        self.message = message
        self.loc = loc
        self.hint = hint

    def __str__(self) -> str:
        return format_error(self.kind, self.message, self.loc, self.hint)

    @property
    def msg(self) -> str:  # numba's NumbaError.msg: the message without its location
        return self.message


class CompileError(KdebugError):
    """A kernel outside the supported subset, or badly typed."""

    kind = "compile error"


class TypingError(CompileError):
    """A kernel whose types do not check (numba's TypingError is this class under ``--numba``)."""


class LoweringError(CompileError):
    """A typed kernel that code generation cannot lower (numba's LoweringError under ``--numba``)."""


class LoweringValueError(LoweringError, ValueError):
    """A constant numba checks when lowering and rejects with a ValueError (``alignment=3`` of a
    ``cuda.local.array``): still a ValueError, as numba raises it."""


class UnavailableFeatureError(CompileError, RuntimeError):
    """A ``cuda.jit`` option numba refuses with a RuntimeError where the library it needs is missing
    (``lto=True`` without nvJitLink, which kdebug never uses)."""


class LaunchError(KdebugError):
    """A bad launch configuration or bad arguments to a kernel."""

    kind = "launch error"


class DeviceFunctionLaunchError(LaunchError, RuntimeError):
    """A launch of a ``device=True`` function, which numba refuses with a RuntimeError ("Cannot compile a
    device function as a kernel"): ``except RuntimeError`` catches it too."""


class LaunchValueError(LaunchError, ValueError):
    """A launch configuration numba rejects with a ValueError (four grid dimensions, no configuration at all):
    ``except ValueError`` catches it too."""


class LaunchTypeError(LaunchError, TypeError):
    """A launch configuration numba rejects with a TypeError (a grid or block size that is not an integer)."""


class SignatureMismatch(LaunchError, TypeError):
    """Arguments that match none of a kernel's declared signatures: numba raises TypeError for it ("No
    matching definition for argument type(s) ..."), so ``except TypeError`` catches this one too."""


class ArrayError(KdebugError, ValueError, TypeError):
    """Misuse of the host array API: an unsupported dtype, mismatched shapes (still a ValueError/TypeError)."""

    kind = "array error"


class KernelRuntimeError(KdebugError):
    """Something a kernel did while running: out-of-bounds access, divergent barrier..."""

    kind = "kernel error"


class KernelRuntimeWarning(KdebugError):
    """Something a kernel did that works but is undefined in CUDA (reported as a warning; the run goes on)."""

    kind = "kernel warning"


class ReentrantLoopError(KdebugError):
    """The recursive strategy asked for a job already on its own request chain."""

    kind = "re-entrant codegen loop"


class NumbaWarning(Warning):
    """Base of numba's warnings (``numba.core.errors.NumbaWarning`` under ``--numba``): what a kernel compiles
    to differs from what its source says (``print()`` of more than 32 items prints its format string)."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(_made_as(cls), *args)


class NumbaInvalidConfigWarning(NumbaWarning):
    """numba's warning for ``cuda.jit`` keywords that do not go together (``debug=True`` with ``opt=True``)."""


class BackendUnavailable(KdebugError):
    kind = "backend unavailable"


def format_error(kind: str, message: str, loc: SourceLocation | None, hint: str | None) -> str:
    lines = [f"{loc}: {kind}: {message}" if loc else f"{kind}: {message}"]
    if loc is not None:
        text = loc.source_line()
        if text:
            lines.append("    " + text)
            # keep the line's tabs under the caret, so that it lands under the right character
            pad = "".join(c if c == "\t" else " " for c in text[:loc.col - 1])
            lines.append("    " + pad + "^")
    if hint:
        lines.append(f"hint: {hint}")
    return "\n".join(lines)
