"""The launches panel: the kernel launches, host and device-side, with their grid, time and outcome.

It lists the last ``SHOWN`` launches (its tab says how many there were in all): a script that
launches in a loop makes thousands a second, and a table that grew by every one of them made the app
fall behind its events until the screen stood still and ctrl+c went unanswered. The model keeps every
launch (``kdebug dump``, ``export`` and the headless report list them all)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from kdebug import events as E
from kdebug.session.model import LaunchView, SessionModel
from kdebug.tui.messages import GoToJob

# the backend is the session's (the header says it); the status takes what is left of the width, and wraps
COLUMNS = ("#", "kernel", "job", "grid", "block", "time", "status")
SHOWN = 500  # rows at most: the last launches


def tab_label(model: SessionModel) -> str:
    """The Launches tab's label: how many there were, where the table shows only the last ones."""
    n = len(model.launches)
    return "Launches" if n <= SHOWN else f"Launches (last {SHOWN:,} of {n:,})"


def _dims(d) -> str:
    return "(" + ",".join(str(x) for x in d) + ")"


def duration_text(seconds: float) -> str:
    """A duration with its unit, at a precision a table column can hold."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} \u00b5s"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _time(ln: LaunchView) -> str:
    if ln.duration is None:
        return ""
    held = f" (+{duration_text(ln.held_time)} held)" if ln.held_time >= 1e-3 else ""
    return duration_text(ln.duration) + held


def _status(ln: LaunchView) -> Text:
    if ln.state == "running":
        return Text("running", "yellow")
    if ln.state in ("killed", "interrupted"):
        return Text(f"{ln.state} (the session ended)", "bold red")
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

    def _add(self, ln: LaunchView) -> None:
        # height None: as many lines as the status wraps to in its column (measured: only where it wraps)
        status = _status(ln)
        self.add_row(str(ln.id), self._kernel(ln), f"#{ln.job}" if ln.job is not None else "",
                     _dims(ln.grid), _dims(ln.block), _time(ln), status, key=str(ln.id),
                     height=None if self._wraps(status) else 1)

    def _wraps(self, status: Text) -> bool:
        return len(status.plain) > self.columns[ColumnKey("status")].get_render_width(self) - 2 * self.cell_padding

    def _shown(self) -> list[LaunchView]:
        """The launches the table lists: the last ``SHOWN``."""
        launches = self.model.launches
        if len(launches) <= SHOWN:
            return list(launches.values())
        ids = list(launches)[-SHOWN:]
        return [launches[i] for i in ids]

    def _rebuild(self) -> None:
        """Every row again (the status column's width changed, or a status grew a line)."""
        row = self.cursor_row
        self.clear()
        for ln in self._shown():
            self._add(ln)
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)

    def _fit_status(self) -> bool:
        """The status column gets the width the others leave (a launch's error wraps there); True when it
        changed (the rows are rebuilt)."""
        if not self.size.width or not self.columns:
            return False
        status = self.columns[ColumnKey("status")]
        others = sum(c.get_render_width(self) for key, c in self.columns.items() if key != status.key)
        width = min(self.size.width, self.scrollable_content_region.width or self.size.width)
        want = max(12, width - others - 2 * self.cell_padding - 2)  # a vertical scrollbar may come
        if not status.auto_width and status.width == want:
            return False
        status.auto_width, status.width = False, want
        self._rebuild()
        return True

    def on_resize(self) -> None:
        self._fit_status()

    def _kernel(self, ln: LaunchView) -> str:
        if ln.parent_launch is None:
            return ln.name
        # device-side launches nest under their parent launch, as deep as they go
        # short: at 80 columns the time and the status keep their room
        return " " * (self.model.launch_depth(ln.id) - 1) + f"\u2514 {ln.name} from #{ln.parent_launch}"

    def add_events(self, events: list[E.Event]) -> None:
        started = [ev.launch for ev in events if isinstance(ev, E.LaunchStarted)]
        if started and self.row_count + len(started) > SHOWN:  # the rows beyond the last SHOWN go
            if len(started) >= SHOWN:
                self.clear()
            else:
                for key in list(self.rows)[:self.row_count + len(started) - SHOWN]:
                    self.remove_row(key)
        new = set(started[-SHOWN:])
        for ev in events:
            if isinstance(ev, E.LaunchStarted):
                if ev.launch in new:
                    self._add(self.model.launches[ev.launch])
            elif isinstance(ev, E.LaunchFinished) and ev.launch in self.model.launches:
                self._update(self.model.launches[ev.launch])
            elif isinstance(ev, E.SessionEnded):
                for ln in self.model.launches.values():
                    if ln.ended_by is not None:
                        self._update(ln)
        self._fit_status()  # a wider kernel, grid or time column leaves the status less


    def _update(self, ln: LaunchView) -> None:
        if str(ln.id) not in self.rows:  # a finish without its start (torn trace)
            return
        status = _status(ln)
        if self._wraps(status):
            self._rebuild()  # it wraps: the row grows
            return
        # the column widens for a longer time; never measured again for a shorter one (that measures
        # every row of the column, for every launch that ends: the table fell behind a busy script)
        time_text = _time(ln)
        wider = len(time_text) > self.columns[ColumnKey("time")].content_width
        self.update_cell(str(ln.id), "time", time_text, update_width=wider)
        self.update_cell(str(ln.id), "status", status)

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        message.stop()
        ln = self.model.launches.get(int(message.row_key.value))
        if ln is not None and ln.job is not None:
            self.post_message(GoToJob(ln.job))
