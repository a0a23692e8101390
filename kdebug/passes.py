"""LLVM pipelines recorded pass by pass: what the driver asks for and how a snapshot travels.

At the bottom of the layers with the stages: the driver opens a ``PassLog`` around a phase
(``recording``), a target's pipeline runner (``kdebug/targets/pass_record.py``) fills it when one is
open, and the session model rebuilds each pass's module from the events. Nothing here knows LLVM.

A pass snapshot travels as the edits that turn an earlier pass snapshot into it (``edits`` /
``apply_edits``): consecutive passes change a few lines of a module of hundreds, so a trace keeps
each line about once, and every ``KEYFRAME``-th changed pass is whole, so rebuilding one never
walks a long chain.

A log opened ``on_demand`` records no pass at all: each pipeline keeps its input module, target
machine and tuning (``PipelineInput``), and whoever shows the passes replays it, pass by pass, into
the same events (``pass_events``). LLVM's pipelines are deterministic: the replay meets what the
compile met, and each pipeline's digest of its result proves it did.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import field

from kdebug.lazy_dataclasses import dataclass

KEYFRAME = 16  # every 16th changed pass of a phase travels whole


@dataclass
class PassRun:
    """One run of one pass on one IR unit (a function, a loop, an SCC, the module)."""

    name: str  # InstCombinePass
    unit: str  # what it ran on: a function's name, "[module]", "(f, g)", "loop %for.body in function f"
    changed: bool  # the module's text differs from the one before the pass
    text: str | None = None  # the whole module after the pass, when it changed


@dataclass
class PassLog:
    """The passes of the pipelines one phase ran, in order (a phase may run more than one)."""

    runs: list[PassRun] = field(default_factory=list)
    # LLVM's optimisation remarks of those pipelines: [file, line, col, kind, pass, message] each
    # (kind: passed, missed, analysis; file "<unknown>" and line 0 where the IR had no location)
    remarks: list[list] = field(default_factory=list)
    on_demand: bool = False  # keep each pipeline's input for a replay instead of recording its passes
    pipelines: list["PipelineInput"] = field(default_factory=list)  # what an on-demand log kept
    assembly: str | None = None  # a replay's: the last module's assembly, where it was asked for


class ReplayMismatch(Exception):
    """A replayed pipeline made another module than the compile's (another LLVM, another machine)."""


@dataclass
class PipelineInput:
    """One LLVM pipeline as a replay needs it: what it ran on and with, and what it made."""

    machine: list  # [triple, cpu, features, codegen opt level] of its target machine
    tuning: dict  # its PipelineTuningOptions: speed_level and the settings kdebug changes
    passes: list | None  # a pass list (llvmlite's add_<name>_pass names), None: the -O pipeline
    bitcode: str  # the module before the pipeline, LLVM bitcode in base64
    digest: str  # sha1 of the module's text after it
    name: str = ""  # the module's name (its ModuleID: bitcode does not keep it)

    def to_json(self) -> dict:
        return {"machine": list(self.machine), "tuning": dict(self.tuning), "passes": self.passes,
                "bitcode": self.bitcode, "digest": self.digest, "name": self.name}

    @classmethod
    def from_json(cls, d: dict) -> "PipelineInput":
        return cls(d["machine"], d["tuning"], d.get("passes"), d["bitcode"], d["digest"], d.get("name", ""))


_open: contextvars.ContextVar[PassLog | None] = contextvars.ContextVar("kdebug_pass_log", default=None)


@contextlib.contextmanager
def recording(on_demand: bool = False):
    """Record every pipeline run inside this block pass by pass (``on_demand``: keep what a replay
    needs instead); yields the ``PassLog``."""
    log = PassLog(on_demand=on_demand)
    token = _open.set(log)
    try:
        yield log
    finally:
        _open.reset(token)


def open_log() -> PassLog | None:
    """The log a pipeline run now should fill, or None: run it unrecorded (the fast path)."""
    return _open.get()


NO_LIMIT = -1  # a cut that skips nothing: it only counts and names the passes (bisect's survey run)


@dataclass
class PassCut:
    """The optimisation pipelines of one compilation cut after pass ``limit`` (LLVM's opt-bisect
    limit), counted over the compilation's ``optimize`` and ``emit`` pipelines together: pass
    ``limit + 1`` and every later one is skipped (passes LLVM requires still run). ``kdebug bisect``
    builds the same script under many limits, one child process each."""

    limit: int = NO_LIMIT
    phase: str = ""  # the phase whose pipelines run now
    # every pass the gate was asked about: [number from 1, LLVM's pass name, IR unit, ran, phase, class name]
    runs: list[list] = field(default_factory=list)
    text: str = ""  # the module after the last cut pipeline

    def remaining(self) -> int | None:
        """How many more passes may run (None: no limit)."""
        return None if self.limit < 0 else max(self.limit - len(self.runs), 0)


_cut: contextvars.ContextVar[PassCut | None] = contextvars.ContextVar("kdebug_pass_cut", default=None)


@contextlib.contextmanager
def cutting(cut: PassCut, phase: str):
    """Run this block's pipelines under ``cut`` (their passes counted as ``phase``'s)."""
    cut.phase = phase
    token = _cut.set(cut)
    try:
        yield cut
    finally:
        _cut.reset(token)


def open_cut() -> PassCut | None:
    """The cut a pipeline run now runs under, or None."""
    return _cut.get()


FINE_DIFF = 400  # lines of a changed middle worth a line-by-line diff; beyond, it travels whole
_STRIDE = 64  # lines compared at once while cutting off the shared start and end


def edits(before: list[str], after: list[str]) -> list[list]:
    """The edits that turn ``before`` into ``after``: ``[start, end, [new lines]]`` over ``before``'s
    line numbers, in order.

    A pass changes one region of the module (a function, a few declarations): the lines both share
    at the start and at the end are cut off first, in linear time, and only a short middle gets
    difflib's quadratic matching; a long one is one replacement.
    """
    n = min(len(before), len(after))
    head = 0
    while head + _STRIDE <= n and before[head:head + _STRIDE] == after[head:head + _STRIDE]:
        head += _STRIDE  # a slice compared at C speed: the shared start of a module thousands of lines long
    while head < n and before[head] == after[head]:
        head += 1
    tail = 0
    nb, na = len(before), len(after)
    while tail + _STRIDE <= n - head and before[nb - tail - _STRIDE:nb - tail] == after[na - tail - _STRIDE:na - tail]:
        tail += _STRIDE
    while tail < n - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    a, b = before[head:len(before) - tail], after[head:len(after) - tail]
    if not a and not b:
        return []
    if len(a) + len(b) > FINE_DIFF:
        return [[head, head + len(a), b]]
    import difflib  # kept lazy for start-up time: pass snapshots are recorded only when something shows them
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [[head + i1, head + i2, b[j1:j2]] for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def apply_edits(before: list[str], changes: list[list]) -> list[str]:
    """``before`` with ``changes`` (from ``edits``) applied."""
    out: list[str] = []
    at = 0
    for start, end, lines in changes:
        out += before[at:start]
        out += lines
        at = end
    out += before[at:]
    return out
