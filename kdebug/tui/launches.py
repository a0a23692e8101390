"""The launches panel: every kernel launch, host and device-side, with its grid, time and outcome."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from kdebug import events as E
from kdebug.session.model import LaunchView, SessionModel
from kdebug.tui.messages import GoToJob

COLUMNS = ("#", "kernel", "job", "grid", "block", "backend", "time", "status")


def _dims(d) -> str:
    return "(" + ",".join(str(x) for x in d) + ")"


def _status(ln: LaunchView) -> Text:
    if ln.state == "running":
        return Text("running", "yellow")
    if ln.error:
        return Text("error: " + ln.error.splitlines()[0], "bold red")
    return Text("ok", "green")


class LaunchesPanel(DataTable):
    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.model = model

    def on_mount(self) -> None:
        for col in COLUMNS:
            self.add_column(col, key=col)

    def reset(self, model: SessionModel) -> None:
        self.model = model
        self.clear()

    def add_events(self, events: list[E.Event]) -> None:
        for ev in events:
            if isinstance(ev, E.LaunchStarted):
                ln = self.model.launches[ev.launch]
                name = ln.name if ln.parent_launch is None else f"\u2514 {ln.name} (from #{ln.parent_launch})"
                self.add_row(str(ln.id), name, f"#{ln.job}" if ln.job is not None else "", _dims(ln.grid),
                             _dims(ln.block), ln.backend, "", _status(ln), key=str(ln.id))
            elif isinstance(ev, E.LaunchFinished) and ev.launch in self.model.launches:
                ln = self.model.launches[ev.launch]
                try:
                    self.update_cell(str(ln.id), "time", f"{(ln.duration or 0) * 1e3:.2f} ms")
                    self.update_cell(str(ln.id), "status", _status(ln))
                except Exception:  # noqa: BLE001 - a finish without its start (torn trace)
                    pass

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        message.stop()
        ln = self.model.launches.get(int(message.row_key.value))
        if ln is not None and ln.job is not None:
            self.post_message(GoToJob(ln.job))
