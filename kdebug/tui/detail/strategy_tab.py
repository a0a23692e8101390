"""The Strategy tab: the deferred-codegen strategy in use explained, and the others (r reruns with the next)."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from kdebug.tui import teaching
from kdebug.tui.detail.base import DetailTab


class StrategyTab(DetailTab):
    tab_id = "strategy"

    def compose_views(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="strategy-help")

    @property
    def view(self):
        return None  # prose in a scroll, no text view: nothing to search, copy or save

    def show_job(self, job) -> None:
        from kdebug.driver import strategies  # kept lazy for start-up time: the strategies import the compiler
        started = self.model.started
        strategy = started.strategy if started else "worklist"
        text = Text()
        text.append(f"Strategy in use: {strategy}", "bold")
        text.append(f"   ({started.origin if started else strategies.origin(strategy)})   backend: {started.backend if started else '?'}\n")
        text.append("Invariants it claims (kdebug check-strategy): " + _claims(strategy) + "\n\n")
        text.append(teaching.strategy_help(strategy) + "\n\n")
        text.append("Reverse mode and nested orders\n", "bold")
        text.append(teaching.REVERSE_MODE + "\n\n")
        text.append("Other strategies (r reruns the script with the next one):\n", "bold")
        for name, para in teaching.strategy_paragraphs().items():
            if name != strategy:
                text.append("\n" + para + "\n", "dim")
        self.query_one("#strategy-help", Static).update(text)


def _claims(strategy: str) -> str:
    from kdebug.driver import invariants, strategies  # kept lazy for start-up time: the strategies import the compiler
    try:
        claimed = invariants.claims(strategies.get(strategy))
    except ValueError:
        return "unknown (the strategy cannot be loaded here)"
    return ", ".join(claimed) or "none"
