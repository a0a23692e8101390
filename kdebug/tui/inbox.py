"""The debuggee's reader threads hand events and output lines over here, tagged with the run they came
from; the app drains it on its own thread when woken, so a burst costs one redraw."""
from __future__ import annotations

import collections
from typing import Callable


class Inbox:
    def __init__(self, wake: Callable[[], None]) -> None:
        self._items: collections.deque = collections.deque()
        self._wake = wake  # posts DebuggeeWake to the app; once until the next drain
        self._wake_pending = False
        self.generation = 0  # the run whose items count; a rerun's starts the next

    def new_run(self) -> int:
        self._items.clear()
        self.generation += 1
        return self.generation

    def post(self, generation: int, kind: str, payload) -> None:
        """Called on the debuggee's reader threads: hand over, never touch a widget."""
        self._items.append((generation, kind, payload))
        if not self._wake_pending:
            self._wake_pending = True
            self._wake()

    def drain(self) -> tuple[list, list[str]]:
        """(events, output lines) of the current run that arrived since the last drain."""
        self._wake_pending = False
        events, lines = [], []
        while self._items:
            gen, kind, payload = self._items.popleft()
            if gen == self.generation:  # else from a run that a rerun replaced
                (events if kind == "event" else lines).append(payload)
        return events, lines
