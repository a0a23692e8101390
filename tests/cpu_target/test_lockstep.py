"""Lockstep loops (kdebug/targets/cpu/forms/coroutines/lockstep.py): a coroutine kernel's loop run by its threads together
gives exactly what the thread-by-thread loop gives: values, the loop variable after the loop, memcheck's
report, and the loops it cannot take stay per thread."""
from __future__ import annotations

import re
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from kdebug import cuda
from kdebug.cuda import float32
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live
from kdebug.targets.cpu.target import emit_pipeline

sys.path.insert(0, f"{ROOT}/sample_kernels")
import warp_reduce  # noqa: E402

FULL = 0xFFFFFFFF


@cuda.jit
def guarded_sum(x, out, lastk, limit, stride_mul, offset):
    """Early exits, break, continue, k after the loop (also when the loop never ran), then a barrier."""
    i = cuda.grid(1)
    if i >= limit:
        return
    stride = cuda.gridsize(1) * stride_mul
    acc = float32(0)
    k = -7
    for k in range(i + offset, x.size, stride):
        if x[k] > 0.95:
            break
        if x[k] < 0.05:
            continue
        acc += x[k] * float32(2)
    cuda.syncthreads()
    out[i] = acc
    lastk[i] = k


@cuda.jit
def spread_writes(x, y, mul, off):
    """Writes inside the loop, a nested loop, variables named like the run's own fields; ``mul`` > 1
    makes the threads' ranges non-consecutive (the threads then run their loops themselves)."""
    i = cuda.grid(1)
    start = i * mul + off
    step = cuda.gridsize(1) * mul
    trips = 0
    stop = x.size
    for k in range(start, stop, step):
        t = x[k]
        for j in range(2):
            t = t * float32(0.5) + float32(j)
        y[k] = t + float32(i)
        trips += 1
    v = cuda.shfl_down_sync(FULL, trips, 1)
    if i < y.size:
        y[i] += float32(v) * float32(0.0)


@pytest.fixture(scope="module")
def sessions():
    """Two CPU sessions, lockstep on and off (each compiles its own code), both running kernels with
    barriers as coroutines (lockstep loops are the coroutine form's; the region form runs a region's
    loops in its thread loops already)."""
    previous = seam.current()
    made = {on: live.Session(backend="cpu", passes_on_demand=True, snapshots=True, lockstep=on, regions=False) for on in (True, False)}
    yield made
    live.set_session(previous)


def _lockstep_in(session, kernel, *arrays) -> bool:
    """Whether the session compiled ``kernel`` with a lockstep loop (so that a test runs that path)."""
    compiled = session.compile_kernel(kernel, tuple(T.typeof(a) for a in arrays))
    return "kdebug.rt.lockstep_pass" in compiled.record.ir_after_finish()


def _run(session, launch):
    live.set_session(session)
    return launch()


def _both(sessions, launch):
    return _run(sessions[True], launch), _run(sessions[False], launch)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 3000), blocks=st.integers(1, 3), threads=st.sampled_from([32, 64, 96, 160]),
       limit_frac=st.floats(0, 1), stride_mul=st.integers(1, 3), offset=st.integers(0, 40), seed=st.integers(0, 99))
def test_lockstep_gives_the_per_thread_results(sessions, n, blocks, threads, limit_frac, stride_mul, offset, seed):
    x = np.random.default_rng(seed).random(n).astype(np.float32)
    nt = blocks * threads
    limit = int(limit_frac * nt)

    def launch():
        out, lastk = np.zeros(nt, np.float32), np.zeros(nt, np.int64)
        guarded_sum[blocks, threads](x, out, lastk, limit, stride_mul, offset)
        return out, lastk

    (a, ka), (b, kb) = _both(sessions, launch)
    assert _lockstep_in(sessions[True], guarded_sum, x, a, ka, limit, stride_mul, offset)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ka, kb)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 2000), blocks=st.integers(1, 3), mul=st.integers(1, 3), off=st.integers(0, 2),
       seed=st.integers(0, 99))
def test_lockstep_writes_match_and_scattered_ranges_fall_back(sessions, n, blocks, mul, off, seed):
    x = np.random.default_rng(seed).random(n).astype(np.float32)

    def launch():
        y = np.full(n, -1, np.float32)
        spread_writes[blocks, 64](x, y, mul, off)
        return y

    a, b = _both(sessions, launch)
    assert _lockstep_in(sessions[True], spread_writes, x, a, mul, off)
    np.testing.assert_array_equal(a, b)


def test_the_warp_reduce_sample_checks_itself_with_lockstep(sessions):
    live.set_session(sessions[True])
    warp_reduce.main(1 << 16)
    x = np.random.default_rng(1).random(100_003).astype(np.float32)
    a, b = _both(sessions, lambda: warp_reduce.reduce(x, 7, 96))
    assert a == b


