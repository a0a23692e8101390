"""Headless runs: the script in the debuggee child, the report from this process's model.

The child may segfault, call ``os._exit``, be killed, close its stdout or never
end: this process outlives it, so the report, the trace's ``session_ended`` and
an exit status that says what happened always come.

Exit statuses (docs/guide/when-things-go-wrong.md): the script's own (0, 1 for an
error, ``sys.exit(N)``'s N), ``128 + signal`` when the child died from a
signal, N when it called ``os._exit(N)``, 124 when ``--timeout`` passed, 130
for Ctrl-C and 143 for SIGTERM.
"""
from __future__ import annotations

import os
import queue
import signal
import time

from kdebug import events as E
from kdebug import settings
from kdebug.session.debuggee import Debuggee
from kdebug.session.model import SessionModel
from kdebug.session.options import RunOptions

TIMEOUT_STATUS, INTERRUPT_STATUS, TERMINATE_STATUS = 124, 130, 143
GRACE_SECONDS = 2.0  # after Ctrl-C, how long the script may take to stop by itself before it is killed


def timeout_from_env() -> float | None:
    """``KDEBUG_TIMEOUT=SECONDS``; raises ValueError for anything but a positive number."""
    text = (settings.variable("KDEBUG_TIMEOUT") or "").strip()
    return positive_seconds(text) if text else None


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{text!r}: give a positive number of seconds")
    return value


class _Stop:
    """Why the parent stopped the child (a timeout, Ctrl-C, SIGTERM), set once."""

    def __init__(self) -> None:
        self.status: str | None = None
        self.exit_code = 0
        self.message = ""
        self.count = 0  # Ctrl-C presses: the second one kills at once


class Supervisor:
    """Runs one headless session; ``run()`` returns (exit status, model)."""

    def __init__(self, options: RunOptions, timeout: float | None = None) -> None:
        self.options = options.replace(breakpoints=frozenset())  # nobody is there to continue from one
        self.timeout = timeout
        self.model = SessionModel()
        self.subscribers = [self.model.apply]
        self.stop = _Stop()
        self._events: queue.Queue = queue.Queue()

    def run(self) -> tuple[int, SessionModel]:
        old = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.child = Debuggee(self.options, self._events.put)
            ended = self._pump()
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
            if getattr(self, "child", None) is not None:
                self.child.close()
        self._deliver(ended)
        return self._exit_status(ended), self.model

    # ---- the event loop ---------------------------------------------------------------------
    def _pump(self) -> E.SessionEnded:
        """Apply events until the child is gone; its session_ended is held back (the parent may overrule it)."""
        deadline = time.monotonic() + self.timeout if self.timeout else None
        child_ended = None
        while self.child.reading or not self._events.empty():
            try:
                ev = self._events.get(timeout=0.05)
            except queue.Empty:
                ev = None
            if isinstance(ev, E.SessionEnded):
                child_ended = ev
            elif ev is not None:
                self._deliver(ev)
            if deadline is not None and time.monotonic() > deadline and self.stop.status is None:
                self._stop_now("timeout", TIMEOUT_STATUS, f"timed out after {self.timeout:g} s")
        if self.stop.status is not None:
            return E.SessionEnded(status=self.stop.status, exit_code=self.stop.exit_code, error=self.stop.message,
                                  t=child_ended.t if child_ended else self.child.last_t)
        return child_ended

    def _deliver(self, ev: E.Event) -> None:
        for sub in self.subscribers:
            sub(ev)

    def _on_signal(self, signum, _frame) -> None:
        # runs between bytecodes of the loop above: only set state and signal the child
        self.stop.count += 1
        if getattr(self, "child", None) is None:
            raise KeyboardInterrupt  # nothing started yet
        if self.stop.count > 1:  # a second Ctrl-C: end at once
            self.child.kill()
            return
        if signum == signal.SIGTERM:
            self._stop_now("interrupted", TERMINATE_STATUS, "stopped by SIGTERM", grace=GRACE_SECONDS)
        else:
            self._stop_now("interrupted", INTERRUPT_STATUS, "interrupted (Ctrl-C)", grace=GRACE_SECONDS)

    def _stop_now(self, status: str, exit_code: int, why: str, grace: float = 0.0) -> None:
        """Record where the script was, then stop it: SIGINT and a grace period, else SIGKILL."""
        self.stop.status, self.stop.exit_code = status, exit_code
        self.stop.message = why + self._where()
        if grace:
            self.child.signal(signal.SIGINT)
            deadline = time.monotonic() + grace
            while self.child.alive and time.monotonic() < deadline:
                time.sleep(0.02)
        self.child.kill()

    def _where(self) -> str:
        """Where the script was: the launch running (or job compiling) and the script's line, then on
        lines of their own the CPU launches' positions (a block and the kernel's while loop)."""
        running = [ln for ln in self.model.launches.values() if ln.state == "running"]
        kernel = self.child.position(wait=2.0) if running else []
        frames = self.child.where(wait=3.0)  # a loaded machine may take a while to answer
        parts = []
        if running:
            ln = running[-1]
            parts.append(f"during launch #{ln.id} {ln.name} grid={tuple(ln.grid)} block={tuple(ln.block)}")
        elif any(j.state == "compiling" for j in self.model.jobs.values()):
            job = [j for j in self.model.jobs.values() if j.state == "compiling"][-1]
            parts.append(f"while compiling #{job.id} {job.name}")
        if frames:
            parts.append("at " + frames[0])
        return (": " + ", ".join(parts) if parts else "") + "".join("\n  " + line for line in kernel)

    # ---- the result -------------------------------------------------------------------------
    def _exit_status(self, ended: E.SessionEnded) -> int:
        return ended.exit_code
