"""The IR tab: the job's IR after the phase shown, or after one pass of it; the phase bar and the pass bar
above it (, . step the phases, k j the stages passes included, h hides those that changed nothing)."""
from __future__ import annotations

from rich.markup import escape as markup_escape
from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from kdebug.session import stage_diff
from kdebug.tui import teaching
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import CodeDocument, Document, UnifiedDiffDocument
from kdebug.tui.site_view import SiteView
from kdebug.tui.stage_views import pass_bar, phase_bar

# a derivative job's IR view: primal -> primal_resolved -> derivative (forward mode), or -> augmented_forward
# -> reverse (reverse mode), each shown as a diff of the one before; d in the IR tab shows the stage's own text
DIFFED_AGAINST = {"primal_resolved": "primal", "derivative": "primal_resolved",
                  "augmented_forward": "primal_resolved", "reverse": "augmented_forward"}


def ir_toggle_help(phase: str, before: str | None, plain: bool) -> str:
    """The IR tab's line on what d shows: a derivative's stage diffed against ``before`` or as its own
    text; the tape as written (grouped by source line, its first line says so itself)."""
    if phase == "tape":
        return "d: the tape by source line" if plain else ""
    return f"d: the diff against {before}" if plain else f"Shown as a diff against {before}. d: {phase} itself"


class IrTab(DetailTab):
    tab_id = "ir"

    def __init__(self, detail, label: str) -> None:
        super().__init__(detail, label)
        self._phase_bar = ""  # the markup the phase bar shows (it may wrap: updated only when it changed)
        self._pass_bar: str | None = None  # the markup the pass bar shows

    def compose_views(self) -> ComposeResult:
        yield Static(id="phase-bar")
        yield Static(id="pass-bar")
        yield Static(id="phase-help", classes="help")
        yield SiteView(id="view-ir")

    # ---- its keys -----------------------------------------------------------------------
    def action_step_phase(self, step: int) -> None:
        """, .: the previous / next phase (h: only those that changed anything)."""
        detail = self.detail
        phases = detail.phases()
        if detail.hide_unchanged:  # h: the phases that changed nothing are skipped
            changes = stage_diff.phase_changes(detail.stages())
            phases = [p for p in phases if changes.get(p, True) or p == detail.phase]
        if not phases:
            return
        i = phases.index(detail.phase) if detail.phase in phases else 0
        detail.set_phase(phases[(i + step) % len(phases)])

    def action_step_stage(self, step: int) -> None:
        """k j: the previous / next stage, passes included (only those that changed anything, with h)."""
        detail = self.detail
        stages = detail.stages()
        if not stages:
            return
        at = detail.current_stage_index()
        k = at if at is not None else 0
        for _ in range(len(stages)):
            k = (k + step) % len(stages)
            if stages[k].changed or not detail.hide_unchanged:
                break
        detail.set_phase(stages[k].phase, stages[k].index)

    def action_toggle_hide_unchanged(self) -> None:
        self.detail.hide_unchanged = not self.detail.hide_unchanged
        self.detail.refresh_active()

    def toggles(self) -> bool:
        """Whether d acts here: the stage shown is a derivative's, shown as a diff of the one before, or the tape."""
        detail = self.detail
        if detail.active_tab != "ir" or detail.pass_index is not None or detail.stage_text(detail.phase)[0] is None:
            return False
        before = DIFFED_AGAINST.get(detail.phase)
        return detail.phase == "tape" or (before is not None and detail.stage_text(before)[0] is not None)

    # ---- rendering ----------------------------------------------------------------------
    def show_job(self, job) -> None:
        detail, model = self.detail, self.model
        phases = detail.phases()
        if phases and detail.phase not in phases:
            detail.phase, detail.pass_index = ("optimize" if "optimize" in phases else phases[-1]), None
        stages = detail.stages() if job is not None else []
        # each phase is a link: a click runs the app's set_phase action; = marks a phase that changed nothing
        bar = phase_bar(phases, detail.phase, stage_diff.phase_changes(stages), detail.hide_unchanged, detail.compact)
        if bar != self._phase_bar:  # it may wrap, so an update costs a layout: only when it changed
            self._phase_bar = bar
            self.query_one("#phase-bar", Static).update(Content.from_markup(bar))
        in_phase = [s for s in stages if s.is_pass and s.phase == detail.phase]
        if detail.pass_index is not None and not any(s.index == detail.pass_index for s in in_phase):
            detail.pass_index = None
        passes = pass_bar(in_phase, detail.pass_index, detail.hide_unchanged, detail.compact) or \
            self._passes_note(job)
        if self._pass_bar != passes:
            self._pass_bar = passes
            pass_box = self.query_one("#pass-bar", Static)
            pass_box.update(Content.from_markup(passes))
            pass_box.display = bool(passes)
        if detail.pass_index is not None:
            at = detail.current_stage_index()
            text = stage_diff.stage_text(model, stages[at]) if at is not None else None
            self.explain("#phase-help", teaching.phase_help(detail.phase))
            return self.set_document(self.ir_document(job, text, "llvm") if text is not None
                                     else Document(["(the module before the pipeline was not recorded)"]))
        text, lang = detail.stage_text(detail.phase) if job is not None else (None, "text")
        before = DIFFED_AGAINST.get(detail.phase)
        earlier = detail.stage_text(before)[0] if before and text is not None else None
        # an explanation of a phase only above that phase's IR, with what d shows instead of the view
        help_text = teaching.phase_help(detail.phase) if text is not None else ""
        toggle = ir_toggle_help(detail.phase, before, detail.ir_plain) if earlier is not None or detail.phase == "tape" \
            else ""
        if help_text and toggle:
            help_text += "\n" + toggle
        self.explain("#phase-help", help_text)
        if text is None:
            state = model.job_state(job.id)[0] if job is not None else ""
            return self.set_document(Document([f"(no IR yet: the job is {state})" if state in ("queued", "compiling")
                                               else "(no IR for this phase)"]))
        if detail.phase == "tape" and not detail.ir_plain:  # a reverse-mode job's tape, by source line
            from kdebug.tui.tape_view import tape_document  # kept lazy for start-up time
            return self.set_document(tape_document(text, model, job, detail.cwd, hint="d: the file as written"))
        if earlier is not None and not detail.ir_plain:  # a derivative job's stages: what each changed in the one before
            return self.set_document(UnifiedDiffDocument(earlier, text, names=(before, detail.phase)))
        self.set_document(self.ir_document(job, text, lang))

    def _passes_note(self, job) -> str:
        """The pass bar of a phase whose passes were kept for a replay: being replayed, or why not."""
        if job is None:
            return ""
        phase = self.detail.phase
        if phase in job.passes_pending:
            return "[dim]passes[/] being replayed [dim](LLVM runs this phase's pipelines again to record them)[/]"
        why = job.passes_failed.get(phase)
        return f"[dim]passes[/] [b]not shown[/]: {markup_escape(why)}" if why else ""

    def ir_document(self, job, text: str, language: str) -> Document:
        """The IR of the phase shown (or of one of its passes), LLVM's remarks of that phase's pipelines
        beside the instructions they name (kdebug/tui/remarks.py)."""
        remarks = [r for phase, r in job.remarks if phase == self.detail.phase] if job is not None else []
        if language != "llvm" or not remarks:
            return CodeDocument(text, language)
        from kdebug.tui.remarks import remarked_ir  # kept lazy for start-up time
        return remarked_ir(text, remarks)
