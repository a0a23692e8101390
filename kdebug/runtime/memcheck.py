"""The CPU backend's runtime error record: out-of-bounds accesses and divergent barriers.

Every launch gets one ``RuntimeRecord`` (kdebug/runtime/record.py: the
thread context points to it, and a device-side launch passes it on). Compiled code never raises:
the first thread that fails claims the record with an atomic compare-and-swap
(kind 0 -> kind), writes what it knows (site id, block, thread, indices,
extents) and stops its launcher with ``longjmp``; every launcher checks the
record after each block and stops too. The host side turns the record into a
``KernelRuntimeError`` located at the site's source line.

Sites are registered at lowering time (array name, kernel, file:line:col) in the compiling
target's ``SiteTable`` and their ids compiled into the code; the artifact carries the table
(``CpuArtifact.check_sites``) to the launch that reports, as it carries the device-side launch sites.

Options: memcheck is on by default. ``kdebug --no-memcheck``,
``kdebug.set_options(memcheck=False)`` or ``KDEBUG_MEMCHECK=0`` in the
environment turn it off.
"""
from __future__ import annotations

import os
import threading

from kdebug.errors import KernelRuntimeError, KernelRuntimeWarning, SourceLocation
# warp operations (kdebug/targets/cpu/warp.py): their error kinds and messages
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime.warp_errors import (DIVERGENT_WARP, WARP_EXITED, WARP_INACTIVE_SOURCE,  # noqa: F401
                                        WARP_KINDS, WARP_MASK_MISMATCH, WARP_NOT_IN_MASK, warp_error)
from kdebug.runtime.record import END_OF_KERNEL, IN_BRANCH, RuntimeRecord

# error kinds
NONE, OUT_OF_BOUNDS, DIVERGENT_BARRIER, DIVERGENT_GRID_BARRIER = 0, 1, 2, 3
GRID_SYNC_NO_ARRIVER = 9  # thread (0, 0, 0) of a block exited: nothing arrives at the grid barrier for it


@dataclass(frozen=True)
class Site:
    kind: str  # "access" or "barrier" or "grid barrier"
    function: str  # the kernel or device function holding it
    loc: SourceLocation
    array: str = ""
    space: str = ""  # global, shared, local
    access: str = ""  # read, write, atomic
    ndim: int = 1
    what: str = ""  # for barriers: cuda.syncthreads() ...
    function_kind: str = "kernel"  # kernel or device
    exc: object = None  # a raise: the exception class and its constant arguments (kdebug/frontend/exceptions.py)
    exc_args: tuple = ()
    debug: bool = False  # in a debug=True kernel: an out-of-bounds access is numba's IndexError on the host


class SiteTable:
    """One target's source sites (the CPU target's ``check_sites``, for its lifetime): the lowering adds a
    site and compiles its id into the code; every module of the target numbers its sites here (a kernel
    launched from the device may come from an earlier module), and the artifact carries the table to the
    launch, whose reports (the errors and warnings here, the sanitizers, progress) read it back."""

    def __init__(self) -> None:
        self._sites: list[Site] = [Site("none", "", SourceLocation("?", 0, 1))]  # id 0 is never used
        self._lock = threading.Lock()

    def add(self, site: Site) -> int:
        """Lowering time: ``site``'s id, to compile into the code."""
        with self._lock:
            self._sites.append(site)
            return len(self._sites) - 1

    def site(self, site_id: int) -> Site:
        """The site of an id the code holds (a barrier's may carry the IN_BRANCH bit, or be negated)."""
        return self._sites[abs(site_id) & (IN_BRANCH - 1)]

    def __len__(self) -> int:
        return len(self._sites)


def _dim3(v) -> str:
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


def _original_index(wrapped: int, extent: int) -> int:
    """Undo numba's negative-index wraparound for the message (an index -k was turned into n-k)."""
    return wrapped - extent if wrapped < 0 else wrapped


def _in_function(s: Site, kernel: str) -> str:
    if s.function in ("", kernel):
        return f"kernel {kernel}"
    if s.function_kind == "kernel":  # a child grid launched from the device
        return f"kernel {s.function} (launched from kernel {kernel})"
    return f"device function {s.function} (kernel {kernel})"


def exception_from_record(rec: RuntimeRecord, kernel: str, sites: SiteTable) -> KernelRuntimeError | None:
    """The first exception a debug=True kernel raised, as a located error carrying numba's host exception
    (``user_exception``, which the launch raises: kdebug/frontend/exceptions.py); ``sites``: the
    artifact's table."""
    if not rec.exc_site:
        return None
    s = sites.site(rec.exc_site)
    user = host_exception(s.exc, s.exc_args, s.function, s.loc, rec.exc_ctaid, rec.exc_tid)
    text = f"{s.exc.__name__}({', '.join(map(repr, s.exc_args))})"
    err = KernelRuntimeError(f"{text} raised in {_in_function(s, kernel)}, in block {_dim3(rec.exc_ctaid)}, "
                             f"thread {_dim3(rec.exc_tid)}", s.loc,
                             "the raising thread stopped there; the launch raises it on the host (debug=True)")
    err.category = "exception"
    err.user_exception = user
    return err


