"""Room on CPython's frame stack for kdebug's deep recursion, so that it never pays a memory map per call.

CPython (3.11 and later) keeps a thread's Python frames in chunks of memory: 16 KiB, or as much as one
frame needs. A call whose frame does not fit in the current chunk maps a new one, and the return that
empties it unmaps it again. Code whose depth goes up and down across a chunk's end (a recursive walk of a
syntax tree, of nested types, of an expression) therefore maps and unmaps memory at every crossing: a
system call each way and a page fault, measured at 8-20 us a crossing on a virtual machine, against
~50 ns for the call itself. A random gradient program's compile (tests/autodiff/test_gradient_property.py)
crossed ~5,800 times: 11-14% of that test's CPU time, most of it in the kernel.

``call(fn, ...)`` runs ``fn`` on top of a frame whose code asks for a large evaluation stack that it never
uses: CPython gives that frame a chunk of its own of 1 MiB and puts the frames called from it after it, in
the rest of that chunk (~490 KiB: thousands of frames). The unused part is mapped but never touched, so it
costs no memory. Calls of ``call`` inside ``call`` (on the same thread) run ``fn`` directly. Elsewhere
than CPython 3.11+ it only calls ``fn``.
"""
from __future__ import annotations

import sys
import threading

# slots of the evaluation stack the room's frame asks for: its chunk is the next power of two above
# 8 bytes x (this + the frame's header + CPython's reserve of 1,000), 1 MiB, half of it the room
ROOM_SLOTS = 70_000

_here = threading.local()


def _on_room(fn, args, kwargs):
    _here.inside = True
    try:
        return fn(*args, **kwargs)
    finally:
        _here.inside = False


if sys.implementation.name == "cpython" and sys.version_info >= (3, 11):
    _on_room.__code__ = _on_room.__code__.replace(co_stacksize=ROOM_SLOTS)


def inside() -> bool:
    """Whether this thread runs inside ``call`` now."""
    return getattr(_here, "inside", False)


def call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, its calls made on a frame-stack chunk with room for deep recursion."""
    if inside():
        return fn(*args, **kwargs)
    return _on_room(fn, args, kwargs)
