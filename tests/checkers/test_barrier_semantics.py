"""sm_70 barrier semantics on the CPU backend, each rule both ways: the pattern that is correct on a GPU
runs (silently, or with the warning), the one that hangs or diverges is a located error."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import KernelRuntimeError, LaunchError
from kdebug.lang.device import max_cooperative_grid_blocks
from kdebug.session.live import get_session


@pytest.fixture
def capture_diagnostics():
    """The warning diagnostics the session emits from now on, as a function returning the list so far."""
    from kdebug import events as E
    seen = []
    get_session().bus.subscribe(lambda e: seen.append(e) if isinstance(e, E.Diagnostic) else None)
    return lambda: [e for e in seen if e.severity == "warning"]


# ---- exited threads release a block barrier ---------------------------------------------------------------
@cuda.jit
def guarded_shift(x, out, n):
    s = cuda.shared.array(128, cuda.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= n:
        return
    s[t] = x[i]
    cuda.syncthreads()
    out[i] = s[t - 1] if t > 0 else s[t]


def test_early_return_before_syncthreads_is_silent_and_correct(capture_diagnostics):
    x = np.arange(200, dtype=np.float32)
    out = np.zeros(200, np.float32)
    guarded_shift[2, 128](x, out, 150)
    expected = np.where(np.arange(150) % 128 == 0, x[:150], np.roll(x[:150], 1))
    np.testing.assert_array_equal(out[:150], expected)
    assert capture_diagnostics() == []


@cuda.jit
def two_barriers(x):
    t = cuda.threadIdx.x
    if t < 10:
        cuda.syncthreads()
    else:
        cuda.syncthreads()
    x[t] = 1


def test_threads_at_different_barriers_stay_an_error():
    with pytest.raises(KernelRuntimeError, match=r"divergent barrier in kernel two_barriers: the threads of block "
                                                 r"\(0, 0, 0\) wait at different barriers") as err:
        two_barriers[1, 32](np.zeros(32, np.int32))
    assert err.value.loc.line > 0


@cuda.jit
def barrier_in_branch(x, out):
    t = cuda.threadIdx.x
    if x[t] > 0:
        out[t] = 1
        cuda.syncthreads()
        out[t] = 2


def test_barrier_in_a_branch_released_by_exits_is_a_warning(capture_diagnostics):
    x = np.r_[np.ones(20), np.zeros(12)].astype(np.int32)
    out = np.zeros(32, np.int32)
    barrier_in_branch[1, 32](x, out)
    assert list(out) == [2] * 20 + [0] * 12
    (warning,) = capture_diagnostics()
    assert warning.category == "barrier" and warning.location["line"] > 0
    line = barrier_in_branch.py_func.__code__.co_firstlineno + 5  # the decorator's line + 5
    assert warning.location["line"] == line
    assert ("cuda.syncthreads() in kernel barrier_in_branch completed only because 12 threads of block (0, 0, 0) "
            "skipped it and exited (the first, thread (20, 0, 0), at the end of the kernel) while 20 waited at line "
            f"{line}") in warning.message


# ---- the warning decided by execution: which threads ran past the barrier before exiting ------------------------
@cuda.jit
def guard_then_uniform_branch(x, out, flag):
    t = cuda.threadIdx.x
    if t >= x.size:
        return                 # these threads leave above the barrier: an early-exit guard
    if flag:                   # the same for every thread of the block
        cuda.syncthreads()
    out[t] = x[t]


def test_barrier_in_a_uniform_branch_after_an_early_exit_guard_is_silent(capture_diagnostics):
    out = np.zeros(20)
    guard_then_uniform_branch[1, 32](np.arange(20.0), out, 1)
    assert list(out) == list(range(20)) and capture_diagnostics() == []


@cuda.jit
def barrier_in_a_divergent_loop(out):
    t = cuda.threadIdx.x
    for k in range(1 + t % 2):  # odd threads take a second trip: even ones are gone by then
        cuda.syncthreads()
        out[t] += 1


def test_barrier_skipped_by_a_shorter_loop_is_a_warning(capture_diagnostics):
    out = np.zeros(8, np.int64)
    barrier_in_a_divergent_loop[1, 8](out)
    assert list(out) == [1, 2] * 4
    (warning,) = capture_diagnostics()
    assert ("completed only because 4 threads of block (0, 0, 0) skipped it and exited (the first, thread "
            "(0, 0, 0), at the end of the kernel) while 4 waited") in warning.message


@cuda.jit
def return_below_the_barrier(x, out):
    t = cuda.threadIdx.x
    if x[t] > 0:
        cuda.syncthreads()
        out[t] = 1
    else:
        out[t] = 2
        return


def test_the_warning_names_the_return_the_skipping_threads_left_by(capture_diagnostics):
    x = np.r_[np.ones(5), np.zeros(3)].astype(np.int32)
    out = np.zeros(8, np.int32)
    return_below_the_barrier[1, 8](x, out)
    assert list(out) == [1] * 5 + [2] * 3
    (warning,) = capture_diagnostics()
    ret = return_below_the_barrier.py_func.__code__.co_firstlineno + 8
    assert f"3 threads of block (0, 0, 0) skipped it and exited (the first, thread (5, 0, 0), by the return at line " \
           f"{ret}) while 5 waited" in warning.message


@cuda.jit
def skip_then_other_barrier(x):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
    cuda.syncthreads()
    x[t] = 1


def test_threads_that_skip_a_barrier_but_do_not_exit_are_an_error():
    with pytest.raises(KernelRuntimeError, match="wait at different barriers"):
        skip_then_other_barrier[1, 32](np.zeros(32, np.int32))


@cuda.jit
def votes_with_exits(x, out, n):
    t = cuda.threadIdx.x
    if t >= n:
        return
    p = x[t] > 0
    out[t, 0] = cuda.syncthreads_count(p)
    out[t, 1] = cuda.syncthreads_and(p)
    out[t, 2] = cuda.syncthreads_or(p)


@pytest.mark.parametrize("values,count,all_,any_", [([1] * 20, 20, 1, 1), ([1] * 19 + [0], 19, 0, 1),
                                                    ([0] * 20, 0, 0, 0)])
def test_syncthreads_votes_count_only_threads_that_arrive(values, count, all_, any_):
    """bar.red over the non-exited threads: 12 exited threads neither vote nor spoil the and."""
    x = np.zeros(32, np.int32)
    x[:20] = values
    out = np.zeros((32, 3), np.int32)
    votes_with_exits[1, 32](x, out, 20)
    assert (out[:20] == [count, all_, any_]).all()



# ---- a return below a barrier in a loop: the thread passed the barrier in that trip ---------------------------
@cuda.jit
def return_after_the_barrier_in_a_loop(x, out, steps):
    t = cuda.threadIdx.x
    for k in range(steps):
        cuda.syncthreads()
        out[t] += 1
        if k >= x[t]:
            return             # after the barrier of this trip: an early exit of the next trip


def test_a_return_below_a_barrier_in_a_loop_is_silent(capture_diagnostics):
    x = np.arange(8, dtype=np.int64) % 4
    out = np.zeros(8, np.int64)
    return_after_the_barrier_in_a_loop[1, 8](x, out, 6)
    assert list(out) == list(x + 1)  # thread t runs x[t] + 1 trips, passing the barrier in each
    assert capture_diagnostics() == []


@cuda.jit
def return_beside_the_barrier_in_a_loop(x, out, steps):
    t = cuda.threadIdx.x
    for k in range(steps):
        if k < x[t]:
            cuda.syncthreads()
            out[t] += 1
        else:
            return             # in a trip where the thread did not reach the barrier


def test_a_return_beside_a_barrier_in_a_loop_is_a_warning(capture_diagnostics):
    x = np.r_[np.full(5, 3), np.full(3, 1)].astype(np.int64)
    out = np.zeros(8, np.int64)
    return_beside_the_barrier_in_a_loop[1, 8](x, out, 3)
    assert list(out) == list(x)
    (warning,) = capture_diagnostics()
    ret = return_beside_the_barrier_in_a_loop.py_func.__code__.co_firstlineno + 8
    assert f"3 threads of block (0, 0, 0) skipped it and exited (the first, thread (5, 0, 0), by the return at line " \
           f"{ret}) while 5 waited" in warning.message


# ---- barriers in device functions: the same execution rule, at the kernel's call ------------------------------
@cuda.jit(device=True)
def sync_if(flag):
    if flag:
        cuda.syncthreads()


@cuda.jit(device=True)
def sync_times(n):
    for _ in range(n):
        cuda.syncthreads()


@cuda.jit(device=True)
def sync_always():
    cuda.syncthreads()


@cuda.jit(device=True)
def sync_through(flag):
    sync_if(flag)


@cuda.jit
def guard_then_device_barrier_in_a_uniform_branch(x, out, flag):
    t = cuda.threadIdx.x
    if t >= x.size:
        return                 # an early-exit guard above the call
    sync_through(flag)         # the same flag for every thread
    out[t] = x[t]


def test_a_device_barrier_in_a_uniform_branch_after_a_guard_is_silent(capture_diagnostics):
    out = np.zeros(20)
    guard_then_device_barrier_in_a_uniform_branch[1, 32](np.arange(20.0), out, 1)
    assert list(out) == list(range(20)) and capture_diagnostics() == []


@cuda.jit
def device_barrier_in_a_divergent_branch(x, out):
    t = cuda.threadIdx.x
    out[t] = 1
    sync_if(x[t] > 0)


def test_a_device_barrier_skipped_in_a_branch_is_a_warning_at_its_line(capture_diagnostics):
    x = np.r_[np.ones(20), np.zeros(12)].astype(np.int32)
    out = np.zeros(32, np.int32)
    device_barrier_in_a_divergent_branch[1, 32](x, out)
    assert list(out) == [1] * 32
    (warning,) = capture_diagnostics()
    line = sync_if.py_func.__code__.co_firstlineno + 3
    assert warning.location["line"] == line
    assert ("completed only because 12 threads of block (0, 0, 0) skipped it and exited (the first, thread "
            f"(20, 0, 0), at the end of the kernel) while 20 waited at line {line}") in warning.message


@cuda.jit
def device_barrier_in_a_divergent_loop(out):
    t = cuda.threadIdx.x
    sync_times(1 + t % 2)      # odd threads reach the barrier a second time: even ones are gone by then
    out[t] = 1


def test_a_device_barrier_skipped_by_a_shorter_loop_is_a_warning(capture_diagnostics):
    out = np.zeros(8, np.int64)
    device_barrier_in_a_divergent_loop[1, 8](out)
    assert list(out) == [1] * 8
    (warning,) = capture_diagnostics()
    assert ("completed only because 4 threads of block (0, 0, 0) skipped it and exited (the first, thread "
            "(0, 0, 0), at the end of the kernel) while 4 waited") in warning.message


@cuda.jit
def return_after_a_device_barrier_in_a_loop(x, out, steps):
    t = cuda.threadIdx.x
    for k in range(steps):
        sync_always()
        out[t] += 1
        if k >= x[t]:
            return


def test_a_return_below_a_device_barrier_in_a_loop_is_silent(capture_diagnostics):
    x = np.arange(8, dtype=np.int64) % 4
    out = np.zeros(8, np.int64)
    return_after_a_device_barrier_in_a_loop[1, 8](x, out, 6)
    assert list(out) == list(x + 1) and capture_diagnostics() == []


@cuda.jit
def return_after_a_conditional_device_barrier(x, out):
    t = cuda.threadIdx.x
    sync_if(x[t] > 0)
    out[t] = 1
    if x[t] == 0:
        return                 # below the call: these threads skipped the barrier inside it


def test_a_return_below_a_device_barrier_its_threads_skipped_is_a_warning(capture_diagnostics):
    x = np.r_[np.ones(6), np.zeros(2)].astype(np.int32)
    out = np.zeros(8, np.int32)
    return_after_a_conditional_device_barrier[1, 8](x, out)
    assert list(out) == [1] * 8
    (warning,) = capture_diagnostics()
    ret = return_after_a_conditional_device_barrier.py_func.__code__.co_firstlineno + 6
    assert f"2 threads of block (0, 0, 0) skipped it and exited (the first, thread (6, 0, 0), by the return at line " \
           f"{ret}) while 6 waited" in warning.message



# ---- warp barriers: syncwarp(mask) reached by a lane outside its mask ---------------------------------------
@cuda.jit
def syncwarp_of_half_the_warp(x):
    i = cuda.grid(1)
    cuda.syncwarp(0x0000FFFF)  # lanes 16..31 reach it too, outside the mask
    x[i] = 1


@cuda.jit
def syncwarp_of_each_half(x):
    i = cuda.grid(1)
    if cuda.laneid < 16:
        cuda.syncwarp(0x0000FFFF)
    else:
        cuda.syncwarp(0xFFFF0000)
    x[i] = 1


def test_syncwarp_reached_by_a_lane_outside_its_mask_is_a_located_error():
    with pytest.raises(KernelRuntimeError, match=r"cuda.syncwarp\(\) in kernel syncwarp_of_half_the_warp: lane 16 is "
                                                 r"not in its own mask 0x0000ffff") as err:
        syncwarp_of_half_the_warp[1, 32](np.zeros(32))
    assert err.value.loc.line == syncwarp_of_half_the_warp.py_func.__code__.co_firstlineno + 3


def test_syncwarp_of_each_half_with_its_own_mask_runs():
    x = np.zeros(32)
    syncwarp_of_each_half[1, 32](x)
    assert (x == 1).all()


# ---- grid barriers -----------------------------------------------------------------------------------------
@cuda.jit
def grid_steps(a, steps, n):
    i = cuda.grid(1)
    if i >= n:
        return
    g = cuda.cg.this_grid()
    for s in range(steps):
        a[i] += 1
        g.sync()
        if i == 0:
            a[n] = a[n - 1]
        g.sync()


def test_early_return_before_a_grid_sync_is_silent(capture_diagnostics):
    a = np.zeros(301, np.int64)
    grid_steps[3, 128](a, 5, 300)  # block 2: threads 256..383, of which 44 run and 84 return at once
    assert list(a[:300]) == [5] * 300 and a[300] == 5
    assert capture_diagnostics() == []


def test_a_whole_block_exiting_before_a_grid_sync_is_an_error():
    a = np.zeros(301, np.int64)
    with pytest.raises(KernelRuntimeError, match=r"grid barrier that can never complete in kernel grid_steps: .* "
                                                 r"every thread of block \(2, 0, 0\) has exited"):
        grid_steps[3, 128](a, 2, 250)  # block 2 holds threads 256..383: all exit


@cuda.jit
def grid_sync_without_thread_zero(a):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        return
    a[i] = 1
    cuda.cg.this_grid().sync()


def test_grid_sync_after_thread_zero_exited_is_an_error():
    with pytest.raises(KernelRuntimeError, match=r"block's thread \(0, 0, 0\), which arrives for the block at the "
                                                 r"grid level, has exited") as err:
        grid_sync_without_thread_zero[2, 32](np.zeros(64, np.int64))
    assert err.value.loc.line > 0


@cuda.jit
def grid_sync_in_branch(a, out):
    i = cuda.grid(1)
    if a[i] > 0:
        out[i] = 1
        cuda.cg.this_grid().sync()
        out[i] = 2


def test_grid_sync_in_a_branch_released_by_exits_is_a_warning(capture_diagnostics):
    a = np.r_[np.ones(10), np.zeros(22)].astype(np.int64)
    out = np.zeros(32, np.int64)
    grid_sync_in_branch[1, 32](a, out)
    assert list(out) == [2] * 10 + [0] * 22
    (warning,) = capture_diagnostics()
    assert "cuda.cg.this_grid().sync() in kernel grid_sync_in_branch completed only because 22 threads" in warning.message


# ---- cooperative launch limits -----------------------------------------------------------------------------------
@cuda.jit
def cooperative(a):
    cuda.cg.this_grid().sync()
    a[cuda.grid(1)] = 1


def test_max_cooperative_grid_blocks_as_numba():
    sig = (cuda.int64[::1],)
    k = cuda.jit(sig)(cooperative.py_func)
    assert k.overloads[sig].max_cooperative_grid_blocks(256) == max_cooperative_grid_blocks(256) == 132 * 8
    assert max_cooperative_grid_blocks(32) == 132 * 32  # 32 blocks per SM at most
    assert max_cooperative_grid_blocks(1024) == 132 * 2


def test_a_grid_larger_than_can_be_co_resident_is_a_launch_error():
    limit = max_cooperative_grid_blocks(1024)
    cooperative[limit, 1]  # configuring is fine; only the grid-syncing launch is refused
    with pytest.raises(LaunchError, match=r"syncs its grid .* 265 blocks of 1024 threads exceed the 264"):
        cooperative[limit + 1, 1024](np.zeros((limit + 1) * 1024, np.int64))


# ---- numba's documentation examples: laplace silent, sessionize with the warning ---------------------------------
@pytest.mark.parametrize("name,warns", [("test_laplace", False), ("test_sessionize", True)])
def test_doc_examples_report_what_a_gpu_leaves_undefined(name, warns):
    import os
    from conftest import ROOT, run_kdebug
    runner = os.path.join(ROOT, "tests", "numba", "numba_doc_examples", "run_doc_example.py")
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", runner, name, timeout=300)
    assert f"doc example {name}: ran=1 failures=0 errors=0 skipped=0" in r.stdout, r.stdout + r.stderr
    warning = "kernel warning: cuda.cg.this_grid().sync() in kernel sessionize completed only because"
    assert (warning in r.stdout) == warns, r.stdout
    assert ("warning" in r.stdout.lower()) == warns, r.stdout
