"""The properties ``kdebug reduce --until`` keeps: each is judged from one trial's outcome (its
events, exit status and output), never by scraping the report's text."""
from __future__ import annotations

import os
import re
from dataclasses import field

from kdebug import events as E
from kdebug.lazy_dataclasses import dataclass
from kdebug.session.model import SessionModel

# what a sanitizer property names -> the diagnostic category its findings carry
SANITIZER_CATEGORIES = {"memcheck": "memcheck", "race": "racecheck", "uninit": "initcheck", "sync": "barrier"}
# the --sanitize check a property needs switched on (memcheck and synccheck are on by default)
SANITIZER_NEEDS = {"race": "racecheck", "uninit": "initcheck", "memcheck": "memcheck"}
KINDS = ("reentrant", "finish-miss", "duplicate", *SANITIZER_CATEGORIES, "error", "internal-error", "differs",
         "output")
HELP = ("reentrant[:A,B,C] (a re-entrant request, optionally this cycle of function names), finish-miss, "
        "duplicate (one key compiled twice), memcheck, race, uninit, sync (that sanitizer's finding), "
        "error:REGEX (an error diagnostic whose text matches), internal-error (a traceback through kdebug's "
        "own files), differs:S1,S2 (the outcome differs between strategies S1 and S2), output:REGEX "
        "(the script's stdout matches)")
_KDEBUG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Outcome:
    """One run of a candidate: its events, exit status and what the script wrote."""

    events: list[E.Event]
    exit_code: int
    status: str  # the session's end: ok, failed, crashed, killed, timeout
    stdout: str = ""
    stderr: str = ""

    def model(self) -> SessionModel:
        cached = getattr(self, "_model", None)
        if cached is None:
            cached = self._model = SessionModel().extend(self.events)
        return cached

    def diagnostics(self) -> list[E.Diagnostic]:
        return [ev for ev in self.events if isinstance(ev, E.Diagnostic)]

    def signature(self) -> tuple:
        """What ``differs:`` compares: the exit status, the diagnostics' kinds and the script's output."""
        kinds = sorted({(d.severity, d.category) for d in self.diagnostics()})
        return self.exit_code, tuple(kinds), self.stdout


@dataclass(frozen=True)
class Property:
    kind: str
    argument: str = ""
    names: tuple[str, ...] = field(default_factory=tuple)  # reentrant's cycle; differs' two strategies

    @property
    def spec(self) -> str:
        return self.kind + (f":{self.argument}" if self.argument else "")

    def strategies(self, default: str) -> tuple[str, ...]:
        """The strategies a trial must run under to judge this property."""
        return self.names if self.kind == "differs" else (default,)

    def holds(self, runs: dict[str, Outcome], default: str) -> bool:
        if self.kind == "differs":
            a, b = (runs.get(s) for s in self.names)
            return a is not None and b is not None and _ran(a) and _ran(b) and a.signature() != b.signature()
        run = runs.get(default)
        return run is not None and self._holds(run)

    def _holds(self, run: Outcome) -> bool:
        if self.kind == "reentrant":
            return any(isinstance(ev, E.Reentrant) and (not self.names or same_cycle(ev.cycle_names, self.names))
                       for ev in run.events)
        if self.kind == "finish-miss":
            return any(d.category == "finish" for d in run.diagnostics())
        if self.kind == "duplicate":
            return any(d.category == "duplicate" for d in run.diagnostics())
        if self.kind in SANITIZER_CATEGORIES:
            return any(d.category == SANITIZER_CATEGORIES[self.kind] for d in run.diagnostics())
        if self.kind == "error":
            pattern = re.compile(self.argument, re.M)
            return any(d.severity == "error" and (pattern.search(d.text or "") or pattern.search(d.message or ""))
                       for d in run.diagnostics())
        if self.kind == "internal-error":
            texts = [d.text or "" for d in run.diagnostics()]
            texts += [ev.error or "" for ev in run.events if isinstance(ev, E.SessionEnded)]
            return any(through_kdebug(t) for t in texts)
        if self.kind == "output":
            return re.search(self.argument, run.stdout, re.M) is not None
        raise AssertionError(self.kind)

    def describe(self, runs: dict[str, Outcome], default: str) -> str:
        """What the run showed, in a line: the property with the event that made it hold."""
        if self.kind == "differs":
            a, b = (runs[s] for s in self.names)
            return f"differs: {self.names[0]} {_summary(a)}; {self.names[1]} {_summary(b)}"
        run = runs[default]
        if self.kind == "reentrant":
            ev = next(ev for ev in run.events if isinstance(ev, E.Reentrant)
                      and (not self.names or same_cycle(ev.cycle_names, self.names)))
            return f"reentrant: {' -> '.join(ev.cycle_names)} ({ev.resolution})"
        for d in run.diagnostics():
            if self.kind != "output" and self._holds(_only(run, d)):
                return f"{self.spec}: {(d.message or d.text).splitlines()[0]}"
        return f"{self.spec}: it holds"


