"""Time travel in a replay: ( ) one event back / forward, { } to the previous / next re-entrant
request, finish miss or failure. The model at each position is the session layer's
(``kdebug/session/timeline.py``); here the app's views are pointed at it.
"""
from __future__ import annotations

from rich.text import Text

from kdebug.session.navigation import focused_request
from kdebug.session.timeline import Timeline
from kdebug.tui import descend


class Travel:
    """Where a replay stands in its trace; made on the first travel key (a replay opens at the end)."""

    def __init__(self, events) -> None:
        self.timeline = Timeline(events)
        self.position = len(self.timeline)

    @property
    def at_end(self) -> bool:
        return self.position == len(self.timeline)


def _travel(app) -> Travel | None:
    if not app.replay:
        app.notify("time travel is for replays: kdebug replay TRACE.jsonl (t saves this session's trace)")
        return None
    if app.travel is None:
        app.travel = Travel(app.model.events)
    return app.travel


def step(app, step: int) -> None:
    travel = _travel(app)
    if travel is not None:
        go_to(app, travel.position + step, stepped=True)


def jump(app, direction: int) -> None:
    travel = _travel(app)
    if travel is None:
        return
    line = travel.timeline
    to = line.next_notable(travel.position) if direction > 0 else line.previous_notable(travel.position)
    if to is None:
        app.notify(f"no {'later' if direction > 0 else 'earlier'} re-entrant request, finish miss or failure"
                   + (" (\u2192 the end)" if direction > 0 else ""))
        to = len(line) if direction > 0 else None
    if to is not None:
        go_to(app, to)


def go_to(app, position: int, stepped: bool = False) -> None:
    """Show the session as it was after ``position`` events: forward by applying, back from a checkpoint."""
    travel = _travel(app)
    if travel is None:
        return
    line = travel.timeline
    position = max(0, min(position, len(line)))
    if position == travel.position:
        return
    shown = app.detail.job_id
    if position > travel.position:
        new = line.events[travel.position:position]
        app.model.extend(new)
        travel.position = position
        app._route(new, live=False)
    else:
        travel.position = position
        app.show_model(line.model_at(position))
        app._route(app.model.events, live=False)
    request = focused_request(app.model)
    job = request.requester if request is not None else shown
    descend.follow_request(app, stepped)
    if job not in app.model.jobs:
        job = app.model.roots[0] if app.model.roots else None
    if job is not None:
        app.tree.select_job(job)  # the cursor may stand there already in a rebuilt tree: no message then
        app.detail.show(job)
    app.detail.mark_sites()
    app._update_status()


def status(app) -> Text | None:
    """The position, for the status line, once the replay has left its end."""
    travel = app.travel
    if travel is None or travel.at_end:
        return None
    text = Text()
    text.append("\u25c2\u25c2 replay at ", "bold magenta")
    text.append(travel.timeline.describe(travel.position), "bold")
    text.append("   ( ) event  { } re-entrant / finish miss / failure", "dim")
    return text
