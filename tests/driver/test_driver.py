"""Driver bookkeeping that the TUI and the headless report rely on."""
from __future__ import annotations

import numpy as np

from kdebug import cuda
from kdebug.driver import driver as driver_module
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel


def test_time_held_at_a_breakpoint_is_not_compile_time(monkeypatch):
    """A session paused before finish for 1000 (fake) seconds reports only the compile's own time."""
    clock = [0.0]

    def fake_perf_counter():
        clock[0] += 0.001  # every reading: one millisecond of compile work
        return clock[0]

    monkeypatch.setattr(driver_module.time, "perf_counter", fake_perf_counter)
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)

    def breakpoint_before_finish(ev):
        if ev.kind == "phase_started" and ev.phase == "finish":
            clock[0] += 1000.0  # held here by the user
            session.bus.paused_seconds += 1000.0

    session.bus.subscribe(breakpoint_before_finish)

    @cuda.jit
    def fill(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 7

    out = np.zeros(8, dtype=np.int64)
    fill[1, 8](out)
    assert (out == 7).all()
    job = model.jobs[1]
    assert 0 < job.compile_time < 1.0, job.compile_time
    assert job.phase_times["finish"] < 1.0
