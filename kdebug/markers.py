"""The deferred-codegen marker: its one spelling, made and read here only.

Where code needs another job's entry (a device-side launch, a function pointer, a derivative's
callee) the frontend emits ``call ptr @kdebug.deferred.<job id>()``: a declaration named after
the requested job's id, with no arguments, returning a pointer. ``expand_deferred`` replaces each
call by the address of that job's entry (``kdebug/driver/deferred.py``). The frontend, the driver,
the forward-mode transform, the CPU target and the TUI's navigation all make or read markers, so
the spelling lives at the bottom of the layers, as text only (no LLVM import: the TUI reads it).
"""
from __future__ import annotations

import re

PREFIX = "kdebug.deferred."

# a marker call as LLVM prints it: group 1 the value it defines, group 2 the job id
CALL = re.compile(r'(%[-\w.$"]+) = (?:tail |notail |musttail )?call ptr @"?kdebug\.deferred\.(\d+)"?\(\)')
# its declaration, a whole line
DECLARATION = re.compile(r'^declare ptr @"?kdebug\.deferred\.\d+"?\(\).*\n?', re.M)
# a marker's name anywhere in a line (IR views, diagnostics): group 1 the job id
NAME = re.compile(r"kdebug\.deferred\.(\d+)\b")
_WHOLE = re.compile(r"^kdebug\.deferred\.(\d+)$")


def name(job_id: int) -> str:
    """The marker function's name for job ``job_id``: ``kdebug.deferred.7``."""
    return f"{PREFIX}{job_id}"


def job_of(symbol: str) -> int | None:
    """The job id a marker's name carries, or None for any other symbol."""
    m = _WHOLE.match(symbol)
    return int(m.group(1)) if m else None


def ids_in(text: str) -> list[int]:
    """The job ids of the marker calls in printed IR, in order (repeats kept)."""
    return [int(m.group(2)) for m in CALL.finditer(text)]


def mentions(text: str) -> bool:
    """Whether ``text`` may hold a marker (a cheap test before the regular expressions)."""
    return PREFIX in text
