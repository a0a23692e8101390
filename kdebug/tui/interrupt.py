"""Ctrl-C in the TUI, as a debugger has it: the script gets a KeyboardInterrupt where it is (SIGKILL after a
grace period if it does not stop), the session ends as interrupted (where it was), the screen stays, and
kdebug then exits 130, as the headless run does."""
from __future__ import annotations

import signal
import time

from kdebug import events as E
from kdebug.session.debuggee import Debuggee
from kdebug.session.model import SessionModel

AGAIN_S = 3.0  # a second ctrl+c within this quits
GRACE_S = 2.0  # after ctrl+c, how long the script may take to stop by itself before it is killed
STATUS = 130  # a shell's status for Ctrl-C


class Interrupt:
    """One run's ctrl+c: when it came and how the session's end is told."""

    def __init__(self) -> None:
        self.at = -AGAIN_S
        self.message: str | None = None  # set once the script was interrupted: "interrupted (Ctrl-C) at ..."

    def new_run(self) -> None:
        self.message = None

    def quits(self) -> bool:
        """A second ctrl+c soon after the first."""
        return time.monotonic() - self.at < AGAIN_S

    def interrupt(self, dbg: Debuggee) -> None:
        """Say where the script is, then send it SIGINT."""
        self.at = time.monotonic()
        where = dbg.where(wait=1.0)
        self.message = "interrupted (Ctrl-C)" + (f" at {where[0]}" if where else "")
        dbg.signal(signal.SIGINT)

    def overdue(self, dbg: Debuggee) -> None:
        """The grace period is over: a script that caught the KeyboardInterrupt (or sits in C code) is killed."""
        if dbg.alive and self.message is not None:
            dbg.kill(dbg.where(wait=0.5))

    def retell(self, events: list[E.Event]) -> list[E.Event]:
        """The end of a script ctrl+c stopped is interrupted, whatever the child said (a failure, a kill)."""
        if self.message is None:
            return events
        return [E.SessionEnded(status="interrupted", exit_code=STATUS, error=self.message, t=ev.t)
                if isinstance(ev, E.SessionEnded) else ev for ev in events]

    def exit_status(self, model: SessionModel) -> int:
        """kdebug's exit status: 0 for a session that ended ok, 130 for one ctrl+c interrupted, else 1."""
        ended = model.ended
        if ended is None:
            return STATUS if self.message is not None else 1
        return {"ok": 0, "interrupted": STATUS}.get(ended.status, 1)
