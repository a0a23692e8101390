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
    ("warn_done", ctypes.c_int32),
)
FIELD = {name: k for k, (name, _) in enumerate(RECORD_FIELDS)}

# A barrier's value in a waiting thread's context is its site id, with this bit set when the barrier
# lies inside an if/else of its function (site ids stay below it).
IN_BRANCH = 1 << 29


class RuntimeRecord(ctypes.Structure):
    """One per launch; ``ctx`` field ``runtime`` points to it (a device-side launch passes it on)."""

    _fields_ = list(RECORD_FIELDS)


# void <entry>.grid(i8* params, i32* dims, i64 first_block, i64 end_block, i8* runtime)
LAUNCHER_ARGS = (ctypes.c_void_p, I32P, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
LAUNCHER = ctypes.CFUNCTYPE(None, *LAUNCHER_ARGS)
