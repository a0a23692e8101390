"""A kernel compiled in a session of its own, something asked at the start of each of its compile's phases
(tests/driver/test_stack_room.py, test_gc_pause.py: what the compile runs under)."""
from __future__ import annotations

import numpy as np

from kdebug import events as E


def answers_at_each_phase(probe) -> list:
    """``probe()`` at every PhaseStarted of one compile (a new session, no snapshots, untiered); the kernel
    also ran right (x + 1 on eight elements)."""
    from kdebug import cuda
    from kdebug.session.live import Session, set_session
    session = Session(backend="cpu", snapshots=False, tiered=False)
    set_session(session)
    seen = []
    session.bus.subscribe(lambda ev: seen.append(probe()) if isinstance(ev, E.PhaseStarted) else None)

    @cuda.jit
    def add_one(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    x = np.zeros(8)
    try:
        add_one[1, 8](x)
    finally:
        set_session(None)
    assert list(x) == [1.0] * 8
    return seen
