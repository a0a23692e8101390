"""Trace files: one JSON object per line, each event with its schema version."""
from __future__ import annotations

import fcntl
import json
import os
import stat
from typing import IO, Iterator

from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.session.trace_schema import MAX_DEPTH, RERECORD, Checker, TraceError


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


def read_trace(path: str, notes: list[str] | None = None) -> Iterator[E.Event]:
    """Events of a trace file, each checked against the trace schema (``trace_schema``): a line that
    breaks it is a ``TraceError`` (a ValueError) naming the file, the line and the field; a torn last
    line (the writer was killed) is skipped, any other line that is not a JSON event is an error (this
    is not a kdebug trace). Text that is not UTF-8, or an unpaired surrogate, is replaced by U+FFFD and
    said once in ``notes``."""
    for _lineno, ev in numbered_events(path, notes):
        yield ev


def numbered_events(path: str, notes: list[str] | None = None) -> Iterator[tuple[int, E.Event]]:
    """``read_trace``'s events, each with its line in the file."""
    checker = Checker(path)
    torn = None
    read_any = False
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            if torn is not None:
                raise TraceError(f"{path}:{torn}: not a JSON event; is this a kdebug trace (kdebug run --trace)?")
            try:
                line, undecodable = raw.decode("utf-8"), False
            except UnicodeDecodeError:
                line, undecodable = raw.decode("utf-8", "replace"), True
            try:
                obj = json.loads(line)
            except RecursionError:
                raise TraceError(f"{path}:{lineno}: nested deeper than kdebug reads (more than {MAX_DEPTH} levels); "
                                 f"the trace was edited or damaged: {RERECORD}") from None
            except json.JSONDecodeError:
                if undecodable and not read_any:
                    raise TraceError(f"{path}: not a text file; is this a kdebug trace (kdebug run --trace)?") from None
                torn = lineno  # fine if it is the last line
                continue
            except ValueError as exc:  # a number of thousands of digits
                raise TraceError(f"{path}:{lineno}: {exc}; the trace was edited or damaged: {RERECORD}") from None
            if not isinstance(obj, dict) or "event" not in obj:
                raise TraceError(f"{path}:{lineno}: not a kdebug event; is this a kdebug trace (kdebug run --trace)?")
            version = obj.get("v")
            if version != E.SCHEMA_VERSION or isinstance(version, bool):
                shown = version if isinstance(version, (int, float, str)) and len(str(version)) < 20 else "?"
                raise TraceError(f"{path}:{lineno}: trace schema version {shown} is not {E.SCHEMA_VERSION}; "
                                 "re-record the trace with this kdebug")
            kind = obj["event"]
            if not isinstance(kind, str):
                raise TraceError(f"{path}:{lineno}: field 'event': expected text, the kind of the event; the trace "
                                 f"was edited or damaged: {RERECORD}")
            read_any = True
            if kind not in E.EVENT_TYPES:
                continue  # a kind a later kdebug writes
            obj = checker.check(obj, lineno, line)
            if undecodable:
                checker.replaced.append(lineno)
            try:
                ev = E.event_from_json(obj)
            except TypeError as exc:  # a field missing: an edited trace, or one of another kdebug
                raise TraceError(f"{path}:{lineno}: a {kind} event kdebug cannot read ({exc}); "
                                 "re-record the trace with this kdebug") from None
            yield lineno, ev
    if checker.replaced and notes is not None:
        lines = sorted(set(checker.replaced))
        more = f" (and {len(lines) - 1} more line(s))" if len(lines) > 1 else ""
        notes.append(f"{path}:{lines[0]}{more}: text that is not valid UTF-8, or an unpaired surrogate, is shown "
                     "as U+FFFD (\ufffd); the trace was damaged or edited")


def load_model(path: str, notes: list[str] | None = None) -> SessionModel:
    """The session model of a trace file (``read_trace``'s events). An event that does not follow from
    those before it (a job started that was never requested: a trace cut at its start, two traces merged,
    an edited one) is a ``TraceError`` naming its line, never a traceback from the model."""
    model = SessionModel()
    for n, (lineno, ev) in enumerate(numbered_events(path, notes), 1):
        try:
            model.apply(ev)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            job = getattr(ev, "job", None)
            raise TraceError(f"{path}:{lineno}: event {n} ({ev.kind}{f' of job #{job}' if job is not None else ''}) "
                             f"does not follow from the events before it ({type(exc).__name__}: {exc}); "
                             "is this a whole kdebug trace (kdebug run --trace)?") from None
    replayed = [sid for sid in model.pass_snapshots if sid < 0]
    if replayed:  # passes replayed before the trace was saved: a replay now numbers its snapshots below them
        model._last_replay_id = min(model._last_replay_id, min(replayed))
    return model
