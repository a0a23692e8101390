"""B: ``kdebug bisect`` on the selected job's kernel, from the TUI, and the pass found shown in the IR tab.

The dialog asks for the property (``ir:REGEX``, ``output-differs``, ``error:REGEX``, ``memcheck``,
``race``; filled in from the job: its error, a sanitizer's finding on its launches, else ``ir:``), then
runs the bisection on a worker thread with the session's run options, each build a debuggee child as
``kdebug bisect`` makes them, the builds listed as they are judged. At the end it shows the report (the
first pass and its diff); enter closes it with the IR tab's pass bar at that pass of the job's own
recorded pipeline (the same script and options run the same passes). Escape stops after the build in
flight, or closes.
"""
from __future__ import annotations

import os
import re
import threading

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kdebug.session.model import SessionModel
from kdebug.tui.documents import CodeDocument, Document
from kdebug.tui.textview import TextView


def kernel_of(model: SessionModel, job_id: int | None):
    """The toplevel job whose pipelines compile ``job_id``'s code (a deferred job is optimised in its
    toplevel's module), or None."""
    job = model.jobs.get(job_id) if job_id is not None else None
    while job is not None and job.parent is not None and job.parent in model.jobs:
        job = model.jobs[job.parent]
    return job


def property_for(model: SessionModel, job) -> str:
    """A first property for the dialog, from the job's diagnostics: a race, a bounds error, its error's
    words; else ``ir:`` for a regular expression to be typed."""
    mine = [d for d in model.diagnostics if d.job == job.id]
    if any(d.sanitizer == "racecheck" for d in mine):
        return "race"
    if any(d.category == "memcheck" for d in mine):
        return "memcheck"
    for d in mine:
        if d.severity == "error" and d.message:
            return "error:" + re.escape(d.message.splitlines()[0][:40])
    return "ir:"


def pass_stage(stages, first: list, passes: list[list]):
    """The IR tab's stage of the pass bisect found: ``first`` is ``[number, name, unit, ran, phase, class]``
    of the survey build's ``passes``; the stage is the same occurrence of that pass on that unit in that
    phase of the job's recorded passes, or None where the job recorded none."""
    n, name, unit, _ran, phase, cls = first
    label = cls or name
    occurrence = sum(1 for r in passes if r[0] < n and r[4] == phase and (r[5] or r[1]) == label and r[2] == unit)
    same = [s for s in stages if s.is_pass and s.phase == phase and s.name == label and s.unit == unit]
    return same[occurrence] if occurrence < len(same) else None


