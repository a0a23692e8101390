"""Two runs side by side: the job trees of two sessions of one script merged row by row, the differences named.

Textual-free. Jobs are matched by their key (function, argument types, kind, target) under
matched parents, in request order, so a job compiled twice under two requesters (the recursive
strategy) stays two rows; re-entrant requests (↻) are matched by the job they ask for. Where no key
matches (a reduced script passes other argument types), jobs of the same function and kind are
matched, and the row says so (``matched by function: argument types (float64) → (int64)``) instead
of every row reading "only in" one run.
"""
from __future__ import annotations

from dataclasses import field

from kdebug.settings import key_identity
from kdebug.lazy_dataclasses import dataclass
from kdebug.session.model import SessionModel, counted


@dataclass(frozen=True)
class Side:
    """One run's view of a row: a job, or a re-entrant request (``backref``) under its requester."""

    job: int
    name: str
    state: str  # a job's state, or a ↻'s resolution
    compiled: int = 0  # times the job's key was compiled in the run
    alert: str | None = None  # the job's worst alert: error or warning
    backref: bool = False
    target: int | None = None  # a ↻: the job it asks for


@dataclass
class Row:
    depth: int
    a: Side | None
    b: Side | None
    changes: list[str] = field(default_factory=list)  # what differs, in words; empty: the same

    @property
    def same(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class Summary:
    strategy: str
    status: str  # ok, failed, running...
    jobs: int
    compilations: int
    alerts: int

    def line(self) -> str:
        return (f"{self.strategy}: {self.status}, {counted(self.jobs, 'job')}, "
                f"{counted(self.compilations, 'compilation')}, {counted(self.alerts, 'alert')}")


@dataclass
class Comparison:
    a: Summary
    b: Summary
    rows: list[Row]

    @property
    def differences(self) -> int:
        return sum(1 for r in self.rows if not r.same)


def summary(model: SessionModel, strategy: str | None = None) -> Summary:
    started, ended = model.started, model.ended
    status = ended.status if ended is not None else ("paused" if model.paused is not None else "running")
    return Summary(strategy or (started.strategy if started else "?"), status, len(model.jobs),
                   sum(model.compilations.values()), len(model.alerts))


def _job_side(model: SessionModel, jid: int) -> Side:
    job = model.jobs[jid]
    return Side(jid, job.name, model.job_state(jid)[0], model.compilations.get(job.key, 0), model.job_alert.get(jid))


def _children(model: SessionModel, jid: int | None) -> list[tuple[str, str, int]]:
    """(match key, loose key, id) of a node's children: jobs by key, then its ↻ by the key of the job asked
    for; the loose key is the function and kind alone. Keys without their compile options' digest: the
    runs compared differ in strategy, which is one of them."""
    def job_keys(j: int) -> tuple[str, str, int]:
        job = model.jobs[j]
        return "job " + key_identity(job.key), f"job {job.name} {job.kind}", j
    if jid is None:
        return [job_keys(r) for r in model.roots]
    job = model.jobs[jid]
    kids = [job_keys(c) for c in job.children]
    for i in job.backrefs:
        target = model.jobs.get(model.reentrant[i].target_job)
        kids.append(("backref " + (key_identity(target.key) if target else str(model.reentrant[i].target_job)),
                     "backref " + (target.name if target else str(model.reentrant[i].target_job)), -1 - i))
    return kids


def _side(model: SessionModel, node: int) -> Side:
    if node >= 0:
        return _job_side(model, node)
    ev = model.reentrant[-1 - node]
    return Side(ev.job, "\u21bb " + " \u2192 ".join(ev.cycle_names), ev.resolution, backref=True, target=ev.target_job)


def _pair(left: list[tuple[str, str, int]],
          right: list[tuple[str, str, int]]) -> list[tuple[int | None, int | None, bool]]:
    """Children matched by key, the n-th of a key with the n-th; those left, by function and kind (the
    third field says so); the unmatched after their neighbours."""
    pool: dict[str, list[int]] = {}
    for key, _, node in right:
        pool.setdefault(key, []).append(node)
    exact: dict[int, int] = {}
    for key, _, node in left:
        match = pool.get(key)
        if match:
            exact[node] = match.pop(0)
    taken = set(exact.values())
    loose_pool: dict[str, list[int]] = {}
    for _, loose, node in right:
        if node not in taken:
            loose_pool.setdefault(loose, []).append(node)
    out: list[tuple[int | None, int | None, bool]] = []
    for _, loose, node in left:
        if node in exact:
            out.append((node, exact[node], False))
            continue
        match = loose_pool.get(loose)
        other = match.pop(0) if match else None
        if other is not None:
            taken.add(other)
        out.append((node, other, other is not None))
    out += [(None, node, False) for _, _, node in right if node not in taken]
    return out


def _loosely(a: SessionModel, b: SessionModel, na: int, nb: int) -> str:
    """What a row matched by function and kind alone says: how the two jobs' keys differ."""
    if na < 0 or nb < 0:
        return "matched by the function asked for (its key differs)"
    ja, jb = a.jobs[na], b.jobs[nb]
    if ja.argtypes != jb.argtypes:
        return f"matched by function: argument types ({', '.join(ja.argtypes)}) \u2192 ({', '.join(jb.argtypes)})"
    return "matched by function and kind (the keys differ)"


def _changes(a: Side | None, b: Side | None, names: tuple[str, str]) -> list[str]:
    if a is None:
        return [f"only in {names[1]}"]
    if b is None:
        return [f"only in {names[0]}"]
    out = []
    if a.state != b.state:
        out.append(f"{a.state} \u2192 {b.state}")
    if a.compiled != b.compiled:
        out.append(f"compiled {a.compiled}\u00d7 \u2192 {b.compiled}\u00d7")
    if a.alert != b.alert:
        out.append(f"alert {a.alert or 'none'} \u2192 {b.alert or 'none'}")
    return out


def compare(a: SessionModel, b: SessionModel, strategies: tuple[str | None, str | None] = (None, None)) -> Comparison:
    """Run ``a`` (the previous) and run ``b`` (this one), merged into rows in tree order."""
    sa, sb = summary(a, strategies[0]), summary(b, strategies[1])
    names = (sa.strategy, sb.strategy) if sa.strategy != sb.strategy else ("the previous run", "this run")
    rows: list[Row] = []

    def kids(model: SessionModel, node: int | None, top: bool) -> list[tuple[str, str, int]]:
        if top:
            return _children(model, None)
        return _children(model, node) if node is not None and node >= 0 else []  # a ↻ or a missing side: none

    def visit(na: int | None, nb: int | None, depth: int) -> None:
        for ca, cb, loose in _pair(kids(a, na, depth == 0), kids(b, nb, depth == 0)):
            side_a = _side(a, ca) if ca is not None else None
            side_b = _side(b, cb) if cb is not None else None
            changes = _changes(side_a, side_b, names)
            if loose:
                changes.insert(0, _loosely(a, b, ca, cb))
            rows.append(Row(depth, side_a, side_b, changes))
            visit(ca, cb, depth + 1)
    visit(None, None, 0)
    return Comparison(sa, sb, rows)
