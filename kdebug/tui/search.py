"""The search box (/): under the panes while open; enter hands its text on (``Input.Submitted``, which
the app passes to the detail pane) and closes it, as Escape does; the focus goes back where it was."""
from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Input


class SearchBox(Input):
    _return: Widget | None = None  # what had the focus before the box opened

    def action_open(self) -> None:
        self._return = self.app.focused
        self.add_class("visible")
        self.focus()

    @property
    def shown(self) -> bool:
        return self.has_class("visible")

    def close(self) -> None:
        self.remove_class("visible")
        target = self._return
        (target if target is not None and target.is_attached else self.screen.query_one("#jobs")).focus()

    def on_input_submitted(self, _: Input.Submitted) -> None:
        self.close()  # the message goes on up to the app, which searches
