"""Typed, JSON-serialisable events: the only thing the UI ever sees of the driver.

Every event serialises to one JSON object with ``v`` (schema version),
``event`` (its kind, snake_case) and ``t`` (seconds since the session
started). Job events also carry ``job``, ``name``, ``parent`` and ``key``.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import field
from typing import Any, Callable, ClassVar

from kdebug.lazy_dataclasses import dataclass

SCHEMA_VERSION = 1


@dataclass
class Event:
    kind: ClassVar[str] = "event"
    t: float = field(default=0.0, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"v": SCHEMA_VERSION, "event": self.kind, "t": round(self.t, 6)}
        for f in dataclasses.fields(self):
            if f.name != "t":
                out[f.name] = getattr(self, f.name)
        return out


@dataclass
class JobEvent(Event):
    job: int
    name: str
    parent: int | None
    key: str


@dataclass
class JobRequested(JobEvent):
    kind: ClassVar[str] = "job_requested"
    reason: str = "host"  # host, launch, pointer, grad
    argtypes: list[str] = field(default_factory=list)
    job_kind: str = "kernel"  # kernel or device
    target: str = "cpu"
    source_file: str | None = None
    source_line: int | None = None
    source: str | None = None
    # a deferred request's site: where in the requester's code ({"file", "line", "col"}) and the marker
    # (``kdebug.deferred.<job>``) lowering puts there; None for a host request
    site: dict | None = None
    marker: str | None = None


@dataclass
class JobStarted(JobEvent):
    kind: ClassVar[str] = "job_started"


@dataclass
class JobFinished(JobEvent):
    kind: ClassVar[str] = "job_finished"
    duration: float = 0.0
    form: str = ""  # the form the target runs a kernel in (the CPU target's: thread loop, regions, coroutines)
    form_why: str = ""  # why not the fast form where it could have been (a kernel with barriers as coroutines)


@dataclass
class JobFailed(JobEvent):
    kind: ClassVar[str] = "job_failed"
    error: str = ""


@dataclass
class CacheHit(JobEvent):
    kind: ClassVar[str] = "cache_hit"


@dataclass
class PhaseStarted(JobEvent):
    kind: ClassVar[str] = "phase_started"
    phase: str = ""


@dataclass
class PhaseFinished(JobEvent):
    kind: ClassVar[str] = "phase_finished"
    phase: str = ""
    duration: float = 0.0
    snapshot: int | None = None  # id of the Snapshot event holding this phase's IR


@dataclass
class Snapshot(JobEvent):
    """The IR of one job after one phase (``before_finish``/``after_finish`` included)."""

    kind: ClassVar[str] = "snapshot"
    id: int = 0
    phase: str = ""
    language: str = "llvm"  # llvm, python, text, ptx, asm
    text: str = ""


@dataclass
class PassSnapshot(JobEvent):
    """The module after one pass of a phase's pipeline that changed it (recorded only when something
    shows it: the TUI, ``kdebug dump``, ``--trace``). ``base`` is None when ``text`` is the whole
    module; else ``edits`` (``kdebug.passes.edits``) turn pass snapshot ``base`` into this one."""

    kind: ClassVar[str] = "pass_snapshot"
    id: int = 0  # numbered with the phase snapshots
    phase: str = ""  # optimize, emit
    index: int = 0  # the pass's place in its phase's pass list, from 1
    pass_name: str = ""
    base: int | None = None
    edits: list[list] = field(default_factory=list)
    text: str = ""


@dataclass
class PassList(JobEvent):
    """Every pass a phase's pipelines ran, in order: ``[pass name, IR unit, changed]`` each (the
    pass snapshots of the changed ones came before it)."""

    kind: ClassVar[str] = "pass_list"
    phase: str = ""
    passes: list[list] = field(default_factory=list)


@dataclass
class PassReplay(JobEvent):
    """A phase's pipelines kept for a replay instead of recorded pass by pass (the live TUI's
    default, ``Recording.passes_on_demand``): each pipeline's input module (bitcode, base64),
    its target machine and tuning, and a digest of the module it made. Whoever shows the passes
    replays them (``kdebug.targets.pass_record.replay``) into the same ``pass_snapshot``,
    ``pass_list`` and ``remarks`` events a recorded phase sends, and checks each digest."""

    kind: ClassVar[str] = "pass_replay"
    phase: str = ""
    pipelines: list[dict] = field(default_factory=list)  # kdebug.passes.PipelineInput.to_json() each
    # the phase snapshot (its id) the replay makes: the host assembly of the last pipeline's module
    # (the CPU target's emit), left out of the compile; None: the snapshot is the compile's own
    assembly: int | None = None


@dataclass
class Remarks(JobEvent):
    """LLVM's optimisation remarks of one phase's pipelines (recorded with its passes):
    ``[file, line, col, kind, pass, message]`` each; kind is passed, missed or analysis."""

    kind: ClassVar[str] = "remarks"
    phase: str = ""
    remarks: list[list] = field(default_factory=list)


@dataclass
class PassCut(JobEvent):
    """The passes one cut phase's pipelines were gated on (``kdebug bisect``'s builds): ``[number,
    LLVM's pass name, IR unit, ran, phase, class name]`` each, numbered over the compilation; ``text``:
    the module after the phase's last cut pipeline."""

    kind: ClassVar[str] = "pass_cut"
    phase: str = ""
    limit: int = -1
    passes: list[list] = field(default_factory=list)
    text: str = ""


@dataclass
class DeferredResolved(JobEvent):
    """A deferred-codegen marker in job ``job`` was replaced by job ``target``'s entry."""

    kind: ClassVar[str] = "deferred_resolved"
    target_job: int = 0
    marker: str = ""
    entry: str = ""
    round: int = 0  # the toplevel strategy's expansion round (0: resolved by the job itself)


@dataclass
class Reentrant(JobEvent):
    """A job asked, through its deferred jobs, for a job already on its request chain."""

    kind: ClassVar[str] = "reentrant"
    target_job: int = 0
    cycle: list[int] = field(default_factory=list)
    cycle_names: list[str] = field(default_factory=list)
    resolution: str = "reference"  # reference or stopped
    site: dict | None = None  # the request's place in the requester's code, {"file", "line", "col"}
    marker: str | None = None  # the marker the request puts there


@dataclass
class DeferredRequest(JobEvent):
    """Job ``job``'s code asked for job ``target_job`` at ``site``: every request, also one answered
    by a job already in the table (a second call site, a diamond), so each site maps to its job."""

    kind: ClassVar[str] = "deferred_request"
    target_job: int = 0
    reason: str = "launch"  # launch, pointer, grad
    marker: str = ""
    site: dict | None = None  # {"file", "line", "col"}


@dataclass
class Diagnostic(Event):
    kind: ClassVar[str] = "diagnostic"
    severity: str = "error"  # error, warning, note
    message: str = ""
    category: str = "compile"  # compile, launch, runtime, memcheck, barrier, reentrant, finish, script
    job: int | None = None
    location: dict | None = None  # {"file", "line", "col"}
    text: str = ""  # the whole formatted message, with source line and caret
    sanitizer: str | None = None  # racecheck, initcheck: the hazard's sanitizer (category says it too)
    hazard: dict | None = None  # a sanitizer's hazard: kind, array, index, both accesses, count


@dataclass
class LaunchStarted(Event):
    kind: ClassVar[str] = "launch_started"
    launch: int = 0
    job: int | None = None
    name: str = ""
    grid: list[int] = field(default_factory=list)
    block: list[int] = field(default_factory=list)
    backend: str = "cpu"
    parent_launch: int | None = None  # set for device-side launches


@dataclass
class LaunchFinished(Event):
    kind: ClassVar[str] = "launch_finished"
    launch: int = 0
    name: str = ""
    duration: float = 0.0
    error: str | None = None


@dataclass
class KernelOutput(Event):
    """What a launch's threads printed, in thread order: [linear block, linear thread, text] per line."""
    kind: ClassVar[str] = "kernel_output"
    launch: int = 0
    name: str = ""
    lines: list[list] = field(default_factory=list)
    dropped: int = 0  # lines past the cap, not shown


@dataclass
class SessionStarted(Event):
    kind: ClassVar[str] = "session_started"
    script: str = ""
    backend: str = "cpu"
    strategy: str = "worklist"
    argv: list[str] = field(default_factory=list)
    sanitizers: list[str] = field(default_factory=lambda: ["memcheck", "synccheck"])  # --sanitize
    # where the strategy comes from: "built-in", or "class C in FILE.py" (or in a module); None in a trace
    # recorded before kdebug said so (``origin`` then reads it off the strategy's spelling)
    strategy_origin: str | None = None
    # kdebug run --numba: the numba mode in force and what it means ("cuda-only (numba.cuda is kdebug's; ...)")
    numba: str | None = None

    @property
    def origin(self) -> str:
        """The strategy's origin, also for a trace that does not record it (a built-in's name has no colon)."""
        if self.strategy_origin:
            return self.strategy_origin
        head, sep, cls = self.strategy.rpartition(":")
        return f"class {cls} in {head}" if sep else "built-in"


@dataclass
class SessionEnded(Event):
    kind: ClassVar[str] = "session_ended"
    status: str = "ok"  # ok, failed, crashed, killed
    exit_code: int = 0
    error: str | None = None


@dataclass
class Paused(Event):
    """The debuggee stopped at a breakpoint (or a step) just before ``breakpoint`` happens."""

    kind: ClassVar[str] = "paused"
    breakpoint: str = "step"  # deferred, reentrant, finish, launch, step
    job: int | None = None
    launch: int | None = None
    message: str = ""


@dataclass
class Resumed(Event):
    kind: ClassVar[str] = "resumed"
    action: str = "continue"  # continue or step


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls for cls in (
        JobRequested, JobStarted, JobFinished, JobFailed, CacheHit, PhaseStarted, PhaseFinished,
        Snapshot, PassSnapshot, PassList, PassCut, PassReplay, Remarks, DeferredResolved, DeferredRequest, Reentrant, Diagnostic, LaunchStarted,
        LaunchFinished,
        SessionStarted, SessionEnded, Paused, Resumed, KernelOutput,
    )
}


def event_from_json(obj: dict[str, Any]) -> Event:
    """Rebuild a typed event from its JSON object (unknown fields are ignored)."""
    cls = EVENT_TYPES[obj["event"]]
    names = _FIELD_NAMES.get(cls)
    if names is None:  # dataclasses.fields costs more than the rest of a small event's rebuild
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return cls(**{k: v for k, v in obj.items() if k in names})


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def to_line(event: Event) -> str:
    """The event as one line of JSON (a trace file's line, the debuggee's pipe), newline included."""
    import json  # kept lazy for start-up time: only traces and the debuggee's pipe write JSON
    return json.dumps(event.to_json(), separators=(",", ":")) + "\n"


class EventBus:
    """Delivers events, stamped with session time, to every subscriber in order."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self._subscribers: list[Callable[[Event], None]] = []
        # seconds subscribers spent holding the session at a breakpoint: compile times leave them out
        self.paused_seconds = 0.0
        self._lock = threading.RLock()

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[Event], None]) -> None:
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def emit(self, event: Event) -> Event:
        with self._lock:
            event.t = time.perf_counter() - self.t0
            for callback in list(self._subscribers):
                callback(event)
        return event
