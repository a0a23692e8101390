"""The CPU backend's runtime ABI, declared once: the runtime record and the grid launcher's signature.

The host reads and writes the record through ``RuntimeRecord`` (ctypes); the
compiled code writes it through an LLVM struct that
``kdebug/targets/cpu/layout.py`` builds from the same ``RECORD_FIELDS``, so the
two can never disagree (both use the platform's natural C layout).
"""
from __future__ import annotations

import ctypes

I32P = ctypes.POINTER(ctypes.c_int32)

RECORD_FIELDS = (
    ("error", ctypes.c_int32),     # 0: no error; else the kind (first wins, by cmpxchg)
    ("site", ctypes.c_int32),      # the failing site
    ("ctaid", ctypes.c_int32 * 3),
    ("tid", ctypes.c_int32 * 3),
    ("index", ctypes.c_int64 * 3),
    ("extent", ctypes.c_int64 * 3),
    ("aux", ctypes.c_int32 * 4),   # barriers: other site, threads waiting, threads done, block size
    ("perm", I32P),                # --shuffle-threads: nperm permutations of perm_nt thread indices
    ("nperm", ctypes.c_int32),
    ("perm_nt", ctypes.c_int32),
    ("dyn_shared", ctypes.c_int64),  # dynamic shared memory per block (the launch's shared_bytes)
    # the first barrier inside a branch that completed only because the threads that skipped it
    # exited (a warning: CUDA calls it undefined, GPUs since Volta release it)
    ("warn_site", ctypes.c_int32),
    ("warn_ctaid", ctypes.c_int32 * 3),
    ("warn_waiting", ctypes.c_int32),
    ("warn_done", ctypes.c_int32),   # threads that skipped the barrier and exited
    ("warn_tid", ctypes.c_int32 * 3),  # the first of them
    ("warn_exit_line", ctypes.c_int32),  # the line it exited at (END_OF_KERNEL: past the kernel's end)
    # racecheck and initcheck (kdebug/runtime/sanitizers.py): global memory the checks know, what they found
    ("regions", ctypes.c_void_p),  # Region[nregions]: the launch's array arguments
    ("nregions", ctypes.c_int32),
    ("nhazards", ctypes.c_int32),  # HazardSlot entries used in hazards
    ("hazards", ctypes.c_void_p),  # HazardSlot[hazard_cap]
    ("hazard_cap", ctypes.c_int32),
    ("hazards_lost", ctypes.c_int32),  # distinct hazards beyond hazard_cap
    # the first exception a debug=True kernel raised (kdebug/frontend/exceptions.py): the raising thread
    # stops, the others go on, so it is not an error that stops the launcher
    ("exc_site", ctypes.c_int32),
    ("exc_ctaid", ctypes.c_int32 * 3),
    ("exc_tid", ctypes.c_int32 * 3),
    # where the launch is, for a report while it runs (kdebug/runtime/progress.py): written with
    # monotonic atomic stores outside the thread loops, read by another thread of the host
    ("at_block", ctypes.c_int64),  # the launcher: the first block of the range it runs
    ("at_site", ctypes.c_int32),   # a thread: the while loop it last entered (a loop site id; 0: none) ...
    ("at_site_block", ctypes.c_int32),  # ... and its block's linear number (one 8-byte store with at_site)
)
FIELD = {name: k for k, (name, _) in enumerate(RECORD_FIELDS)}

# What a waiting thread waits at: the barrier field of its context (the CPU target's CTX_BARRIER), a site
# id (a barrier's, a loop's, a warp operation's: every site id stays below ROUND_START) with the bits
# below saying which kind of wait it is. One table for every form of the CPU target
# (kdebug/targets/cpu/forms/) and the runtime's reports, which read the field back.
ROUND_START = 1 << 25  # region form: a thread at the start of a loop run in rounds (site | LOCKSTEP_FLAG | ROUND_START)
ROUND_DONE = 1 << 26  # region form: a thread whose loop run in rounds is done (site | LOCKSTEP_FLAG | ROUND_DONE)
REGION_INDEX = 1 << 27  # region form: the thread loops start a thread at region k with k | REGION_INDEX
LOCKSTEP_FLAG = 1 << 28  # a thread waiting at a lockstep loop: site | LOCKSTEP_FLAG (bits 28-31: 0001)
IN_BRANCH = 1 << 29  # a barrier inside an if/else of its function: site | IN_BRANCH
WARP_FLAG = 1 << 30  # a warp operation (shuffle, vote, match, syncwarp): site | WARP_FLAG
END_OF_KERNEL = (1 << 31) - 1  # a thread's exit line when it ran off the kernel's end


class Region(ctypes.Structure):
    """A global array the sanitizers watch: its bytes, one shadow entry per element, its written map."""

    _fields_ = [
        ("base", ctypes.c_void_p),
        ("nbytes", ctypes.c_int64),
        ("itemsize", ctypes.c_int64),
        ("shadow", ctypes.c_void_p),    # ShadowEntry[nbytes // itemsize]
        ("written", ctypes.c_void_p),   # uint8 per element, 1 once written; null: all written (host data)
    ]


class ShadowEntry(ctypes.Structure):
    """What the sanitizers know of one element (shared memory: one byte) in the current epoch.

    Slots 0 and 1 hold the two lowest-numbered threads that wrote it, slots 2 and 3 the two
    lowest that read it (or used an atomic on it): which slots are filled does not depend on
    the order the threads ran in, so neither do the reports."""

    _fields_ = [
        ("epoch", ctypes.c_int32),   # barrier epoch of the slots (0: untouched)
        ("init", ctypes.c_int32),    # 1: written in an earlier epoch; 2: an atomic wrote it in this one
        ("index", ctypes.c_int32 * 3),  # the element's index, as the first access in the epoch wrote it
        ("pad", ctypes.c_int32),
        ("id", ctypes.c_int32 * 4),     # thread number + 1 (in the block for shared memory, else in the launch)
        ("site", ctypes.c_int32 * 4),   # the access site of that thread's first access in the epoch
        ("pos", ctypes.c_int32 * 4),    # its position among that thread's accesses since the last barrier
        ("bepoch", ctypes.c_int32 * 4),  # its block's barrier epoch then (global memory)
    ]


class HazardSlot(ctypes.Structure):
    """One distinct hazard (kind, site pair): how often, and its first occurrence in a fixed order."""

    _fields_ = [
        ("kind", ctypes.c_int32),
        ("site_a", ctypes.c_int32),
        ("site_b", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("index", ctypes.c_int32 * 3),
        ("pad2", ctypes.c_int32),
        ("gid_a", ctypes.c_int64),   # thread numbers in the launch (block * block size + thread)
        ("gid_b", ctypes.c_int64),
        ("count", ctypes.c_int64),
    ]


class RuntimeRecord(ctypes.Structure):
    """One per launch; ``ctx`` field ``runtime`` points to it (a device-side launch passes it on)."""

    _fields_ = list(RECORD_FIELDS)


# void <entry>.grid(i8* params, i32* dims, i64 first_block, i64 end_block, i8* runtime)
LAUNCHER_ARGS = (ctypes.c_void_p, I32P, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
LAUNCHER = ctypes.CFUNCTYPE(None, *LAUNCHER_ARGS)
