"""The kdebug TUI: a live view of a debuggee's events, or of a recorded trace.

The app holds the ``SessionModel`` and routes events to the widgets. The
debuggee's reader threads only append to an inbox and post ``DebuggeeWake``;
the app drains the inbox on its own thread, so a burst of events costs one
redraw.
"""
from __future__ import annotations

import collections
import gc
import os
import signal
import time

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Header, Input, Static, TabbedContent, TabPane

from kdebug import events as E
from kdebug.driver import strategies
from kdebug.session.debuggee import Debuggee
from kdebug.session.model import Alert, SessionModel
from kdebug.session.trace import TraceWriter
from kdebug.session.navigation import DescendPath, focused_request
from kdebug.tui import descend, tab_focus, travel
from kdebug.tui.breakpoints import BreakpointsScreen
from kdebug.tui.compare import CompareScreen
from kdebug.tui.detail import TABS, DetailPane
from kdebug.tui.diagnostics import DiagnosticsPanel
from kdebug.tui.job_tree import JobTree
from kdebug.tui.help import HelpScreen
from kdebug.tui.key_help import KEYS, TAB_NAMES, KeyHelp, binding_action
from kdebug.tui.launches import LaunchesPanel
from kdebug.tui.messages import DebuggeeWake, GoToJob, JobChosen
from kdebug.tui.output import OutputPanel

STRATEGIES = strategies.names()
BUILT_IN = ("command_palette", "focus_next")  # Textual binds these itself
INTERRUPT_AGAIN_S = 3.0  # a second ctrl+c within this quits
TAB_HELP = {"source": "Python source", "ir": "IR after each phase", "finish": "before/after-finish diff",
            "ptx": "PTX and ptxas report", "asm": "host assembly", "events": "events",
            "strategy": "deferred-codegen strategy explained", "diff": "any two stages (phases, passes) compared"}


