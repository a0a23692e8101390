"""The session model: the job tree, snapshots, launches and diagnostics, rebuilt from events.

Plain Python, no UI: the headless printer, the dump writer and the TUI all
render this model, and it can be rebuilt from a trace file alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kdebug import events as E


@dataclass
class JobView:
    id: int
    name: str
    key: str
    parent: int | None
    reason: str = "host"
    argtypes: list[str] = field(default_factory=list)
    kind: str = "kernel"
    target: str = "cpu"
    state: str = "queued"  # queued, compiling, done, cached, failed
    phase: str | None = None  # the phase running now
    compile_time: float = 0.0
    phase_times: dict[str, float] = field(default_factory=dict)
    snapshots: dict[str, int] = field(default_factory=dict)  # phase -> snapshot id
    cache_hits: int = 0
    error: str | None = None
    source: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    children: list[int] = field(default_factory=list)
    backrefs: list[int] = field(default_factory=list)  # ids of Reentrant events raised by this job
    events: list[int] = field(default_factory=list)  # indices into Session.events

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.argtypes)})"


@dataclass
class LaunchView:
    id: int
    name: str
    job: int | None
    grid: list[int]
    block: list[int]
    backend: str
    parent_launch: int | None = None
    duration: float | None = None
    error: str | None = None

    @property
    def state(self) -> str:
        if self.duration is None:
            return "running"
        return "failed" if self.error else "ok"


class SessionModel:
    """Fold events into a model. ``apply`` is cheap and incremental (the TUI calls it live)."""

    def __init__(self) -> None:
        self.events: list[E.Event] = []
        self.jobs: dict[int, JobView] = {}
        self.roots: list[int] = []
        self.snapshots: dict[int, E.Snapshot] = {}
        self.launches: dict[int, LaunchView] = {}
        self.diagnostics: list[E.Diagnostic] = []
        self.reentrant: list[E.Reentrant] = []
        self.started: E.SessionStarted | None = None
        self.ended: E.SessionEnded | None = None
        self.paused: E.Paused | None = None  # set while the debuggee waits at a breakpoint
        self.compilations: dict[str, int] = {}  # key -> number of job_started events

    def apply(self, ev: E.Event) -> None:
        index = len(self.events)
        self.events.append(ev)
        handler = getattr(self, "_on_" + ev.kind, None)
        if handler is not None:
            handler(ev)
        job = getattr(ev, "job", None)
        if isinstance(job, int) and job in self.jobs:
            self.jobs[job].events.append(index)

    def extend(self, events) -> "SessionModel":
        for ev in events:
            self.apply(ev)
        return self

    # ---- handlers --------------------------------------------------------------------
    def _on_session_started(self, ev: E.SessionStarted) -> None:
        self.started = ev

    def _on_session_ended(self, ev: E.SessionEnded) -> None:
        self.ended, self.paused = ev, None

    def _on_paused(self, ev: E.Paused) -> None:
        self.paused = ev

    def _on_resumed(self, ev: E.Resumed) -> None:
        self.paused = None

    def _on_job_requested(self, ev: E.JobRequested) -> None:
        view = JobView(ev.job, ev.name, ev.key, ev.parent, ev.reason, list(ev.argtypes), ev.job_kind, ev.target,
                       source=ev.source, source_file=ev.source_file, source_line=ev.source_line)
        self.jobs[ev.job] = view
        if ev.parent is not None and ev.parent in self.jobs:
            self.jobs[ev.parent].children.append(ev.job)
        else:
            self.roots.append(ev.job)

    def _on_job_started(self, ev) -> None:
        self.jobs[ev.job].state = "compiling"
        self.compilations[ev.key] = self.compilations.get(ev.key, 0) + 1

    def _on_job_finished(self, ev: E.JobFinished) -> None:
        job = self.jobs[ev.job]
        job.state, job.phase, job.compile_time = "done", None, ev.duration

    def _on_job_failed(self, ev: E.JobFailed) -> None:
        job = self.jobs[ev.job]
        job.state, job.phase, job.error = "failed", None, ev.error

    def _on_cache_hit(self, ev) -> None:
        job = self.jobs.get(ev.job)
        if job is not None:
            job.cache_hits += 1

    def _on_phase_started(self, ev: E.PhaseStarted) -> None:
        self.jobs[ev.job].phase = ev.phase

    def _on_phase_finished(self, ev: E.PhaseFinished) -> None:
        job = self.jobs[ev.job]
        job.phase_times[ev.phase] = ev.duration
        if ev.snapshot is not None:
            job.snapshots[ev.phase] = ev.snapshot

    def _on_snapshot(self, ev: E.Snapshot) -> None:
        self.snapshots[ev.id] = ev
        job = self.jobs.get(ev.job)
        if job is not None:
            job.snapshots[ev.phase] = ev.id

    def _on_reentrant(self, ev: E.Reentrant) -> None:
        self.reentrant.append(ev)
        job = self.jobs.get(ev.job)
        if job is not None:
            job.backrefs.append(len(self.reentrant) - 1)

    def _on_diagnostic(self, ev: E.Diagnostic) -> None:
        self.diagnostics.append(ev)

    def _on_launch_started(self, ev: E.LaunchStarted) -> None:
        self.launches[ev.launch] = LaunchView(ev.launch, ev.name, ev.job, list(ev.grid), list(ev.block), ev.backend,
                                              ev.parent_launch)

    def _on_launch_finished(self, ev: E.LaunchFinished) -> None:
        view = self.launches.get(ev.launch)
        if view is not None:
            view.duration, view.error = ev.duration, ev.error

    # ---- queries -----------------------------------------------------------------------
    def snapshot_text(self, job_id: int, phase: str) -> str | None:
        sid = self.jobs[job_id].snapshots.get(phase)
        return self.snapshots[sid].text if sid in self.snapshots else None

    def walk(self):
        """Jobs in tree order, with their depth."""
        def visit(jid, depth):
            yield self.jobs[jid], depth
            for c in self.jobs[jid].children:
                yield from visit(c, depth + 1)
        for r in self.roots:
            yield from visit(r, 0)

    @property
    def errors(self) -> list[E.Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]
