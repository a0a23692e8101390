"""The invariants of deferred codegen, named, and checked on every compilation.

Whatever the strategy (a built-in or a user's, ``kdebug/driver/loading.py``), the driver wraps it in a
``Checked`` and a compilation is checked against:

- ``compiled-once``: each job key is compiled once in a compilation;
- ``finish-once``: the finish passes run exactly once on every job that ends in the module;
- ``no-markers``: no deferred-codegen marker is left in the final module;
- ``answered``: every request is answered (compiled, or a reference to a job compiled), and none loops
  without a located stop;
- ``primal-resolved``: a derivative job sees its primal's body with the primal's markers resolved;
- ``verifies``: the final module verifies.

A violation is a diagnostic (category ``invariant``) naming the invariant, the job and the request that
led there (the requester and the site); ``kdebug check-strategy`` reads them from a run's trace.
"""
from __future__ import annotations

import os
import traceback

from kdebug import events as E
from kdebug import markers
from kdebug.errors import CompileError, KdebugError, SourceLocation

NAMES: tuple[str, ...] = ("compiled-once", "finish-once", "no-markers", "answered", "primal-resolved", "verifies")

DESCRIPTIONS: dict[str, str] = {
    "compiled-once": "each job key is compiled once in a compilation",
    "finish-once": "the finish passes run exactly once on every job that ends in the module",
    "no-markers": "no deferred-codegen marker is left in the final module",
    "answered": "every request is answered; none loops without a located stop",
    "primal-resolved": "a derivative job sees its primal's body with the primal's markers resolved",
    "verifies": "the final module verifies",
}

CATEGORY = "invariant"
PREFIX = "invariant "  # a violation's message: "invariant NAME broken: ..."

MAX_DEPTH = 64  # nested requests deeper than this: a loop the strategy did not stop
MAX_JOBS = 2000  # jobs in one compilation


def claims(strategy) -> tuple[str, ...]:
    """The invariants ``strategy`` claims to keep (its ``invariants`` class attribute; all by default)."""
    got = getattr(strategy, "invariants", NAMES)
    return tuple(n for n in NAMES if n in got)


def broken_in(message: str) -> str | None:
    """The invariant a diagnostic's message says is broken, or None."""
    if not message.startswith(PREFIX):
        return None
    name = message[len(PREFIX):].split(" ", 1)[0]
    return name if name in NAMES else None


