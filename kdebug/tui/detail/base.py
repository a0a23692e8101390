"""What every tab of the detail pane is: a ``TabPane`` that composes its own views and shows the pane's job."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static, TabPane

from kdebug.tui.documents import Document
from kdebug.tui.textview import TextView


class DetailTab(TabPane):
    """One tab: ``compose_views`` its widgets (its view is ``#view-<id>``), ``show_job`` renders the pane's
    job into them; the keys the key table gives the tab are its ``action_*`` methods."""

    tab_id = ""

    def __init__(self, detail, label: str) -> None:
        super().__init__(label, id=f"tab-{self.tab_id}")
        self.detail = detail  # the pane: the job shown and the state the tabs share
        self._explained: dict[str, str] = {}  # an explanation box's selector -> the text it shows

    def compose(self) -> ComposeResult:
        yield from self.compose_views()

    def compose_views(self) -> ComposeResult:
        yield TextView(id=f"view-{self.tab_id}")

    @property
    def model(self):
        return self.detail.model

    @property
    def view(self) -> TextView:
        return self.query_one(f"#view-{self.tab_id}", TextView)

    def show_job(self, job) -> None:
        """Render ``job`` (None: no job yet) into the tab's views."""
        raise NotImplementedError

    def set_document(self, doc: Document, keep: bool = False) -> None:
        """The view's document; the reader's place and cursor kept where the pane says it is the same
        view of the same job (``keep_place``) or ``keep``."""
        self.view.set_document(doc, keep_position=keep or self.detail.keep_place)

    def explain(self, selector: str, text: str) -> None:
        """Fill an explanation box; an empty one takes no line."""
        if self._explained.get(selector) == text:
            return
        self._explained[selector] = text
        box = self.query_one(selector, Static)
        box.update(text)
        box.set_class(not text, "empty")
        box.display = bool(text) and self.detail.explanations_shown

    def width_or_later(self) -> int:
        """The view's width for a side-by-side layout; not laid out yet: 100, and the pane draws the tab
        again once it is."""
        width = self.view.size.width
        if not width:
            self.detail.draw_again(self.tab_id)
            width = 100
        return width
