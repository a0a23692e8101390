"""The footer: the main keys, each a link to its action.

Textual's Footer recomposes whenever focus moves (the active bindings change),
which costs ~100 ms on this screen; the keys here are app-wide, so a static
line says the same for nothing.
"""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

LIVE = [("s", "step", "Step"), ("c", "continue", "Continue"), ("b", "breakpoints", "Breaks"),
        ("r", "rerun", "Strategy"), ("x", "kill", "Kill")]
COMMON = [("/", "search", "Search"), ("n N", "next_match", "Match"), ("[ ]", "next_job", "Job"),
          (", .", "next_phase", "Phase"), ("g", "goto_target", "\u21bb target"), ("w", "write_stage", "Save IR"),
          ("t", "save_trace", "Trace"), ("q", "quit", "Quit"), ("^p", "command_palette", "Palette")]


def key_help_markup(live: bool) -> str:
    keys = (LIVE if live else []) + COMMON
    return " ".join(f"[@click=app.{action}][b reverse] {key} [/] {label}[/]" for key, action, label in keys)


class KeyHelp(Static):
    DEFAULT_CSS = """
    KeyHelp { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, live: bool, id: str | None = None) -> None:
        super().__init__(Content.from_markup(key_help_markup(live)), id=id)
