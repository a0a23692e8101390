"""Time travel in a replay: ( ) one event back / forward, { } to the previous / next re-entrant
request, finish miss or failure. The model at each position is the session layer's
(``kdebug/session/timeline.py``); a move here says what the views are to show, and the app shows it.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from kdebug.session.model import SessionModel
from kdebug.session.navigation import focused_request
from kdebug.session.timeline import Timeline

NOT_A_REPLAY = "time travel is for replays: kdebug replay TRACE.jsonl (t saves this session's trace)"


@dataclass
class Moved:
    """What a move leaves to be shown: ``model`` (the one moved forward, or one rebuilt at an earlier
    position), the ``events`` of it the views have not seen, and the job to show."""
    model: SessionModel
    events: list
    job: int | None
    stepped: bool


class Travel:
    """Where a replay stands in its trace; made on the first travel key (a replay opens at the end)."""

    def __init__(self, events) -> None:
        self.timeline = Timeline(events)
        self.position = len(self.timeline)

    @property
    def at_end(self) -> bool:
        return self.position == len(self.timeline)

    def jump_target(self, direction: int) -> tuple[int | None, str]:
        """Where { or } goes, and what to say when there is no such event (then } goes to the end)."""
        line = self.timeline
        to = line.next_notable(self.position) if direction > 0 else line.previous_notable(self.position)
        if to is not None:
            return to, ""
        note = f"no {'later' if direction > 0 else 'earlier'} re-entrant request, finish miss or failure" + (
            " (\u2192 the end)" if direction > 0 else "")
        return (len(line) if direction > 0 else None), note

    def move(self, how: str, n: int, model: SessionModel, shown: int | None) -> tuple[Moved | None, str]:
        """``how``: "step" ``n`` events, "jump" to the ``n``-th notable event on, or go to the "start" or the
        "end"; what the move leaves to be shown (None: nothing moved) and what to tell the user."""
        if how == "step":
            return self.go_to(self.position + n, model, shown, stepped=True), ""
        if how == "jump":
            to, note = self.jump_target(n)
            return (self.go_to(to, model, shown) if to is not None else None), note
        return self.go_to(0 if how == "start" else len(self.timeline), model, shown), ""

    def go_to(self, position: int, model: SessionModel, shown: int | None, stepped: bool = False) -> Moved | None:
        """The session as it was after ``position`` events: ``model`` (the replay's, at this travel's
        position) moved forward by applying, or one rebuilt from a checkpoint; None: it stands there."""
        line = self.timeline
        position = max(0, min(position, len(line)))
        if position == self.position:
            return None
        if position > self.position:
            new = line.events[self.position:position]
            model.extend(new)
        else:
            model = line.model_at(position)
            new = model.events
        self.position = position
        request = focused_request(model)  # at a request: its requester, else the job shown if it exists yet
        job = request.requester if request is not None else shown
        if job not in model.jobs:
            job = model.roots[0] if model.roots else None
        return Moved(model, new, job, stepped)


def status(travel: Travel | None) -> Text | None:
    """The position, for the status line, once the replay has left its end."""
    if travel is None or travel.at_end:
        return None
    text = Text()
    text.append("\u25c2\u25c2 replay at ", "bold magenta")
    text.append(travel.timeline.describe(travel.position), "bold")
    text.append("   ( ) event  { } re-entrant / finish miss / failure", "dim")
    return text
