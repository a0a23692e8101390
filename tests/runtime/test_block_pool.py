"""When a launch spreads its blocks over cores: above PARALLEL_MIN_THREADS and only with an idle core
(runtime/cpu.py). The decision is observed through the pool's submissions, nothing is timed."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from kdebug.runtime import cpu as rc


@cuda.jit
def _scale(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 3 * x[i]


@cuda.jit
def _off_by_one(out):
    out[cuda.grid(1) + 1] = 1


@pytest.fixture
def submissions(monkeypatch):
    made = []
    pool = rc.pool()
    real = pool.submit

    def counting_submit(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(pool, "submit", counting_submit)
    monkeypatch.setattr(rc, "_NCPU", 2)
    monkeypatch.setattr(rc, "PARALLEL_MIN_THREADS", 1)
    return made


def test_blocks_go_to_the_pool_when_a_core_is_idle(monkeypatch, submissions):
    monkeypatch.setattr(rc, "cores_idle", lambda ncpu: True)
    x = np.arange(4096, dtype=np.float32)
    out = np.zeros_like(x)
    _scale[16, 256](x, out)
    assert submissions  # chunks of blocks went to the pool
    np.testing.assert_array_equal(out, 3 * x)


def test_blocks_stay_on_one_core_when_the_machine_is_busy(monkeypatch, submissions):
    monkeypatch.setattr(rc, "cores_idle", lambda ncpu: False)
    x = np.arange(4096, dtype=np.float32)
    out = np.zeros_like(x)
    _scale[16, 256](x, out)
    assert submissions == []
    np.testing.assert_array_equal(out, 3 * x)


def test_a_failed_check_in_pooled_blocks_still_reports_the_one_failing_thread(monkeypatch, submissions):
    monkeypatch.setattr(rc, "cores_idle", lambda ncpu: True)
    with pytest.raises(KernelRuntimeError, match=r"index 4096 is outside shape \(4096,\)"):
        _off_by_one[16, 256](np.zeros(4096, np.int8))
    assert submissions


def test_cores_idle_reads_the_load_average(monkeypatch):
    monkeypatch.setattr(rc.os, "getloadavg", lambda: (1.9, 0.0, 0.0))
    assert not rc.cores_idle(2)
    monkeypatch.setattr(rc.os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert rc.cores_idle(2)
