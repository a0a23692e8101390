"""The PTX tab: the job's PTX, the ptxas report (registers, shared and local memory, spills) above it."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from kdebug.tui import teaching
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import CodeDocument, Document, JoinedDocument, StyledDocument
from kdebug.tui.textview import TextView


class PtxTab(DetailTab):
    tab_id = "ptx"

    def compose_views(self) -> ComposeResult:
        yield Static(id="ptx-info", classes="help")
        yield TextView(id="view-ptx")

    def show_job(self, job) -> None:
        text_of = self.detail.stage_text
        text, _ = text_of("ptx") if job is not None else (None, "")
        if job is not None and text is None:
            emitted, lang = text_of("emit")
            if lang == "ptx":
                text = emitted
        usage = text_of("ptxas")[0] if job is not None else None
        info = teaching.phase_help("ptx")
        if text is None:
            info += ("\nNo PTX for this job: the CPU target emits host code. ctrl+p \u2192 Rerun emitting PTX "
                     "(or kdebug dump --target ptx, or --backend gpu).")
        elif usage:
            info += "\nThe ptxas report (registers, shared and local memory, spills) heads the listing."
        self.explain("#ptx-info", info)
        if not text:
            return self.set_document(Document([]))
        # the ptxas report is prose, not PTX: one style, not the PTX lexer's
        head = StyledDocument([(f"// ptxas: {line}", "italic #7f848e") for line in usage.splitlines()] + [("", "")]
                              if usage else [])
        self.set_document(JoinedDocument(head, CodeDocument(text, "ptx")))
