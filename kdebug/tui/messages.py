"""App-wide messages: widgets post these up; the app routes them."""
from __future__ import annotations

from textual.message import Message


class JobChosen(Message):
    """The user moved to a job (``backref``: the index of a re-entrant request in the model, when on one)."""

    def __init__(self, job_id: int, backref: int | None = None) -> None:
        super().__init__()
        self.job_id = job_id
        self.backref = backref


class DebuggeeWake(Message):
    """Events or output from the debuggee are waiting in the app's inbox (posted from reader threads)."""

