"""The output panel: the script's stdout and stderr, as the debuggee prints them."""
from __future__ import annotations

from kdebug.tui.documents import StyledDocument
from kdebug.tui.textview import TextView


class OutputPanel(TextView):
    def __init__(self, id: str | None = None) -> None:
        super().__init__(StyledDocument(), id=id, follow=True)

    def reset(self) -> None:
        self.set_document(StyledDocument())

    def add_lines(self, lines: list[str]) -> None:
        for line in lines:
            style = "red" if line.startswith(("Traceback", "Fatal Python error")) else ""
            self.document.append(line, style)
        if lines:
            self.content_grew()
