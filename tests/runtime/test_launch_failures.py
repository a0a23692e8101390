"""Any exception inside a launch is a failed launch in the events (never ``ok``), and reaches the script."""
from __future__ import annotations

import numpy as np
import pytest

import kdebug.session.live as live
from kdebug import cuda
from kdebug import events as E


@cuda.jit
def fill(a):
    a[cuda.grid(1)] = 1.0


@pytest.mark.parametrize("exc", [RuntimeError("the runtime broke"), KeyboardInterrupt(), MemoryError("no room")],
                         ids=["runtime_error", "keyboard_interrupt", "memory_error"])
def test_a_foreign_exception_in_a_launch_is_a_failed_launch(monkeypatch, exc):
    session = live.Session(backend="cpu", snapshots=False)
    seen = []
    session.bus.subscribe(seen.append)
    previous = live.get_session()
    live.set_session(session)
    try:
        fill[1, 4](np.zeros(4))  # compiled and run once: the next launch fails only where the runtime raises

        def broken(*_a, **_k):
            raise exc
        monkeypatch.setattr(session.runtime, "launch", broken)
        with pytest.raises(type(exc)):
            fill[1, 4](np.zeros(4))
    finally:
        live.set_session(previous)
    finished = [ev for ev in seen if isinstance(ev, E.LaunchFinished)]
    assert [ev.error for ev in finished][0] is None
    assert finished[1].error == f"{type(exc).__name__}: {exc}", finished[1]
    assert session.failed