class Checked:
    """The driver's strategy with the invariants checked around it: everything else is the strategy's."""

    def __init__(self, strategy, driver) -> None:
        self.strategy = strategy
        self._driver = driver
        self._seen: set[tuple] = set()

    def __getattr__(self, name):
        return getattr(self.strategy, name)

    def __str__(self) -> str:
        return str(getattr(self.strategy, "name", "") or type(self.strategy).__name__)

    @property
    def unresolved_markers(self) -> str:
        return getattr(self.strategy, "unresolved_markers", "the strategy left it unexpanded")

    # ---- the interface, checked ---------------------------------------------------------
    def request(self, cx, comp, requester, job, reason, loc, needs="address"):
        depth, rec = 0, requester
        while rec.parent is not None and depth <= MAX_DEPTH:
            rec, depth = self._driver.records[rec.parent], depth + 1
        if depth > MAX_DEPTH or len(comp.records) > MAX_JOBS:
            what = f"{depth} nested requests" if depth > MAX_DEPTH else f"{len(comp.records)} jobs"
            self.violation(comp, "answered", requester, f"{what} in one compilation: the strategy keeps asking for "
                           f"new jobs ({job} asked for here)", loc=loc)
            raise CompileError(f"invariant answered broken: {self} strategy: {what} for one compilation, asking "
                               f"for {job}", loc, "a strategy must answer a request that closes a cycle with a "
                               "reference, or stop it with a located error (see docs/internals/strategies.md)")
        got = self._guard("request", lambda: self.strategy.request(cx, comp, requester, job, reason, loc, needs), loc)
        if not hasattr(got, "id") or got.id not in self._driver.records:
            self.violation(comp, "answered", requester, f"request for {job} answered with {got!r}, not a job record",
                           loc=loc)
            raise CompileError(f"invariant answered broken: {self} strategy answered a request for {job} with "
                               f"{got!r}", loc, "request must return a record: cx.new_record(...) or one of the table")
        return got

    def expand(self, cx, comp, irmod):
        return self._guard("expand", lambda: self.strategy.expand(cx, comp, irmod), comp.top.loc)

    def resolve_primal(self, cx, comp, job, text):
        view = self._guard("resolve_primal", lambda: self.strategy.resolve_primal(cx, comp, job, text), job.loc)
        for jid in dict.fromkeys(markers.ids_in(str(view))):
            held = self._driver.records.get(jid)
            self.violation(comp, "primal-resolved", job, f"its primal still holds the marker of job #{jid} "
                           f"{held.name if held else '?'}")
        return view

    def _guard(self, method: str, call, loc):
        """``call``; a user strategy's own exception becomes a compile error located in its file (the line
        that raised), not an internal error with a traceback through kdebug's files."""
        try:
            return call()
        except KdebugError:
            raise
        except Exception as exc:
            if type(self.strategy).__module__.startswith("kdebug."):
                raise  # a built-in's: kdebug's own bug, reported with its traceback
            at = _user_frame(exc)
            where = SourceLocation(at.filename, at.lineno, 1) if at is not None else loc
            raise CompileError(f"the {self} strategy's {method} raised {type(exc).__name__}: {exc}", where,
                               f"a bug in the strategy class {type(self.strategy).__name__} (its file and line "
                               "above); the interface is in docs/internals/strategies.md") from None

    # ---- after finish -------------------------------------------------------------------
    def check_finished(self, comp, mod) -> None:
        """The compilation's invariants on its final module (after the finish passes)."""
        d = self._driver
        if not hasattr(mod, "functions"):  # not an LLVM module (an edited stage's text): nothing to read
            return
        started = [r for r in comp.records if r.state != "queued"]
        seen_keys: dict[str, object] = {}
        for r in started:
            first = seen_keys.setdefault(r.key, r)
            if first is not r:
                self.violation(comp, "compiled-once", r, f"its key was compiled already in this compilation, as job "
                               f"#{first.id}")
        asked = {jid for ids in comp.requests.values() for jid in ids}
        for jid in sorted(asked):
            r = d.records.get(jid)
            if r is not None and r.state == "queued":
                self.violation(comp, "answered", r, "requested, never compiled nor resolved to a compiled job")
        declared = any(markers.job_of(fn.name) is not None for fn in mod.functions)
        for jid in dict.fromkeys(markers.ids_in(str(mod)) if declared else []):
            r = d.records.get(jid)
            if r is not None:
                self.violation(comp, "no-markers", r, "its marker is left in the final module")
        listed = {id(j) for j in comp.finish_list}
        for r in started:
            if not r.finished or id(r) not in listed or not d.target.entry_finished(mod, r):
                self.violation(comp, "finish-once", r, "it ends in the module, but the finish passes never ran on it")
        try:
            mod.verify()
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "verification failed"
            self.violation(comp, "verifies", comp.top, f"the final module does not verify: {first}")

    def violation(self, comp, name: str, rec, detail: str, loc=None) -> None:
        """Report ``name`` broken on ``rec``: the request that led there is the record's own (parent, site)."""
        key = (comp.top.id, name, rec.id)
        if key in self._seen:
            return
        self._seen.add(key)
        d = self._driver
        loc = loc or rec.loc
        parent = d.records.get(rec.parent) if rec.parent is not None else None
        led = (f"requested by job #{parent.id} {parent.name} ({rec.reason})" + (f" at {rec.loc}" if rec.loc else "")
               if parent is not None else f"the toplevel job of the compilation ({rec.reason})")
        d.bus.emit(E.Diagnostic(
            severity="error", category=CATEGORY, job=rec.id, location=loc.to_json() if loc else None,
            message=f"{PREFIX}{name} broken: job #{rec.id} {rec.name}: {detail}",
            text=f"{PREFIX}{name} broken ({DESCRIPTIONS[name]}): job #{rec.id} {rec.name}: {detail}; {led}; "
                 f"{self} strategy"))


def check_finished(driver, comp, mod) -> None:
    strategy = driver.strategy
    if isinstance(strategy, Checked):
        strategy.check_finished(comp, mod)


def _user_frame(exc: BaseException):
    """The innermost frame of ``exc``'s traceback outside kdebug's package, or None."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.abspath(f.filename).startswith(package)]
    return frames[-1] if frames else None
