"""Device-side launches on the CPU backend.

A kernel's ``child[grid, block](args)`` compiles to a call of
``kdebug_cpu_device_launch(launcher, params, dims, runtime, site)``: this
callback checks the configuration and the nesting depth (CUDA's limit, 24),
reports the launch as events, and runs the child's grid launcher to
completion before returning — so a child grid completes before its parent. It finds its launch's
context (kdebug/runtime/launch_context.py: the session to report to, the sites, the errors) by the
runtime record the code passes.
"""
from __future__ import annotations

import ctypes
import threading
import time

import llvmlite.binding as llvm

from kdebug import events as E
from kdebug.errors import KernelRuntimeError, SourceLocation
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import launch_context, progress
from kdebug.runtime.launch_context import LaunchContext
from kdebug.runtime.record import RuntimeRecord

MAX_NESTING = 24
SYMBOL = "kdebug_cpu_device_launch"


@dataclass(frozen=True)
class LaunchSite:
    job: int  # the child job
    loc: SourceLocation


def register_site(sites: list, lock, job_id: int, loc: SourceLocation) -> int:
    """Add a launch site to ``sites`` (the compiling target's table) at lowering time; its id is compiled
    into the call, and the launch finds the table in its context (the artifact's ``launch_sites``)."""
    with lock:
        sites.append(LaunchSite(job_id, loc))
        return len(sites) - 1


def _fail(ctx: LaunchContext, message: str, loc: SourceLocation, hint: str) -> None:
    err = KernelRuntimeError(message, loc, hint)
    err.category = "launch"
    ctx.errors.append(err)


def _launch(launcher, params, dims, runtime, site_id) -> None:
    ctx = launch_context.of(runtime) if runtime else None
    if ctx is None:  # a launcher run without CpuRuntime.launch: nobody to report to, start nothing
        return
    try:
        _device_launch(ctx, launcher, params, dims, runtime, site_id)
    except BaseException as exc:  # noqa: BLE001 - nothing may unwind through JIT-compiled frames
        _fail(ctx, f"internal error in a device-side launch: {exc!r}", ctx.sites[site_id].loc,
              "this is a bug in kdebug; please report it with the trace")


def _device_launch(ctx: LaunchContext, launcher, params, dims, runtime, site_id) -> None:
    if ctx.errors:
        return  # the launch already failed: start nothing more
    site = ctx.sites[site_id]
    session = ctx.host
    name = session.job_name(site.job)
    grid, block, depth = [dims[k] for k in range(3)], [dims[k] for k in range(3, 6)], dims[6]
    if depth > MAX_NESTING:
        _fail(ctx, f"device-side launch of {name} would nest {depth} grids deep, over CUDA's limit of "
              f"{MAX_NESTING}", site.loc, "stop the recursion earlier, e.g. with a depth counter argument")
        return
    if min(grid) <= 0 or min(block) <= 0:
        _fail(ctx, f"device-side launch of {name} with grid {tuple(grid)} and block {tuple(block)}: every "
              f"dimension must be at least 1", site.loc, "check the launch configuration's arithmetic")
        return
    if block[0] * block[1] * block[2] > 1024:
        _fail(ctx, f"device-side launch of {name}: a block of {block[0] * block[1] * block[2]} threads exceeds "
              f"1024", site.loc, "use at most 1024 threads per block")
        return
    stack = ctx.stacks.get(threading.get_ident())
    if stack is None:
        stack = ctx.stacks[threading.get_ident()] = []
    parent = stack[-1] if stack else ctx.launch
    lid = session.next_launch_id()
    session.bus.emit(E.LaunchStarted(launch=lid, job=site.job, name=name, grid=grid, block=block,
                                     backend="cpu", parent_launch=parent))
    fn = ctx.launcher(launcher)
    t0 = time.perf_counter()
    stack.append(lid)
    error = None
    record = RuntimeRecord.from_address(runtime)
    marks = progress.saved_marks(record)
    running = progress.started(ctx, name, grid, block, record)
    try:
        fn(params, dims, 0, grid[0] * grid[1] * grid[2], runtime)
    finally:
        stack.pop()
        # the parent's position again (the child wrote into its record)
        progress.finished(ctx, running)
        progress.restore_marks(record, marks)
        # the runtime record's first field is its error kind (kdebug/runtime/memcheck.py)
        if ctypes.c_int32.from_address(runtime).value:
            error = "kernel error: the host launch that started it reports the details"
        session.bus.emit(E.LaunchFinished(launch=lid, name=name, duration=time.perf_counter() - t0,
                                          error=error))


_callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32),
                             ctypes.c_void_p, ctypes.c_int64)(_launch)


def register_symbol() -> None:
    """Make the callback resolvable by name from JIT-compiled code."""
    llvm.add_symbol(SYMBOL, ctypes.cast(_callback, ctypes.c_void_p).value)
