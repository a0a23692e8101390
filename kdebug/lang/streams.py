"""numba.cuda's streams and events. Launches and copies complete before they return (on the CPU backend,
and kdebug's GPU runtime copies synchronously), so a stream orders nothing that is not ordered already;
events record real times, so ``elapsed_time`` measures the work between two records."""
from __future__ import annotations

import contextlib
import itertools
import time


class Stream:
    """``cuda.stream()``, ``cuda.default_stream()``...: pass it where numba takes a stream. ``handle`` is its
    CUstream value as numba gives it (``int(s)``, ``int(s.handle)``): 0 for the default stream, 1 and 2 for the
    legacy and per-thread ones, the pointer given for an external stream (``external`` is True), and a value
    of its own for each ``cuda.stream()`` (the CUDA Array Interface's ``"stream"`` of an array bound to it)."""

    def __init__(self, kind: str = "stream", handle: int = 0, external: bool = False) -> None:
        self.kind, self.handle, self.external = kind, handle, external

    def __repr__(self) -> str:
        return f"<kdebug {self.kind} {self.handle:#x}>" if self.handle else f"<kdebug {self.kind}>"

    def __int__(self) -> int:
        return self.handle

    def synchronize(self) -> None:
        """Wait for the stream's work: it is done already."""

    @contextlib.contextmanager
    def auto_synchronize(self):
        """``with stream.auto_synchronize():`` synchronises the stream at the end of the block."""
        yield self
        self.synchronize()

    def add_callback(self, callback, arg=None) -> None:
        """numba calls ``callback(stream, status, arg)`` when the stream's work is done: now."""
        callback(self, 0, arg)

    def async_done(self):
        """An awaitable whose result is the stream, once its work is done: at once. As numba, only inside a
        running event loop (``asyncio.get_running_loop``: RuntimeError outside one)."""
        import asyncio
        future = asyncio.get_running_loop().create_future()
        future.set_result(self)
        return future


_stream_handles = itertools.count(0x1000, 0x10)  # a fresh handle for each cuda.stream(), never 0, 1 or 2


def stream() -> Stream:
    return Stream("stream", next(_stream_handles))


def default_stream() -> Stream:
    return Stream("default stream")


def legacy_default_stream() -> Stream:
    return Stream("legacy default stream", 1)


def per_thread_default_stream() -> Stream:
    return Stream("per-thread default stream", 2)


def external_stream(ptr: int) -> Stream:
    """A stream made elsewhere (a CUstream handle); kdebug keeps only its handle."""
    return Stream("external stream", int(ptr), external=True)


class Event:
    """``cuda.event(timing=True)``: ``record``, ``wait``, ``synchronize``, ``query``, ``elapsed_time``."""

    def __init__(self, timing: bool = True) -> None:
        self.timing = timing
        self._time: float | None = None

    def record(self, stream=0) -> None:
        self._time = time.perf_counter()

    def wait(self, stream=0) -> None:
        """Make ``stream`` wait for this event: the recorded work is done already."""

    def synchronize(self) -> None:
        """Wait until the event has happened: it has, once recorded."""

    def query(self) -> bool:
        return True

    def elapsed_time(self, evtend: "Event") -> float:
        """Milliseconds from this event's record to ``evtend``'s (numba's event_elapsed_time)."""
        return event_elapsed_time(self, evtend)


def event(timing: bool = True) -> Event:
    return Event(timing)


def event_elapsed_time(evtstart: Event, evtend: Event) -> float:
    if not (evtstart.timing and evtend.timing):
        raise RuntimeError("elapsed_time needs two events made with cuda.event(timing=True)")
    if evtstart._time is None or evtend._time is None:
        raise RuntimeError("elapsed_time needs both events recorded first (event.record())")
    return (evtend._time - evtstart._time) * 1000.0
