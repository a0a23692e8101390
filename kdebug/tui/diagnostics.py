"""The diagnostics panel: every alert of the session (the model's), in order, with its full text."""
from __future__ import annotations

from kdebug.session.model import SessionModel
from kdebug.tui.documents import StyledDocument
from kdebug.tui.textview import TextView

SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "cyan"}


class DiagnosticsPanel(TextView):
    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__(StyledDocument(), id=id)
        self.model = model
        self._shown = (0, 0)  # alerts shown, detail lines of the last one
        self._last_line = 0  # where the last alert shown starts (a later event may add to its detail)

    @property
    def count(self) -> int:
        return len(self.model.alerts)

    def reset(self, model: SessionModel) -> None:
        self.model, self._shown, self._last_line = model, (0, 0), 0
        self.set_document(StyledDocument())

    def refresh_alerts(self) -> None:
        """Show the alerts that arrived, and what a later event added to the last one shown."""
        alerts = self.model.alerts
        shown = (len(alerts), len(alerts[-1].detail) if alerts else 0)
        if shown == self._shown:
            return
        first = max(self._shown[0] - 1, 0)  # redo the last alert shown, then add the new ones
        doc = self.document
        del doc.lines[self._last_line:], doc.styles[self._last_line:]
        for alert in alerts[first:]:
            self._last_line = len(doc.lines)
            doc.append(f"{alert.severity}: {alert.title}", SEVERITY_STYLE.get(alert.severity, ""))
            for line in alert.detail:
                doc.append("    " + line, "")
        self._shown = shown
        self._cache.clear()
        self.content_grew()
