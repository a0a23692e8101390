"""Child processes that end with the process that started them.

A debuggee runs the user's script in a session of its own (so that ^C and kill reach only what they are
meant for); when kdebug itself is killed or crashes, nothing tells it to stop, and a script in a kernel
loop would run on for nobody. Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``) ends it then.
Elsewhere these are no-ops.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _prctl_death_signal(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(sig: int = signal.SIGKILL):
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when the thread that started it
    ends (start children from a thread that lives as long as the process, the main one)."""
    def preexec() -> None:
        _prctl_death_signal(sig)
    return preexec


def end_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """This process gets ``sig`` when its parent ends (and at once, where the parent is already gone).
    ``parent``: the pid of the process that started this one, where it told it: a parent that ended
    before this call (while this process started up) then counts as gone too."""
    parent = os.getppid() if parent is None else parent
    if _prctl_death_signal(sig) and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def children() -> list[int]:
    """This process's children (Linux: /proc's lists, one per thread that started some); [] elsewhere."""
    pids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{os.getpid()}/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
    return pids


def end_children(sig: int = signal.SIGTERM) -> list[int]:
    """Send ``sig`` to every child of this process; the pids it was sent to."""
    sent = []
    for pid in children():
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except OSError:
            pass
    return sent


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to the process group ``pgid`` (a child started in a session of its own, and whatever
    it started that stayed in its group); whether any process got it."""
    if pgid <= 1:
        return False
    try:
        os.killpg(pgid, sig)
        return True
    except OSError:
        return False
