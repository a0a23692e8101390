"""TextView: a scrolling view of a ``Document`` that renders only the visible lines.

Lines are styled on first display and kept in an LRU cache of strips, so a
200,000-line IR costs what its visible screenful costs. Search marks every
match and moves between them with ``n`` / ``N`` (bound on the app).
"""
from __future__ import annotations

import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kdebug.tui.documents import Document

MATCH = Style(bgcolor="#5c4a00")
CURRENT_MATCH = Style(bgcolor="#b58900", color="black", bold=True)


class TextView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TextView { background: $surface; }
    """
    # in a diff, ] and [ go to the next / previous hunk; elsewhere they are the app's (next / previous job)
    BINDINGS = [Binding("right_square_bracket", "hunk(1)", show=False),
                Binding("left_square_bracket", "hunk(-1)", show=False)]

    class Resized(Message):
        """The view's size changed (a view whose layout depends on its width redraws)."""

        def __init__(self, view: "TextView") -> None:
            super().__init__()
            self.view = view

    def __init__(self, document: Document | None = None, *, id: str | None = None, follow: bool = False) -> None:
        super().__init__(id=id)
        self.document = document if document is not None else Document([])
        self.follow = follow  # keep the end in view as lines are appended (the output log)
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        self.search_term = ""
        self._pattern: re.Pattern | None = None
        self.matches: list[int] = []  # line numbers with a match
        self.current_match = -1

    # ---- content ---------------------------------------------------------------------
    def set_document(self, document: Document, keep_position: bool = False) -> None:
        self.document = document
        self._cache.clear()
        self._update_size()
        if self._pattern is not None:
            self._find_all()
        if not keep_position:
            self.scroll_to(0, 0, animate=False)
            if self.hunks():  # a diff opens at its first change
                self.call_after_refresh(self.go_to_hunk, 0)
        self.refresh()

    # ---- diffs: hunks ----------------------------------------------------------------
    @property
    def hunk_above(self) -> int:
        """Lines kept above a hunk the view goes to (the document's say)."""
        return getattr(self.document, "hunk_above", 0)

    def hunks(self) -> list[int]:
        """Where the document's hunks start (a diff's), else none."""
        hunks = getattr(self.document, "hunks", None)
        return hunks() if hunks is not None else []

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "hunk":
            return bool(self.hunks())  # not a diff: the key goes on to the app's binding
        return True

    def go_to_hunk(self, k: int) -> None:
        """Show hunk ``k`` near the top (a view with a line cursor puts it there)."""
        hunks = self.hunks()
        if not hunks:
            return
        line = hunks[max(0, min(k, len(hunks) - 1))]
        self.scroll_to(y=max(0, line - self.hunk_above), animate=False)
        self.at_line(line)

    def at_line(self, line: int) -> None:
        """A subclass's cursor goes to ``line``; none here."""

    def action_hunk(self, step: int) -> None:
        """] [: the next / previous hunk from the one at the top of the view."""
        hunks = self.hunks()
        top = int(self.scroll_y) + self.hunk_above
        if step > 0:
            k = next((k for k, line in enumerate(hunks) if line > top), None)
        else:
            k = next((k for k in range(len(hunks) - 1, -1, -1) if hunks[k] < top), None)
        if k is None:
            self.notify("the last hunk" if step > 0 else "the first hunk", timeout=2)
            return
        self.go_to_hunk(k)

    def on_show(self) -> None:
        if self.follow:  # lines appended while it was hidden (another tab showing) had no height to scroll in
            self.call_after_refresh(self.scroll_end, animate=False)

    def content_grew(self) -> None:
        """The document was appended to: only the new lines need rendering."""
        self._update_size()
        if self.follow:
            self.scroll_end(animate=False)
        self.refresh()

    def _update_size(self) -> None:
        self.virtual_size = Size(self.document.width + 1, len(self.document))

    # ---- search ------------------------------------------------------------------------
    def search(self, term: str) -> int:
        """Mark every match of ``term`` (case-insensitive) and go to the first one below the top."""
        self.search_term = term
        self._pattern = re.compile(re.escape(term), re.IGNORECASE) if term else None
        self._cache.clear()
        self._find_all()
        if self.matches:
            top = int(self.scroll_y)
            self.current_match = next((k for k, ln in enumerate(self.matches) if ln >= top), 0)
            self._show_current()
        self.refresh()
        return len(self.matches)

    def _find_all(self) -> None:
        self.current_match = -1
        if self._pattern is None:
            self.matches = []
            return
        term = self.search_term.lower()
        plain = self.document.plain
        self.matches = [i for i in range(len(self.document)) if term in plain(i).lower()]

    def next_match(self, step: int = 1) -> int | None:
        """Move to the next (``step=1``) or previous (``-1``) match; its line number, or None."""
        if not self.matches:
            return None
        self.current_match = (self.current_match + step) % len(self.matches)
        self._cache.clear()
        self._show_current()
        self.refresh()
        return self.matches[self.current_match]

    def _show_current(self) -> None:
        line = self.matches[self.current_match]
        if not (self.scroll_y <= line < self.scroll_y + self.size.height):
            self.scroll_to(y=max(0, line - self.size.height // 3), animate=False)
        self.at_line(line)  # a view with a line cursor: it goes to the match (enter descends from there)

    # ---- rendering ---------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self.document):
            return Strip.blank(width, base)
        strip = self._cache.get(index)
        if strip is None:
            strip = self._render_full_line(index, base)
            self._cache[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def decorate(self, index: int, text: Text) -> Text:
        """A subclass's marks on a rendered line (a cursor, a highlighted site); none here."""
        return text

    def _render_full_line(self, index: int, base: Style) -> Strip:
        text = self.decorate(index, self.document.render(index))
        if self._pattern is not None:
            current = self.matches[self.current_match] if self.current_match >= 0 else -1
            style = CURRENT_MATCH if index == current else MATCH
            for m in self._pattern.finditer(text.plain):
                text.stylize(style, m.start(), m.end())
        # Text.render leaves the Text's own style (a whole-line colour: diff, listing) to the
        # console, which is not in this path: fold it into the base
        if text.style:
            base = base + self.app.console.get_style(text.style)
        segments = list(text.render(self.app.console))
        segments = [Segment(s.text, base + s.style if s.style else base) for s in segments if s.text != "\n"]
        return Strip(segments)

    def on_resize(self) -> None:
        self._cache.clear()
        self.post_message(self.Resized(self))

    # keys scroll at once: an animated scroll repaints a 200,000-line view many times over
    def action_page_down(self) -> None:
        self.scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self.scroll_page_up(animate=False)

    def action_scroll_home(self) -> None:
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_end(animate=False)
