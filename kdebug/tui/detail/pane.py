"""The detail pane's shell: the banner, the descend path, the tab strip, and what the tabs share.

The tabs (kdebug/tui/detail/*_tab.py) render the job this pane shows; the pane keeps the job, the phase
and pass the IR and Diff tabs stand at, the diff layout, and draws the active tab again only when what it
shows changed.
"""
from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent

from kdebug import events as E
from kdebug.session import stage_diff
from kdebug.session.model import SessionModel
from kdebug.session.navigation import DescendPath
from kdebug.stages import in_stage_order
from kdebug.tui import descend, tab_focus
from kdebug.tui.detail.asm_tab import AsmTab
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.detail.diff_tab import DiffTab
from kdebug.tui.detail.events_tab import EventsTab
from kdebug.tui.detail.finish_tab import FinishTab
from kdebug.tui.detail.ir_tab import DIFFED_AGAINST, IrTab
from kdebug.tui.detail.ptx_tab import PtxTab
from kdebug.tui.detail.source_tab import SourceTab, location_of
from kdebug.tui.detail.strategy_tab import StrategyTab
from kdebug.tui.documents import Document, UnifiedLines
from kdebug.tui.message_screen import MessageScreen
from kdebug.tui.messages import GoToJob
from kdebug.tui.site_view import SiteView
from kdebug.tui.tabs import NARROW, TABS
from kdebug.tui.textview import TextView

TAB_WIDGETS = {tab.tab_id: tab for tab in (SourceTab, IrTab, FinishTab, PtxTab, AsmTab, EventsTab, StrategyTab, DiffTab)}
ARROW = " \u2192 "
PASS_VIEWS = ("ir", "diff", "asm")  # the tabs that show what a replay of the passes brings (a phase's host assembly too)
# a session that stopped (paused, ended) replays the shown job's passes once the user stayed this long to look:
# a q right after the end needs none (a replay process started for nothing: ~0.3 s of CPU, and a start that
# competes with the last frame)
LOOK_S = 0.5
MORE = " \u2026 o: more"  # the end of a banner cut to its height
SUFFIX = {"llvm": ".ll", "python": ".py", "ptx": ".ptx", "asm": ".s", "text": ".txt"}


def error_summary(error: str, cwd: str = "") -> str:
    """An error's first line and its ``hint:`` (what to do instead); the source line and caret are left to
    the Source tab and the whole text to o. A path under ``cwd`` is written relative to it."""
    lines = error.splitlines()
    if lines and cwd:
        lines[0] = lines[0].replace(os.path.abspath(cwd) + os.sep, "")
    hint = next((k for k, line in enumerate(lines) if line.lstrip().startswith("hint:")), None)
    return "\n".join(lines[:1] + (lines[hint:] if hint is not None and hint > 0 else []))


