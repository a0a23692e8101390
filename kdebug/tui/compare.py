"""Two runs side by side (v after r): the previous run's job tree beside this one's, the difference marked.

The rows and what differs come from ``kdebug/session/compare.py``; this screen draws them and
follows the run in progress.
"""
from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from kdebug.session.compare import Comparison, Row, Side, compare
from kdebug.tui.documents import Document
from kdebug.tui.textview import TextView

STATE_MARK = {"queued": "\u00b7", "compiling": "\u27f3", "done": "\u2713", "cached": "\u2713", "failed": "\u2716",
              "reference": "", "stopped": ""}
SEP = " \u2502 "


def side_text(side: Side | None, depth: int, column: int | None = None) -> str:
    """One run's cell: its state mark, name, #job, state, ×N and alert; in ``column`` cells the name is
    what shortens ("…"), then the indent, never the counts, the state or a ↻'s resolution."""
    if side is None:
        return ""
    pad = "  " * depth
    if side.backref:
        head, tail = side.name, f" #{side.target} {side.state}"  # the name starts with ↻
    else:
        alert = {"error": " \u2716 error", "warning": " \u26a0 warning"}.get(side.alert or "", "")
        head, tail = f"{STATE_MARK.get(side.state, '')} {side.name}", f" #{side.job} {side.state} \u00d7{side.compiled}{alert}"
    text = pad + head + tail
    if column is None or len(text) <= column:
        return text
    pad = pad[:max(0, column - len(head) - len(tail))]  # the indent gives way first, down to none
    room = column - len(pad) - len(tail)
    if room >= len(head):
        return pad + head + tail
    return pad + (head[:max(room - 1, 1)] + "\u2026" if room > 1 else head[:2]) + tail


class ComparisonDocument(Document):
    """A row a line: the previous run | this run, then what differs; where that does not fit in
    ``width`` it goes on lines of its own under the row, wrapped, never cut."""

    def __init__(self, comparison: Comparison, column: int, width: int = 0) -> None:
        self.column = column
        self.entries: list[tuple[Row, str]] = []  # (row, "row" or a line of its changes)
        for row in comparison.rows:
            self.entries.append((row, "row"))
            changes = "\u2260 " + "; ".join(row.changes) if row.changes else ""
            if changes and width and 2 * column + len(SEP) + 2 + len(changes) > width:
                self.entries.extend((row, line) for line in textwrap.wrap(
                    changes, max(20, width - 6), initial_indent="    ", subsequent_indent="      "))
        super().__init__([self._plain(k) for k in range(len(self.entries))] or ["(no jobs in either run yet)"])

    def _wrapped(self, row: Row) -> bool:
        return any(r is row and kind != "row" for r, kind in self.entries)

    def _cells(self, row: Row) -> tuple[str, str, str]:
        left = side_text(row.a, row.depth, self.column).ljust(self.column)
        right = side_text(row.b, row.depth, self.column).ljust(self.column)
        changes = ("  \u2260 " + "; ".join(row.changes)) if row.changes and not self._wrapped(row) else ""
        return left, right, changes

    def _plain(self, k: int) -> str:
        row, kind = self.entries[k]
        if kind != "row":
            return kind
        left, right, changes = self._cells(row)
        return left + SEP + right + changes

    def render(self, i: int) -> Text:
        if not self.entries:
            return Text(self.lines[i], "dim", no_wrap=True, end="")
        row, kind = self.entries[i]
        if kind != "row":
            return Text(kind, "bold yellow", no_wrap=True, end="")
        left, right, changes = self._cells(row)
        text = Text(no_wrap=True, end="")
        only_a, only_b = row.b is None, row.a is None
        text.append(left, "red" if only_a else "yellow" if row.changes else "")
        text.append(SEP, "dim")
        text.append(right, "green" if only_b else "yellow" if row.changes else "")
        text.append(changes, "bold yellow")
        return text


class CompareScreen(Screen[None]):
    BINDINGS = [Binding("escape", "close", "Close"), Binding("v", "close", "Close"), Binding("q", "close", "Close")]
    DEFAULT_CSS = """
    CompareScreen #compare-head { height: auto; padding: 0 1; background: $boost; }
    CompareScreen #compare-view { height: 1fr; }
    """

    def __init__(self, previous, current, strategies: tuple[str, str]) -> None:
        super().__init__()
        self.previous, self.current, self.strategies = previous, current, strategies
        self._shown = (-1, -1)

    def compose(self) -> ComposeResult:
        yield Static(id="compare-head")
        yield TextView(id="compare-view")

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(0.5, self.redraw)  # this run may still be going

    def follow(self, current) -> None:
        """The app's model now (a rerun while this is open replaces it)."""
        self.current = current
        self.redraw()

    def redraw(self) -> None:
        shown = (len(self.current.events), self.size.width)
        if shown == self._shown:
            return
        self._shown = shown
        comparison = compare(self.previous, self.current, self.strategies)
        head = Text()
        head.append("previous run  ", "bold")
        head.append(comparison.a.line())
        head.append("\nthis run      ", "bold")
        head.append(comparison.b.line())
        n = comparison.differences
        head.append(f"\n{n} row(s) differ" if n else "\nthe same job tree, states, compile counts and alerts",
                    "bold yellow" if n else "bold green")
        head.append("   \u00d7N: times the job's key was compiled \u00b7 red: only in the previous run \u00b7 green: only "
                    "in this one \u00b7 Escape or v closes", "dim")
        self.query_one("#compare-head", Static).update(head)
        longest = max((len(side_text(side, r.depth)) for r in comparison.rows for side in (r.a, r.b)), default=10)
        view = self.query_one("#compare-view", TextView)
        width = (view.size.width or self.size.width) - 2  # a scrollbar may come
        column = max(16, min(longest, (width - len(SEP)) // 2))  # what differs goes under a row that leaves no room
        view.set_document(ComparisonDocument(comparison, column, width), keep_position=True)

    def action_close(self) -> None:
        self.dismiss(None)


def compare_runs(app) -> None:
    """v: the run r replaced beside this one, the difference marked; v again closes it."""
    if isinstance(app.screen, CompareScreen):
        return app.screen.dismiss(None)
    if app.previous_run is None:
        app.notify("no previous run to compare: r reruns the script with the next strategy, then v")
        return
    strategy, model = app.previous_run
    now = app.opts.strategy + (" ptx" if app.opts.target == "ptx" else "")
    app.push_screen(CompareScreen(model, app.model, (strategy, now)))
