"""The output panel: the script's stdout and stderr, as the debuggee prints them."""
from __future__ import annotations

from kdebug.tui.documents import StyledDocument
from kdebug.tui.textview import TextView


class OutputPanel(TextView):
    def __init__(self, id: str | None = None) -> None:
        super().__init__(StyledDocument(), id=id, follow=True)

    def reset(self) -> None:
        self.set_document(StyledDocument())

    def add_kernel_output(self, ev) -> None:
        """A launch's print() lines in thread order, each with the block and thread that printed it."""
        for block, thread, text in ev.lines:
            self.document.append(f"[#{ev.launch} {ev.name} block {block} thread {thread}] {text}", "")
        if ev.dropped:
            self.document.append(f"[#{ev.launch} {ev.name}] {ev.dropped} more line(s) not shown: the limit is "
                                 f"10000 lines per launch", "yellow")
        self.content_grew()

    def add_lines(self, lines: list[str]) -> None:
        for line in lines:
            style = "red" if line.startswith(("Traceback", "Fatal Python error")) else ""
            self.document.append(line, style)
        if lines:
            self.content_grew()
