"""One host launch's context on the CPU backend, found by the JIT-compiled code's callbacks.

The compiled code calls back into the host (``kdebug_cpu_device_launch``, ``print``) with its
launch's runtime record (kdebug/runtime/record.py); a device-side launch passes its parent's record
on, so a host launch and every grid it starts share one record, and so one context. The session
makes the context (``Session.launch``: whom device-side launches report to), ``CpuRuntime.launch``
registers it under its record's address for as long as the launcher runs, and the callbacks look
it up there: what one launch's kernels print, or the errors of its device-side launches, never
reach another launch (another thread, another session).
"""
from __future__ import annotations

from typing import Protocol

from kdebug import events as E


class LaunchHost(Protocol):
    """The session whose host launch is running: device-side launches report to it."""

    bus: E.EventBus

    def next_launch_id(self) -> int: ...

    def job_name(self, job_id: int) -> str: ...


class LaunchContext:
    """What the callbacks of one host launch's code read and write."""

    __slots__ = ("host", "launch", "errors", "prints", "running", "stacks", "sites", "formats", "check_sites",
                 "launcher")

    def __init__(self, host: LaunchHost | None = None, launch: int | None = None) -> None:
        self.host = host  # the session device-side launches report to (None: they fail, reported as errors)
        self.launch = launch  # the host launch's id: the parent of a first-level device-side launch
        self.errors: list = []  # KernelRuntimeError of the device-side launches (the first stops the rest)
        self.prints: list = []  # (linear block, linear thread, text) of each print call, in call order
        # (kernel name, grid, block, RuntimeRecord) of the host launch and the device-side launches
        # running now, in the order they started (kdebug/runtime/progress.py reads them)
        self.running: list = []
        self.stacks: dict = {}  # host thread -> the device-side launches it runs, nested (the last: innermost)
        # set by CpuRuntime.launch from the artifact: the tables whose ids the code holds, and the
        # runtime's launcher wrappers (address -> ctypes function)
        self.sites: list = []
        self.formats: list = []
        self.check_sites = None  # memcheck's (runtime/memcheck.SiteTable): what progress names a loop by
        self.launcher = None

    def take_prints(self) -> list[tuple[int, int, str]]:
        """The lines printed so far, in thread order: by block, then thread, then call order."""
        lines, self.prints = self.prints, []
        lines.sort(key=lambda x: (x[0], x[1]))  # stable: a thread's lines stay in call order
        return lines


# record address -> the context of the launch running with it. The callbacks get only the record's
# address, so this is the one process-wide map: an entry lives exactly as long as its launch runs.
_active: dict[int, LaunchContext] = {}
ACTIVE = _active  # the map itself, for the CPU runtime's launch (enter and leave without two calls)


def enter(address: int, context: LaunchContext) -> None:
    _active[address] = context


def leave(address: int) -> None:
    _active.pop(address, None)


def of(address: int) -> LaunchContext | None:
    """The context of the launch whose runtime record is at ``address`` (None: no launch registered it)."""
    return _active.get(address)


def running() -> list[LaunchContext]:
    """The contexts of the launches running now, in the order they started."""
    return list(_active.values())
