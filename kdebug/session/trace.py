"""Trace files: one JSON object per line, each event with its schema version."""
from __future__ import annotations

import fcntl
import json
import os
import stat
from typing import IO, Iterator

from kdebug import events as E
from kdebug.session.model import SessionModel


class TraceBusy(OSError):
    """Another run holds the trace file: two writers would interleave into torn lines."""


class TraceWriter:
    """An event-bus subscriber that appends each event as a JSON line (flushed, so a crash keeps it).

    One writer per file: the file is locked (``flock``) before it is emptied, so a second run naming the
    same trace is refused (``TraceBusy``) instead of interleaving its lines into the first's. A write that
    fails (the disk is full, the device went away) stops the trace there and is kept in ``error``, one
    line for the report; the run goes on and its report still comes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.error: str | None = None
        self.written = 0
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise TraceBusy(f"--trace {path}: another kdebug run is writing this trace; name another file "
                            "or wait for that run to end") from None
        except OSError:
            pass  # a file system without locks (or a device such as /dev/full): one writer is up to the user
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, 0)
        self.file: IO[str] = os.fdopen(fd, "w", encoding="utf-8")

    def __call__(self, ev: E.Event) -> None:
        if self.file.closed or self.error is not None:
            return
        try:
            self.file.write(E.to_line(ev))
            self.file.flush()
            self.written += 1
        except OSError as exc:
            self.error = (f"--trace {self.path}: writing failed after {self.written} event(s): "
                          f"{exc.strerror or exc}; the trace stops there")

    def close(self) -> None:
        try:
            self.file.close()  # the lock goes with it
        except OSError as exc:  # the last flush failed
            if self.error is None:
                self.error = f"--trace {self.path}: writing failed at the end: {exc.strerror or exc}"


def read_trace(path: str) -> Iterator[E.Event]:
    """Events of a trace file; a torn last line (the writer was killed) is skipped, any other line
    that is not a JSON event is an error (this is not a kdebug trace)."""
    torn = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if torn is not None:
                raise ValueError(f"{path}:{torn}: not a JSON event; is this a kdebug trace (kdebug run --trace)?")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                torn = lineno  # fine if it is the last line
                continue
            if not isinstance(obj, dict) or "event" not in obj:
                raise ValueError(f"{path}:{lineno}: not a kdebug event; is this a kdebug trace (kdebug run --trace)?")
            if obj.get("v") != E.SCHEMA_VERSION:
                raise ValueError(f"{path}:{lineno}: trace schema version {obj.get('v')} is not "
                                 f"{E.SCHEMA_VERSION}; re-record the trace with this kdebug")
            if obj.get("event") in E.EVENT_TYPES:
                try:
                    ev = E.event_from_json(obj)
                except TypeError as exc:  # a field missing: an edited trace, or one of another kdebug
                    raise ValueError(f"{path}:{lineno}: a {obj['event']} event kdebug cannot read ({exc}); "
                                     "re-record the trace with this kdebug") from None
                yield ev


def load_model(path: str) -> SessionModel:
    """The session model of a trace file. An event that does not follow from those before it (a job
    started that was never requested: a trace cut at its start, two traces merged, an edited one) is a
    ValueError naming the event, never a traceback from the model."""
    model = SessionModel()
    for n, ev in enumerate(read_trace(path), 1):
        try:
            model.apply(ev)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            job = getattr(ev, "job", None)
            raise ValueError(f"{path}: event {n} ({ev.kind}{f' of job #{job}' if job is not None else ''}) does "
                             f"not follow from the events before it ({type(exc).__name__}: {exc}); "
                             "is this a whole kdebug trace (kdebug run --trace)?") from None
    return model
