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
    assert T.typeof(np.zeros((), np.float32)) is None and T.typeof(np.zeros(3, object)) is None
    assert T.typeof(cuda.to_device(a)) == T.typeof(a)
    assert hash(T.typeof(a)) == hash(T.Array(T.float32, 1, "C"))


# ---- the parameter buffer: packed by a plan made once per signature --------------------------------
_SCALARS = [(T.int8, -5), (T.int16, 300), (T.int32, -70000), (T.int64, -(1 << 40)), (T.uint8, 200),
            (T.uint16, 60000), (T.uint32, 4000000000), (T.uint64, (1 << 63) + 5), (T.float32, 1.25),
            (T.float64, -2.5e-300), (T.boolean, True)]


def _ctypes_bytes(argtypes, args) -> bytes:
    """The parameter buffer as the ctypes mirror lays it out (what the launcher was always given)."""
    import ctypes

    from kdebug.runtime import cpu
    s = cpu.params_type(argtypes)(*[cpu.to_cvalue(t, v) for t, v in zip(argtypes, args)])
    return ctypes.string_at(ctypes.addressof(s), ctypes.sizeof(s))


@pytest.mark.parametrize("pair", [(a, b) for a in _SCALARS for b in _SCALARS[::3]])
def test_a_plan_packs_scalars_and_arrays_as_the_ctypes_structure_does(pair):
    from kdebug.runtime import cpu
    from kdebug.runtime.param_packing import plan_for
    (t1, v1), (t2, v2) = pair
    arr2 = cuda.to_device(np.zeros((3, 5), np.float64))
    arr1 = np.zeros(7, np.int8)
    argtypes = (t1, T.typeof(arr2), t2, T.typeof(arr1))
    args = (v1, arr2, v2, arr1)
    plan = plan_for(argtypes, cpu.params_type(argtypes))
    assert plan.pack(args) == _ctypes_bytes(argtypes, args)
    numpy_scalars = (t1.np_dtype.type(v1), arr2, t2.np_dtype.type(v2), arr1)  # numpy's scalar types too
    assert plan.pack(numpy_scalars) == _ctypes_bytes(argtypes, args)


def test_a_plan_converts_values_of_another_type_as_numpy_does():
    from kdebug.runtime import cpu
    from kdebug.runtime.param_packing import plan_for
    argtypes = (T.int32, T.float32, T.int64, T.boolean)
    args = (np.int64(-3), 0.1, 2.0, 0)  # a declared signature may take these
    plan = plan_for(argtypes, cpu.params_type(argtypes))
    assert plan.pack(args) == _ctypes_bytes(argtypes, args)
    with pytest.raises(OverflowError):  # as np.int32(2**40) refuses it
        plan.pack((1 << 40, 0.0, 0, False))


def test_tuples_keep_the_ctypes_path():
    from kdebug.runtime import cpu
    from kdebug.runtime.param_packing import plan_for
    argtypes = (T.int8, T.Tuple((T.int8, T.int64)))
    assert plan_for(argtypes, cpu.params_type(argtypes)) is None


@cuda.jit
def _tuple_sum(t, out):
    out[0] = t[0] + t[1]


def test_tuple_arguments_still_reach_the_kernel():
    out = np.zeros(1, np.int64)
    _tuple_sum[1, 1]((np.int8(3), 40), out)
    assert out[0] == 43


# ---- nothing built for nobody: events, configurations ------------------------------------------
def test_a_launch_nobody_listens_to_builds_no_events(monkeypatch):
    from kdebug import events as E
    from kdebug.session import live
    session = live.Session(backend="cpu", snapshots=False)
    from kdebug.lang import seam
    previous = seam.current()
    live.set_session(session)
    try:
        x = cuda.to_device(np.arange(256, dtype=np.float32))
        out = cuda.device_array(256, np.float32)
        _axpy[1, 256](np.float32(2), x, out)
        made = []
        for name in ("LaunchStarted", "LaunchFinished", "CacheHit"):
            cls = getattr(E, name)
            monkeypatch.setattr(E, name, lambda *a, _cls=cls, **kw: made.append(_cls) or _cls(*a, **kw))
        _axpy[1, 256](np.float32(3), x, out)
        assert made == []
        seen = []
        session.bus.subscribe(seen.append)
        _axpy[1, 256](np.float32(4), x, out)
        assert [e.kind for e in seen] == ["cache_hit", "launch_started", "launch_finished"]
        np.testing.assert_array_equal(out.copy_to_host(), 4 * np.arange(256, dtype=np.float32))
    finally:
        live.set_session(previous)


def test_a_kept_launch_configuration_still_refuses_what_it_refused():
    x = cuda.to_device(np.zeros(4, np.float32))
    _axpy[1, 4](np.float32(1), x, x)
    assert _axpy[1, 4] is _axpy[1, 4]  # checked once
    with pytest.raises(LaunchError, match="int or a tuple"):
        _axpy[True, 4]  # == (1, 4) as a dict key, but a bool is not a size
    with pytest.raises(LaunchError, match="exceeds the limit"):
        _axpy[1, 2048]


# ---- launch plans: what every launch of a kernel with the same argument types reads alike -----------
def _own_session(**kw):
    from kdebug.lang import seam
    from kdebug.session import live
    previous = seam.current()
    session = live.Session(backend="cpu", snapshots=False, **kw)
    live.set_session(session)
    return session, lambda: live.set_session(previous)


