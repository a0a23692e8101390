"""The Source and IR views with a line cursor: request sites marked, enter descends into one.

A site line ends with ``◂ #3 grad(f) grad`` (the job it asks for); at a deferred or re-entrant
pause the requesting line is highlighted and the cursor starts there. Which lines are sites is
the session layer's (``kdebug/session/navigation.py``): this view only draws and moves.
"""
from __future__ import annotations

from typing import Callable

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding

from kdebug.tui.textview import TextView

# reverse video: the terminal's own colours swapped, so the cursor line stands out on a washed-out
# projector and in a light terminal theme alike (a dark background tint vanishes on both)
CURSOR = Style(reverse=True, bold=True)
FOCUS = Style(bgcolor="#6b4f00", bold=True)  # the request the session stands at
SITE_MARK = Style(color="magenta", bold=True)
FAULT = Style(bgcolor="#5f0000", bold=True)  # a line an error points at (memcheck, a compile error)
FAULT_MARK = Style(color="#ff5f5f", bold=True)
MIN_CODE = 12  # columns of code a marked line keeps however long its marks


class SiteView(TextView):
    BINDINGS = [Binding("up", "cursor(-1)", show=False), Binding("down", "cursor(1)", show=False),
                Binding("pageup", "cursor_page(-1)", show=False), Binding("pagedown", "cursor_page(1)", show=False)]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cursor = 0
        self.focus_lines: set[int] = set()
        self.faults: dict[int, str] = {}  # lines an error points at, with its category
        self._targets: Callable[[int], list[int]] = lambda i: []
        self._label: Callable[[int], str] = str

    def set_sites(self, targets: Callable[[int], list[int]], label: Callable[[int], str],
                  focus: set[int] | None = None, cursor: int | None = None) -> None:
        """Which jobs line ``i`` asks for, how to name a job, the lines to highlight, where the cursor goes
        (the first highlighted line when not said)."""
        self._targets, self._label = targets, label
        self.focus_lines = set(focus or ())
        # the reader's cursor stays where it is unless a place is given (a new document starts at 0)
        start = cursor if cursor is not None else (min(self.focus_lines) if self.focus_lines else self.cursor)
        self.cursor = max(0, min(start, len(self.document) - 1))
        self._cache.clear()
        if self.focus_lines or cursor:
            self.call_after_refresh(self._show_cursor)
        self.refresh()

    def set_document(self, document, keep_position: bool = False) -> None:
        if not keep_position:
            self.cursor = 0
        super().set_document(document, keep_position)

    def targets_at_cursor(self) -> list[int]:
        return self._targets(self.cursor) if 0 <= self.cursor < len(self.document) else []

    def site_lines(self) -> list[int]:
        return [i for i in range(len(self.document)) if self._targets(i)]

    # ---- the cursor ------------------------------------------------------------------------
    def move_cursor(self, line: int) -> None:
        line = max(0, min(line, len(self.document) - 1))
        if line == self.cursor:
            return
        self._cache.discard(self.cursor)
        self._cache.discard(line)
        self.cursor = line
        self._show_cursor()
        self.refresh()

    def _show_cursor(self) -> None:
        """Keep the cursor in the lines the view shows: the horizontal scrollbar's row is not one of them.
        A step past the top or the bottom scrolls by what it takes; a jump puts the line a third down."""
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_y)
        if top <= self.cursor < top + height:
            return
        if top - 1 <= self.cursor < top:
            y = self.cursor
        elif top + height <= self.cursor <= top + height + 1:
            y = self.cursor - height + 1
        else:
            y = self.cursor - height // 3
        self.scroll_to(y=max(0, y), animate=False)

    def at_line(self, line: int) -> None:
        self.move_cursor(line)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_cursor_page(self, step: int) -> None:
        self.move_cursor(self.cursor + step * max(self.size.height - 1, 1))

    def on_click(self, event: events.Click) -> None:
        self.move_cursor(int(self.scroll_y) + event.y)

    # ---- drawing ----------------------------------------------------------------------------
    def decorate(self, index: int, text: Text) -> Text:
        # what the document drew after the code (LLVM's remarks) goes after the site and fault marks
        code = len(self.document.plain(index))
        after = text[code:] if len(text.plain) > code else None
        if after is not None:
            text = text[:code]
        targets = self._targets(index)
        fault = self.faults.get(index)
        marks = self._marks(targets, fault, self._label)
        if marks:
            # a mark is never cut: where the line and its marks overflow the view (not scrolled
            # sideways), the marks name their jobs by #id alone, and the code gives way, cut with an
            # ellipsis (a scroll to the right shows it whole)
            room = self.scrollable_content_region.width or self.size.width
            if not self.scroll_x and room and text.cell_len + marks.cell_len > room:
                if len(targets) > 0:
                    marks = self._marks(targets, fault, lambda t: f"#{t}")
            if not self.scroll_x and room and text.cell_len + marks.cell_len > room:
                keep = max(MIN_CODE, room - marks.cell_len - 1)
                text = text[:keep]
                text.append("\u2026", "dim")
            text.append_text(marks)
        if after is not None:
            text.append_text(after)
        style = FOCUS if index in self.focus_lines else CURSOR if index == self.cursor and self.has_focus \
            else FAULT if fault is not None else None
        if style is not None:
            text.pad_right(max(0, self.size.width - text.cell_len))
            text.stylize(style)
        return text

    @staticmethod
    def _marks(targets: list[int], fault: str | None, label) -> Text:
        """``◂ #3 grad(f), #4 …`` for the jobs a line asks for, ``◂ ✖ memcheck`` for a fault."""
        marks = Text()
        if targets:
            marks.append("  \u25c2 " + ", ".join(label(t) for t in targets), SITE_MARK)
        if fault is not None:
            marks.append(f"  \u25c2 \u2716 {fault}", FAULT_MARK)
        return marks

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        if bool(old) != bool(new):  # a marked line is cut only while the view is not scrolled sideways
            self._cache.clear()

    def on_focus(self) -> None:
        self._cache.discard(self.cursor)
        self.refresh()

    def on_blur(self) -> None:
        self.on_focus()
