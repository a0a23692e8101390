"""App-wide messages: widgets post these up; the app routes them."""
from __future__ import annotations

from textual.message import Message


class JobChosen(Message):
    """The tree's cursor moved to a job (``backref``: the index of a re-entrant request in the model, when on one).

    ``node`` is the tree node it moved to: by the time the app reads the message the cursor
    may have moved on (key repeat), and then the message is stale and dropped.
    """

    def __init__(self, job_id: int, backref: int | None = None, node=None) -> None:
        super().__init__()
        self.job_id = job_id
        self.backref = backref
        self.node = node


class GoToJob(Message):
    """A view other than the tree asks to show a job (a launch row): the app moves the tree's cursor there."""

    def __init__(self, job_id: int) -> None:
        super().__init__()
        self.job_id = job_id


class DebuggeeWake(Message):
    """Events or output from the debuggee are waiting in the app's inbox (posted from reader threads)."""

