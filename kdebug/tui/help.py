"""The help screen (? or F1): every key of the app, by group, from the one key table."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kdebug.tui.key_help import KEYS


def help_table(live: bool) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    group = None
    for key in KEYS:
        if (key.live and not live) or (key.replay and live):
            continue
        if key.group != group:
            group = key.group
            table.add_row(Text(group, "bold underline"), "")
        table.add_row(Text(key.shown, "bold reverse"), key.what)
    table.add_row("", "")
    table.add_row("", Text("Every action is also in the command palette (^p), by name.", "dim"))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("question_mark", "dismiss", "Close"), ("f1", "dismiss", "Close"),
                ("q", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help-dialog { width: 96; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                   background: $surface; padding: 0 1; }
    """

    def __init__(self, live: bool) -> None:
        super().__init__()
        self.live = live

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog") as box:
            box.border_title = "kdebug keys (Escape closes)"
            yield Static(help_table(self.live), id="help-keys")

    def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
