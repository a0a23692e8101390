"""Two runs side by side (v after r): the previous run's job tree beside this one's, the difference marked.

The rows and what differs come from ``kdebug/session/compare.py``; this screen draws them and
follows the run in progress.
"""
from __future__ import annotations

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


def side_text(side: Side | None, depth: int) -> str:
    if side is None:
        return ""
    pad = "  " * depth
    if side.backref:
        return f"{pad}{side.name} #{side.target} {side.state}"
    alert = {"error": " \u2716 error", "warning": " \u26a0 warning"}.get(side.alert or "", "")
    return f"{pad}{STATE_MARK.get(side.state, '')} {side.name} #{side.job} {side.state} \u00d7{side.compiled}{alert}"


class ComparisonDocument(Document):
    """One row a line: the previous run | this run, and what differs."""

    def __init__(self, comparison: Comparison, column: int) -> None:
        self.rows = comparison.rows
        self.column = column
        super().__init__([self._plain(r) for r in self.rows] or ["(no jobs in either run yet)"])

    def _cells(self, row: Row) -> tuple[str, str, str]:
        left = side_text(row.a, row.depth)[:self.column].ljust(self.column)
        right = side_text(row.b, row.depth)[:self.column].ljust(self.column)
        return left, right, ("  \u2260 " + "; ".join(row.changes)) if row.changes else ""

    def _plain(self, row: Row) -> str:
        left, right, changes = self._cells(row)
        return left + SEP + right + changes

    def render(self, i: int) -> Text:
        if not self.rows:
            return Text(self.lines[i], "dim", no_wrap=True, end="")
        row = self.rows[i]
        left, right, changes = self._cells(row)
        text = Text(no_wrap=True, end="")
        only_a, only_b = row.b is None, row.a is None
        text.append(left, "red" if only_a else "yellow" if changes else "")
        text.append(SEP, "dim")
        text.append(right, "green" if only_b else "yellow" if changes else "")
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
        column = max(16, min(longest, (self.size.width - len(SEP) - 28) // 2))  # room for what differs
        self.query_one("#compare-view", TextView).set_document(ComparisonDocument(comparison, column), keep_position=True)

    def action_close(self) -> None:
        self.dismiss(None)
