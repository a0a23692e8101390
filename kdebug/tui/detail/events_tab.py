"""The Events tab: the job's events, a line each."""
from __future__ import annotations

from kdebug import events as E
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import Document, StyledDocument

ARROW = " \u2192 "


def event_line(ev: E.Event) -> tuple[str, str]:
    """One event as a listing line and its style."""
    bits = []
    for name in ("phase", "reason", "duration", "target_job", "round", "resolution", "breakpoint", "message",
                 "error", "severity", "category"):
        value = getattr(ev, name, None)
        if value in (None, "", 0.0):
            continue
        if name == "duration":
            value = f"{value * 1e3:.2f} ms"
        bits.append(f"{name}={value}" if name not in ("phase", "message") else str(value))
    if isinstance(ev, E.Snapshot):
        bits.append(f"{ev.text.count(chr(10)) + 1} lines")
    if isinstance(ev, E.Reentrant):
        bits.append(ARROW.join(ev.cycle_names))
    style = {"job_failed": "red", "diagnostic": "red", "reentrant": "magenta", "paused": "yellow",
             "job_finished": "green", "snapshot": "dim"}.get(ev.kind, "")
    return f"{ev.t:10.4f}  {ev.kind:<17} {'  '.join(bits)}", style


class EventsTab(DetailTab):
    tab_id = "events"
    _shown_job: int | None = None

    def show_job(self, job) -> None:
        if job is None:
            return self.set_document(Document([]))
        events = self.model.events
        same_job = self._shown_job == job.id  # new events of the job shown: keep the reader's place
        self._shown_job = job.id
        self.set_document(StyledDocument([event_line(events[i]) for i in job.events]), keep=same_job)
