"""What the app saves into its working directory: the trace (t) and the palette's screenshot."""
from __future__ import annotations

import os
import time

from kdebug import events as E

TRACE_NAME = "kdebug-trace.jsonl"


def save_trace(app) -> str:
    """t: the session's events as a trace a replay opens; says where."""
    path = os.path.join(app.cwd, TRACE_NAME)
    with open(path, "w", encoding="utf-8") as f:
        for ev in app.model.events:
            f.write(E.to_line(ev))
    app.notify(f"saved the trace ({len(app.model.events)} events) to {TRACE_NAME}; kdebug replay {TRACE_NAME}")
    return path


def save_screenshot(app, filename: str | None, path: str | None) -> str | None:
    """The palette's Screenshot: into the working directory unless told otherwise; say where, or why not."""
    path = path or app.cwd
    name = filename or f"kdebug-screenshot-{time.strftime('%Y%m%d-%H%M%S')}.svg"
    try:
        saved = app.save_screenshot(name, path=path)
    except OSError as exc:
        app.notify(f"screenshot not saved: {exc.strerror or exc} ({os.path.join(path, name)})", severity="error")
        return None
    app.notify(f"saved the screenshot to {saved}")
    return saved
