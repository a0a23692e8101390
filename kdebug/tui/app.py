"""The kdebug TUI: a live view of a debuggee's events, or of a recorded trace.

The app holds the ``SessionModel`` and routes events to the widgets. The
debuggee's reader threads only append to an inbox and post ``DebuggeeWake``;
the app drains the inbox on its own thread, so a burst of events costs one
redraw.
"""
from __future__ import annotations

import gc
import os
import time
from functools import partial

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Header, Input

from kdebug import events as E
from kdebug.driver import builtin_strategies
from kdebug.session.debuggee import Debuggee
from kdebug.session.model import Alert, SessionModel
from kdebug.session.trace import TraceWriter
from kdebug.targets.replay_worker import ReplayWorker
from kdebug.session.navigation import focused_request
from kdebug.tui import interrupt, key_help, saving, status, tab_focus, terminal, themes, travel
from kdebug.tui.bottom import BottomPanel
from kdebug.tui.breakpoints import BreakpointsScreen
from kdebug.tui.compare import CompareScreen, compare_runs
from kdebug.tui.contrast import ContrastFilter
from kdebug.tui.detail import DetailPane
from kdebug.tui.job_tree import JobTree
from kdebug.tui.help import HelpScreen
from kdebug.tui.inbox import Inbox
from kdebug.tui.messages import DebuggeeWake, GoToJob, JobChosen
from kdebug.tui.search import SearchBox
from kdebug.tui.status import StatusLine
from kdebug.tui.zoom import Zoom

STRATEGIES = builtin_strategies.names()


