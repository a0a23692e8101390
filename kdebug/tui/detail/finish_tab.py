"""The Finish tab: the job's IR before and after the finish passes, as a unified diff or side by side (d)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from kdebug.tui import teaching
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import Document, SideBySideDocument, UnifiedDiffDocument
from kdebug.tui.textview import TextView


class FinishTab(DetailTab):
    tab_id = "finish"

    def compose_views(self) -> ComposeResult:
        yield Static(id="finish-help", classes="help")
        yield TextView(id="view-finish")

    def show_job(self, job) -> None:
        detail = self.detail
        help_text = teaching.FINISH_INTRO + "\n" + "\n".join(
            f"\u2022 {name}: {what}" for name, what in teaching.FINISH_PASSES.items())
        before, _ = detail.stage_text("before_finish") if job is not None else (None, "")
        after, _ = detail.stage_text("after_finish") if job is not None else (None, "")
        misses = [d for d in self.model.diagnostics if d.category == "finish" and job is not None and d.job == job.id]
        if misses:
            help_text = "\u2716 " + misses[0].message + "\n" + help_text
        elif job is not None and before is None and after is None and job.state == "done":
            help_text = "\u2716 this job never went through the finish passes (a finish-coverage miss)\n" + help_text
        self.explain("#finish-help", help_text + f"\nd: {'side by side' if detail.diff_mode == 'unified' else 'unified diff'}"
                     " \u00b7 attribute-group renumbering is not a change")
        if before is None or after is None:
            return self.set_document(Document(["(no before_finish/after_finish snapshots for this job)"]))
        if detail.diff_mode == "unified":
            return self.set_document(UnifiedDiffDocument(before, after))
        width = self.width_or_later()
        longest = max((len(line) for line in before.expandtabs(4).splitlines()), default=10)
        self.set_document(SideBySideDocument(before, after, column=max(16, min(longest, (width - 3) // 2))))
