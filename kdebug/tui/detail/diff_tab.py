"""The Diff tab: any two stages of the job compared (B: the stage the IR tab shows; A: B's previous change,
or the stage pinned with m), unified or side by side (d), noise (i) and one function at a time (f)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from kdebug.session import stage_diff
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import Document, SideBySideRows, UnifiedLines
from kdebug.tui.stage_views import diff_bar
from kdebug.tui.textview import TextView


class DiffTab(DetailTab):
    tab_id = "diff"

    def compose_views(self) -> ComposeResult:
        yield Static(id="diff-bar")
        yield TextView(id="view-diff")

    # ---- its keys -----------------------------------------------------------------------
    def action_pin_diff_a(self) -> None:
        """m: the stage shown becomes the Diff tab's A; again: A is B's previous change once more."""
        detail = self.detail
        detail.diff_a = None if detail.diff_a is not None else (detail.phase, detail.pass_index)
        self._show_here()

    def action_toggle_diff_noise(self) -> None:
        self.detail.diff_noise = not self.detail.diff_noise
        self._show_here()

    def action_next_diff_function(self) -> None:
        """f: all functions, then each function the two stages define, then what is outside them."""
        detail = self.detail
        a, b = self.pair()
        names = [None] + stage_diff.function_names(*(stage_diff.stage_text(self.model, s) for s in (a, b) if s)) \
            + [stage_diff.MODULE_LEVEL]
        i = names.index(detail.diff_function) if detail.diff_function in names else 0
        detail.diff_function = names[(i + 1) % len(names)]
        self._show_here()

    def _show_here(self) -> None:
        if self.detail.active_tab != "diff":
            self.detail.set_tab("diff")
        else:
            self.detail.refresh_active()

    # ---- rendering ----------------------------------------------------------------------
    def pair(self) -> tuple[stage_diff.StageRef | None, stage_diff.StageRef | None]:
        """(A, B): B the stage the IR tab shows, A the pinned stage or B's previous change."""
        detail = self.detail
        stages = detail.stages()
        b = detail.current_stage_index()
        if b is None:
            return None, None
        if detail.diff_a is not None:
            a = next((k for k, s in enumerate(stages) if s.key == detail.diff_a), None)
        else:
            a = stage_diff.default_base(self.model, stages, b)
        return (stages[a] if a is not None else None), stages[b]

    def show_job(self, job) -> None:
        detail, model = self.detail, self.model
        a, b = self.pair() if job is not None else (None, None)
        self.query_one("#diff-bar", Static).update(diff_bar(a, b, detail.diff_a is not None, detail.diff_mode,
                                                            detail.diff_noise, detail.diff_function, detail.compact))
        before = stage_diff.stage_text(model, a) if a is not None else None
        after = stage_diff.stage_text(model, b) if b is not None else None
        if before is None or after is None:
            return self.set_document(Document(["(pick a stage with , . k j in the IR tab; A needs an earlier stage "
                                               "of the same language that differs)"]))
        diff = stage_diff.compare(before, after, detail.diff_noise, detail.diff_function)
        if detail.diff_mode == "unified":
            makers = stage_diff.hunk_makers(model, detail.stages(), a, b, diff, detail.diff_noise)
            return self.set_document(UnifiedLines(diff, (a.label, b.label), makers=makers))
        width = self.width_or_later()
        longest = max((len(line) for line in diff.before), default=10)
        self.set_document(SideBySideRows(diff, column=max(16, min(longest, (width - 3) // 2))))
