"""A message in full (o: the banner's whole text, a job's whole error), wrapped and scrolling; Escape closes."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class MessageScreen(ModalScreen[None]):
    BINDINGS = [("escape", "dismiss", "Close"), ("o", "dismiss", "Close"), ("q", "dismiss", "Close")]
    DEFAULT_CSS = """
    MessageScreen { align: center middle; }
    #message-dialog { width: 100; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                      background: $surface; padding: 0 1; }
    """

    def __init__(self, title: str, text: Text) -> None:
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="message-dialog") as box:
            box.border_title = f"{self.title_text} (Escape closes)"
            yield Static(self.text, id="message-text")

    def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
