"""The detail pane: one job's source, IR by phase, finish diff, PTX, host assembly and events.

Only the active tab is computed, and only again when its job changed.
"""
from __future__ import annotations

import os

from rich.markup import escape as _markup_escape
from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from kdebug import events as E
from kdebug.session import stage_diff
from kdebug.session.model import SessionModel
from kdebug.session.navigation import DescendPath
from kdebug.stages import in_stage_order
from kdebug.tui import descend, tab_focus, teaching
from kdebug.tui.documents import (CodeDocument, Document, JoinedDocument, RemarkedDocument, SideBySideDocument,
                                  SideBySideRows, StyledDocument, UnifiedDiffDocument, UnifiedLines)
from kdebug.tui.message_screen import MessageScreen
from kdebug.tui.messages import GoToJob
from kdebug.tui.site_view import SiteView
from kdebug.tui.stage_views import diff_bar, pass_bar, phase_bar
from kdebug.tui.tabs import NARROW, TAB_IDS, TABS
from kdebug.tui.textview import TextView

ARROW = " \u2192 "
MORE = " \u2026 o: more"  # the end of a banner cut to its height
# a derivative job's IR view: primal -> primal_resolved -> derivative (forward mode), or -> augmented_forward
# -> reverse (reverse mode), each shown as a diff of the one before; d in the IR tab shows the stage's own text
DIFFED_AGAINST = {"primal_resolved": "primal", "derivative": "primal_resolved",
                  "augmented_forward": "primal_resolved", "reverse": "augmented_forward"}
SUFFIX = {"llvm": ".ll", "python": ".py", "ptx": ".ptx", "asm": ".s", "text": ".txt"}


def ir_toggle_help(phase: str, before: str | None, plain: bool) -> str:
    """The IR tab's line on what d shows: a derivative's stage diffed against ``before`` or as its own
    text; the tape as written (grouped by source line, its first line says so itself)."""
    if phase == "tape":
        return "d: the tape by source line" if plain else ""
    return f"d: the diff against {before}" if plain else f"Shown as a diff against {before}. d: {phase} itself"


def event_line(ev: E.Event) -> tuple[str, str]:
    """One event as a listing line and its style."""
    bits = []
    for name in ("phase", "reason", "duration", "target_job", "round", "resolution", "breakpoint", "message",
                 "error", "severity", "category"):
        value = getattr(ev, name, None)
        if value in (None, "", 0.0):
            continue
        if name == "duration":
            value = f"{value * 1e3:.2f} ms"
        bits.append(f"{name}={value}" if name not in ("phase", "message") else str(value))
    if isinstance(ev, E.Snapshot):
        bits.append(f"{ev.text.count(chr(10)) + 1} lines")
    if isinstance(ev, E.Reentrant):
        bits.append(ARROW.join(ev.cycle_names))
    style = {"job_failed": "red", "diagnostic": "red", "reentrant": "magenta", "paused": "yellow",
             "job_finished": "green", "snapshot": "dim"}.get(ev.kind, "")
    return f"{ev.t:10.4f}  {ev.kind:<17} {'  '.join(bits)}", style


def error_summary(error: str, cwd: str = "") -> str:
    """An error's first line and its ``hint:`` (what to do instead); the source line and caret are left to
    the Source tab and the whole text to o. A path under ``cwd`` is written relative to it."""
    lines = error.splitlines()
    if lines and cwd:
        lines[0] = lines[0].replace(os.path.abspath(cwd) + os.sep, "")
    hint = next((k for k, line in enumerate(lines) if line.lstrip().startswith("hint:")), None)
    return "\n".join(lines[:1] + (lines[hint:] if hint is not None and hint > 0 else []))


def location_of(diag: E.Diagnostic, cwd: str = "") -> str:
    """``file:line:col`` of a diagnostic ('' when it has none), the file relative to ``cwd`` when inside it."""
    loc = diag.location or {}
    name = loc.get("file")
    if not name:
        return ""
    if cwd and os.path.isabs(name) and os.path.abspath(name).startswith(os.path.abspath(cwd) + os.sep):
        name = os.path.relpath(name, cwd)
    return ":".join(str(p) for p in (name, loc.get("line"), loc.get("col")) if p)


