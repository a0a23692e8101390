"""Where the user's code called into kdebug: the location launch and array errors point at."""
from __future__ import annotations

import itertools
import linecache
import sys

from kdebug.errors import SourceLocation


def caller_location(skip_modules=("kdebug.",)) -> SourceLocation | None:
    """The user's line that called into kdebug (for launch errors)."""
    frame = sys._getframe(1)
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not any(mod.startswith(m) for m in skip_modules):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno, _column(frame))
        frame = frame.f_back
    return None


def _column(frame) -> int:
    """1-based column of the expression a frame is executing (the launch, the decorator...)."""
    try:
        line, _, col, _ = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None))
        if line == frame.f_lineno and col is not None:
            return col + 1
    except (AttributeError, IndexError, ValueError, StopIteration):
        pass
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1
