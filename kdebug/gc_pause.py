"""Python's cyclic garbage collector held off while kdebug compiles.

A compile makes and drops tens of thousands of objects (syntax trees, llvmlite's IR objects, the
frontend's types) and keeps most of them alive until it ends. With the collector on, CPython collects every
700 net allocations: each young collection walks objects the compile still needs and promotes them, older
ones walk them again, and once the compile ends they are garbage in the oldest generation, freed only by a
full collection of the whole process. ``paused()`` turns the collector off for the compile and back on
after it, where it was on: the compile's garbage is then young, and goes at the first collection after it.
Measured (benchmarks/README.md, bench_gc_pause.py): 40 compiles in a row made 40 collections instead of
~345, 0.19 s in them instead of 0.45 s in a process holding a million objects (process CPU 0.93x); the
regions property test's process, 1.1-1.2 s in collections instead of 2.0 s (process CPU ~0.9x).

Process-wide, as the collector is: a compile on another thread (a user's thread)
counts in, and the collector comes back when the last one ends, in the state the first one found: a
script that turns it on while a compile runs keeps it on, one that turns it off then finds it on again
after the compile (the off it asked for cannot be told from the compile's own).
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_inside = 0  # compiles running now, all threads
_restore = False  # whether the last compile to end turns the collector on again


@contextlib.contextmanager
def paused():
    global _inside, _restore
    counted = False
    try:  # the count goes up and its try begins with no call between (a ^C there never leaves it up)
        with _lock:
            if _inside == 0:
                _restore = gc.isenabled()
                gc.disable()
            _inside += 1; counted = True  # noqa: E702 - one step, see above
        yield
    finally:
        if counted:
            with _lock:
                _inside -= 1
                if _inside == 0 and _restore and not gc.isenabled():
                    gc.enable()
