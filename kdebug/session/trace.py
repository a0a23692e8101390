"""Trace files: one JSON object per line, each event with its schema version."""
from __future__ import annotations

import json
from typing import IO, Iterator

from kdebug.driver import events as E


class TraceWriter:
    """An event-bus subscriber that appends each event as a JSON line (flushed, so a crash keeps it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file: IO[str] = open(path, "w", encoding="utf-8")

    def __call__(self, ev: E.Event) -> None:
        if self.file.closed:
            return
        self.file.write(json.dumps(ev.to_json(), separators=(",", ":")) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def read_trace(path: str) -> Iterator[E.Event]:
    """Events of a trace file; a torn last line (the writer was killed) is skipped."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if obj.get("v") != E.SCHEMA_VERSION:
                raise ValueError(f"{path}:{lineno}: trace schema version {obj.get('v')} is not "
                                 f"{E.SCHEMA_VERSION}; re-record the trace with this kdebug")
            if obj.get("event") in E.EVENT_TYPES:
                yield E.event_from_json(obj)