def _optimised_module(session, dispatcher, argtypes) -> str:
    compiled = session.compile_kernel(dispatcher, argtypes)
    mod = llvm.parse_assembly(compiled.record.ir_after_finish())
    emit_pipeline(session.target.tm, mod, session.target.speed_level)
    return str(mod)


def _vectorised_loops(ir_text: str) -> int:
    """How many loops of a module LLVM's loop vectoriser vectorised (their llvm.loop.isvectorized mark)."""
    marks = set(re.findall(r'^(!\d+) = !\{!"llvm\.loop\.isvectorized", i32 1\}', ir_text, re.M))
    loops = re.findall(r"^!\d+ = distinct !\{(.*)\}$", ir_text, re.M)
    return sum(1 for items in loops if marks & set(items.split(", ")))


# LLVM's vectoriser depends on the CPU the code is made for (AVX-512 gathers the rounds' x[k] as
# 32-bit lanes, SSE4.2 vectorises only their index arithmetic): the test pins the models it checks
# and counts vectorised loops rather than naming instructions. Compiled only, never run, so any
# x86-64 host can check both models.
@pytest.mark.parametrize("model", ["x86-64-v2", "x86-64-v4"])
def test_the_lockstep_lane_loop_is_vectorised(model):
    previous = seam.current()
    x = np.zeros(4, np.float32)
    argtypes = (T.typeof(x), T.typeof(x))
    made = {on: live.Session(backend="cpu", passes_on_demand=True, snapshots=True, lockstep=on, regions=False, host_cpu=model) for on in (True, False)}
    try:
        on = _optimised_module(made[True], warp_reduce.warp_sum, argtypes)
        off = _optimised_module(made[False], warp_reduce.warp_sum, argtypes)
    finally:
        live.set_session(previous)
    assert "kdebug.rt.lockstep_pass" in on and "kdebug.rt.lockstep_pass" not in off
    # the lane loops that run the rounds for many threads at once are vectorised loops of their own
    assert _vectorised_loops(on) > _vectorised_loops(off), f"the lockstep lane loop was not vectorised for {model}"


@cuda.jit
def read_before_loop(x, out):
    i = cuda.grid(1)
    first = x[i]  # may fail: the loop below stays per thread
    acc = float32(0)
    for k in range(i, x.size, cuda.gridsize(1)):
        acc += x[k]
    cuda.syncthreads()
    out[i] = acc + first * float32(0)


@cuda.jit
def print_in_loop(x, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, x.size, cuda.gridsize(1)):
        acc += x[k]
        if acc > 1e30:
            print(k)
    cuda.syncthreads()
    out[i] = acc


@pytest.mark.parametrize("kernel", [read_before_loop, print_in_loop], ids=["read-before", "print-inside"])
def test_loops_whose_order_shows_stay_per_thread(sessions, kernel):
    x = np.ones(256, np.float32)
    argtypes = (T.typeof(x), T.typeof(x))
    assert "kdebug.rt.lockstep_pass" not in _optimised_module(sessions[True], kernel, argtypes)

    def launch():
        out = np.zeros(64, np.float32)
        kernel[1, 64](x, out)
        return out
    a, b = _both(sessions, launch)
    np.testing.assert_array_equal(a, b)


@cuda.jit
def a_later_loop_reads_an_earlier_loops_writes(y, out):
    """Thread i's second loop reads y[i + 1], which thread i + 1's first loop writes: after thread i's loops
    when each thread runs its own, before them if every thread ran the first loop before any ran the second."""
    i = cuda.grid(1)
    for k in range(i, y.size, cuda.gridsize(1)):
        y[k] = float32(k + 1)
    acc = float32(0)
    for k in range(i, y.size, cuda.gridsize(1)):
        acc += y[(k + 1) % y.size]
    cuda.syncthreads()
    out[i] = acc


@cuda.jit
def a_statement_after_the_loop_reads_its_writes(y, out):
    i = cuda.grid(1)
    for k in range(i, y.size, cuda.gridsize(1)):
        y[k] = float32(k + 1)
    acc = y[(i + 1) % y.size]
    cuda.syncthreads()
    out[i] = acc


@cuda.jit
def the_loop_reads_what_a_later_iteration_of_another_thread_writes(y, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, y.size, cuda.gridsize(1)):
        y[k] = float32(k + 1)
        acc += y[(k + 1) % cuda.gridsize(1)]
    cuda.syncthreads()
    out[i] = acc


