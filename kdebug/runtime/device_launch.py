"""Device-side launches on the CPU backend.

A kernel's ``child[grid, block](args)`` compiles to a call of
``kdebug_cpu_device_launch(launcher, params, dims, runtime, site)``: this
callback checks the configuration and the nesting depth (CUDA's limit, 24),
reports the launch as events, and runs the child's grid launcher to
completion before returning — so a child grid completes before its parent.
"""
from __future__ import annotations

import ctypes
import threading
import time
from typing import Protocol

import llvmlite.binding as llvm

from kdebug import events as E
from kdebug.errors import KernelRuntimeError, SourceLocation
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import progress
from kdebug.runtime.record import LAUNCHER, RuntimeRecord

MAX_NESTING = 24
SYMBOL = "kdebug_cpu_device_launch"


@dataclass(frozen=True)
class LaunchSite:
    job: int  # the child job
    loc: SourceLocation


_sites: list[LaunchSite] = []
_errors: list[KernelRuntimeError] = []
_lock = threading.Lock()
_local = threading.local()
_launchers: dict[int, object] = {}


class LaunchHost(Protocol):
    """The session whose host launch is running: device-side launches report to it."""

    bus: E.EventBus
    current_launch: int | None  # the host launch (the parent of a first-level device launch)

    def next_launch_id(self) -> int: ...

    def job_name(self, job_id: int) -> str: ...


_host: LaunchHost | None = None


def install(host: LaunchHost) -> None:
    """Called by the session before each host launch (the runtime cannot reach up to it)."""
    global _host
    _host = host


def register_site(job_id: int, loc: SourceLocation) -> int:
    """Remember a launch site at lowering time; its id is compiled into the call."""
    with _lock:
        _sites.append(LaunchSite(job_id, loc))
        return len(_sites) - 1


def take_errors() -> list[KernelRuntimeError]:
    """Errors raised by device-side launches since the last call (the host launch reports them)."""
    with _lock:
        out = list(_errors)
        _errors.clear()
        return out


def _fail(message: str, loc: SourceLocation, hint: str) -> None:
    err = KernelRuntimeError(message, loc, hint)
    err.category = "launch"
    with _lock:
        _errors.append(err)


def _launch(launcher, params, dims, runtime, site_id) -> None:
    try:
        _device_launch(launcher, params, dims, runtime, site_id)
    except BaseException as exc:  # noqa: BLE001 - nothing may unwind through JIT-compiled frames
        _fail(f"internal error in a device-side launch: {exc!r}", _sites[site_id].loc,
              "this is a bug in kdebug; please report it with the trace")


def _device_launch(launcher, params, dims, runtime, site_id) -> None:
    with _lock:
        if _errors:
            return  # the launch already failed: start nothing more
    site = _sites[site_id]
    session = _host
    name = session.job_name(site.job)
    grid, block, depth = [dims[k] for k in range(3)], [dims[k] for k in range(3, 6)], dims[6]
    if depth > MAX_NESTING:
        _fail(f"device-side launch of {name} would nest {depth} grids deep, over CUDA's limit of "
              f"{MAX_NESTING}", site.loc, "stop the recursion earlier, e.g. with a depth counter argument")
        return
    if min(grid) <= 0 or min(block) <= 0:
        _fail(f"device-side launch of {name} with grid {tuple(grid)} and block {tuple(block)}: every "
              f"dimension must be at least 1", site.loc, "check the launch configuration's arithmetic")
        return
    if block[0] * block[1] * block[2] > 1024:
        _fail(f"device-side launch of {name}: a block of {block[0] * block[1] * block[2]} threads exceeds "
              f"1024", site.loc, "use at most 1024 threads per block")
        return
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    parent = stack[-1] if stack else session.current_launch
    lid = session.next_launch_id()
    session.bus.emit(E.LaunchStarted(launch=lid, job=site.job, name=name, grid=grid, block=block,
                                     backend="cpu", parent_launch=parent))
    fn = _launchers.get(launcher)
    if fn is None:
        fn = _launchers[launcher] = LAUNCHER(launcher)
    t0 = time.perf_counter()
    stack.append(lid)
    error = None
    record = RuntimeRecord.from_address(runtime) if runtime else None
    marks = progress.saved_marks(record) if record is not None else None
    running = progress.started(name, grid, block, record) if record is not None else None
    try:
        fn(params, dims, 0, grid[0] * grid[1] * grid[2], runtime)
    finally:
        stack.pop()
        if record is not None:  # the parent's position again (the child wrote into its record)
            progress.finished(running)
            progress.restore_marks(record, marks)
        # the runtime record's first field is its error kind (kdebug/runtime/memcheck.py)
        if runtime and ctypes.c_int32.from_address(runtime).value:
            error = "kernel error: the host launch that started it reports the details"
        session.bus.emit(E.LaunchFinished(launch=lid, name=name, duration=time.perf_counter() - t0,
                                          error=error))


_callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32),
                             ctypes.c_void_p, ctypes.c_int64)(_launch)


def register_symbol() -> None:
    """Make the callback resolvable by name from JIT-compiled code."""
    llvm.add_symbol(SYMBOL, ctypes.cast(_callback, ctypes.c_void_p).value)
