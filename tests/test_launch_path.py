"""The launch path of an already-compiled kernel does no avoidable work: no stack walk for the
caller's location (only errors need it), the job key built once, argument types reused. Calls are
counted, nothing is timed."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.driver import job as job_module
from kdebug.errors import LaunchError
from kdebug.lang import dispatcher as dispatcher_module
from kdebug.lang import types as T


@cuda.jit
def _axpy(a, x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i]


def test_a_launch_walks_no_stack_and_builds_the_job_key_once(monkeypatch):
    x = cuda.to_device(np.arange(256, dtype=np.float32))
    out = cuda.device_array(256, np.float32)
    _axpy[1, 256](np.float32(2), x, out)  # compiled here
    calls = {"location": 0, "key": 0}
    job_key = job_module.job_key

    def counting_key(*a, **kw):
        calls["key"] += 1
        return job_key(*a, **kw)

    def no_location(*a, **kw):
        calls["location"] += 1
        return None

    monkeypatch.setattr(job_module, "job_key", counting_key)
    monkeypatch.setattr(dispatcher_module, "caller_location", no_location)
    for _ in range(10):
        _axpy[1, 256](np.float32(2), x, out)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * np.arange(256, dtype=np.float32))
    assert calls["location"] == 0
    assert calls["key"] <= 1  # the record keeps its key; every event reuses it


def test_a_bad_launch_configuration_still_points_at_the_caller():
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError) as info:
        _axpy[1, 0](np.float32(1), x, x)
    assert info.value.loc is not None and info.value.loc.file == __file__


def test_array_argument_types_are_reused_and_still_told_apart():
    a, b = np.zeros(3, np.float32), np.zeros((2, 2), np.float32)
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    assert T.typeof(a) is T.typeof(np.ones(5, np.float32))
    assert T.typeof(a) != T.typeof(b) and T.typeof(a) != T.typeof(frozen) and T.typeof(frozen).readonly
    assert T.typeof(np.zeros((), np.float32)) is None and T.typeof(np.zeros(3, np.complex64)) is None
    assert T.typeof(cuda.to_device(a)) == T.typeof(a)
    assert hash(T.typeof(a)) == hash(T.Array(T.float32, 1, "C"))
