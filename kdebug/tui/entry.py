"""The TUI's entry points: ``kdebug FILE.py`` on a terminal (``run_tui``) and ``kdebug replay`` (``run_replay``)."""
from __future__ import annotations

import os
import sys

from kdebug.session.model import SessionModel
from kdebug.session.trace import TraceBusy, TraceWriter
from kdebug.tui import terminal
from kdebug.tui.app import KdebugApp


def run_tui(opts) -> int:
    """``kdebug FILE.py`` on a terminal: run the script in a debuggee and show it live."""
    if not os.path.isfile(opts.script):
        print(f"kdebug: error: no such file: {opts.script}", file=sys.stderr)
        return 2
    guarded = terminal.guard()  # the terminal given back on every way out, a crash included
    if guarded is not None:
        return guarded
    app = KdebugApp(opts=opts)
    if opts.trace:  # refused before anything runs when another run holds the trace, as kdebug run does
        try:
            app._trace_writer = TraceWriter(opts.trace)
        except OSError as exc:
            print(f"kdebug: error: {exc if isinstance(exc, TraceBusy) else f'--trace {opts.trace}: {exc.strerror}'}",
                  file=sys.stderr)
            return 2
    app.run()
    status = app.exit_status
    if app.trace_error:  # the trace stopped (a full disk...): said once the screen is gone
        print(f"kdebug: error: {app.trace_error}", file=sys.stderr)
        status = status or 1
    return status


def run_replay(model: SessionModel, path: str, theme: str = "dark") -> int:
    """``kdebug replay TRACE.jsonl`` on a terminal."""
    guarded = terminal.guard()
    if guarded is not None:
        return guarded
    KdebugApp(model=model, trace_path=path, theme=theme).run()
    return 0
