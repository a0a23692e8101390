"""Descend and ascend, as Cthulhu.jl does: from a request site in a job's code to the job it asked for.

Textual-free. Every site comes from the driver's events: a ``deferred_request`` for each site
(the requester, the requested job, the site's file and line, the marker lowering put there), and
the ``job_requested`` / ``reentrant`` event the debuggee pauses at, which carry the same site
before the request is answered. In IR a site is its marker, ``kdebug.deferred.<job>``, or, once
expanded, the requested job's entry symbol (``deferred_resolved``).
"""
from __future__ import annotations

import os
import re
from dataclasses import field

from kdebug import markers
from kdebug import events as E
from kdebug.lazy_dataclasses import dataclass
from kdebug.session.model import JobView, SessionModel

MARKER = markers.NAME


@dataclass(frozen=True)
class Site:
    """One request in ``requester``'s code for job ``target``."""

    requester: int
    target: int
    reason: str  # launch, pointer, grad
    marker: str
    file: str | None = None
    line: int | None = None
    col: int | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.file else "(no source location)"


def _site(requester: int, target: int, reason: str, marker: str | None, site: dict | None) -> Site:
    site = site or {}
    return Site(requester, target, reason, marker or markers.name(target), site.get("file"),
                site.get("line"), site.get("col"))


def focused_request(model: SessionModel) -> Site | None:
    """The request the session stands at (paused before it, or a replay stepped to it), as a site
    of its requester: the line and marker to highlight."""
    ev = model.request_at
    if isinstance(ev, E.Reentrant):
        return _site(ev.job, ev.target_job, "re-entrant", ev.marker, ev.site)
    if isinstance(ev, E.JobRequested) and ev.parent is not None:
        return _site(ev.parent, ev.job, ev.reason, ev.marker, ev.site)
    return None


def sites_of(model: SessionModel, job_id: int) -> list[Site]:
    """Every request site of a job's code, in the order lowering met them (one per site)."""
    out, seen = [], set()
    for ev in model.requests.get(job_id, []):
        site = _site(ev.job, ev.target_job, ev.reason, ev.marker, ev.site)
        key = (site.target, site.file, site.line, site.col)
        if key not in seen:
            seen.add(key)
            out.append(site)
    focus = focused_request(model)  # paused before its deferred_request: not among them yet
    if focus is not None and focus.requester == job_id and (focus.target, focus.file, focus.line, focus.col) not in seen:
        out.append(focus)
    return out


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return a == b or os.path.abspath(a) == os.path.abspath(b)


def source_sites(model: SessionModel, job: JobView, header_lines: int) -> dict[int, list[Site]]:
    """Sites by line of the job's Source view (its source text below ``header_lines`` lines)."""
    if job.source_line is None or not job.source:
        return {}
    last = job.source_line + job.source.count("\n")
    out: dict[int, list[Site]] = {}
    for site in sites_of(model, job.id):
        if site.line is not None and job.source_line <= site.line <= last and _same_file(site.file, job.source_file):
            out.setdefault(site.line - job.source_line + header_lines, []).append(site)
    return out


def fault_lines(model: SessionModel, job: JobView, header_lines: int) -> dict[int, str]:
    """The lines of the job's Source view an error points at (a memcheck fault, a barrier error, a
    compile error), each with its category: what the view marks."""
    if job.source_line is None or not job.source:
        return {}
    last = job.source_line + job.source.count("\n")
    out: dict[int, str] = {}
    for d in model.diagnostics:
        loc = d.location or {}
        line = loc.get("line")
        if d.job != job.id or d.severity != "error" or not isinstance(line, int):
            continue
        file = loc.get("file")
        same = _same_file(file, job.source_file) or (  # a path relative to the run's directory
            bool(file) and not os.path.isabs(file) and os.path.basename(file) == os.path.basename(job.source_file or ""))
        if job.source_line <= line <= last and same:
            out.setdefault(line - job.source_line + header_lines, d.category)
    return out


class IrSites:
    """Which jobs a line of a job's IR refers to: a marker names its job, an entry symbol its job."""

    def __init__(self, model: SessionModel, job_id: int) -> None:
        self.model, self.job_id = model, job_id
        by_target = {s.target: s for s in sites_of(model, job_id)}
        self.by_target = by_target
        entries = {name: jid for jid, name in model.entries.items() if jid != job_id and jid in model.jobs}
        self.entries = entries
        names = "|".join(re.escape(n) for n in sorted(entries, key=len, reverse=True))
        self.pattern = re.compile(markers.NAME.pattern + (rf'|@"?({names})"?(?![\w.$])' if names else ""))

    def targets(self, line: str) -> list[int]:
        """The jobs ``line`` refers to, in order, the job itself left out."""
        if not markers.mentions(line) and "@" not in line:
            return []
        out: list[int] = []
        for m in self.pattern.finditer(line):
            jid = int(m.group(1)) if m.group(1) else self.entries[m.group(2)]
            if jid != self.job_id and jid in self.model.jobs and jid not in out:
                out.append(jid)
        return out

    def site(self, target: int) -> Site:
        """The request site of ``target`` in this job, or one made from the IR alone (a job linked in)."""
        known = self.by_target.get(target)
        if known is not None:
            return known
        job = self.model.jobs[target]
        return Site(self.job_id, target, job.reason, markers.name(target))


def marker_lines(lines: list[str], site: Site, entry: str | None) -> list[int]:
    """The IR lines that hold ``site``'s marker (or, once expanded, its job's entry symbol)."""
    names = [site.marker] + ([entry] if entry else [])
    pat = re.compile("|".join(re.escape(n) + r"(?![\w.$])" for n in names))
    return [i for i, line in enumerate(lines) if pat.search(line)]


@dataclass
class Stop:
    """Where a descend left from: the job, the tab and its line cursor, so ascend comes back there."""

    job: int
    tab: str
    line: int = 0
    phase: str | None = None


@dataclass
class DescendPath:
    """The stack of jobs visited by descending; the breadcrumb shows it, ascend pops it."""

    stops: list[Stop] = field(default_factory=list)

    def descend(self, came_from: Stop) -> None:
        self.stops.append(came_from)

    def ascend(self) -> Stop | None:
        return self.stops.pop() if self.stops else None

    def clear(self) -> None:
        self.stops.clear()

    def __len__(self) -> int:
        return len(self.stops)

    def crumbs(self, model: SessionModel, here: int | None) -> str:
        """``chain #1 → g #2 → grad(g) #4``: the path down to the job shown now."""
        names = [s.job for s in self.stops] + ([here] if here is not None else [])
        return " \u2192 ".join(f"{model.jobs[j].name} #{j}" if j in model.jobs else f"#{j}" for j in names)
