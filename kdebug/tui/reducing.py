"""R: reduce the script to a reproducer of the selected job's alert, from the TUI.

The alert becomes ``kdebug reduce``'s ``--until`` (``kdebug/reduce/properties.py`` ``for_alert``:
the re-entrant request and its cycle, a finish miss, a duplicate, a sanitizer's finding, an error);
the reduction runs on a worker thread, its trials in debuggee children as ``kdebug reduce`` runs
them, while this screen shows its progress line and each accepted cut. At the end it shows the
reduced script, saved beside the original as ``<stem>.reduced.py``; enter runs it in this TUI (the
original's run stays for ``v``), Escape closes. Escape while it runs stops it after the trials in
flight, keeping the smallest script found so far.
"""
from __future__ import annotations

import os
import threading

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from kdebug.reduce.properties import for_alert
from kdebug.session.model import Alert, SessionModel
from kdebug.tui.documents import CodeDocument, Document
from kdebug.tui.textview import TextView


def alert_to_reduce(model: SessionModel, job: int | None, backref: int | None) -> tuple[str | None, str]:
    """(the ``--until`` property, what it keeps) for the alert at the tree's cursor: a ↻ node's
    re-entrant request, else the job's first alert that names a property; (None, why not) else."""
    if job is None:
        return None, "select a job with an alert first (a: the next one)"
    alerts: list[Alert] = [a for a in model.alerts if a.job == job]
    if backref is not None:
        ev = model.reentrant[backref]
        alerts.sort(key=lambda a: model.events[a.event] is not ev)  # the ↻'s own request first
    if not alerts:
        return None, f"job #{job} has no alert to keep: select one with an alert (a: the next one)"
    for alert in alerts:
        spec = for_alert(model, alert)
        if spec is not None:
            return spec, alert.title
    return None, f"job #{job}'s alert ({alerts[0].title}) names no property kdebug reduce can keep"


class ReduceScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "stop_or_close", "Stop / close"), Binding("enter", "open_result", "Run it")]
    DEFAULT_CSS = """
    ReduceScreen { align: center middle; }
    #reduce-dialog { width: 100%; max-width: 110; height: 100%; max-height: 40; border: thick $accent;
                     background: $surface; padding: 0 1; }
    #reduce-progress { height: auto; }
    #reduce-view { height: 1fr; }
    """

    def __init__(self, options, spec: str, what: str) -> None:
        super().__init__()
        from kdebug.reduce.job import default_out  # kept lazy for start-up time
        self.options = options.replace(script=os.path.abspath(options.script), trace=None, snapshots=False,
                                       timeout=None, breakpoints=frozenset())
        self.spec, self.what = spec, what
        self.out = default_out(self.options.script, os.path.dirname(self.options.script))
        self.cancel = threading.Event()
        self.reduced = None  # kdebug.reduce.job.Result, once done
        self.failure: str | None = None
        self.cuts: list[str] = []  # a line per accepted cut
        self.progress_line = ""
        self.written = False  # the reduced (or, stopped, the smallest so far) script is in ``out``

    def compose(self) -> ComposeResult:
        with Vertical(id="reduce-dialog") as box:
            box.border_title = f"reduce to a reproducer: --until {self.spec}"
            yield Static(self._header(), id="reduce-progress")
            yield TextView(id="reduce-view")

    def _header(self) -> Text:
        name = os.path.basename(self.options.script)
        head = Text(f"{name}: keeps {self.what} (strategy {self.options.strategy})\n", style="bold")
        if self.reduced is not None:
            r = self.reduced
            verdict = "shows" if r.holds else "does NOT show"
            head.append(f"{r.original_lines} \u2192 {r.lines} code lines in {r.trials} trials and {r.seconds:.0f} s; "
                        f"saved to {os.path.basename(r.out)}, which {verdict} it when run plainly\n",
                        style="green" if r.holds else "red")
            head.append("enter: run it in kdebug (v: beside the original's run)  Escape: close", style="dim")
        elif self.failure is not None:
            head.append(self.failure + "\n", style="yellow" if self.written else "red")
            head.append("enter: run it in kdebug  Escape: close" if self.written else "Escape: close", style="dim")
        else:
            head.append((self.progress_line or "checking the original shows it ...") + "\n")
            head.append("Escape: stop (the smallest script so far is kept)", style="dim")
        return head

    def on_mount(self) -> None:
        self.run_worker(self._reduce, thread=True, exit_on_error=False, name="kdebug-reduce")

    # ---- the worker thread -----------------------------------------------------------------------
    def _reduce(self) -> None:
        from kdebug.reduce.job import Cancelled, NothingToReduce, reduce_script  # kept lazy for start-up time
        from kdebug.reduce.properties import parse_property  # kept lazy for start-up time
        from kdebug.driver import strategies  # kept lazy for start-up time
        try:
            prop = parse_property(self.spec, tuple(strategies.names()))
            result = reduce_script(self.options, [prop], self.out, jobs=len(os.sched_getaffinity(0)),
                                   on_progress=self._progress_from_worker, cancel=self.cancel)
        except Cancelled as exc:
            self.app.call_from_thread(self._ended, None, str(exc), exc.out)
        except NothingToReduce as exc:
            self.app.call_from_thread(self._ended, None, f"nothing to reduce: {exc}", None)
        except Exception as exc:  # an unwritable folder, a bad property: said here, the session goes on
            self.app.call_from_thread(self._ended, None, f"the reduction failed: {type(exc).__name__}: {exc}", None)
        else:
            self.app.call_from_thread(self._ended, result, None, result.out)

    def _progress_from_worker(self, progress) -> None:
        line = progress.line()
        accepted = progress.accepted
        self.app.call_from_thread(self._progress, line, accepted, progress.lines)

    # ---- on the app's thread -----------------------------------------------------------------------
    def _progress(self, line: str, accepted: int, lines: int) -> None:
        self.progress_line = line
        if accepted > len(self.cuts):
            self.cuts.append(f"cut {accepted}: {lines} code lines")
            self.query_one("#reduce-view", TextView).set_document(Document(list(self.cuts)), keep_position=True)
        self.query_one("#reduce-progress", Static).update(self._header())

    def _ended(self, result, error: str | None, out: str | None) -> None:
        self.reduced, self.failure = result, error
        self.written = out is not None and os.path.exists(out)
        if self.written:
            with open(out, encoding="utf-8") as f:
                self.query_one("#reduce-view", TextView).set_document(CodeDocument(f.read(), "python"))
        self.query_one("#reduce-progress", Static).update(self._header())

    @property
    def reducing(self) -> bool:
        return self.reduced is None and self.failure is None

    def action_stop_or_close(self) -> None:
        if self.reducing:
            self.cancel.set()
            self.progress_line = "stopping after the trials in flight ..."
            self.query_one("#reduce-progress", Static).update(self._header())
        else:
            self.dismiss(None)

    def action_open_result(self) -> None:
        """Run the reduced script in this TUI, with the same options; the original's run stays for v."""
        if self.reducing or not self.written:
            return
        app = self.app
        self.dismiss(None)
        app.opts = app.opts.replace(script=self.out)
        app.action_rerun(strategy=app.opts.strategy)