class DetailPane(Vertical):
    """The keys the key table gives the pane (tabs, descend, the banner, search matches, copy and save) are
    its actions; a tab's own keys are the tab's. It asks for a job to be shown with ``GoToJob``."""

    ALLOW_MAXIMIZE = True  # z on one of its views zooms the pane: banner, tabs and view

    def __init__(self, model: SessionModel, cwd: str = ".", id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.cwd = cwd  # where w saves the view
        self.path = DescendPath()  # the jobs enter descended from (u goes back)
        self.job_id: int | None = None
        self.backref: int | None = None
        self.phase = "optimize"
        self.diff_mode = "unified"
        self.ir_plain = False  # d in the IR tab: a derivative's stages as their own text, the tape as written
        self._loaded: dict[str, tuple] = {}
        self._look = None  # the timer of a stopped session's replay (want_passes)
        self.explain: bool | None = None  # explanation boxes shown; None: when the screen is tall enough
        self._banner_lines = -1
        self.pending_cursor: tuple[int, str, int] | None = None  # (job, tab, line): where an ascend returns
        self.request_focus = None  # the request site to highlight (descend.follow_request)
        self.pass_index: int | None = None  # the pass of self.phase shown (None: the phase's own snapshot)
        self.hide_unchanged = False  # h: phases and passes that changed nothing leave the bars and the stepping
        self.diff_a: tuple[str, int | None] | None = None  # the Diff tab's A, pinned with m (None: B's previous change)
        self.diff_noise = True  # i: attribute-group renumbering and metadata are no change
        self.diff_function: str | None = None  # f: one function of the diffed modules (None: all)
        self._stages: tuple[tuple, list] = ((), [])
        self.script_error: E.Diagnostic | None = None  # the script's own error, shown while no job is
        self._replaying: set[int] = set()  # toplevel jobs whose kept passes a thread replays now

    def compose(self) -> ComposeResult:
        yield Static("no job yet", id="banner")
        yield descend.PathBar(id="path")
        with TabbedContent(id="detail-tabs"):
            for tab in TABS:
                yield TAB_WIDGETS[tab.id](self, tab.label)

    def tab(self, tab_id: str) -> DetailTab:
        return self.query_one(f"#tab-{tab_id}", DetailTab)

    # ---- what to show ------------------------------------------------------------------
    def reset(self, model: SessionModel) -> None:
        self.model, self.job_id, self.backref = model, None, None
        self.script_error = None
        self.path.clear()
        self._loaded.clear()
        for tab in self.query(DetailTab):
            if tab.view is not None:
                tab.view.set_document(Document([]))
        self._set_banner(Text("no job yet"))
        self.refresh_active()

    def show(self, job_id: int, backref: int | None = None) -> None:
        self._show_path(job_id)
        if (job_id, backref) == (self.job_id, self.backref):
            return
        self.job_id, self.backref = job_id, backref
        self._update_banner()
        self.refresh_active()
        self.want_passes()

    # ---- passes kept for a replay (the live TUI's default: kdebug/passes.py) ------------------------
    def want_passes(self, now: bool = False, looked: bool = False) -> None:
        """The shown job's toplevel kept its passes for a replay: LLVM runs those pipelines again, in the
        app's replay process (a thread waits for it), and the passes and remarks show when they arrive
        (the pass bar says so meanwhile). Replayed where someone may look (``now``, a tab that shows
        them, a session that stopped, paused or ended, once the user stayed ``LOOK_S`` to look:
        ``looked``); while the script runs and the tab shown has none, a replay only slows the debuggee
        beside it (16 s of LLVM for gradient_hvp.py's job, measured)."""
        if self.job_id is None or self.job_id not in self.model.jobs:
            return
        if not now and self.active_tab not in PASS_VIEWS:
            if self.model.ended is None and self.model.paused is None:
                return
            if not looked:
                if self._look is None:
                    self._look = self.set_timer(LOOK_S, self._looked)
                    self.set_timer(LOOK_S / 2, self._warm_replays)
                return
        root = self.model.root_of(self.job_id)
        if not root.passes_pending or root.id in self._replaying:
            return
        self._replaying.add(root.id)
        model = self.model
        replay = getattr(self.app, "pass_replayer", None)  # the app's replay process (replay_worker.py)
        replay = replay.replay if replay is not None else None

        def work() -> None:
            try:
                events, failed = model.replayed_events(root.id, replay)
            except Exception as exc:  # noqa: BLE001 - said in the pass bar, never the end of the TUI
                events, failed = [], {phase: f"the passes could not be replayed ({exc})" for phase in root.passes_pending}
            try:
                self.app.call_from_thread(self._replayed, model, root.id, events, failed)
            except Exception:  # noqa: BLE001 - the app closed meanwhile
                pass

        import threading  # kept lazy for start-up time
        threading.Thread(target=work, name="kdebug-pass-replay", daemon=True).start()

    def _warm_replays(self) -> None:
        """The replay process started halfway through ``LOOK_S``, so that a replay after it waits little for
        the process's start-up (LLVM's import), and a q right after the session's end starts none. Not at the
        run's start: while the script runs and no tab shows passes, that process only competed with the
        debuggee's start (~0.13 s of CPU a run, measured on saxpy) and was killed unused by a quick q."""
        replayer = getattr(self.app, "pass_replayer", None)
        if replayer is not None and self.model.jobs.get(self.job_id) is not None \
                and self.model.root_of(self.job_id).passes_pending:
            replayer.warm()

    def _looked(self) -> None:
        self._look = None
        self.want_passes(looked=True)

    def _replayed(self, model: SessionModel, root: int, events: list, failed: dict[str, str]) -> None:
        self._replaying.discard(root)
        if model is not self.model:  # another run started meanwhile
            return
        model.apply_replayed(root, events, failed)
        self._stages = ((), [])
        self._revision += 1  # every view shows it again, each keeping its reader's place and cursor
        self._update_banner()
        self.refresh_active()
        self.want_passes()  # a phase that arrived while these ran

    def script_failed(self) -> bool:
        """The session failed before any job: show the script's located error (True when it is shown now)."""
        ended = self.model.ended
        if self.job_id is not None or ended is None or ended.status in ("ok", "interrupted") \
                or self.script_error is not None:
            return False
        diag = next((d for d in self.model.diagnostics if d.severity == "error" and d.job is None), None)
        if diag is None:
            return False
        self.show_script_error(diag)
        return True

    def show_script_error(self, diag: E.Diagnostic) -> None:
        """The script failed before any job (a syntax error, an exception at import): its located error
        in the banner and the Source tab, the faulting line marked, while no job is shown."""
        self.script_error = diag
        self._loaded.pop("source", None)
        if self.job_id is None:
            self._update_banner()
            self.set_tab("source")
            self.refresh_active()

    def jobs_changed(self, job_ids: set[int]) -> None:
        """Events arrived for these jobs: redraw what shows them."""
        if self.job_id in job_ids:
            self._update_banner()
            self.refresh_active()
        if self.job_id is not None and self.job_id in self.model.jobs and \
                (self.job_id in job_ids or self.model.root_of(self.job_id).id in job_ids):  # the end touches it
            self.want_passes()
        elif self.active_tab == "strategy":
            self.refresh_active()

    @property
    def active_tab(self) -> str:
        active = self.query_one("#detail-tabs", TabbedContent).active or "tab-source"
        return active.removeprefix("tab-")

    def set_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = f"tab-{tab}"

    def action_tab(self, tab: str) -> None:
        """1-8: the tab shown, and its view focused (the arrows, enter and z then act on it)."""
        self.set_tab(tab)
        self.focus_view()

    def focus_view(self) -> None:
        """Focus the active tab's view (the Strategy tab: its scroll)."""
        pane = self.query_one("#detail-tabs", TabbedContent)
        target = next((w for w in pane.get_pane(pane.active).query("*") if w.focusable), None) if pane.active else None
        if target is not None:
            target.focus(scroll_visible=False)

    def on_mount(self) -> None:
        tab_focus.skip_tab_strip(self.query_one("#detail-tabs", TabbedContent))
        self._fit_tab_labels()

    @property
    def compact(self) -> bool:
        """Below 32 lines (80x24): the IR and Diff tabs' bars take one line each (kdebug.tcss)."""
        return self.app.size.height < 32

    def _fit_tab_labels(self) -> None:
        narrow = self.app.size.width < NARROW
        tabbed = self.query_one("#detail-tabs", TabbedContent)
        for tab in TABS:
            label = tab.short if narrow and tab.short else tab.label
            strip_tab = tabbed.get_tab(f"tab-{tab.id}")
            if str(strip_tab.label) != label:
                strip_tab.label = label

    def on_resize(self) -> None:
        self._fit_tab_labels()
        self._show_explanations()
        self._banner_lines = -1
        self.call_after_refresh(self._update_banner)  # the banner's wrap follows the width

    def on_text_view_resized(self, message: TextView.Resized) -> None:
        # the finish view itself (a zoom resizes it, not this pane): side by side splits its width
        if message.view.id in ("view-finish", "view-diff") and self.diff_mode == "side":
            self.call_after_refresh(self.refresh_active)

    def action_toggle_explain(self) -> None:
        self.explain = not self.explanations_shown
        self._show_explanations()

    @property
    def explanations_shown(self) -> bool:
        return self.explain if self.explain is not None else self.app.size.height >= 32

    def _show_explanations(self) -> None:
        shown = self.explanations_shown
        for box in self.query(".help"):
            box.display = shown and not box.has_class("empty")

    def on_tabbed_content_tab_activated(self, message: TabbedContent.TabActivated) -> None:
        if message.tabbed_content.id == "detail-tabs":
            self.refresh_active()
            self.want_passes()  # a tab that shows passes
            focused, shown = self.app.focused, message.pane
            if focused is None or (self in focused.ancestors and shown not in focused.ancestors):
                self.focus_view()  # the view that had the focus is hidden now: the one shown takes it

    def active_view(self) -> TextView | None:
        return self.tab(self.active_tab).view

    # ---- phases -------------------------------------------------------------------------
    def phases(self) -> list[str]:
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        if job is None:
            return []
        have = set(job.snapshots)
        return in_stage_order(have)

    def set_phase(self, phase: str, pass_index: int | None = None) -> None:
        self.phase, self.pass_index = phase, pass_index
        if self.active_tab not in ("ir", "diff"):  # the Diff tab's B is the stage the IR tab shows
            self.set_tab("ir")
        else:
            self.refresh_active()

    action_set_phase = set_phase  # a click on the phase or the pass bar

    # ---- stages: phases and the passes inside them --------------------------------------
    def stages(self) -> list[stage_diff.StageRef]:
        """The job's stages (``stage_diff.job_stages``), rebuilt when its events changed."""
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        if job is None:
            return []
        key = (self.model, job.id, len(job.events))
        if self._stages[0] != key:
            self._stages = (key, stage_diff.job_stages(self.model, job.id))
        return self._stages[1]

    def current_stage_index(self) -> int | None:
        stages = self.stages()
        for k, s in enumerate(stages):
            if s.key == (self.phase, self.pass_index):
                return k
        return None

    def action_toggle_diff(self) -> None:
        """d: in the IR tab, a derivative's stage as a diff of the one before or as its own text (the tape:
        by source line or as written); else the Finish and Diff tabs' layout, unified or side by side."""
        if self.tab("ir").toggles():  # a derivative's stage: the diff of the one before, or its own text
            self.ir_plain = not self.ir_plain
            return self.refresh_active()
        self.diff_mode = "side" if self.diff_mode == "unified" else "unified"
        if self.active_tab not in ("finish", "diff"):
            self.set_tab("finish")
        else:
            self.refresh_active()

    # ---- rendering ----------------------------------------------------------------------
    def _update_banner(self) -> None:
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        if job is None:
            diag = self.script_error
            if diag is None:
                return self._set_banner(Text("no job yet"))
            text = Text(f"\u2716 {diag.message}", "bold red")
            text.append(f" at {location_of(diag, self.cwd) or 'the script start'}", "bold red")
            text.append("\nno kernel was compiled; the Source tab shows the line"
                        + (" (fix it, then r reruns)" if self.app.opts is not None else ""), "dim")
            return self._set_banner(text, diag.text, tall=True)
        text = Text()
        if self.backref is not None and self.backref < len(self.model.reentrant):
            # what happened first: the resolution, then the cycle, so a narrow pane wraps, never cuts
            # it; the job's own line stays short here (its full banner is one line up in the tree)
            ev = self.model.reentrant[self.backref]
            text.append("\u21bb re-entrant request, ", "bold magenta")
            text.append(ev.resolution, "bold red" if ev.resolution == "stopped" else "bold magenta")
            text.append(": cycle ", "bold magenta")
            text.append(ARROW.join(ev.cycle_names or map(str, ev.cycle)), "bold reverse magenta")
            text.append(f"  #{ev.job} asks for #{ev.target_job} (g goes there)\n", "magenta")
            state = self.model.job_state(job.id)[0]
            text.append(f"in #{job.id} {job.name}, {state}", "dim")
            if job.error:
                text.append("\n" + error_summary(job.error, self.cwd), "red")
            self._set_banner(text, job.error, tall=True)
            return
        state, phase = self.model.job_state(job.id)
        # the name and the state first: a one-line banner (80x24) keeps them, the argument types give way
        args = job.signature[len(job.name):] if job.signature.startswith(job.name) else ""
        back = descend.way_back(self.path, self.model) if self.compact else None
        if back is not None:  # below 32 lines the path bar takes no line: the banner says the way back
            text.append_text(back)
        text.append(f"#{job.id} ", "bold")
        text.append(job.name if args else job.signature, "bold")
        text.append("  ")
        text.append(state, {"failed": "bold red", "done": "green", "compiling": "yellow"}.get(state, ""))
        if phase:
            text.append(f" ({phase})", "yellow")
        if job.compile_time:
            text.append(f" in {job.compile_time * 1e3:.1f} ms")
        text.append(f"  {job.kind} on {job.target}")
        if args:
            text.append(f"  {args}", "bold")
        if job.parent is not None:
            text.append(f"  deferred: requested by #{job.parent} via {job.reason}", "magenta")
        if job.resolved_round:
            text.append(f", resolved by the toplevel in round {job.resolved_round}", "cyan")
        if job.duplicate_of is not None:
            text.append(f"  duplicate codegen: the same key as #{job.duplicate_of}", "bold yellow")
        for miss in (d for d in self.model.diagnostics if d.category == "finish" and d.job == job.id):
            text.append("\n\u2716 finish-coverage miss: " + miss.message.splitlines()[0], "bold red")
        if job.error:
            text.append("\n" + error_summary(job.error, self.cwd), "red")
        self._set_banner(text, job.error)

    def _set_banner(self, text: Text, full: str | None = None, tall: bool = False) -> None:
        """The banner wraps (height auto), never cut silently: past its height its last line says that
        o opens it all (with ``full``, the whole error). A layout only when its number of lines changes,
        since a layout on every key in the tree costs more than the rest of the answer."""
        banner = self.query_one("#banner", Static)
        # a ↻'s cycle and resolution, a script's error, keep three lines at 80x24 (kdebug.tcss)
        banner.set_class(tall, "tall")
        self._banner_full = text.copy()
        if full:  # the whole error in place of its summary
            at = text.plain.rfind(error_summary(full, self.cwd))
            self._banner_full = text[:at].copy() if at > 0 else text.copy()
            self._banner_full.rstrip()
            self._banner_full.append("\n" + full, "red")
        width = banner.content_size.width
        if width > 0:
            wrapped = text.wrap(self.app.console, width)
            limit = banner.styles.max_height.value if banner.styles.max_height is not None else 6
            limit = max(1, int(limit))
            self._banner_cut = len(wrapped) > limit or bool(full and full.strip() != error_summary(full, self.cwd))
            hinted = None
            if self._banner_cut and len(wrapped) <= limit:
                hinted = text.copy()
                hinted.append("  (o: all of it)", "dim")
                if len(hinted.wrap(self.app.console, width)) > limit:  # no room for the hint whole: cut as below
                    hinted, wrapped = None, [*wrapped, Text()]
            if len(wrapped) > limit:  # its last line says what is left out, and which key shows it
                kept = list(wrapped[:limit])
                last = kept[-1].copy()
                last.rstrip()
                last.truncate(max(0, width - len(MORE)))
                space = last.plain.rfind(" ")
                if len(last.plain) > width - len(MORE) - 1 and space > width // 2:  # at a word's end, not mid-word
                    last.truncate(space)
                    last.rstrip()
                last.append(MORE, "bold reverse")
                kept[-1] = last
                text = Text("\n").join(kept)
            elif hinted is not None:
                text = hinted
            lines = min(len(wrapped), limit)
        else:
            lines = -1
        banner.update(text, layout=lines != self._banner_lines or lines < 0)
        self._banner_lines = lines

    def action_open_banner(self) -> None:
        """o: the banner in full, with the job's whole error (its source line and caret, its hint)."""
        full = getattr(self, "_banner_full", None)
        if full is None or not full.plain.strip():
            return self.notify("nothing to open: the banner is empty")
        self.app.push_screen(MessageScreen("the banner in full", full))

    def refresh_active(self) -> None:
        tab = self.active_tab
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        version = (len(job.events) if job is not None else -1, self._revision)
        width = self.tab(tab).view.size.width if tab in ("finish", "diff") else 0
        key = (self.job_id, version, self.phase, self.diff_mode, len(self.model.events) if tab == "strategy" else 0,
               width, self.pass_index, self.hide_unchanged, self.compact,  # side by side splits the width
               (self.diff_a, self.diff_noise, self.diff_function) if tab == "diff" else None,
               self.ir_plain if tab == "ir" else None)
        old = self._loaded.get(tab)
        if old == key:
            return
        self._loaded[tab] = key
        # only the width changed (a zoom, a resize: side by side splits it), or the job's events grew
        # (its passes' replay, remarks): the same view of the same job, so the reader keeps the place
        # and the cursor (keys typed meanwhile are not lost)
        self.keep_place = old is not None and old[0] == key[0] and old[2:5] == key[2:5] and old[6:] == key[6:]
        try:
            self.tab(tab).show_job(job)
        finally:
            self.keep_place = False
        self.mark_sites()

    def draw_again(self, tab: str) -> None:
        """A tab that was not laid out yet (a side-by-side diff needs its width): drawn once it is."""
        self._loaded.pop(tab, None)
        self.call_after_refresh(self.refresh_active)

    def mark_sites(self) -> None:
        """The request sites of the Source or IR view shown, and the request the session stands at."""
        tab, pending = self.active_tab, self.pending_cursor
        cursor = pending[2] if pending is not None and pending[:2] == (self.job_id, tab) else None
        if cursor is not None:
            self.pending_cursor = None
        if tab in ("source", "ir"):
            job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
            descend.mark(self.query_one(f"#view-{tab}", SiteView), self.model, job, self.request_focus, tab, cursor)

    def follow_request(self, stepped: bool) -> None:
        """The request site to highlight, after the session stopped, stepped or travelled."""
        self.request_focus = descend.follow_request(self.model, self.request_focus, stepped)

    def stopped_at(self, breakpoint: str) -> None:
        """The session paused (the tree has moved to the job it stands at): its request site marked; at a
        finish breakpoint, what the finish passes are about to change."""
        self.follow_request(stepped=breakpoint == "step")
        self.mark_sites()
        self.want_passes()  # stopped: the passes of the job shown are replayed while the user looks
        if breakpoint == "finish":
            self.set_phase("before_finish")

    # ---- descend and ascend ------------------------------------------------------------
    def _show_path(self, here: int | None) -> None:
        self.query_one("#path", descend.PathBar).show_path(self.path, self.model, here)

    def action_descend(self) -> None:
        focused, tab = self.app.focused, self.active_tab  # the focused Source or IR view, else the one shown
        view = focused if isinstance(focused, SiteView) else (
            self.query_one(f"#view-{tab}", SiteView) if tab in ("source", "ir") else None)
        to = descend.go_down(self.path, view, self.job_id, tab, self.phase)
        if isinstance(to, str):
            return self.notify(to)
        self.post_message(GoToJob(to))
        self._show_path(to)

    def action_ascend(self) -> None:
        stop = descend.go_up(self.path)
        if isinstance(stop, str):
            return self.notify(stop)
        self.pending_cursor = (stop.job, stop.tab, stop.line)
        if stop.phase:
            self.phase = stop.phase
        if self.active_tab != stop.tab:
            self.set_tab(stop.tab)
        if self.job_id == stop.job:
            self.mark_sites()
        self.post_message(GoToJob(stop.job))
        self._show_path(stop.job)

    keep_place = False  # refresh_active: the same view of the same job (a tab keeps the reader's place)
    _revision = 0  # a replay of passes arrived: what the views show changed though no event of the job did

    def stage_text(self, phase: str, job=None) -> tuple[str | None, str]:
        """(text, language) of the snapshot of ``phase`` of ``job`` (default: the job shown), or (None, "text")."""
        job = job or self.model.jobs.get(self.job_id)
        sid = job.snapshots.get(phase) if job is not None else None
        snap = self.model.snapshots.get(sid) if sid is not None else None
        return (snap.text, snap.language) if snap is not None else (None, "text")

    def action_pass_lab(self, what: str) -> None:
        """B: bisect the job's passes; l: list its LLVM remarks."""
        return self.action_bisect() if what == "bisect" else self.action_remarks()

    def action_bisect(self) -> None:
        """B: kdebug bisect on the selected job's kernel (kdebug/tui/bisecting.py); at the end the pass bar
        stands at the pass found."""
        from kdebug.tui.bisecting import BisectScreen, kernel_of, pass_stage, property_for  # kept lazy for start-up time
        opts = getattr(self.app, "opts", None)
        if opts is None or getattr(self.app, "replay", False):
            return self.notify("a replay has no script to run: run it with kdebug SCRIPT, then B on the job")
        top = kernel_of(self.model, self.job_id)
        if top is None:
            return self.notify("select a job first")
        chosen = self.model.jobs[self.job_id]

        def show(found) -> None:
            if found is None:
                return
            first, passes = found
            self.post_message(GoToJob(top.id))
            stage = pass_stage(stage_diff.job_stages(self.model, top.id), first, passes)
            if stage is None:
                return self.notify(f"pass #{first[0]} {first[5] or first[1]}: this run recorded no such pass of "
                                   f"job #{top.id} (see the report: B again)")
            self.show(top.id)
            self.set_phase(stage.phase, stage.index)
        def stage_of(first, passes):
            return pass_stage(stage_diff.job_stages(self.model, top.id), first, passes)
        self.app.push_screen(BisectScreen(opts, top.name, property_for(self.model, chosen), stage_of), show)

    def action_remarks(self) -> None:
        """l: the selected job's remarks, a row each; enter goes to the line one names in Source."""
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        if job is None:
            return self.notify("select a job first")
        from kdebug.tui.remarks import RemarksScreen, job_remark_rows  # kept lazy for start-up time
        rows = job_remark_rows(self.model, job)
        self.want_passes(now=True)  # the remarks come with the passes
        if not rows and self.model.root_of(job.id).passes_pending:
            return self.notify(f"job #{job.id}'s remarks are being replayed with its passes: l again in a moment")
        if not rows:
            return self.notify(f"job #{job.id} has no LLVM remarks (its pipelines were not recorded, or LLVM "
                               "had nothing to say)")

        def go_to(line: int | None) -> None:
            if line is None or job.source_line is None:
                return
            header = 1 if job.source_file else 0
            self.pending_cursor = (job.id, "source", line - job.source_line + header)
            if self.active_tab != "source":
                self.set_tab("source")
            else:
                self.mark_sites()
            self.focus_view()
        self.app.push_screen(RemarksScreen(f"LLVM's remarks: job #{job.id} {job.name}", rows), go_to)

    # ---- search, copy and save --------------------------------------------------------
    def find(self, text: str) -> None:
        """The search box's text, searched in the view shown."""
        view = self.active_view()
        if view is None:
            return self.notify("nothing to search in this tab")
        count = view.search(text)
        if count:
            view.focus()  # the match is there: the arrows, enter, n and N go on from it
        self.notify(f"{count} line(s) match {text!r}" if text else "search cleared", timeout=3)

    def action_step_match(self, step: int) -> None:
        view = self.active_view()
        if (view.next_match(step) if view is not None else None) is None:
            self.notify("no matches: / searches")

    def action_copy_stage(self) -> None:
        stage = self.current_stage()
        if stage is None:
            return self.notify("nothing to copy here")
        self.app.copy_to_clipboard(stage[1])
        self.notify(f"copied {stage[0]} ({stage[1].count(chr(10))} lines) to the clipboard")

    def action_export_html(self) -> str | None:
        """The palette's Export: the session so far as ``kdebug export`` writes it, where ``w`` saves."""
        from kdebug.export.html import write_html  # kept lazy for start-up time: only an export needs it
        name = "kdebug-session.html"
        path = os.path.join(self.cwd, name)
        trace = getattr(self.app, "trace_path", None)
        try:
            stats = write_html(self.model, path, os.path.basename(trace) if trace else "")
        except (OSError, ValueError) as exc:  # ValueError: no session_started event yet
            self.app.notify(f"the session was not exported: {getattr(exc, 'strerror', None) or exc} ({path})",
                            severity="error")
            return None
        self.app.notify(f"exported the session to {name} ({stats.bytes / 1e6:.1f} MB); open it in any browser")
        return path

    def action_edit_stage(self) -> None:
        """E: the Source or IR view's text in $EDITOR, then a rerun with the edit (edit and continue)."""
        from kdebug.tui.detail.edit_stage import edit_and_rerun  # kept lazy for start-up time: only E needs it
        edit_and_rerun(self)

    def action_write_stage(self) -> None:
        stage = self.current_stage()
        if stage is None:
            return self.notify("nothing to save here")
        with open(os.path.join(self.cwd, stage[0]), "w", encoding="utf-8") as f:
            f.write(stage[1])
        self.notify(f"saved {stage[0]}")

    def current_stage(self) -> tuple[str, str] | None:
        """(file name, text) of what the active tab shows, for copy and save."""
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        view = self.active_view()
        if job is None or view is None or not len(view.document):
            return None
        tab = self.active_tab
        if tab == "ir" and self.pass_index is not None:
            at = self.current_stage_index()
            stage = self.stages()[at] if at is not None else None
            name, lang = f"{self.phase}-pass{self.pass_index:04d}-{stage.name if stage else ''}", "llvm"
        elif tab == "ir" and isinstance(view.document, UnifiedLines):  # a derivative's stage, diffed
            name, lang = f"{DIFFED_AGAINST.get(self.phase, 'before')}-{self.phase}", "diff"
        elif tab == "ir" and self.phase == "tape" and not self.ir_plain:
            name, lang = "tape-by-line", "text"
        elif tab == "ir":
            name, lang = self.phase, self.stage_text(self.phase)[1]
        elif tab == "diff":
            name, lang = f"diff-{self.diff_mode}", "diff"
        elif tab == "finish":
            name, lang = f"finish-{self.diff_mode}", "diff"
        else:
            name, lang = tab, {"source": "python", "ptx": "ptx", "asm": "asm"}.get(tab, "text")
        suffix = ".diff" if lang == "diff" else SUFFIX.get(lang, ".txt")
        return f"{job.name}-j{job.id}-{name}{suffix}", view.document.text
