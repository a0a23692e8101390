"""The Host asm tab: the machine code the CPU target emitted for the job (its toplevel's, where the job's
code is emitted inside it)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from kdebug.tui import teaching
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import CodeDocument, Document
from kdebug.tui.textview import TextView


class AsmTab(DetailTab):
    tab_id = "asm"

    def compose_views(self) -> ComposeResult:
        yield Static(id="asm-info", classes="help")
        yield TextView(id="view-asm")

    def show_job(self, job) -> None:
        if job is None:
            return self.set_document(Document([]))
        owner = job
        text, lang = self.detail.stage_text("emit", job)
        if text is None:
            owner = self.model.root_of(job.id)
            text, lang = self.detail.stage_text("emit", owner)
        info = teaching.phase_help("emit")
        if owner is not job:
            info += f"\nThis job's code is emitted inside its toplevel job #{owner.id} {owner.name}: shown here."
        self.explain("#asm-info", info)
        if text is None or lang == "ptx":
            return self.set_document(Document(["(no host assembly yet)"]))
        self.set_document(CodeDocument(text, "asm"))
