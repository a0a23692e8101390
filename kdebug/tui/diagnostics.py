"""The diagnostics panel: every alert of the session (the model's), in order, with its full text."""
from __future__ import annotations

import textwrap

from textual import events
from textual.binding import Binding

from kdebug.session.model import SessionModel
from kdebug.tui.documents import StyledDocument
from kdebug.tui.messages import GoToJob
from kdebug.tui.textview import TextView

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "cyan"}


def wrap(line: str, width: int) -> list[str]:
    """``line`` wrapped at ``width`` (0: not at all), its continuation lines two more columns in; a line
    that fits (a source line, a caret under it) is kept as it is."""
    if width <= 0 or len(line) <= width:
        return [line]
    lead = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line, width, subsequent_indent=lead + "  ", break_on_hyphens=False) or [line]


class DiagnosticsPanel(TextView):
    """A click on an alert, or Enter (the alert at the top of the view), shows its job in the tree."""

    BINDINGS = [Binding("enter", "go_to_job", "Show the alert's job")]

    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__(StyledDocument(), id=id)
        self.model = model
        self.line_alert: list[int] = []  # the index of the alert each line belongs to
        self._shown = (0, 0)  # alerts shown, detail lines of the last one
        self._last_line = 0  # where the last alert shown starts (a later event may add to its detail)
        self._wrapped_at = 0  # the width the lines are wrapped at (0: not laid out yet, not wrapped)

    @property
    def count(self) -> int:
        return len(self.model.alerts)

    def reset(self, model: SessionModel) -> None:
        self.model, self._shown, self._last_line = model, (0, 0), 0
        self.line_alert = []
        self.set_document(StyledDocument())

    def refresh_alerts(self) -> None:
        """Show the alerts that arrived, and what a later event added to the last one shown."""
        alerts = self.model.alerts
        shown = (len(alerts), len(alerts[-1].detail) if alerts else 0)
        if shown == self._shown:
            return
        first = max(self._shown[0] - 1, 0)  # redo the last alert shown, then add the new ones
        doc = self.document
        del doc.lines[self._last_line:], doc.styles[self._last_line:], self.line_alert[self._last_line:]
        width = self._wrap_width()
        for index, alert in enumerate(alerts[first:], start=first):
            self._last_line = len(doc.lines)
            for k, line in enumerate(wrap(f"{alert.severity}: {alert.title}", width)):
                doc.append(line, SEVERITY_STYLE.get(alert.severity, "") if k == 0 else "")
            for line in alert.detail:
                for part in wrap("    " + line, width):
                    doc.append(part, "")
            self.line_alert.extend([index] * (len(doc.lines) - self._last_line))
        self._shown = shown
        self._cache.clear()
        self.content_grew()

    def _wrap_width(self) -> int:
        return max(20, self.size.width - 3) if self.size.width else 0  # a vertical scrollbar may come

    def on_resize(self) -> None:
        super().on_resize()
        if self._wrapped_at != self._wrap_width():  # the lines wrap at the width: wrap them again
            self._wrapped_at = self._wrap_width()
            self._shown, self._last_line, self.line_alert = (0, 0), 0, []
            self.set_document(StyledDocument())
            self.refresh_alerts()

    def job_at_line(self, line: int) -> int | None:
        """The job of the alert shown on ``line`` (None: no alert there, or one without a job)."""
        if 0 <= line < len(self.line_alert):
            return self.model.alerts[self.line_alert[line]].job
        return None

    def _go_to(self, line: int) -> None:
        job = self.job_at_line(line)
        if job is None:
            self.notify("this alert belongs to no job")
        else:
            self.post_message(GoToJob(job))

    def on_click(self, event: events.Click) -> None:
        self._go_to(int(self.scroll_y) + event.y)

    def action_go_to_job(self) -> None:
        self._go_to(int(self.scroll_y))
