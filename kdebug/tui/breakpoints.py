"""The breakpoints dialog: which events stop the debuggee."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Label

from kdebug.tui import teaching


class BreakCheckbox(Checkbox):
    """A checkbox whose box is empty when unchecked (Textual's default draws a dark X either way, which a
    projector shows as checked) and holds a check mark when checked; its label wraps."""

    DEFAULT_CSS = """
    BreakCheckbox { width: 100%; height: auto; text-wrap: wrap; text-overflow: fold; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.BUTTON_INNER = "\u2713" if self.value else " "

    def watch_value(self) -> None:  # Textual's own watcher sets the -on class and posts Changed
        self.BUTTON_INNER = "\u2713" if self.value else " "
        super().watch_value()


class BreakpointsScreen(ModalScreen[set[str] | None]):
    BINDINGS = [("escape", "dismiss(None)", "Cancel")]

    def __init__(self, current: set[str]) -> None:
        super().__init__()
        self.current = set(current)

    def compose(self) -> ComposeResult:
        with Vertical(id="breakpoints-dialog"):
            yield Label("Stop the debuggee when ...", id="breakpoints-title")
            for kind, what in teaching.BREAKPOINTS.items():
                yield BreakCheckbox(kind, kind in self.current, id=f"bp-{kind}")
                yield Label(what, classes="bp-what")
            with Horizontal(id="breakpoints-buttons"):
                yield Button("Apply", variant="primary", id="bp-apply")
                yield Button("Cancel", id="bp-cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "bp-apply":
            self.dismiss({k for k in teaching.BREAKPOINTS if self.query_one(f"#bp-{k}", Checkbox).value})
        else:
            self.dismiss(None)