class BisectScreen(ModalScreen):
    BINDINGS = [Binding("escape", "stop_or_close", "Stop / close"), Binding("enter", "show_pass", "Show the pass")]
    DEFAULT_CSS = """
    BisectScreen { align: center middle; }
    #bisect-dialog { width: 100%; max-width: 120; height: 100%; max-height: 40; border: thick $accent;
                     background: $surface; padding: 0 1; }
    #bisect-head { height: auto; }
    #bisect-until { height: 3; }
    #bisect-view { height: 1fr; }
    """

    def __init__(self, options, kernel: str, spec: str, stage_of=None) -> None:
        super().__init__()
        self.stage_of = stage_of  # (first, passes) -> the IR tab's StageRef of the pass found, or None
        self.options = options.replace(script=os.path.abspath(options.script), trace=None, snapshots=False,
                                       timeout=None, breakpoints=frozenset())
        self.kernel, self.spec = kernel, spec
        self.cancel = threading.Event()
        self.started = False
        self.result = None  # kdebug.reduce.bisect.BisectResult, once done
        self.failure: str | None = None
        self.steps: list[str] = []

    def compose(self) -> ComposeResult:
        from kdebug.reduce.bisect import HELP  # kept lazy for start-up time
        with Vertical(id="bisect-dialog") as box:
            box.border_title = f"bisect the passes of kernel {self.kernel}"
            yield Static(self._head(HELP), id="bisect-head")
            # the filled-in property is kept, the cursor after it: typing completes it (ir:<8 x float>)
            yield Input(self.spec, id="bisect-until", placeholder="ir:REGEX", select_on_focus=False)
            yield TextView(id="bisect-view")

    def _head(self, help_text: str = "") -> Text:
        name = os.path.basename(self.options.script)
        head = Text(f"{name}: the first pass of {self.kernel}'s optimize and emit pipelines after which the "
                    f"property holds (strategy {self.options.strategy})\n", style="bold")
        if self.result is not None:
            r = self.result
            found = r.first is not None
            head.append(self._first_line() + "\n", style="green" if found else "yellow")
            head.append("enter: show the pass in the IR tab  Escape: close" if found else "Escape: close",
                        style="dim")
        elif self.failure is not None:
            head.append(self.failure + "\n", style="red")
            head.append("enter: try again with the property below  Escape: close", style="dim")
        elif self.started:
            head.append((self.steps[-1] if self.steps else "the first build counts the passes ...") + "\n")
            head.append("Escape: stop after the build in flight", style="dim")
        else:
            head.append(f"properties: {help_text}\n", style="dim")
            head.append("enter: bisect  Escape: close", style="dim")
        return head

    def on_mount(self) -> None:
        self.query_one("#bisect-until", Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self.action_show_pass()

    def _start(self) -> None:
        from kdebug.reduce.bisect import options_for, parse_bisect_property  # kept lazy for start-up time
        text = self.query_one("#bisect-until", Input).value
        try:
            prop = parse_bisect_property(text)
            options = options_for(prop, self.options)
        except ValueError as exc:
            self.failure = str(exc)
            self.query_one("#bisect-head", Static).update(self._head())
            return
        self.spec, self.failure, self.started, self.steps = prop.spec, None, True, []
        self.query_one("#bisect-until", Input).disabled = True
        self.query_one("#bisect-head", Static).update(self._head())
        self.run_worker(lambda: self._bisect(options, prop), thread=True, exit_on_error=False, name="kdebug-bisect")

    # ---- the worker thread -----------------------------------------------------------------------
    def _bisect(self, options, prop) -> None:
        from kdebug.reduce.bisect import BisectError, Bisector  # kept lazy for start-up time
        bisector = Bisector(options, self.kernel, prop, timeout=120.0, on_step=self._step_from_worker,
                            cancel=self.cancel)
        try:
            result = bisector.run()
        except BisectError as exc:
            self.app.call_from_thread(self._ended, None, str(exc))
        except Exception as exc:  # a child that cannot start, a bad script: said here, the session goes on
            self.app.call_from_thread(self._ended, None, f"the bisection failed: {type(exc).__name__}: {exc}")
        else:
            self.app.call_from_thread(self._ended, result, None)
        finally:
            bisector.close()

    def _step_from_worker(self, limit: int, holds: bool, builds: int) -> None:
        self.app.call_from_thread(self._step, limit, holds, builds)

    # ---- on the app's thread -----------------------------------------------------------------------
    def _step(self, limit: int, holds: bool, builds: int) -> None:
        cut = "no pass" if limit == 0 else f"{limit} passes"
        self.steps.append(f"build {builds}: after {cut}: {self.spec} {'holds' if holds else 'does not hold'}")
        self.query_one("#bisect-view", TextView).set_document(Document(list(self.steps)), keep_position=True)
        self.query_one("#bisect-head", Static).update(self._head())

    def _first_line(self) -> str:
        """The report's first line, the pass numbered as the IR tab's pass bar numbers it (LLVM's bisect
        counts only the passes its gate may skip, so its number is another)."""
        r = self.result
        line = r.report().splitlines()[0]
        if r.first is None or self.stage_of is None:
            return line
        stage = self.stage_of(r.first, r.optimised.passes)
        if stage is None:
            return line
        n, name, unit, _, phase, cls = r.first
        return f"first pass: {stage.index} {cls or name} ({phase}, {unit}; opt-bisect's #{n})"

    def _ended(self, result, error: str | None) -> None:
        self.result, self.failure = result, error
        if result is not None:
            # the head says the finding; the view holds the rest of the report (the diff), not the line again
            rest = result.report().splitlines()[1:] if result.first is not None else []
            self.query_one("#bisect-view", TextView).set_document(CodeDocument("\n".join(rest), "diff"))
        else:
            self.started = False
            self.query_one("#bisect-until", Input).disabled = False
        self.query_one("#bisect-head", Static).update(self._head())

    def action_stop_or_close(self) -> None:
        if self.started and self.result is None:
            self.cancel.set()
            self.steps.append("stopping after the build in flight ...")
            self.query_one("#bisect-head", Static).update(self._head())
        else:
            self.dismiss(None)

    def action_show_pass(self) -> None:
        if self.result is not None:
            if self.result.first is not None:
                return self.dismiss((self.result.first, self.result.optimised.passes))
            return self.dismiss(None)
        if not self.started:
            self._start()
