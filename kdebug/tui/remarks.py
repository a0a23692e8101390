"""LLVM's remarks beyond the Source view's marks: ``l`` lists a job's remarks (enter goes to the line a
remark names), and the IR view writes each remark of the phase shown beside the instruction it names.

A remark names a source position (``file:line:col``); the IR names positions through its debug
locations (``!dbg !12`` on an instruction, ``!12 = !DILocation(line: 9, column: 23, scope: !4)`` at the
end, the scope leading to a ``!DIFile``). ``instruction_positions`` reads those, so a remark goes beside
the first instruction of its position (of its line where no instruction has the column).
"""
from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kdebug.ir_text import instruction_positions
from kdebug.tui.documents import REMARK_MARKS, REMARK_STYLES, RemarkedDocument

KIND_ORDER = RemarkedDocument.ORDER


def place_remarks(lines: list[str], remarks: list[list]) -> dict[int, list[list]]:
    """Line index -> ``[kind, pass, message]`` rows: each remark ``[file, line, col, kind, pass, message]``
    beside the first instruction of its position, or of its line; remarks no instruction names are left out."""
    positions = instruction_positions(lines)
    exact: dict[tuple, int] = {}
    by_line: dict[tuple, int] = {}
    for i, (file, line, col) in positions.items():
        exact.setdefault((file, line, col), i)
        by_line.setdefault((file, line), i)
    placed: dict[int, list[list]] = {}
    for file, line, col, kind, pass_name, message in remarks:
        base = os.path.basename(file)
        i = exact.get((base, line, col), by_line.get((base, line)))
        if i is not None:
            row = [kind, pass_name, message]
            if row not in placed.setdefault(i, []):
                placed[i].append(row)
    return placed


def remarked_ir(text: str, remarks: list[list]) -> RemarkedDocument:
    """LLVM IR with each remark beside the instruction it names, as an LLVM comment."""
    lines = text.expandtabs(4).splitlines()  # the document's own lines (CodeDocument)
    return RemarkedDocument(text, place_remarks(lines, remarks), "llvm", prefix="; ")


def job_remark_rows(model, job) -> list[tuple[str, int, int, str, str, str, str]]:
    """Every remark of ``job``'s pipelines and every remark naming a line of its source, once each, in
    source order (missed ones first on a line): (file, line, col, kind, pass, message, phase)."""
    rows: dict[tuple, str] = {}
    for phase, (file, line, col, kind, pass_name, message) in job.remarks:
        rows.setdefault((os.path.basename(file), line, col, kind, pass_name, message), phase)
    if job.source and job.source_file and job.source_line is not None:
        base = os.path.basename(job.source_file)
        last = job.source_line + len(job.source.splitlines()) - 1
        for other in model.jobs.values():
            for phase, (file, line, col, kind, pass_name, message) in other.remarks:
                if os.path.basename(file) == base and job.source_line <= line <= last:
                    rows.setdefault((base, line, col, kind, pass_name, message), phase)
    # on a line: missed ones first, then by column, as the Source view's note beside it picks its first
    return sorted(((*key, phase) for key, phase in rows.items()),
                  key=lambda r: (r[1] == 0, r[0], r[1], KIND_ORDER.get(r[3], 3), r[2], r[4], r[5]))


class RemarksScreen(ModalScreen):
    """l: the selected job's remarks, a row each; enter goes to the source line a remark names."""

    BINDINGS = [Binding("escape", "dismiss_none", "Close")]
    DEFAULT_CSS = """
    RemarksScreen { align: center middle; }
    #remarks-dialog { width: 100%; max-width: 120; height: 100%; max-height: 40; border: thick $accent;
                      background: $surface; padding: 0 1; }
    #remarks-help { height: auto; }
    #remarks-list { height: 1fr; }
    """

    def __init__(self, title: str, rows: list[tuple]) -> None:
        super().__init__()
        self.title_text, self.rows = title, rows

    def compose(self) -> ComposeResult:
        with Vertical(id="remarks-dialog") as box:
            box.border_title = self.title_text
            missed = sum(1 for r in self.rows if r[3] == "missed")
            yield Static(Text(f"{len(self.rows)} remarks, {missed} missed \u00b7 enter: go to the line in "
                              "Source \u00b7 Escape: close", style="dim"), id="remarks-help")
            options = []
            for k, (file, line, col, kind, pass_name, message, phase) in enumerate(self.rows):
                where = f"{file}:{line}:{col}" if line else "(no line)"
                label = Text(f"{REMARK_MARKS.get(kind, '*')} {where:<22} ", style=REMARK_STYLES.get(kind, ""))
                label.append(f"{kind:<8} {pass_name:<16} ", style="bold" if kind == "missed" else "")
                label.append(f"{message}  [{phase}]")
                options.append(Option(label, id=f"remark-{k}", disabled=not line))
            yield OptionList(*options, id="remarks-list")

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        k = int(message.option.id.removeprefix("remark-"))
        self.dismiss(self.rows[k][1])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