class KdebugApp(key_help.KeyRouting, App):
    CSS_PATH = "kdebug.tcss"
    TITLE = "kdebug"
    HANG_AFTER_S = 5.0  # seconds without events before the status line suggests x
    BINDINGS = key_help.bindings()  # every key app-wide, each running its owner's action (key_help.py)
    # Textual adds a class for the terminal's size: the layout below 100 columns or 30 lines (kdebug.tcss)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (20, "-short"), (32, "-tall")]

    def __init__(self, opts=None, model: SessionModel | None = None, trace_path: str | None = None,
                 cwd: str | None = None, theme: str | None = None) -> None:
        super().__init__()
        self.opts = opts
        self.replay = model is not None
        self.model = model if model is not None else SessionModel()
        self.trace_path = trace_path
        self.cwd = cwd or os.getcwd()
        self.breakpoints: set[str] = set(opts.breakpoints) if opts is not None else set()
        self.debuggee: Debuggee | None = None
        self._inbox = Inbox(lambda: self.post_message(DebuggeeWake()))
        self._post = self._inbox.post  # called on the debuggee's reader threads
        self._trace_writer = None
        self.trace_error: str | None = None  # why the --trace file stopped, said when the app ends
        self._started_at = time.monotonic()
        self._alerts_seen = 0  # alerts already announced
        self._status_waits = False  # the status line waits behind the tree's new labels (_update_status)
        self.interrupt = interrupt.Interrupt()  # ctrl+c (kdebug/tui/interrupt.py)
        self.zoom = Zoom(self)  # z (kdebug/tui/zoom.py)
        self._stop_asked = ""  # "step" or "pause" while a stop the user asked for has not come
        self.travel: travel.Travel | None = None  # a replay's position in its trace, once it left the end
        self.previous_run: tuple[str, SessionModel] | None = None  # (strategy, model) of the run r replaced
        self.pass_replayer = ReplayWorker()  # LLVM's replays of kept passes, in a process of their own
        self._contrast = ContrastFilter()
        self.register_theme(themes.HIGH_CONTRAST)
        self.theme = themes.THEMES.get(theme or (opts.theme if opts is not None else "dark"), "textual-dark")

    # ---- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield StatusLine(id="status")
        with Horizontal(id="main"):
            yield JobTree(self.model, id="jobs")
            yield DetailPane(self.model, cwd=self.cwd, id="detail")
        yield BottomPanel(self.model, id="bottom")
        yield SearchBox(placeholder="search the view (enter: find, esc: cancel)", id="search")
        yield key_help.KeyHelp(live=not self.replay, id="keys")

    def get_line_filters(self):  # the high-contrast theme's: every glyph at 7:1 or more (contrast.py)
        filters = super().get_line_filters()
        return self._contrast.after(filters, self.console) if self.theme == themes.HIGH_CONTRAST.name else filters

    def get_driver_class(self):
        return terminal.driver_class(super().get_driver_class())  # the screen on a descriptor of its own

    def _main(self, selector: str, expect_type):
        """A widget of the main screen, also while a dialog or the command palette is on top."""
        return self._main_screen.query_one(selector, expect_type)

    @property
    def tree(self) -> JobTree:
        return self._main("#jobs", JobTree)

    @property
    def detail(self) -> DetailPane:
        return self._main("#detail", DetailPane)

    @property
    def bottom(self) -> BottomPanel:
        return self._main("#bottom", BottomPanel)

    @property
    def search_box(self) -> SearchBox:
        return self._main("#search", SearchBox)

    def on_mount(self) -> None:
        self._main_screen = self.screen
        self.tree.focus()
        if self.replay:
            self.sub_title = f"replay of {os.path.basename(self.trace_path or 'trace')}"
            self._route(self.model.events, live=False)
            if self.model.alerts:
                self.notify(f"{len(self.model.alerts)} alert(s) in this trace: see the Diagnostics panel",
                            severity="warning", timeout=4)
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
        self.pass_replayer.close()
        self._stop_debuggee()
        if self._trace_writer is not None:
            self._trace_writer.close()
            self.trace_error = self._trace_writer.error

    # ---- the debuggee ----------------------------------------------------------------------
    def _start(self) -> None:
        if self.opts.trace and self._trace_writer is None:
            try:
                self._trace_writer = TraceWriter(self.opts.trace)
            except OSError as exc:  # another run took the file between two runs of this one
                self.notify(f"{exc}; this run is not recorded", severity="error", timeout=10)
        gen = self._inbox.new_run()
        self._started_at = time.monotonic()
        self.interrupt.new_run()
        opts = self.opts.replace(kernel_print_stdout=False)  # kernels' print() arrives as events, with threads
        self.debuggee = Debuggee(opts, lambda ev: self._post(gen, "event", ev),
                                 lambda line: self._post(gen, "output", line), cwd=self.cwd)
        if self.breakpoints != set(self.opts.breakpoints):
            self.debuggee.send("break", kinds=sorted(self.breakpoints))

    @property
    def generation(self) -> int:
        return self._inbox.generation

    def _stop_debuggee(self) -> None:
        if self.debuggee is not None:
            self.debuggee.close()

    def on_debuggee_wake(self, _: DebuggeeWake) -> None:
        events, lines = self._inbox.drain()
        events = self.interrupt.retell(events)  # after ctrl+c the end is interrupted, as headless says it
        for ev in events:
            self.model.apply(ev)
            if self._trace_writer is not None:
                self._trace_writer(ev)
        try:
            self.bottom.add_output(lines, events)
            if events:
                self._route(events, live=True)
        except NoMatches:  # the app is shutting down and its widgets are gone; the model keeps the events
            pass

    def _route(self, events: list[E.Event], live: bool) -> None:
        """New events (already in the model) to every widget that shows them."""
        tree = self.tree
        tree.add_events(events)
        self.bottom.add_events(events)
        touched = {ev.job for ev in events if isinstance(getattr(ev, "job", None), int)}
        if any(isinstance(ev, E.SessionEnded) for ev in events) and self.detail.job_id is not None:
            touched.add(self.detail.job_id)  # the end may change its state (compiling -> killed)
        if self.detail.job_id is None and self.model.roots:
            tree.select_job(self.model.roots[0])
        self.detail.jobs_changed(touched)
        if self.detail.script_failed():  # before any job: its located error, the Diagnostics panel up
            self.bottom.active = "tab-diagnostics"
        new_alerts = self.model.alerts[self._alerts_seen:]
        self._alerts_seen = len(self.model.alerts)
        if live:
            self._alert(new_alerts)
            for ev in events:
                if isinstance(ev, E.SessionStarted):
                    self._update_header()
                elif isinstance(ev, E.Resumed):
                    self._stop_asked = "step" if ev.action == "step" else ""  # s steps on: the next stop is its
                    self.detail.follow_request(stepped=ev.action == "step")
                elif isinstance(ev, E.Paused):
                    if ev.breakpoint != "step":
                        self._stop_asked = ""
                    request = focused_request(self.model)  # at a request: its requester, the site highlighted
                    if request is not None or ev.job is not None:
                        tree.select_job(request.requester if request is not None else ev.job)
                    self.detail.stopped_at(ev.breakpoint)
                    self.bell()
                elif isinstance(ev, E.SessionEnded):
                    gc.freeze()  # the session is history now: keep the GC off it (see on_mount)
                    if ev.status in ("crashed", "killed"):
                        self.bottom.active = "tab-diagnostics"
        self._status_waits = tree.call_later(self._update_status, True) or self._update_status() or False

    def _alert(self, alerts: list[Alert]) -> None:
        """Alerts pop up the moment they arrive; a burst becomes one notification."""
        if alerts:
            message, title, severity = status.alert_note(alerts)
            self.notify(message, title=title, severity=severity, timeout=5)

    # ---- header and status (kdebug/tui/status.py) ------------------------------------------------
    def _update_header(self) -> None:
        self.sub_title = status.header(self.model, self.opts, self.replay, self.trace_path,
                                       self.size.width or None) or self.sub_title

    def on_resize(self) -> None:
        self._update_header()  # the script's path shortens to the width

    def status_text(self) -> Text:
        dbg, quiet = self.debuggee, None
        if dbg is not None and not self.replay and self.model.ended is None and self.model.paused is None:
            quiet = time.monotonic() - max(dbg.last_event_at, self._started_at)
        return status.status_text(self.model, travel.status(self.travel), self._stop_asked, self.replay,
                                  quiet if quiet is not None and quiet > self.HANG_AFTER_S else None, self.breakpoints)

    def _update_status(self, caught_up: bool = False) -> None:
        # after events it waits behind the tree's redraws (Tree.set_label's queue): never an end beside a compiling job
        if caught_up:
            self._status_waits = False
        elif self._status_waits:
            return
        try:
            self._main("#status", StatusLine).show(self.status_text())
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

    def on_go_to_job(self, message: GoToJob) -> None:
        self.tree.select_job(message.job_id)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input is self.search_box:
            self.detail.find(message.value)

    # ---- actions: help, overlays, layout ------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(live=not self.replay))

    def action_close_overlay(self) -> None:
        """Escape: the search box, Textual's keys panel, a zoomed pane, in that order."""
        if self.search_box.shown:
            self.search_box.close()
        elif self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        elif self.zoom.zoomed:
            self.zoom.back()

    def action_zoom(self) -> None:
        """z: the focused pane (the whole detail pane for one of its views) fills the screen, or goes back."""
        self.zoom.toggle()

    def action_suspend(self) -> None:
        terminal.suspend(self)  # ^z: the job stops and fg resumes it, where a shell can (terminal.py)

    def action_interrupt(self) -> None:
        """ctrl+c: interrupt the script as a debugger does (kdebug/tui/interrupt.py); a second one soon
        after, or one with nothing running, quits."""
        dbg = self.debuggee
        if dbg is None or self.replay or self.model.ended is not None or not dbg.alive or self.interrupt.quits():
            return self.exit(self.exit_status)
        self.interrupt.interrupt(dbg)
        self.set_timer(interrupt.GRACE_S, lambda: dbg is self.debuggee and self.interrupt.overdue(dbg))
        self.notify("interrupted the script: q quits (exit status 130), r reruns it", severity="warning")

    @property
    def exit_status(self) -> int:
        return self.interrupt.exit_status(self.model)

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
        self.push_screen(BreakpointsScreen(self.breakpoints),
                         lambda kinds: kinds is None or self.set_breakpoints(kinds))  # None: cancelled

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
            from kdebug.driver import strategies  # kept lazy for start-up time: the next built-in, then the user's
            strategy = current if ptx is not None else strategies.next_after(current)
        self._stop_debuggee()
        if self._trace_writer is not None:  # --trace records the latest run, as kdebug run would
            self._trace_writer.close()
            self.trace_error = self._trace_writer.error
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
        self._start()
        self._update_header()
        self._update_status()
        self.notify(f"rerunning with strategy {strategy}" + (" and PTX" if self.opts.target == "ptx" else "")
                    + ("; v shows it beside the previous run" if self.previous_run else ""))

    def action_compare_runs(self) -> None:
        """v: the run r replaced beside this one, the difference marked (kdebug/tui/compare.py)."""
        compare_runs(self)

    def show_model(self, model: SessionModel) -> None:
        """Point every view at ``model`` (a rerun's, a replay's earlier position), empty until routed."""
        self.model = model
        self._alerts_seen = len(model.alerts)
        self.tree.reset(model)
        self.detail.reset(model)
        self.bottom.reset(model)

    # ---- actions: time travel in a replay (kdebug/tui/travel.py) --------------------------------
    def action_travel(self, how: str, n: int = 0) -> None:
        """( ) { } and the palette's start and end: the views as they were at another position of the trace."""
        if not self.replay:
            return self.notify(travel.NOT_A_REPLAY)
        if self.travel is None:
            self.travel = travel.Travel(self.model.events)
        moved, note = self.travel.move(how, n, self.model, self.detail.job_id)
        if note:
            self.notify(note)
        if moved is None:
            return
        if moved.model is not self.model:
            self.show_model(moved.model)
        self._route(moved.events, live=False)
        self.detail.follow_request(moved.stepped)
        if moved.job is not None:
            self.tree.select_job(moved.job)  # the cursor may stand there already in a rebuilt tree: no message then
            self.detail.show(moved.job)
        self.detail.mark_sites()
        self._update_status()

    def action_set_theme(self, name: str) -> None:
        """The palette's themes: dark, light, high-contrast (for a projector)."""
        self.theme = themes.THEMES[name]

    # ---- actions: save (kdebug/tui/saving.py) --------------------------------------------------
    def action_save_trace(self) -> str:
        return saving.save_trace(self)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        return saving.save_screenshot(self, filename, path)

    # ---- the command palette: the key table's commands ----------------------------------------
    def get_system_commands(self, screen: Screen):  # Textual's, but its theme picker: kdebug's three themes
        yield from (c for c in super().get_system_commands(screen) if c.title != "Theme")
        for title, help_text, action in key_help.commands(replay=self.replay):
            yield SystemCommand(title, help_text, partial(self.run_action, action))