def script_error_document(diag: E.Diagnostic, cwd: str, context: int = 4) -> StyledDocument:
    """A script's error, located: ``file:line:col: message``, the lines around it numbered, the faulting line
    marked and a caret under its column, then the whole message as Python wrote it."""
    doc = StyledDocument()
    where = location_of(diag, cwd)
    doc.append(f"{where}: {diag.message}" if where else diag.message, "bold red")
    loc = diag.location or {}
    try:
        with open(os.path.join(cwd, loc["file"]), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except (KeyError, TypeError, OSError):
        lines = []
    line = loc.get("line") or 0
    if lines and 1 <= line <= len(lines):
        doc.append("")
        width = len(str(min(line + context, len(lines))))
        for n in range(max(1, line - context), min(line + context, len(lines)) + 1):
            mark = "\u25b6" if n == line else " "
            doc.append(f"{mark}{n:>{width}} \u2502 {lines[n - 1]}", "bold reverse red" if n == line else "")
            if n == line and loc.get("col"):
                doc.append(" " * (width + 3 + loc["col"]) + "^", "bold red")
    if diag.text:
        doc.append("")
        for text_line in diag.text.splitlines():
            doc.append(text_line, "red")
    return doc


class DetailPane(Vertical):
    """The actions of the keys the key table gives it (tabs, phases, stages, diffs, search matches,
    descend, copy and save) are its own; it asks for a job to be shown with ``GoToJob``."""

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
        self._phase_bar = ""
        self._events_job: int | None = None
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
                with TabPane(tab.label, id=f"tab-{tab.id}"):
                    yield from self._compose_tab(tab.id)

    def _compose_tab(self, tab: str) -> ComposeResult:
        if tab == "ir":
            yield Static(id="phase-bar")
            yield Static(id="pass-bar")
        info = {"ir": "phase-help", "finish": "finish-help", "ptx": "ptx-info", "asm": "asm-info"}.get(tab)
        if info is not None:
            yield Static(id=info, classes="help")
        if tab == "diff":
            yield Static(id="diff-bar")
        if tab == "strategy":
            with VerticalScroll():
                yield Static(id="strategy-help")
        else:
            yield (SiteView if tab in ("source", "ir") else TextView)(id=f"view-{tab}")

    # ---- what to show ------------------------------------------------------------------
    def reset(self, model: SessionModel) -> None:
        self.model, self.job_id, self.backref = model, None, None
        self.script_error = None
        self.path.clear()
        self._loaded.clear()
        for tab in (t for t in TAB_IDS if t != "strategy"):
            self.query_one(f"#view-{tab}", TextView).set_document(Document([]))
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
    def want_passes(self) -> None:
        """The shown job's toplevel kept its passes for a replay: LLVM runs those pipelines again, in the
        app's replay process (a thread waits for it), and the passes and remarks show when they arrive
        (the pass bar says so meanwhile)."""
        if self.job_id is None or self.job_id not in self.model.jobs:
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
        if self.job_id is not None and self.job_id in self.model.jobs and self.model.root_of(self.job_id).id in job_ids:
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
            focused, shown = self.app.focused, message.pane
            if focused is None or (self in focused.ancestors and shown not in focused.ancestors):
                self.focus_view()  # the view that had the focus is hidden now: the one shown takes it

    def active_view(self) -> TextView | None:
        tab = self.active_tab
        return None if tab == "strategy" else self.query_one(f"#view-{tab}", TextView)

    # ---- phases -------------------------------------------------------------------------
    def phases(self) -> list[str]:
        job = self.model.jobs.get(self.job_id) if self.job_id is not None else None
        if job is None:
            return []
        have = set(job.snapshots)
        return in_stage_order(have)

    def action_step_phase(self, step: int) -> None:
        phases = self.phases()
        if self.hide_unchanged:  # h: the phases that changed nothing are skipped
            changes = stage_diff.phase_changes(self.stages())
            phases = [p for p in phases if changes.get(p, True) or p == self.phase]
        if not phases:
            return
        i = phases.index(self.phase) if self.phase in phases else 0
        self.set_phase(phases[(i + step) % len(phases)])

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

    def action_step_stage(self, step: int) -> None:
        """k j: the previous / next stage, passes included (only those that changed anything, with h)."""
        stages = self.stages()
        if not stages:
            return
        at = self.current_stage_index()
        k = at if at is not None else 0
        for _ in range(len(stages)):
            k = (k + step) % len(stages)
            if stages[k].changed or not self.hide_unchanged:
                break
        self.set_phase(stages[k].phase, stages[k].index)

    def action_toggle_hide_unchanged(self) -> None:
        self.hide_unchanged = not self.hide_unchanged
        self.refresh_active()

    def action_pin_diff_a(self) -> None:
        """m: the stage shown becomes the Diff tab's A; again: A is B's previous change once more."""
        self.diff_a = None if self.diff_a is not None else (self.phase, self.pass_index)
        self._show_diff_tab()

    def action_toggle_diff_noise(self) -> None:
        self.diff_noise = not self.diff_noise
        self._show_diff_tab()

    def action_next_diff_function(self) -> None:
        """f: all functions, then each function the two stages define, then what is outside them."""
        a, b = self._diff_pair()
        names = [None] + stage_diff.function_names(*(stage_diff.stage_text(self.model, s) for s in (a, b) if s)) \
            + [stage_diff.MODULE_LEVEL]
        i = names.index(self.diff_function) if self.diff_function in names else 0
        self.diff_function = names[(i + 1) % len(names)]
        self._show_diff_tab()

    def ir_toggles(self) -> bool:
        """The IR tab shows what d toggles there: a stage shown as a diff of the one before, or the tape."""
        if self.active_tab != "ir" or self.pass_index is not None or self._text(self.phase)[0] is None:
            return False
        before = DIFFED_AGAINST.get(self.phase)
        return self.phase == "tape" or (before is not None and self._text(before)[0] is not None)

    def action_toggle_diff(self) -> None:
        if self.ir_toggles():  # a derivative's stage: the diff of the one before, or its own text
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
        width = self.query_one(f"#view-{tab}", TextView).size.width if tab in ("finish", "diff") else 0
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
        self._keep_place = old is not None and old[0] == key[0] and old[2:5] == key[2:5] and old[6:] == key[6:]
        try:
            getattr(self, f"_show_{tab}")(job)
        finally:
            self._keep_place = False
        self.mark_sites()

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

    _keep_place = False  # refresh_active: the document is the same but for the width
    _revision = 0  # a replay of passes arrived: what the views show changed though no event of the job did

    def _set(self, tab: str, doc: Document, keep: bool = False) -> None:
        self.query_one(f"#view-{tab}", TextView).set_document(doc, keep_position=keep or self._keep_place)

    def _text(self, phase: str, job=None) -> tuple[str | None, str]:
        job = job or self.model.jobs.get(self.job_id)
        sid = job.snapshots.get(phase) if job is not None else None
        snap = self.model.snapshots.get(sid) if sid is not None else None
        return (snap.text, snap.language) if snap is not None else (None, "text")

    def _show_source(self, job) -> None:
        if job is None:
            return self._set("source", script_error_document(self.script_error, self.cwd)
                             if self.script_error is not None else Document([]))
        src = job.source or self._text("parse")[0] or "(source not available)"
        header = f"# {job.source_file}:{job.source_line}\n" if job.source_file else ""
        remarks = self.model.source_remarks(job) if job.source else {}
        if remarks:  # LLVM's remarks beside the lines they name (document index: the header is line 0)
            first = job.source_line - (1 if header else 0)
            self._set("source", RemarkedDocument(header + src, {n - first: r for n, r in remarks.items()}))
        else:
            self._set("source", CodeDocument(header + src, "python"))

    def _show_ir(self, job) -> None:
        phases = self.phases()
        if phases and self.phase not in phases:
            self.phase, self.pass_index = ("optimize" if "optimize" in phases else phases[-1]), None
        stages = self.stages() if job is not None else []
        # each phase is a link: a click runs the app's set_phase action; = marks a phase that changed nothing
        bar = phase_bar(phases, self.phase, stage_diff.phase_changes(stages), self.hide_unchanged, self.compact)
        if bar != self._phase_bar:  # it may wrap, so an update costs a layout: only when it changed
            self._phase_bar = bar
            self.query_one("#phase-bar", Static).update(Content.from_markup(bar))
        in_phase = [s for s in stages if s.is_pass and s.phase == self.phase]
        if self.pass_index is not None and not any(s.index == self.pass_index for s in in_phase):
            self.pass_index = None
        passes = pass_bar(in_phase, self.pass_index, self.hide_unchanged, self.compact) or \
            self._passes_note(job)
        pass_box = self.query_one("#pass-bar", Static)
        if getattr(pass_box, "_markup", None) != passes:
            pass_box._markup = passes
            pass_box.update(Content.from_markup(passes))
            pass_box.display = bool(passes)
        if self.pass_index is not None:
            at = self.current_stage_index()
            text = stage_diff.stage_text(self.model, stages[at]) if at is not None else None
            self._explain("#phase-help", teaching.phase_help(self.phase))
            return self._set("ir", self._ir_document(job, text, "llvm") if text is not None
                             else Document(["(the module before the pipeline was not recorded)"]))
        text, lang = self._text(self.phase) if job is not None else (None, "text")
        before = DIFFED_AGAINST.get(self.phase)
        earlier = self._text(before)[0] if before and text is not None else None
        # an explanation of a phase only above that phase's IR, with what d shows instead of the view
        help_text = teaching.phase_help(self.phase) if text is not None else ""
        toggle = ir_toggle_help(self.phase, before, self.ir_plain) if earlier is not None or self.phase == "tape" else ""
        if help_text and toggle:
            help_text += "\n" + toggle
        self._explain("#phase-help", help_text)
        if text is None:
            state = self.model.job_state(job.id)[0] if job is not None else ""
            return self._set("ir", Document([f"(no IR yet: the job is {state})" if state in ("queued", "compiling")
                                             else "(no IR for this phase)"]))
        if self.phase == "tape" and not self.ir_plain:  # a reverse-mode job's tape, by source line
            from kdebug.tui.tape_view import tape_document  # kept lazy for start-up time
            return self._set("ir", tape_document(text, self.model, job, self.cwd,
                                                 hint="d: the file as written"))
        if earlier is not None and not self.ir_plain:  # a derivative job's stages: what each changed in the one before
            return self._set("ir", UnifiedDiffDocument(earlier, text, names=(before, self.phase)))
        self._set("ir", self._ir_document(job, text, lang))

    def _passes_note(self, job) -> str:
        """The pass bar of a phase whose passes were kept for a replay: being replayed, or why not."""
        if job is None:
            return ""
        if self.phase in job.passes_pending:
            return "[dim]passes[/] being replayed [dim](LLVM runs this phase's pipelines again to record them)[/]"
        why = job.passes_failed.get(self.phase)
        return f"[dim]passes[/] [b]not shown[/]: {_markup_escape(why)}" if why else ""

    def _ir_document(self, job, text: str, language: str) -> Document:
        """The IR of the phase shown (or of one of its passes), LLVM's remarks of that phase's pipelines
        beside the instructions they name (kdebug/tui/remarks.py)."""
        remarks = [r for phase, r in job.remarks if phase == self.phase] if job is not None else []
        if language != "llvm" or not remarks:
            return CodeDocument(text, language)
        from kdebug.tui.remarks import remarked_ir  # kept lazy for start-up time
        return remarked_ir(text, remarks)

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

    def _explain(self, selector: str, text: str) -> None:
        """Fill an explanation box; an empty one takes no line."""
        box = self.query_one(selector, Static)
        if getattr(box, "_explained", None) != text:
            box._explained = text
            box.update(text)
            box.set_class(not text, "empty")
            box.display = bool(text) and self.explanations_shown

    def _show_finish(self, job) -> None:
        help_text = teaching.FINISH_INTRO + "\n" + "\n".join(
            f"\u2022 {name}: {what}" for name, what in teaching.FINISH_PASSES.items())
        before, _ = self._text("before_finish") if job is not None else (None, "")
        after, _ = self._text("after_finish") if job is not None else (None, "")
        misses = [d for d in self.model.diagnostics if d.category == "finish" and job is not None and d.job == job.id]
        if misses:
            help_text = "\u2716 " + misses[0].message + "\n" + help_text
        elif job is not None and before is None and after is None and job.state == "done":
            help_text = "\u2716 this job never went through the finish passes (a finish-coverage miss)\n" + help_text
        self._explain("#finish-help", help_text + f"\nd: {'side by side' if self.diff_mode == 'unified' else 'unified diff'}"
                      " \u00b7 attribute-group renumbering is not a change")
        if before is None or after is None:
            return self._set("finish", Document(["(no before_finish/after_finish snapshots for this job)"]))
        if self.diff_mode == "unified":
            return self._set("finish", UnifiedDiffDocument(before, after))
        width = self.query_one("#view-finish", TextView).size.width
        if not width:  # not laid out yet: come back when it is
            self._loaded.pop("finish", None)
            self.call_after_refresh(self.refresh_active)
            width = 100
        longest = max((len(line) for line in before.expandtabs(4).splitlines()), default=10)
        self._set("finish", SideBySideDocument(before, after, column=max(16, min(longest, (width - 3) // 2))))

    def _show_ptx(self, job) -> None:
        text, _ = self._text("ptx") if job is not None else (None, "")
        if job is not None and text is None:
            emitted, lang = self._text("emit")
            if lang == "ptx":
                text = emitted
        usage = self._text("ptxas")[0] if job is not None else None
        info = teaching.phase_help("ptx")
        if text is None:
            info += ("\nNo PTX for this job: the CPU target emits host code. ctrl+p \u2192 Rerun emitting PTX "
                     "(or kdebug dump --target ptx, or --backend gpu).")
        elif usage:
            info += "\nThe ptxas report (registers, shared and local memory, spills) heads the listing."
        self._explain("#ptx-info", info)
        if not text:
            return self._set("ptx", Document([]))
        # the ptxas report is prose, not PTX: one style, not the PTX lexer's
        head = StyledDocument([(f"// ptxas: {line}", "italic #7f848e") for line in usage.splitlines()] + [("", "")]
                              if usage else [])
        self._set("ptx", JoinedDocument(head, CodeDocument(text, "ptx")))

    def _show_asm(self, job) -> None:
        if job is None:
            return self._set("asm", Document([]))
        owner = job
        text, lang = self._text("emit", job)
        if text is None:
            owner = self.model.root_of(job.id)
            text, lang = self._text("emit", owner)
        info = teaching.phase_help("emit")
        if owner is not job:
            info += f"\nThis job's code is emitted inside its toplevel job #{owner.id} {owner.name}: shown here."
        self._explain("#asm-info", info)
        if text is None or lang == "ptx":
            return self._set("asm", Document(["(no host assembly yet)"]))
        self._set("asm", CodeDocument(text, "asm"))

    def _show_events(self, job) -> None:
        if job is None:
            return self._set("events", Document([]))
        events = self.model.events
        same_job = self._events_job == job.id  # new events of the job shown: keep the reader's place
        self._events_job = job.id
        self._set("events", StyledDocument([event_line(events[i]) for i in job.events]), keep=same_job)

    def _show_strategy(self, job) -> None:
        started = self.model.started
        strategy = started.strategy if started else "worklist"
        text = Text()
        text.append(f"Strategy in use: {strategy}", "bold")
        text.append(f"   backend: {started.backend if started else '?'}\n\n")
        text.append(teaching.strategy_help(strategy) + "\n\n")
        text.append("Reverse mode and nested orders\n", "bold")
        text.append(teaching.REVERSE_MODE + "\n\n")
        text.append("Other strategies (r reruns the script with the next one):\n", "bold")
        for name, para in teaching.STRATEGIES.items():
            if name != strategy:
                text.append("\n" + para + "\n", "dim")
        self.query_one("#strategy-help", Static).update(text)

    def _show_diff_tab(self) -> None:
        if self.active_tab != "diff":
            self.set_tab("diff")
        else:
            self.refresh_active()

    def _diff_pair(self) -> tuple[stage_diff.StageRef | None, stage_diff.StageRef | None]:
        """(A, B): B the stage the IR tab shows, A the pinned stage or B's previous change."""
        stages = self.stages()
        b = self.current_stage_index()
        if b is None:
            return None, None
        if self.diff_a is not None:
            a = next((k for k, s in enumerate(stages) if s.key == self.diff_a), None)
        else:
            a = stage_diff.default_base(self.model, stages, b)
        return (stages[a] if a is not None else None), stages[b]

    def _show_diff(self, job) -> None:
        a, b = self._diff_pair() if job is not None else (None, None)
        self.query_one("#diff-bar", Static).update(diff_bar(a, b, self.diff_a is not None, self.diff_mode,
                                                            self.diff_noise, self.diff_function, self.compact))
        before = stage_diff.stage_text(self.model, a) if a is not None else None
        after = stage_diff.stage_text(self.model, b) if b is not None else None
        if before is None or after is None:
            return self._set("diff", Document(["(pick a stage with , . k j in the IR tab; A needs an earlier stage "
                                               "of the same language that differs)"]))
        diff = stage_diff.compare(before, after, self.diff_noise, self.diff_function)
        if self.diff_mode == "unified":
            makers = stage_diff.hunk_makers(self.model, self.stages(), a, b, diff, self.diff_noise)
            return self._set("diff", UnifiedLines(diff, (a.label, b.label), makers=makers))
        width = self.query_one("#view-diff", TextView).size.width
        if not width:  # not laid out yet: come back when it is
            self._loaded.pop("diff", None)
            self.call_after_refresh(self.refresh_active)
            width = 100
        longest = max((len(line) for line in diff.before), default=10)
        self._set("diff", SideBySideRows(diff, column=max(16, min(longest, (width - 3) // 2))))

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
            name, lang = self.phase, self._text(self.phase)[1]
        elif tab == "diff":
            name, lang = f"diff-{self.diff_mode}", "diff"
        elif tab == "finish":
            name, lang = f"finish-{self.diff_mode}", "diff"
        else:
            name, lang = tab, {"source": "python", "ptx": "ptx", "asm": "asm"}.get(tab, "text")
        suffix = ".diff" if lang == "diff" else SUFFIX.get(lang, ".txt")
        return f"{job.name}-j{job.id}-{name}{suffix}", view.document.text
