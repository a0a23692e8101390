"""The session model: the job tree, snapshots, launches and diagnostics, rebuilt from events.

Plain Python, no UI: the headless printer, the dump writer and the TUI all
render this model, and it can be rebuilt from a trace file alone.
"""
from __future__ import annotations

import os

from collections import OrderedDict
from dataclasses import field
from typing import NamedTuple

from kdebug import events as E
from kdebug import passes
from kdebug.driver.pass_events import pass_events
from kdebug.lazy_dataclasses import dataclass

PASS_CACHE = 48  # rebuilt pass snapshots kept: a keyframe's chain and the ones around the reader


REMARK_KIND_ORDER = {"missed": 0, "analysis": 1, "passed": 2}  # a line's remarks: missed ones first


def counted(n: int, noun: str) -> str:
    """``1 launch``, ``2 launches``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun}{'es' if noun.endswith(('ch', 'sh', 's', 'x')) else 's'}"


class PassView(NamedTuple):
    """One pass of a phase's pipeline as recorded: its snapshot when it changed the module (a tuple:
    a long pipeline has hundreds, and a big trace thousands of them)."""

    index: int  # from 1, in the order the passes ran
    name: str
    unit: str  # the IR unit it ran on (a function, a loop, an SCC, [module])
    changed: bool
    snapshot: int | None = None  # id of its PassSnapshot event


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
    state: str = "queued"  # queued, compiling, done, cached, failed; killed, interrupted, crashed or
    # abandoned when the session ended while it was queued or compiling
    phase: str | None = None  # the phase running now
    stopped_in: str | None = None  # the phase it was in when the session ended under it
    compile_time: float = 0.0  # the driver leaves out the time held at breakpoints
    phase_times: dict[str, float] = field(default_factory=dict)
    snapshots: dict[str, int] = field(default_factory=dict)  # phase -> snapshot id
    cache_hits: int = 0
    form: str = ""  # the form its target runs it in, and why not the fast one (JobFinished)
    form_why: str = ""
    error: str | None = None
    source: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    children: list[int] = field(default_factory=list)
    backrefs: list[int] = field(default_factory=list)  # ids of Reentrant events raised by this job
    shared: list[int] = field(default_factory=list)  # jobs it requested that hang under another requester
    resolved_round: int = 0  # the toplevel strategy's round that resolved the request for this job
    duplicate_of: int | None = None  # the first job compiled with the same key (duplicate codegen)
    events: list[int] = field(default_factory=list)  # indices into Session.events
    passes: dict[str, list[PassView]] = field(default_factory=dict)  # phase -> its pipeline's passes, in order
    pass_snapshots: dict[tuple[str, int], int] = field(default_factory=dict)  # (phase, pass index) -> snapshot id
    # LLVM's optimisation remarks of its phases: (phase, [file, line, col, kind, pass, message]) each
    remarks: list[tuple[str, list]] = field(default_factory=list)
    # phases whose passes were kept for a replay (pass_replay events) and are not replayed yet
    passes_pending: dict[str, E.PassReplay] = field(default_factory=dict)
    passes_failed: dict[str, str] = field(default_factory=dict)  # phase -> why its replay shows nothing
    edited: dict[str, str] = field(default_factory=dict)  # stage -> the edited file it is (kdebug run --override)

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
    duration: float | None = None  # without the time held at breakpoints (device-side launches inside it)
    held_time: float = 0.0
    error: str | None = None
    ended_by: str | None = None  # the session's end status when it ended with the launch running

    @property
    def state(self) -> str:
        if self.duration is None:
            return self.ended_by or "running"
        return "failed" if self.error else "ok"


@dataclass
class Alert:
    """One thing the user should look at: a re-entrant request, an error or warning, a crash."""

    severity: str  # error, warning, note
    title: str  # one line
    job: int | None = None
    detail: list[str] = field(default_factory=list)  # further lines (the full message, source and caret)
    event: int = 0  # index into SessionModel.events of the event that raised it
    merged: set[str] = field(default_factory=set)  # categories of later diagnostics folded into it


ARROW = " \u2192 "


def _overlap(start: float, end: float, spans: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)


class SessionModel:
    """Fold events into a model. ``apply`` is cheap and incremental (the TUI calls it live).

    Besides what the events say, the model keeps what the views derive from them, so
    that every face shows the same and a widget only renders: the alerts (one per thing
    to look at), each job's alert mark, the job the debuggee is paused at, the jobs of
    the selected cycle, and launch times without the time held at breakpoints.
    """

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
        self.alerts: list[Alert] = []
        self.job_alert: dict[int, str] = {}  # job -> its worst alert: "error" or "warning"
        self.held: list[tuple[float, float]] = []  # (paused at, resumed at) in event time
        self.cycle: set[int] = set()  # jobs on the cycle of the selected re-entrant request
        self.first_of_key: dict[str, int] = {}
        self.changed: set[int] = set()  # jobs whose derived state changed since take_changed()
        self.requests: dict[int, list[E.DeferredRequest]] = {}  # requester -> its deferred requests, by site
        self.entries: dict[int, str] = {}  # job -> the symbol its requesters' markers resolved to
        self.pass_snapshots: dict[int, E.PassSnapshot] = {}
        self._pass_lines: OrderedDict[int, list[str]] = OrderedDict()  # rebuilt pass snapshots, most recent last
        self._last_replay_id = 0  # replayed pass snapshots count down from -1: below the driver's ids (a plain
        # integer: the timeline deep-copies the model, which itertools' counters no longer allow from 3.14)

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

    # ---- derived view state ------------------------------------------------------------
    @property
    def sanitizers(self) -> list[str]:
        """The run's sanitizers (--sanitize); a trace from before they were recorded ran the default two."""
        return list(self.started.sanitizers) if self.started is not None else []

    @property
    def paused_job(self) -> int | None:
        return self.paused.job if self.paused is not None else None

    def select_cycle(self, backref: int | None) -> set[int]:
        """Highlight the jobs of re-entrant request ``backref`` (None clears); the jobs whose mark changed."""
        cycle = set(self.reentrant[backref].cycle) if backref is not None and backref < len(self.reentrant) else set()
        changed, self.cycle = self.cycle ^ cycle, cycle
        return changed

    @property
    def request_at(self) -> E.JobRequested | E.Reentrant | None:
        """The deferred or re-entrant request the session stands at: the last event (a replay stepped
        to it), or the one just before a pause (the debuggee waits before answering it)."""
        i = len(self.events) - 1
        if i >= 0 and isinstance(self.events[i], E.Paused):
            i -= 1
        ev = self.events[i] if i >= 0 else None
        if isinstance(ev, E.Reentrant) or (isinstance(ev, E.JobRequested) and ev.reason != "host"):
            return ev
        return None

    def take_changed(self) -> set[int]:
        """Jobs whose alert or paused mark changed since the last call (for a view that redraws them)."""
        changed, self.changed = self.changed, set()
        return changed

    def _raise(self, alert: Alert) -> None:
        self.alerts.append(alert)
        if alert.job is None:
            return
        if alert.severity == "error" or (alert.severity == "warning" and alert.job not in self.job_alert):
            if self.job_alert.get(alert.job) != "error":
                self.job_alert[alert.job] = alert.severity
                self.changed.add(alert.job)

    def _held_during(self, start: float, end: float) -> float:
        spans = self.held + ([(self.paused.t, end)] if self.paused is not None else [])
        return _overlap(start, end, spans)

    # ---- handlers --------------------------------------------------------------------
    def _on_session_started(self, ev: E.SessionStarted) -> None:
        self.started = ev

    def _on_session_ended(self, ev: E.SessionEnded) -> None:
        self._set_paused(None, ev.t)
        self.ended = ev
        for launch in self.launches.values():
            if launch.duration is None:
                launch.ended_by = "killed" if ev.status == "killed" else "interrupted"
        for job in self.jobs.values():  # a job the session ended under is no longer compiling
            if job.state in ("queued", "compiling"):
                job.stopped_in = job.phase or (self.root_of(job.id).phase if job.parent is not None else None)
                job.state = ev.status if ev.status in ("killed", "interrupted", "crashed") else "abandoned"
                job.phase = None
                self.changed.add(job.id)
        if ev.status in ("crashed", "killed"):
            lines = (ev.error or "").splitlines()
            self._raise(Alert("error", f"session {ev.status}: {lines[0] if lines else ''}", None, lines[1:],
                              len(self.events) - 1))

    def _set_paused(self, paused: E.Paused | None, t: float) -> None:
        if self.paused is not None:
            self.held.append((self.paused.t, t))
        self.changed |= {p.job for p in (self.paused, paused) if p is not None and p.job is not None}
        self.paused = paused

    def _on_paused(self, ev: E.Paused) -> None:
        self._set_paused(ev, ev.t)

    def _on_resumed(self, ev: E.Resumed) -> None:
        self._set_paused(None, ev.t)

    def _on_job_requested(self, ev: E.JobRequested) -> None:
        view = JobView(ev.job, ev.name, ev.key, ev.parent, ev.reason, list(ev.argtypes), ev.job_kind, ev.target,
                       source=ev.source, source_file=ev.source_file, source_line=ev.source_line)
        self.jobs[ev.job] = view
        if ev.parent is not None and ev.parent in self.jobs:
            self.jobs[ev.parent].children.append(ev.job)
        else:
            self.roots.append(ev.job)
        first = self.first_of_key.setdefault(ev.key, ev.job)
        if first != ev.job:
            view.duplicate_of = first

    def _on_job_started(self, ev) -> None:
        self.jobs[ev.job].state = "compiling"
        self.compilations[ev.key] = self.compilations.get(ev.key, 0) + 1

    def _on_job_finished(self, ev: E.JobFinished) -> None:
        job = self.jobs[ev.job]
        job.state, job.phase, job.compile_time = "done", None, ev.duration
        job.form, job.form_why = ev.form, ev.form_why

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
        if job.phase == ev.phase:
            job.phase = None  # between phases (a nested job waits for its toplevel's optimize and finish)
        if ev.snapshot is not None:
            job.snapshots[ev.phase] = ev.snapshot

    def _on_snapshot(self, ev: E.Snapshot) -> None:
        self.snapshots[ev.id] = ev
        job = self.jobs.get(ev.job)
        if job is not None:
            job.snapshots[ev.phase] = ev.id

    def _on_deferred_request(self, ev: E.DeferredRequest) -> None:
        self.requests.setdefault(ev.job, []).append(ev)

    def _on_pass_snapshot(self, ev: E.PassSnapshot) -> None:
        self.pass_snapshots[ev.id] = ev
        job = self.jobs.get(ev.job)
        if job is not None:
            job.pass_snapshots[(ev.phase, ev.index)] = ev.id

    def _on_pass_replay(self, ev: E.PassReplay) -> None:
        job = self.jobs.get(ev.job)
        if job is not None and ev.phase not in job.passes:
            job.passes_pending[ev.phase] = ev

    def _on_pass_list(self, ev: E.PassList) -> None:
        job = self.jobs.get(ev.job)
        if job is None:
            return
        job.passes_pending.pop(ev.phase, None)
        snaps, phase = job.pass_snapshots, ev.phase
        job.passes[phase] = [PassView(i, row[0], row[1], bool(row[2]), snaps.get((phase, i)) if row[2] else None)
                             for i, row in enumerate(ev.passes, 1)]

    def _on_remarks(self, ev: E.Remarks) -> None:
        job = self.jobs.get(ev.job)
        if job is not None:
            job.remarks += [(ev.phase, r) for r in ev.remarks]

    def _on_deferred_resolved(self, ev: E.DeferredResolved) -> None:
        if ev.entry:
            self.entries[ev.target_job] = ev.entry
        target, requester = self.jobs.get(ev.target_job), self.jobs.get(ev.job)
        if target is None or requester is None:
            return
        if ev.round:  # the toplevel strategy resolves nested jobs' markers: not an edge of the request graph
            target.resolved_round = ev.round
            return
        cycle_closing = any(self.reentrant[i].target_job == ev.target_job for i in requester.backrefs)
        if target.parent != ev.job and not cycle_closing and ev.target_job not in requester.shared:
            requester.shared.append(ev.target_job)  # a diamond: the second requester of a job

    def _on_reentrant(self, ev: E.Reentrant) -> None:
        self.reentrant.append(ev)
        job = self.jobs.get(ev.job)
        if job is not None:
            job.backrefs.append(len(self.reentrant) - 1)
        sev = "error" if ev.resolution == "stopped" else "warning"
        title = f"re-entrant request #{ev.job} \u2192 #{ev.target_job}: {ARROW.join(ev.cycle_names)} ({ev.resolution})"
        self._raise(Alert(sev, title, ev.job, [], len(self.events) - 1))

    def _on_diagnostic(self, ev: E.Diagnostic) -> None:
        self.diagnostics.append(ev)
        if ev.category == "override" and ev.job in self.jobs:  # "job #N name: the <stage> stage is <file>"
            stage, _, file = ev.message.partition(": the ")[2].partition(" stage is ")
            if file:
                self.jobs[ev.job].edited[stage] = file.split(" ", 1)[0]
        lines = (ev.text or ev.message or "").splitlines()
        last = self.alerts[-1] if self.alerts else None
        if last is not None and last.job == ev.job and last.title.startswith("re-entrant") \
                and ev.category not in last.merged and (ev.category == "reentrant" or (
                    ev.category == "compile" and last.severity == "error")):
            # the driver's diagnostic for the re-entrant request it has just reported, and under
            # recursive the compile error that stopping it raises: the same alert, more detail
            last.merged.add(ev.category)
            more = [ln for ln in lines if ln.strip()]
            last.detail += (more[1:] + self._where(ev)) if ev.category == "reentrant" else more
            return
        where = f" [job #{ev.job}]" if ev.job is not None else ""
        first = ev.message.splitlines()[0] if ev.message else (lines[0] if lines else "")
        detail = lines[1:] if lines and lines[0].strip() in first else lines
        self._raise(Alert(ev.severity, f"{ev.category}{where}: {first}", ev.job, detail, len(self.events) - 1))

    @staticmethod
    def _where(ev: E.Diagnostic) -> list[str]:
        loc = ev.location or {}
        return [f"at {loc['file']}:{loc.get('line')}:{loc.get('col')}"] if loc.get("file") else []

    def _on_launch_started(self, ev: E.LaunchStarted) -> None:
        self.launches[ev.launch] = LaunchView(ev.launch, ev.name, ev.job, list(ev.grid), list(ev.block), ev.backend,
                                              ev.parent_launch)

    def _on_launch_finished(self, ev: E.LaunchFinished) -> None:
        view = self.launches.get(ev.launch)
        if view is not None:
            view.held_time = self._held_during(ev.t - ev.duration, ev.t)
            view.duration, view.error = max(ev.duration - view.held_time, 0.0), ev.error

    # ---- passes kept for a replay ------------------------------------------------------
    def replayed_events(self, job_id: int, replay=None) -> tuple[list[E.Event], dict[str, str]]:
        """The pass events of ``job_id``'s phases kept for a replay (LLVM runs their pipelines again,
        now: kdebug/targets/pass_record.py), and for each phase that could not be replayed, why.
        ``replay(pipelines, assembly=...)`` runs them (the TUI's: in a process of its own,
        kdebug/targets/replay_worker.py; default: here, ``pass_record.replay``). Reads the model and
        changes nothing (a worker thread may call it); ``apply`` the events."""
        job = self.jobs.get(job_id)
        if job is None:
            return [], {}
        if replay is None:
            from kdebug.targets import pass_record  # kept lazy for start-up time: a replay here needs LLVM
            replay = pass_record.replay
        out: list[E.Event] = []
        failed: dict[str, str] = {}
        for phase, ev in list(job.passes_pending.items()):
            fields = {"job": ev.job, "name": ev.name, "parent": ev.parent, "key": ev.key}
            try:
                log = replay([passes.PipelineInput.from_json(p) for p in ev.pipelines], assembly=ev.assembly is not None)
            except Exception as exc:  # noqa: BLE001 - another LLVM, a damaged trace: said where the passes go
                failed[phase] = str(exc) if isinstance(exc, passes.ReplayMismatch) else \
                    f"the passes could not be replayed ({exc.__class__.__name__}: {exc})"
                continue
            out += pass_events(fields, phase, log, self._next_replay_id)
            if log.assembly is not None and ev.assembly in self.snapshots:  # the phase's own snapshot, now made
                out.append(E.Snapshot(**fields, id=ev.assembly, phase=phase, language=self.snapshots[ev.assembly].language,
                                      text=log.assembly))
        return out, failed

    def _next_replay_id(self) -> int:
        self._last_replay_id -= 1
        return self._last_replay_id

    def apply_replayed(self, job_id: int, events: list[E.Event], failed: dict[str, str]) -> None:
        """What ``replayed_events`` made, into the model (its events join the session's: a saved
        trace keeps them)."""
        for ev in events:
            self.apply(ev)
        job = self.jobs.get(job_id)
        if job is not None:
            for phase, why in failed.items():
                job.passes_pending.pop(phase, None)
                job.passes_failed[phase] = why
            self.changed.add(job_id)

    def replay_all(self) -> None:
        """Replay every job's kept passes now (``kdebug dump``, ``kdebug export`` write them all)."""
        for job_id in [j.id for j in self.jobs.values() if j.passes_pending]:
            self.apply_replayed(job_id, *self.replayed_events(job_id))

    # ---- queries -----------------------------------------------------------------------
    def source_remarks(self, job) -> dict[int, list[list]]:
        """LLVM's remarks that name a line of ``job``'s source (whichever job's pipeline made them: a
        deferred job's code is optimised in its toplevel's module), by line number in its file, each
        line's once: ``[kind, pass, message]``."""
        if not job.source or not job.source_file or job.source_line is None:
            return {}
        base = os.path.basename(job.source_file)
        first, last = job.source_line, job.source_line + len(job.source.splitlines()) - 1
        found: dict[int, list[list]] = {}
        for other in self.jobs.values():
            for _phase, (file, line, col, kind, pass_name, message) in other.remarks:
                if os.path.basename(file) == base and first <= line <= last:
                    row = [REMARK_KIND_ORDER.get(kind, 3), col, kind, pass_name, message]
                    if row not in found.setdefault(line, []):
                        found[line].append(row)
        # a line's remarks in the order the l list gives them: missed first, then by column
        return {line: [r[2:] for r in sorted(rows)] for line, rows in found.items()}

    def snapshot_text(self, job_id: int, phase: str) -> str | None:
        sid = self.jobs[job_id].snapshots.get(phase)
        return self.snapshots[sid].text if sid in self.snapshots else None

    def pass_lines(self, snapshot_id: int) -> list[str]:
        """The module after a recorded pass, rebuilt from its edits (the last few are kept)."""
        lines = self._pass_lines.get(snapshot_id)
        if lines is not None:
            self._pass_lines.move_to_end(snapshot_id)
            return lines
        ev = self.pass_snapshots[snapshot_id]
        if ev.base is None or ev.base not in self.pass_snapshots:
            lines = ev.text.splitlines()
        else:
            lines = passes.apply_edits(self.pass_lines(ev.base), ev.edits)
        self._pass_lines[snapshot_id] = lines
        while len(self._pass_lines) > PASS_CACHE:
            self._pass_lines.popitem(last=False)
        return lines

    def pass_text(self, snapshot_id: int) -> str:
        return "\n".join(self.pass_lines(snapshot_id)) + "\n"

    def walk(self):
        """Jobs in tree order, with their depth."""
        def visit(jid, depth):
            yield self.jobs[jid], depth
            for c in self.jobs[jid].children:
                yield from visit(c, depth + 1)
        for r in self.roots:
            yield from visit(r, 0)

    def root_of(self, job_id: int) -> JobView:
        job, seen = self.jobs[job_id], set()
        while job.parent is not None and job.parent in self.jobs and job.id not in seen:
            seen.add(job.id)
            job = self.jobs[job.parent]
        return job

    def launch_depth(self, launch_id: int) -> int:
        depth, seen, ln = 0, set(), self.launches.get(launch_id)
        while ln is not None and ln.parent_launch is not None and ln.id not in seen:
            seen.add(ln.id)
            depth, ln = depth + 1, self.launches.get(ln.parent_launch)
        return depth

    def job_state(self, job_id: int) -> tuple[str, str | None]:
        """(state, phase) as a view shows them: a nested job between its own phases is compiling in its toplevel."""
        job = self.jobs[job_id]
        state = "cached" if job.state == "done" and job.cache_hits and not job.compile_time else job.state
        if state == "compiling" and job.phase is None and job.parent is not None:
            root = self.root_of(job_id)
            if root.phase is not None:
                return state, f"{root.phase} (in #{root.id})"
        return state, job.phase

    @property
    def errors(self) -> list[E.Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]
