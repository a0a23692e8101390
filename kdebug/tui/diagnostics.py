"""The diagnostics panel: every alert of the session, in order, with its full text."""
from __future__ import annotations

from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.tui.documents import StyledDocument
from kdebug.tui.textview import TextView

ARROW = " \u2192 "
SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "cyan"}


def alert_of(ev: E.Event) -> tuple[str, str] | None:
    """(severity, one-line title) for events that are alerts: re-entrant loops and diagnostics."""
    if isinstance(ev, E.Reentrant):
        sev = "error" if ev.resolution == "stopped" else "warning"
        return sev, f"re-entrant request #{ev.job} \u2192 #{ev.target_job}: {ARROW.join(ev.cycle_names)} ({ev.resolution})"
    if isinstance(ev, E.Diagnostic):
        where = f" [job #{ev.job}]" if ev.job is not None else ""
        return ev.severity, f"{ev.category}{where}: {ev.message.splitlines()[0] if ev.message else ''}"
    if isinstance(ev, E.SessionEnded) and ev.status in ("crashed", "killed"):
        return "error", f"session {ev.status}: {(ev.error or '').splitlines()[0] if ev.error else ''}"
    return None


class DiagnosticsPanel(TextView):
    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__(StyledDocument(), id=id)
        self.model = model
        self.count = 0

    def reset(self, model: SessionModel) -> None:
        self.model, self.count = model, 0
        self.set_document(StyledDocument())

    def add_events(self, events: list[E.Event]) -> None:
        doc = self.document
        grew = False
        for ev in events:
            alert = alert_of(ev)
            if alert is None:
                continue
            severity, title = alert
            self.count += 1
            doc.append(f"{severity}: {title}", SEVERITY_STYLE.get(severity, ""))
            detail = getattr(ev, "text", "") or getattr(ev, "error", "") or ""
            lines = detail.splitlines()
            if lines and lines[0].strip() in title:
                lines = lines[1:]
            for line in lines:
                doc.append("    " + line, "")
            grew = True
        if grew:
            self.content_grew()