def error_from_record(rec: RuntimeRecord, kernel: str, sites: SiteTable) -> KernelRuntimeError | None:
    """The user-facing error the record holds, or None; ``sites``: the artifact's table."""
    if rec.error == NONE:
        return exception_from_record(rec, kernel, sites)
    s = sites.site(rec.site)
    where = f"block {_dim3(rec.ctaid)}, thread {_dim3(rec.tid)}"
    infn = _in_function(s, kernel)
    if rec.error == OUT_OF_BOUNDS:
        n = s.ndim
        idx = tuple(_original_index(rec.index[k], rec.extent[k]) for k in range(n))
        shape = tuple(int(rec.extent[k]) for k in range(n))
        idx_s = str(idx[0]) if n == 1 else str(idx)
        shape_s = f"({shape[0]},)" if n == 1 else str(shape)
        msg = (f"out-of-bounds {s.access} of {s.space} array {s.array!r} in {infn}: index {idx_s} is outside "
               f"shape {shape_s}, in {where}")
        err = KernelRuntimeError(msg, s.loc, "check the index arithmetic and the guard against the array's shape "
                                             "(run with --no-memcheck to skip these checks)")
        err.category = "memcheck"
        # the access's array, where it is written and its memory space: an adjoint launch names the shadow
        err.array, err.function, err.space = s.array, s.function, s.space
        if s.debug:  # debug=True: numba's python error model makes it an IndexError on the host
            err.user_exception = host_exception(IndexError, (msg,), s.function, s.loc, rec.ctaid, rec.tid)
        return err
    waiting, done, nt = rec.aux[1], rec.aux[2], rec.aux[3]
    if rec.error in WARP_KINDS:
        return warp_error(rec, s, sites.site, infn, where)
    if rec.error == GRID_SYNC_NO_ARRIVER:
        msg = (f"grid barrier that can never complete in {infn}: {waiting} threads of block {_dim3(rec.ctaid)} wait at "
               f"{s.what}, but the block's thread (0, 0, 0), which arrives for the block at the grid level, has "
               f"exited ({done} of the block's {nt} threads have); on a GPU the grid would hang")
        hint = "keep thread (0, 0, 0) of every block running to the grid sync (guard the work, not the sync)"
    elif rec.aux[0]:
        other = sites.site(rec.aux[0])
        msg = (f"divergent barrier in {infn}: the threads of block {_dim3(rec.ctaid)} wait at different barriers: "
               f"{s.what} at {s.loc} and, for thread {_dim3(rec.tid)} among others, {other.what} at {other.loc}")
        hint = ("every thread of a block must reach the same barriers: keep syncthreads() out of branches "
                "that differ between threads")
    else:
        msg = (f"grid barrier that can never complete in {infn}: {waiting} threads wait at {s.what} while every "
               f"thread of block {_dim3(rec.ctaid)} has exited without reaching it (thread {_dim3(rec.tid)}); on a "
               f"GPU the grid would hang")
        hint = "every block must reach the grid sync: let whole blocks skip the work, not the sync"
    err = KernelRuntimeError(msg, s.loc, hint)
    err.category = "barrier"
    return err


def warning_from_record(rec: RuntimeRecord, kernel: str, sites: SiteTable) -> KernelRuntimeWarning | None:
    """The barrier that completed only because threads that skipped it (ran past it) exited, or None."""
    if not rec.warn_site:
        return None
    s = sites.site(rec.warn_site)
    infn = f"kernel {kernel}" if s.function in ("", kernel) else f"device function {s.function} (kernel {kernel})"
    line = rec.warn_exit_line
    where = "at the end of the kernel" if line == END_OF_KERNEL else f"by the return at line {line}"
    msg = (f"{s.what} in {infn} completed only because {rec.warn_done} threads of block {_dim3(rec.warn_ctaid)} "
           f"skipped it and exited (the first, thread {_dim3(rec.warn_tid)}, {where}) while "
           f"{rec.warn_waiting} waited at line {s.loc.line}: GPUs since Volta release a barrier for exited "
           f"threads, but CUDA calls a barrier in divergent code undefined")
    warn = KernelRuntimeWarning(msg, s.loc, "move the barrier out of the branch (let every thread reach it), "
                                          "or make the branch uniform for the block")
    warn.category = "barrier"
    return warn


def host_exception(cls, args, function: str, loc, ctaid, tid) -> BaseException:
    """The exception numba-cuda raises on the host: its first argument prefixed with where and which thread."""
    prefix = (f"In function {function!r}, file {os.path.abspath(loc.file)}, line {loc.line}, "
              f"tid={[int(tid[2]), int(tid[1]), int(tid[0])]} ctaid={[int(ctaid[2]), int(ctaid[1]), int(ctaid[0])]}")
    exc_args = (f"{prefix}: {args[0]}",) + tuple(args[1:]) if args else (prefix,)
    try:
        return cls(*exc_args)
    except Exception as exc:  # noqa: BLE001 - a user class whose __init__ takes other arguments
        return RuntimeError(f"{prefix}: {cls.__name__}{tuple(args)!r} (could not be rebuilt on the host: {exc})")