@cuda.jit
def a_statement_after_the_loop_writes_what_it_reads(y, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, y.size, cuda.gridsize(1)):
        acc += y[k]
    y[(i + 1) % y.size] = float32(7)
    cuda.syncthreads()
    out[i] = acc


SEEN_BY_OTHER_THREADS = [a_later_loop_reads_an_earlier_loops_writes, a_statement_after_the_loop_reads_its_writes,
                         the_loop_reads_what_a_later_iteration_of_another_thread_writes,
                         a_statement_after_the_loop_writes_what_it_reads]


@pytest.mark.parametrize("kernel", SEEN_BY_OTHER_THREADS, ids=lambda k: k.__name__)
def test_loops_whose_threads_would_see_each_others_iterations_stay_per_thread(sessions, kernel):
    """Lockstep would run every thread's loop before any thread's next statement, and a round of iterations
    before the next: each kernel here could tell (run so, 63 of its 192 outputs differ from the
    thread-by-thread run's), so its loops keep the per-thread order, in the coroutine form and in the region
    form (whose grid-stride loops run in rounds by the same rules)."""
    y = np.zeros(128, np.float32)
    argtypes = (T.typeof(y), T.typeof(y))
    assert "kdebug.rt.lockstep_pass" not in _optimised_module(sessions[True], kernel, argtypes)

    def launch():
        y, out = np.zeros(128, np.float32), np.zeros(64, np.float32)
        kernel[1, 64](y, out)
        return np.concatenate([y, out])
    previous = seam.current()
    regions = live.Session(backend="cpu", snapshots=False, tiered=False, regions=True)
    try:
        in_regions = _run(regions, launch)
    finally:
        live.set_session(previous)
    a, b = _both(sessions, launch)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(in_regions, b)


@cuda.jit
def writes_over_ranges_that_meet(y, out, step):
    """Thread i writes y[i], y[i + step], ...: with a step smaller than the threads, thread i's second element
    is thread i + step's first, which thread order writes last and rounds of iterations first."""
    i = cuda.grid(1)
    for k in range(i, y.size, step):
        y[k] = float32(i)
    cuda.syncthreads()
    out[i] = y[i]


@pytest.mark.parametrize("step", [2, 63, 64, 200])
def test_ranges_that_meet_keep_the_thread_order_of_their_writes(sessions, step):
    """The loop writes only its own y[k], but the threads' ranges meet where the step is below their number:
    the coroutines' run checks the step at run time and runs such threads' loops one by one; the region form
    runs in rounds only a range that is the thread's own (start cuda.grid(1), step gridsize(1) or blockDim.x)."""
    def launch():
        y, out = np.full(300, -1, np.float32), np.zeros(64, np.float32)
        writes_over_ranges_that_meet[1, 64](y, out, step)
        return np.concatenate([y, out])
    previous = seam.current()
    regions = live.Session(backend="cpu", snapshots=False, tiered=False, regions=True)
    try:
        in_regions = _run(regions, launch)
    finally:
        live.set_session(previous)
    a, b = _both(sessions, launch)
    y = np.frombuffer(b[:300].tobytes(), np.float32)
    # thread order: the last thread whose range holds k wrote it
    want = [max((i for i in range(64) if i <= k and (k - i) % step == 0), default=-1) for k in range(300)]
    np.testing.assert_array_equal(y, np.array(want, np.float32))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(in_regions, b)


@cuda.jit
def fails_in_loop(x, bad, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, 64 * 4, cuda.gridsize(1)):
        j = k
        if k == bad[i]:
            j = k + 100000
        acc += x[j]
    cuda.syncthreads()
    out[i] = acc


@cuda.jit
def fails_in_loop_2d(a, bad, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, 64 * 4, cuda.gridsize(1)):
        r = k // 16
        if k == bad[i]:
            r = r + 20
        acc += a[r, k % 16]
    acc += cuda.shfl_down_sync(FULL, acc, 16)
    out[i] = acc


def _report(session, launch) -> str:
    live.set_session(session)
    with pytest.raises(KernelRuntimeError) as err:
        launch()
    return str(err.value)


@pytest.mark.parametrize("bad_at", [{5: 5, 3: 3 + 2 * 64}, {40: 40 + 64, 2: 2 + 3 * 64}, {63: 63}],
                         ids=["later-thread-fails-first", "two-warps", "last-thread"])
def test_memcheck_in_a_lockstep_loop_reports_as_per_thread(sessions, bad_at):
    x = np.ones(64 * 4, np.float32)
    bad = np.full(64, -1, np.int64)
    for t, k in bad_at.items():
        bad[t] = k

    def launch():
        fails_in_loop[1, 64](x, bad, np.zeros(64, np.float32))
    on, off = (_report(sessions[s], launch) for s in (True, False))
    assert _lockstep_in(sessions[True], fails_in_loop, x, bad, x)
    assert on == off
    assert f"thread ({min(bad_at)}, 0, 0)" in on