class KdebugApp(App):
    CSS_PATH = "kdebug.tcss"
    TITLE = "kdebug"
    HANG_AFTER_S = 5.0  # seconds without events before the status line suggests x
    BINDINGS = [Binding(name, binding_action(key, name), key.footer or key.what, show=False, priority=key.priority)
                for key in KEYS if key.action not in BUILT_IN for name in key.keys]
    # Textual adds a class for the terminal's size: the layout below 100 columns or 30 lines (kdebug.tcss)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (20, "-short"), (32, "-tall")]

    def __init__(self, opts=None, model: SessionModel | None = None, trace_path: str | None = None,
                 cwd: str | None = None) -> None:
        super().__init__()
        self.opts = opts
        self.replay = model is not None
        self.model = model if model is not None else SessionModel()
        self.trace_path = trace_path
        self.cwd = cwd or os.getcwd()
        self.breakpoints: set[str] = set(opts.breakpoints) if opts is not None else set()
        self.debuggee: Debuggee | None = None
        self.generation = 0
        self._inbox: collections.deque = collections.deque()
        self._wake_pending = False
        self._trace_writer = None
        self._started_at = time.monotonic()
        self._alerts_seen = 0  # alerts already announced
        self._interrupted_at = -INTERRUPT_AGAIN_S
        self._stop_asked = ""  # "step" or "pause" while a stop the user asked for has not come
        self._status_shown = ""
        self.path = DescendPath()  # the jobs enter descended from (u goes back)
        self.travel: travel.Travel | None = None  # a replay's position in its trace, once it left the end
        self.previous_run: tuple[str, SessionModel] | None = None  # (strategy, model) of the run r replaced

    # ---- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(id="status")
        with Horizontal(id="main"):
            yield JobTree(self.model, id="jobs")
            yield DetailPane(self.model, id="detail")
        with TabbedContent(id="bottom"):
            with TabPane("Launches", id="tab-launches"):
                yield LaunchesPanel(self.model, id="launches")
            with TabPane("Diagnostics", id="tab-diagnostics"):
                yield DiagnosticsPanel(self.model, id="diagnostics")
            with TabPane("Output", id="tab-output"):
                yield OutputPanel(id="output")
        yield Input(placeholder="search the view (enter: find, esc: cancel)", id="search")
        yield KeyHelp(live=not self.replay, id="keys")

    def _main(self, selector: str, expect_type):
        """A widget of the main screen, also while a dialog or the command palette is on top."""
        return self._main_screen.query_one(selector, expect_type)

    @property
    def tree(self) -> JobTree:
        return self._main("#jobs", JobTree)

    @property
    def detail(self) -> DetailPane:
        return self._main("#detail", DetailPane)

    def on_mount(self) -> None:
        self._main_screen = self.screen
        self.tree.focus()
        if self.replay:
            self.sub_title = f"replay of {os.path.basename(self.trace_path or 'trace')}"
            self._route(self.model.events, live=False)
            self._summarise_replay()
            # NOTE: a big trace is a heap of long-lived objects; without this, the cyclic GC
            # walks them all now and then and a key press takes 100 ms instead of 20.
            gc.freeze()
        else:
            self._start()
        self._update_header()
        self._update_status()
        self.set_interval(0.5, self._update_status)

    def on_key(self, event) -> None:
        tab_focus.enter_pane(self, event)

    def on_unmount(self) -> None:
        gc.unfreeze()  # what on_mount froze may be collected again once the app is gone
        self._stop_debuggee()
        if self._trace_writer is not None:
            self._trace_writer.close()

    # ---- the debuggee ----------------------------------------------------------------------
    def _start(self) -> None:
        if self.opts.trace and self._trace_writer is None:
            self._trace_writer = TraceWriter(self.opts.trace)
        self.generation += 1
        gen = self.generation
        self._started_at = time.monotonic()
        opts = self.opts.replace(kernel_print_stdout=False)  # kernels' print() arrives as events, with threads
        self.debuggee = Debuggee(opts, lambda ev: self._post(gen, "event", ev),
                                 lambda line: self._post(gen, "output", line), cwd=self.cwd)
        if self.breakpoints != set(self.opts.breakpoints):
            self.debuggee.send("break", kinds=sorted(self.breakpoints))

    def _post(self, generation: int, kind: str, payload) -> None:
        """Called on the debuggee's reader threads: hand over, never touch a widget."""
        self._inbox.append((generation, kind, payload))
        if not self._wake_pending:
            self._wake_pending = True
            self.post_message(DebuggeeWake())

    def _stop_debuggee(self) -> None:
        if self.debuggee is not None:
            self.debuggee.close()

    def on_debuggee_wake(self, _: DebuggeeWake) -> None:
        self._wake_pending = False
        events, lines = [], []
        while self._inbox:
            gen, kind, payload = self._inbox.popleft()
            if gen != self.generation:
                continue  # from a run that a rerun replaced
            (events if kind == "event" else lines).append(payload)
        for ev in events:
            self.model.apply(ev)
            if self._trace_writer is not None:
                self._trace_writer(ev)
        try:
            if lines:
                self._main("#output", OutputPanel).add_lines(lines)
            for ev in events:
                if isinstance(ev, E.KernelOutput):
                    self._main("#output", OutputPanel).add_kernel_output(ev)
            if events:
                self._route(events, live=True)
        except NoMatches:  # the app is shutting down and its widgets are gone; the model keeps the events
            pass

    def _route(self, events: list[E.Event], live: bool) -> None:
        """New events (already in the model) to every widget that shows them."""
        tree = self.tree
        tree.add_events(events)
        self._main("#launches", LaunchesPanel).add_events(events)
        self._main("#diagnostics", DiagnosticsPanel).refresh_alerts()
        touched = {ev.job for ev in events if isinstance(getattr(ev, "job", None), int)}
        if self.detail.job_id is None and self.model.roots:
            tree.select_job(self.model.roots[0])
        self.detail.jobs_changed(touched)
        new_alerts = self.model.alerts[self._alerts_seen:]
        self._alerts_seen = len(self.model.alerts)
        if live:
            self._alert(new_alerts)
            for ev in events:
                if isinstance(ev, E.SessionStarted):
                    self._update_header()
                elif isinstance(ev, E.Resumed):
                    self._stop_asked = "step" if ev.action == "step" else ""  # s steps on: the next stop is its
                    descend.follow_request(self, stepped=ev.action == "step")
                elif isinstance(ev, E.Paused):
                    if ev.breakpoint != "step":
                        self._stop_asked = ""
                    request = focused_request(self.model)  # at a request: its requester, the site highlighted
                    if request is not None or ev.job is not None:
                        tree.select_job(request.requester if request is not None else ev.job)
                    descend.follow_request(self, stepped=ev.breakpoint == "step")
                    self.detail.mark_sites()
                    if ev.breakpoint == "finish":  # what the finish passes are about to change
                        self.detail.set_phase("before_finish")
                    self.bell()
                elif isinstance(ev, E.SessionEnded):
                    gc.freeze()  # the session is history now: keep the GC off it (see on_mount)
                    if ev.status in ("crashed", "killed"):
                        self._main("#bottom", TabbedContent).active = "tab-diagnostics"
        self._update_status()

    def _alert(self, alerts: list[Alert]) -> None:
        """Alerts pop up the moment they arrive; a burst becomes one notification."""
        if not alerts:
            return
        severity = "error" if any(a.severity == "error" for a in alerts) else "warning"
        title = "re-entrant request" if any(a.title.startswith("re-entrant") for a in alerts) else severity
        more = f"\n(+{len(alerts) - 1} more in Diagnostics)" if len(alerts) > 1 else ""
        self.notify(alerts[0].title + more, title=title, severity=severity, timeout=5)

    def _summarise_replay(self) -> None:
        n = self._main("#diagnostics", DiagnosticsPanel).count
        if n:
            self.notify(f"{n} alert(s) in this trace: see the Diagnostics panel", severity="warning", timeout=4)

    # ---- header and status -------------------------------------------------------------------
    def _update_header(self) -> None:
        started = self.model.started
        if started is not None:
            where = f"replay of {os.path.basename(self.trace_path)} \u00b7 " if self.replay and self.trace_path else ""
            self.sub_title = f"{where}{started.script} \u00b7 backend {started.backend} \u00b7 strategy {started.strategy}"
            if set(self.model.sanitizers) != {"memcheck", "synccheck"}:  # the default stays unsaid
                self.sub_title += f" \u00b7 sanitize {','.join(self.model.sanitizers)}"
        elif self.opts is not None:
            self.sub_title = f"{self.opts.script} \u00b7 strategy {self.opts.strategy} \u00b7 starting"

    def status_text(self) -> Text:
        m = self.model
        text = Text()
        ended, paused = m.ended, m.paused
        traveled = travel.status(self)
        if traveled is not None:
            text.append_text(traveled)
        elif ended is not None:
            style = "bold green" if ended.status == "ok" else "bold red"
            mark = "\u25a0" if ended.status == "ok" else "\u2716"
            text.append(f"{mark} session {ended.status} (exit status {ended.exit_code})", style)
            if ended.error:
                text.append("  " + ended.error.splitlines()[0], "red")
        elif paused is not None:
            # a step stop is the user's own (s or p); a breakpoint names its kind
            how = {"step": "stepped" if self._stop_asked == "step" else "paused"}.get(
                paused.breakpoint, f"breakpoint {paused.breakpoint}")
            text.append(f"\u23f8 {how}: ", "bold yellow")
            text.append(paused.message)
        elif self.replay:
            text.append("replay (trace without session end)", "yellow")
        else:
            text.append("\u25cf running", "bold cyan")
            if self._stop_asked:
                text.append(f"  {self._stop_asked} requested: it stops at the next phase, request or launch "
                            "(plain Python runs on)", "bold yellow")
            dbg = self.debuggee
            if dbg is not None:
                quiet = time.monotonic() - max(dbg.last_event_at, self._started_at)
                if quiet > self.HANG_AFTER_S:
                    text.append(f"  no events for {quiet:.0f} s (hung?): x kills the debuggee", "bold yellow")
        alerts = self._main("#diagnostics", DiagnosticsPanel).count
        text.append(f"   {len(m.jobs)} jobs \u00b7 {len(m.launches)} launches \u00b7 {alerts} alerts", "dim")
        if not self.replay:
            text.append(f" \u00b7 breaks: {','.join(sorted(self.breakpoints)) or 'none'}", "dim")
        return text

    def _update_status(self) -> None:
        try:
            text = self.status_text()
            if text.plain != self._status_shown:  # it may wrap: a layout only when it changed
                self._status_shown = text.plain
                self._main("#status", Static).update(text)
        except NoMatches:  # the app is shutting down: its widgets are gone before its timers
            pass

    # ---- messages from widgets ---------------------------------------------------------------
    def on_job_chosen(self, message: JobChosen) -> None:
        # The tree's cursor is the one truth: a selection it has already left is stale (keys
        # queued faster than they are handled), and a selection never moves the cursor, so two
        # queued selections cannot keep re-posting each other.
        if message.node is not None and message.node is not self.tree.cursor_node:
            return
        self.detail.show(message.job_id, message.backref)
        self.tree.show_cycle(message.backref)
        descend.show_path(self, message.job_id)

    def on_go_to_job(self, message: GoToJob) -> None:
        self.tree.select_job(message.job_id)

    # ---- actions: help, overlays, layout ------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(live=not self.replay))

    def action_close_overlay(self) -> None:
        """Escape: the search box, Textual's keys panel, a zoomed pane, in that order."""
        if self._main("#search", Input).has_class("visible"):
            self._hide_search()
        elif self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        elif self.screen.maximized is not None:
            self.screen.minimize()

    def action_zoom(self) -> None:
        """z: the focused pane (the whole detail pane for one of its views) fills the screen, or goes back."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            screen.maximize(screen.focused)

    def action_toggle_explain(self) -> None:
        self.detail.toggle_explain()

    def action_resize_jobs(self, step: int) -> None:
        self.tree.styles.width = max(12, min(self.size.width - 20, self.tree.size.width + step))

    def action_resize_bottom(self, step: int) -> None:
        bottom = self._main("#bottom", TabbedContent)
        bottom.styles.height = max(3, min(self.size.height - 8, bottom.size.height + step))
        bottom.styles.min_height = 0

    def action_interrupt(self) -> None:
        """ctrl+c: a KeyboardInterrupt for the script; a second one (or one with nothing running) quits."""
        now = time.monotonic()
        dbg = self.debuggee
        if dbg is None or self.replay or self.model.ended is not None or not dbg.alive \
                or now - self._interrupted_at < INTERRUPT_AGAIN_S:
            self.exit()
            return
        self._interrupted_at = now
        dbg.signal(signal.SIGINT)
        self.notify("interrupted the script (KeyboardInterrupt); ctrl+c again quits kdebug", severity="warning")

    # ---- actions: stepping -----------------------------------------------------------------------
    def _live(self) -> Debuggee | None:
        if self.replay:
            self.notify("this is a replay: nothing is running")
            return None
        if self.debuggee is None or self.model.ended is not None:
            self.notify("the session has ended: r reruns the script")
            return None
        return self.debuggee

    def action_step(self) -> None:
        self._ask_stop("step")

    def _ask_stop(self, how: str) -> None:
        """s and p: stop at the next phase, request or launch; say so while the script gets there."""
        dbg = self._live()
        if dbg is None:
            return
        paused = self.model.paused is not None
        dbg.send("step" if paused and how == "step" else "pause")
        self._stop_asked = how
        if not paused:
            self.notify(f"{how}: the script stops at its next phase, deferred request or launch; "
                        "x kills a script stuck in plain Python", timeout=4)
        self._update_status()

    def action_continue(self) -> None:
        dbg = self._live()
        if dbg is None:
            return
        if self.model.paused is None:
            self.notify("not paused: c continues from a breakpoint")
            return
        dbg.send("continue")

    def action_pause(self) -> None:
        if self.model.paused is not None:
            self.notify("already paused: s steps, c continues")
            return
        self._ask_stop("pause")

    def action_breakpoints(self) -> None:
        def apply(kinds: set[str] | None) -> None:
            if kinds is None:
                return
            self.set_breakpoints(kinds)
        self.push_screen(BreakpointsScreen(self.breakpoints), apply)

    def set_breakpoints(self, kinds: set[str]) -> None:
        self.breakpoints = set(kinds)
        if self.debuggee is not None and not self.replay:
            self.debuggee.send("break", kinds=sorted(kinds))
        self._update_status()

    def action_kill(self) -> None:
        dbg = self._live()
        if dbg is not None:
            where = dbg.where(wait=1.0)  # a script stuck in plain Python has no event that says so
            running = any(ln.state == "running" for ln in self.model.launches.values())
            dbg.kill(where, dbg.position(wait=1.0) if running else [])  # and a kernel: its block and while loop
            self.notify("killed the debuggee" + (f" at {where[0]}" if where else "") + " (see Diagnostics)",
                        severity="warning")

    def action_rerun(self, strategy: str | None = None, ptx: bool | None = None) -> None:
        """Run the script again: with ``strategy``, else the next one when ``ptx`` is not being toggled."""
        if self.replay or self.opts is None:
            self.notify("this is a replay: nothing to rerun")
            return
        current = self.opts.strategy
        if strategy is None:
            strategy = current if ptx is not None else STRATEGIES[(STRATEGIES.index(current) + 1) % len(STRATEGIES)]
        self._stop_debuggee()
        if self._trace_writer is not None:  # --trace records the latest run, as kdebug run would
            self._trace_writer.close()
            self._trace_writer = None
        self.clear_notifications()
        if self.model.events:  # kept for v: the two runs side by side
            self.previous_run = (current + (" ptx" if self.opts.target == "ptx" else ""), self.model)
        if isinstance(self.screen, CompareScreen):
            self.screen.dismiss(None)
        self.opts = self.opts.replace(strategy=strategy)
        if ptx is not None:
            self.opts = self.opts.replace(target="ptx" if ptx else "cpu")
        self.show_model(SessionModel())
        self.detail.request_focus = None  # a site of the run replaced
        self._inbox.clear()
        self._start()
        self._update_header()
        self._update_status()
        self.notify(f"rerunning with strategy {strategy}" + (" and PTX" if self.opts.target == "ptx" else "")
                    + ("; v shows it beside the previous run" if self.previous_run else ""))

    def action_compare_runs(self) -> None:
        """v: the run r replaced beside this one, the difference marked."""
        if isinstance(self.screen, CompareScreen):
            return self.screen.dismiss(None)
        if self.previous_run is None:
            self.notify("no previous run to compare: r reruns the script with the next strategy, then v")
            return
        strategy, model = self.previous_run
        now = self.opts.strategy + (" ptx" if self.opts.target == "ptx" else "")
        self.push_screen(CompareScreen(model, self.model, (strategy, now)))

    def show_model(self, model: SessionModel) -> None:
        """Point every view at ``model`` (a rerun's, a replay's earlier position), empty until routed."""
        self.model = model
        self.path.clear()
        self._alerts_seen = len(model.alerts)
        self.tree.reset(model)
        self.detail.reset(model)
        self._main("#launches", LaunchesPanel).reset(model)
        self._main("#diagnostics", DiagnosticsPanel).reset(model)
        self._main("#output", OutputPanel).reset()

    def action_travel(self, step: int) -> None:
        travel.step(self, step)

    def action_travel_jump(self, direction: int) -> None:
        travel.jump(self, direction)

    # ---- actions: navigation ----------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.detail.set_tab(tab)

    def _job_order(self) -> list[int]:
        return [job.id for job, _ in self.model.walk()]

    def _step_job(self, step: int) -> None:
        order = self._job_order()
        if not order:
            return
        cur = self.detail.job_id
        i = order.index(cur) if cur in order else -step
        self.tree.select_job(order[(i + step) % len(order)])

    def action_next_job(self) -> None:
        self._step_job(1)

    def action_previous_job(self) -> None:
        self._step_job(-1)

    def action_set_phase(self, phase: str) -> None:
        self.detail.set_phase(phase)

    def action_next_alert(self) -> None:
        """The next job, in tree order, that raised an alert (a re-entrant request, an error)."""
        order = self._job_order()
        alerts = self.model.job_alert
        cur = self.detail.job_id
        start = order.index(cur) + 1 if cur in order else 0
        for jid in order[start:] + order[:start]:
            if jid in alerts:
                self.tree.select_job(jid)
                return
        self.notify("no job has an alert")

    def action_next_phase(self) -> None:
        self.detail.step_phase(1)

    def action_previous_phase(self) -> None:
        self.detail.step_phase(-1)

    def action_goto_target(self) -> None:
        backref = self.detail.backref
        if backref is None:
            job = self.model.jobs.get(self.detail.job_id)
            if job is None or not job.backrefs:
                self.notify("select a \u21bb back-reference first")
                return
            backref = job.backrefs[0]
        self.tree.select_job(self.model.reentrant[backref].target_job)

    def action_toggle_diff(self) -> None:
        self.detail.toggle_diff()

    def action_descend(self) -> None:
        descend.go_down(self)

    def action_ascend(self) -> None:
        descend.go_up(self)

    # ---- actions: stages, passes and their diff (kdebug/tui/stage_views.py renders them) -------
    def action_next_stage(self) -> None:
        self.detail.step_stage(1)

    def action_previous_stage(self) -> None:
        self.detail.step_stage(-1)

    def action_set_pass(self, phase: str, index: int) -> None:
        self.detail.set_phase(phase, index)

    def action_toggle_hide_unchanged(self) -> None:
        self.detail.toggle_hide_unchanged()

    def action_pin_diff_a(self) -> None:
        self.detail.pin_diff_a()

    def action_toggle_diff_noise(self) -> None:
        self.detail.toggle_diff_noise()

    def action_next_diff_function(self) -> None:
        self.detail.next_diff_function()

    # ---- actions: search -----------------------------------------------------------------------
    def action_search(self) -> None:
        search = self._main("#search", Input)
        self._search_return = self.focused
        search.add_class("visible")
        search.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input.id != "search":
            return
        self._hide_search()
        view = self.detail.active_view()
        if view is None:
            self.notify("nothing to search in this tab")
            return
        count = view.search(message.value)
        self.notify(f"{count} line(s) match {message.value!r}" if message.value else "search cleared",
                    timeout=3)

    def _hide_search(self) -> None:
        search = self._main("#search", Input)
        search.remove_class("visible")
        target = getattr(self, "_search_return", None)
        (target if target is not None and target.is_attached else self.tree).focus()

    def _match(self, step: int) -> None:
        view = self.detail.active_view()
        line = view.next_match(step) if view is not None else None
        if line is None:
            self.notify("no matches: / searches")

    def action_next_match(self) -> None:
        self._match(1)

    def action_previous_match(self) -> None:
        self._match(-1)

    # ---- actions: copy and save ------------------------------------------------------------------
    def action_copy_stage(self) -> None:
        stage = self.detail.current_stage()
        if stage is None:
            self.notify("nothing to copy here")
            return
        self.copy_to_clipboard(stage[1])
        self.notify(f"copied {stage[0]} ({stage[1].count(chr(10))} lines) to the clipboard")

    def action_write_stage(self) -> None:
        stage = self.detail.current_stage()
        if stage is None:
            self.notify("nothing to save here")
            return
        path = os.path.join(self.cwd, stage[0])
        with open(path, "w", encoding="utf-8") as f:
            f.write(stage[1])
        self.notify(f"saved {stage[0]}")

    def action_save_trace(self) -> str:
        name = "kdebug-trace.jsonl"
        path = os.path.join(self.cwd, name)
        with open(path, "w", encoding="utf-8") as f:
            for ev in self.model.events:
                f.write(E.to_line(ev))
        self.notify(f"saved the trace ({len(self.model.events)} events) to {name}; kdebug replay {name}")
        return path

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot: into the working directory unless told otherwise; say where, or why not."""
        path = path or self.cwd
        name = filename or f"kdebug-screenshot-{time.strftime('%Y%m%d-%H%M%S')}.svg"
        try:
            saved = self.save_screenshot(name, path=path)
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc.strerror or exc} ({os.path.join(path, name)})",
                        severity="error")
            return None
        self.notify(f"saved the screenshot to {saved}")
        return saved

    # ---- the command palette ------------------------------------------------------------------
    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        yield SystemCommand("Step", "Run to the next phase, request or launch (s)", self.action_step)
        yield SystemCommand("Continue", "Run to the next breakpoint (c)", self.action_continue)
        yield SystemCommand("Pause", "Stop at the next phase, request or launch (p)", self.action_pause)
        yield SystemCommand("Breakpoints", "Choose which events stop the debuggee (b)", self.action_breakpoints)
        yield SystemCommand("Kill the debuggee", "End a hung script (x)", self.action_kill)
        for strategy in STRATEGIES:
            yield SystemCommand(f"Rerun with strategy {strategy}", "Run the script again (r cycles strategies)",
                                lambda s=strategy: self.action_rerun(s))
        yield SystemCommand("Compare with the previous run", "The two job trees side by side, the difference "
                            "marked (v, after r)", self.action_compare_runs)
        yield SystemCommand("Rerun emitting PTX", "Also compile every job to PTX, with the ptxas report (PTX tab)",
                            lambda: self.action_rerun(ptx=True))
        if self.replay:
            yield SystemCommand("Replay: one event back", "The tree, states and alerts as they were (()",
                                lambda: self.action_travel(-1))
            yield SystemCommand("Replay: one event forward", "())", lambda: self.action_travel(1))
            yield SystemCommand("Replay: back to the previous re-entrant request, finish miss or failure", "{",
                                lambda: self.action_travel_jump(-1))
            yield SystemCommand("Replay: on to the next re-entrant request, finish miss or failure", "}",
                                lambda: self.action_travel_jump(1))
            yield SystemCommand("Replay: to the start", "Before the first event",
                                lambda: travel.go_to(self, 0))
            yield SystemCommand("Replay: to the end", "The whole trace", lambda: travel.go_to(self, 1 << 62))
        yield SystemCommand("Search", "Search the view (/, then n / N)", self.action_search)
        yield SystemCommand("Next match", "n", self.action_next_match)
        yield SystemCommand("Previous match", "N", self.action_previous_match)
        yield SystemCommand("Next job", "]", self.action_next_job)
        yield SystemCommand("Previous job", "[", self.action_previous_job)
        yield SystemCommand("Next alert", "The next job with a re-entrant request or an error (a)", self.action_next_alert)
        yield SystemCommand("Next IR phase", ".", self.action_next_phase)
        yield SystemCommand("Previous IR phase", ",", self.action_previous_phase)
        yield SystemCommand("Go to the re-entrant target", "g, on a \u21bb node", self.action_goto_target)
        yield SystemCommand("Descend into the site's job", "In Source or IR: the job a launch, pointer or grad "
                            "site asks for (enter)", self.action_descend)
        yield SystemCommand("Back along the descend path", "u or backspace", self.action_ascend)
        yield SystemCommand("Toggle diff layout", "Finish and Diff tabs: unified or side by side (d)",
                            self.action_toggle_diff)
        yield SystemCommand("Next stage or pass", "The IR after the next pass of optimize or emit (j)",
                            self.action_next_stage)
        yield SystemCommand("Previous stage or pass", "(k)", self.action_previous_stage)
        yield SystemCommand("Hide unchanged phases and passes", "Or show them again (h)",
                            self.action_toggle_hide_unchanged)
        yield SystemCommand("Pin the diff's A", "The stage shown becomes A of the Diff tab; again: unpin (m)",
                            self.action_pin_diff_a)
        yield SystemCommand("Toggle diff noise", "Attribute-group renumbering and metadata ignored or shown (i)",
                            self.action_toggle_diff_noise)
        yield SystemCommand("Diff one function", "All functions, each in turn, the module level (f)",
                            self.action_next_diff_function)
        yield SystemCommand("Copy this stage", "Copy the view to the clipboard (y)", self.action_copy_stage)
        yield SystemCommand("Save this stage", "Write the view to a file (w)", self.action_write_stage)
        yield SystemCommand("Save the trace", "Write all events as JSON lines (t)", self.action_save_trace)
        for i, tab in enumerate(TABS):
            yield SystemCommand(f"{TAB_NAMES[tab]} tab", f"Show the job's {TAB_HELP[tab]} ({i + 1})",
                                lambda t=tab: self.action_tab(t))
        yield SystemCommand("Help: every key", "The keys of kdebug, by group (? or F1)", self.action_help)
        yield SystemCommand("Show or hide the explanations", "The boxes above the IR, Finish, PTX views (e)",
                            self.action_toggle_explain)
        yield SystemCommand("Zoom the focused pane", "The whole screen for it, or back (z)", self.action_zoom)


def run_tui(opts) -> int:
    """``kdebug FILE.py`` on a terminal: run the script in a debuggee and show it live."""
    import sys
    if not os.path.isfile(opts.script):
        print(f"kdebug: error: no such file: {opts.script}", file=sys.stderr)
        return 2
    app = KdebugApp(opts=opts)
    app.run()
    ended = app.model.ended
    return 0 if ended is not None and ended.status == "ok" else 1


def run_replay(model: SessionModel, path: str) -> int:
    """``kdebug replay TRACE.jsonl`` on a terminal."""
    KdebugApp(model=model, trace_path=path).run()
    return 0