def test_a_launch_nobody_listens_to_asks_the_driver_once_and_still_runs_each_time(monkeypatch):
    session, restore = _own_session()
    try:
        x = cuda.to_device(np.arange(256, dtype=np.float32))
        out = cuda.device_array(256, np.float32)
        _axpy[1, 256](np.float32(2), x, out)
        asked = []
        compile_kernel = session.driver.compile_kernel
        monkeypatch.setattr(session.driver, "compile_kernel", lambda *a, **k: asked.append(a) or compile_kernel(*a, **k))
        for k in range(5):
            _axpy[1, 256](np.float32(k), x, out)
            np.testing.assert_array_equal(out.copy_to_host(), k * np.arange(256, dtype=np.float32))
        assert asked == []  # the plan kept the compiled kernel
        y = cuda.to_device(np.arange(256, dtype=np.float64))  # other types: the driver compiles them
        out64 = cuda.device_array(256, np.float64)
        _axpy[1, 256](2.0, y, out64)
        assert len(asked) == 1
        np.testing.assert_array_equal(out64.copy_to_host(), 2 * np.arange(256, dtype=np.float64))
        seen = []
        session.bus.subscribe(seen.append)  # someone listens: every launch goes through the driver again
        _axpy[1, 256](np.float32(5), x, out)
        assert len(asked) == 2 and [e.kind for e in seen] == ["cache_hit", "launch_started", "launch_finished"]
    finally:
        restore()


def test_new_compile_options_are_not_bypassed_by_a_kept_plan():
    session, restore = _own_session()
    try:
        x = cuda.to_device(np.zeros(8, np.float32))
        _axpy[1, 8](np.float32(1), x, x)
        from kdebug.errors import KernelRuntimeError
        short = cuda.device_array(4, np.float32)
        with pytest.raises(KernelRuntimeError):  # memcheck: out[i] past the end of a 4-element array
            _axpy[1, 8](np.float32(1), x, short)
        jobs = len(session.driver.records)
        session.set_options(memcheck=False)
        _axpy[1, 8](np.float32(1), x, x)
        assert len(session.driver.records) > jobs  # a new job, compiled with the new options
        session.set_options(memcheck=True)
        with pytest.raises(KernelRuntimeError):  # the old options' kernel again, with its check
            _axpy[1, 8](np.float32(1), x, short)
    finally:
        restore()


def test_a_failed_check_in_a_planned_launch_is_reported_as_before():
    session, restore = _own_session()
    try:
        x = cuda.to_device(np.zeros(8, np.float32))
        short = cuda.device_array(4, np.float32)
        _axpy[1, 4](np.float32(1), x, short)  # in bounds: compiled and planned
        from kdebug.errors import KernelRuntimeError
        with pytest.raises(KernelRuntimeError) as info:
            _axpy[1, 8](np.float32(1), x, short)
        assert "out" in str(info.value) and session.failed
    finally:
        restore()


@pytest.mark.parametrize("value", [1.5, True, 3 + 4j, -7, (1 << 63) - 1, -(1 << 63), 1 << 63, 1 << 64,
                                   np.bool_(True), np.int8(-3), np.uint16(7), np.int32(5), np.int64(-9),
                                   np.uint64(1 << 63), np.float16(0.5), np.float32(2.5), np.float64(1.0),
                                   np.complex64(1j), np.complex128(2j), np.datetime64("2020-01-01", "D")])
def test_the_quick_type_of_a_scalar_is_argument_types(value):
    quick = dispatcher_module.quick_type(value)
    try:
        full = dispatcher_module.argument_type(value, 1, "a", None)
    except LaunchError:
        assert quick is None
        return
    assert quick is None or quick == full


def test_the_quick_type_of_a_device_array_is_its_checked_type_or_none():
    d = cuda.to_device(np.zeros((4, 6), np.float32))
    assert dispatcher_module.quick_type(d) is None or dispatcher_module.quick_type(d) == T.typeof(d)
    T.typeof(d)  # typed once (T.typeof keeps it on the array)
    assert dispatcher_module.quick_type(d) == dispatcher_module.argument_type(d, 1, "a", None)
    view = d[:, 1]  # strided: its strides are checked by argument_type
    T.typeof(view)
    assert dispatcher_module.quick_type(view) is None
    assert dispatcher_module.quick_type(np.zeros(3, np.float32)) is None  # a host array is staged and typed


def test_a_plan_packs_a_kernel_without_arguments_and_one_with_one():
    from kdebug.runtime import cpu
    from kdebug.runtime.param_packing import plan_for
    assert plan_for((), cpu.params_type(())).pack(()) == _ctypes_bytes((), ())
    plan = plan_for((T.int32,), cpu.params_type((T.int32,)))
    assert plan.pack((np.int32(-4),)) == plan.pack((-4,)) == _ctypes_bytes((T.int32,), (-4,))


def test_the_tier_worker_stays_for_the_next_compile():
    """One background thread for the session's target: a compile after the last one finished starts none."""
    from kdebug.targets.cpu import tiers
    session, restore = _own_session(tiered=True)
    try:
        @cuda.jit
        def first(x):
            x[0] = 1

        @cuda.jit
        def second(x):
            x[0] = 2

        x = np.zeros(1, np.int64)
        first[1, 1](x)
        assert tiers.wait_all(60)
        worker = session.target.tier_worker
        thread = worker.thread
        assert thread is not None and thread.name == "kdebug-tier1"
        second[1, 1](x)
        assert tiers.wait_all(60) and tiers.pending() == 0
        assert worker.thread is thread and thread.is_alive() and session.target.tier_worker is worker
        assert x[0] == 2
    finally:
        restore()
