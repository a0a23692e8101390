"""The TUI's entry points: ``kdebug FILE.py`` on a terminal (``run_tui``) and ``kdebug replay`` (``run_replay``)."""
from __future__ import annotations

import os
import signal
import sys
import threading

from kdebug.session.model import SessionModel
from kdebug.session.trace import TraceBusy, TraceWriter
from kdebug.tui import terminal
from kdebug.tui.app import KdebugApp


def run_tui(opts) -> int:
    """``kdebug FILE.py`` on a terminal: run the script in a debuggee and show it live."""
    if not os.path.isfile(opts.script):
        print(f"kdebug: error: no such file: {opts.script}", file=sys.stderr)
        return 2
    writer = None
    if opts.trace:  # refused before anything runs when another run holds the trace, as kdebug run does
        try:
            writer = TraceWriter(opts.trace)
        except OSError as exc:
            print(f"kdebug: error: {exc if isinstance(exc, TraceBusy) else f'--trace {opts.trace}: {exc.strerror}'}",
                  file=sys.stderr)
            return 2
    guarded = terminal.guard()  # the terminal given back on every way out, a crash included
    if guarded is not None:  # the guard: the TUI has ended and the terminal is given back
        terminal.leave(guarded)
    app = KdebugApp(opts=opts)
    app._trace_writer = writer
    ended = ended_by_sigterm(app)
    app.run()
    status = 128 + signal.SIGTERM if ended else app.exit_status
    if app.trace_error:  # the trace stopped (a full disk...): said once the screen is gone
        print(f"kdebug: error: {app.trace_error}", file=sys.stderr)
        status = status or 1
    if terminal.guarded_child:
        terminal.leave(status)
    return status


SIGTERM_GRACE_S = 5.0  # after SIGTERM, how long the app may take to end before the process is ended


def ended_by_sigterm(app: KdebugApp) -> list[bool]:
    """SIGTERM (kill PID, the serve server going away) ends the app as q does, so that its debuggee and
    replay process end with it and the terminal is given back; the list holds True once it came."""
    came: list[bool] = []

    def on_sigterm(_signum, _frame) -> None:
        came.append(True)
        app.exit()  # on the app's thread: Python runs signal handlers there
        # an app that cannot end in time (its loop stuck, a loaded machine) still ends, its debuggee with it
        # (die_with_parent), and gives the terminal back first: its exit status is no signal's to the guard
        threading.Timer(SIGTERM_GRACE_S, end_now, (128 + signal.SIGTERM,)).start()

    signal.signal(signal.SIGTERM, on_sigterm)
    return came


def end_now(status: int) -> None:
    """The TUI's process ends at once with ``status``, the terminal given back."""
    terminal.give_back()
    os._exit(status)


def run_replay(model: SessionModel, path: str, theme: str = "dark") -> int:
    """``kdebug replay TRACE.jsonl`` on a terminal."""
    guarded = terminal.guard()
    if guarded is not None:
        return guarded
    KdebugApp(model=model, trace_path=path, theme=theme).run()
    return 0