def test_memcheck_in_a_lockstep_loop_2d_reports_both_indices(sessions):
    a = np.ones((16, 16), np.float32)
    bad = np.full(64, -1, np.int64)
    bad[9] = 9 + 64

    def launch():
        fails_in_loop_2d[1, 64](a, bad, np.zeros(64, np.float32))
    on, off = (_report(sessions[s], launch) for s in (True, False))
    assert _lockstep_in(sessions[True], fails_in_loop_2d, a, bad, np.zeros(64, np.float32))
    assert on == off and "thread (9, 0, 0)" in on and "index (24, 9)" in on


@cuda.jit
def fails_after_loop(x, bad, out):
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, 64 * 4, cuda.gridsize(1)):
        j = k
        if k == bad[i]:
            j = k + 100000
        acc += x[j]
    if i == 1:
        acc += x[i + 100000]  # thread 1's failure after the loop comes before thread 3's inside it
    cuda.syncthreads()
    out[i] = acc


def test_a_failure_after_the_loop_in_an_earlier_thread_is_reported_first(sessions):
    x = np.ones(64 * 4, np.float32)
    bad = np.full(64, -1, np.int64)
    bad[3] = 3

    def launch():
        fails_after_loop[1, 64](x, bad, np.zeros(64, np.float32))
    on, off = (_report(sessions[s], launch) for s in (True, False))
    assert _lockstep_in(sessions[True], fails_after_loop, x, bad, x)
    assert on == off and "thread (1, 0, 0)" in on


def test_lockstep_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("KDEBUG_LOCKSTEP", "0")
    assert live.Session(backend="cpu", snapshots=False).target.lockstep is False
    monkeypatch.setenv("KDEBUG_LOCKSTEP", "1")
    s = live.Session(backend="cpu", snapshots=False)
    assert s.target.lockstep is True
    s.set_options(lockstep=False)
    assert s.target.lockstep is False


@cuda.jit
def local_array_in_loop(x, out):
    """A thread's local array, made before a barrier, updated in the loop: each thread's own memory."""
    i = cuda.grid(1)
    tmp = cuda.local.array(4, float32)
    for j in range(4):
        tmp[j] = float32(i)
    cuda.syncthreads()
    for k in range(i, x.size, cuda.gridsize(1)):
        tmp[k % 4] += x[k]
    cuda.syncthreads()
    out[i] = tmp[0] + float32(2) * tmp[1] + float32(3) * tmp[2] + float32(4) * tmp[3]


def test_a_local_array_in_a_lockstep_loop_stays_the_threads_own(sessions):
    x = np.random.default_rng(3).random(5000).astype(np.float32)

    def launch():
        out = np.zeros(128, np.float32)
        local_array_in_loop[2, 64](x, out)
        return out
    a, b = _both(sessions, launch)
    assert _lockstep_in(sessions[True], local_array_in_loop, x, a)
    np.testing.assert_array_equal(a, b)


@cuda.jit
def fails_across_blocks(x, bad, late, out):
    """Blocks of a group run their loops together; failures are still reported in block order."""
    i = cuda.grid(1)
    acc = float32(0)
    for k in range(i, x.size, cuda.gridsize(1)):
        j = k
        if k == bad[i]:
            j = k + 1000000
        acc += x[j]
    acc += cuda.shfl_down_sync(FULL, acc, 1)
    if i == late[0]:
        acc += x[i + 1000000]  # after the loop and a warp operation
    out[i] = acc


@pytest.mark.parametrize("in_loop, after", [((5 * 64 + 3, 2 * 64 + 9), -1), ((64 + 4,), 7), ((3 * 64,), 5 * 64 + 1)],
                         ids=["two-blocks-in-loop", "block0-after-loop-first", "block1-group2-after"])
def test_memcheck_across_the_blocks_of_a_group_reports_in_block_order(sessions, in_loop, after):
    nt = 6 * 64
    x = np.ones(nt * 3, np.float32)
    bad = np.full(nt, -1, np.int64)
    for t in in_loop:
        bad[t] = t + nt  # the thread's second iteration
    late = np.array([after], np.int64)

    def launch():
        fails_across_blocks[6, 64](x, bad, late, np.zeros(nt, np.float32))
    on, off = (_report(sessions[s], launch) for s in (True, False))
    assert _lockstep_in(sessions[True], fails_across_blocks, x, bad, late, x)
    assert on == off
    first = min(list(in_loop) + ([after] if after >= 0 else []))
    assert f"block ({first // 64}, 0, 0), thread ({first % 64}, 0, 0)" in on