def _ran(run: Outcome) -> bool:
    """A run that ended by itself (not killed at its timeout): only then is its outcome the script's
    (a crash is one: a strategy that crashes where another does not is what differs: looks for)."""
    return run.status not in ("killed", "timeout")


def _summary(run: Outcome) -> str:
    kinds = ", ".join(f"{s} {c}" for s, c in run.signature()[1]) or "no diagnostics"
    return f"exit {run.exit_code}, {kinds}"


def _only(run: Outcome, d: E.Diagnostic) -> Outcome:
    session_end = [ev for ev in run.events if isinstance(ev, E.SessionEnded)]
    return Outcome([d] + session_end, run.exit_code, run.status, run.stdout, run.stderr)


def same_cycle(found: list[str], wanted: tuple[str, ...]) -> bool:
    """Whether a reported cycle (``a b c a``: it ends where it starts) is ``wanted`` up to rotation."""
    ring = list(found[:-1] if len(found) > 1 and found[0] == found[-1] else found)
    want = list(wanted[:-1] if len(wanted) > 1 and wanted[0] == wanted[-1] else wanted)
    if len(ring) != len(want):
        return False
    return any(ring[i:] + ring[:i] == want for i in range(len(ring)))


def through_kdebug(text: str) -> bool:
    """Whether a traceback passes through kdebug's own files (a bug report against kdebug)."""
    if "Traceback (most recent call last)" not in text:
        return False
    return any(os.path.abspath(m).startswith(_KDEBUG_DIR + os.sep)
               for m in re.findall(r'^\s*File "([^"]+)", line \d+', text, re.M))


def parse_property(text: str, strategies: tuple[str, ...]) -> Property:
    """``reentrant:a,b`` -> Property; a bad spelling raises ValueError saying what is wanted."""
    kind, sep, arg = text.strip().partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(f"unknown property {text!r}; choose from {HELP}")
    if kind in ("error", "output"):
        if not arg:
            raise ValueError(f"{kind}: give a regular expression, e.g. {kind}:'IndexError'")
        try:
            re.compile(arg)
        except re.error as exc:
            raise ValueError(f"{text}: not a regular expression ({exc})") from None
        return Property(kind, arg)
    if kind == "reentrant":
        names = tuple(n.strip() for n in arg.split(",") if n.strip())
        return Property(kind, ",".join(names), names)
    if kind == "differs":
        names = tuple(n.strip() for n in arg.split(",") if n.strip())
        if len(names) != 2 or names[0] == names[1]:
            raise ValueError(f"{text}: name two different strategies, e.g. differs:worklist,recursive")
        unknown = [n for n in names if n not in strategies]
        if unknown:
            raise ValueError(f"{text}: unknown strategy {', '.join(unknown)}; choose from {', '.join(strategies)}")
        return Property(kind, ",".join(names), names)
    if sep:
        raise ValueError(f"{text}: {kind} takes no argument")
    return Property(kind)


def for_alert(model: SessionModel, alert) -> str | None:
    """The ``--until`` that keeps what an alert of the session model shows (the re-entrant request,
    the finish miss, a duplicate, a sanitizer's finding, an error), or None for one it cannot name."""
    ev = model.events[alert.event] if 0 <= alert.event < len(model.events) else None
    if isinstance(ev, E.Reentrant):
        ring = ev.cycle_names[:-1] if len(ev.cycle_names) > 1 and ev.cycle_names[0] == ev.cycle_names[-1] \
            else ev.cycle_names
        return "reentrant:" + ",".join(ring)
    if isinstance(ev, E.Diagnostic):
        by_category = {"finish": "finish-miss", "duplicate": "duplicate",
                       **{c: k for k, c in SANITIZER_CATEGORIES.items()}}
        if ev.category in by_category:
            return by_category[ev.category]
        if through_kdebug(ev.text or ""):
            return "internal-error"
        if ev.severity == "error":
            first = (ev.message or ev.text).splitlines()[0] if (ev.message or ev.text) else ""
            return "error:" + re.escape(first) if first else None
    return None
