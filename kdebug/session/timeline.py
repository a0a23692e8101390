"""Replay as time travel: the session model as it was after any number of a trace's events.

Textual-free. ``Timeline.model_at(k)`` folds the first ``k`` events; a copy of the model is kept
every ``every`` events on the way, so going back costs at most ``every`` events folded on top
of the nearest copy. Events are immutable records, shared by every copy (only the model's own
state is copied).
"""
from __future__ import annotations

import bisect
import copy

from kdebug import events as E
from kdebug.session.model import SessionModel

CHECKPOINT_EVERY = 256


def notable(ev: E.Event) -> str | None:
    """What a jump stops at: a re-entrant request, a finish-coverage miss, a failure; None otherwise."""
    if isinstance(ev, E.Reentrant):
        return "re-entrant request"
    if isinstance(ev, E.Diagnostic):
        if ev.category == "finish":
            return "finish miss"
        return "failure" if ev.severity == "error" and ev.category != "reentrant" else None
    if isinstance(ev, E.JobFailed):
        return "failure"
    if isinstance(ev, E.LaunchFinished) and ev.error:
        return "failure"
    if isinstance(ev, E.SessionEnded) and ev.status != "ok":
        return "failure"
    return None


def _clone(model: SessionModel) -> SessionModel:
    """A copy of the model's state that shares its events (and the snapshots, which are events)."""
    memo = {id(ev): ev for ev in model.events}
    return copy.deepcopy(model, memo)


class Timeline:
    """The events of a trace and the model after any prefix of them."""

    def __init__(self, events: list[E.Event], every: int = CHECKPOINT_EVERY) -> None:
        self.events = list(events)
        self.every = max(1, every)
        self._checkpoints: dict[int, SessionModel] = {0: SessionModel()}  # position -> model, never handed out
        self.notable = [i for i, ev in enumerate(self.events) if notable(ev)]  # indices of the jump stops

    def __len__(self) -> int:
        return len(self.events)

    def model_at(self, position: int) -> SessionModel:
        """A fresh model of the first ``position`` events (the caller may go on applying to it)."""
        position = max(0, min(position, len(self.events)))
        start = max(p for p in self._checkpoints if p <= position)
        model = _clone(self._checkpoints[start])
        for k in range(start, position):
            model.apply(self.events[k])
            if (k + 1) % self.every == 0 and k + 1 not in self._checkpoints and k + 1 < position:
                self._checkpoints[k + 1] = _clone(model)
        if position % self.every == 0 and position not in self._checkpoints:
            self._checkpoints[position] = _clone(model)
        return model

    def next_notable(self, position: int) -> int | None:
        """The position just after the next notable event past ``position`` (that event applied), or None."""
        i = bisect.bisect_left(self.notable, position)
        return self.notable[i] + 1 if i < len(self.notable) else None

    def previous_notable(self, position: int) -> int | None:
        """The position just after the last notable event before the one ``position`` stands on, or None."""
        i = bisect.bisect_left(self.notable, position - 1) - 1
        return self.notable[i] + 1 if i >= 0 else None

    def describe(self, position: int) -> str:
        """``event 12/40: reentrant #3 is_odd``: where the position stands, for the status line."""
        if position == 0:
            return f"event 0/{len(self.events)}: before the first event"
        ev = self.events[position - 1]
        what = ev.kind
        job = getattr(ev, "job", None)
        if isinstance(job, int):
            what += f" #{job} {getattr(ev, 'name', '')}".rstrip()
        mark = notable(ev)
        return f"event {position}/{len(self.events)}: {what}" + (f" ({mark})" if mark else "")
