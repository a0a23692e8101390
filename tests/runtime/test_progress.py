"""Where a running CPU launch is, read from another thread while it runs (kdebug/runtime/progress.py):
the block of the thread that entered a while loop last, and that loop's line. Each kernel here waits
on a flag it reads atomically, so the test can look while it runs and then let it end."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kdebug import cuda
from kdebug.runtime import progress

HERE = __file__


def line_of(text: str) -> int:
    """The line of this file holding ``text`` (the kernels' while loops)."""
    return next(n for n, line in enumerate(open(HERE), 1) if text in line)


@cuda.jit(device=True)
def wait_in_device(flag):
    while cuda.atomic.add(flag, 0, 0) == 0:  # device wait
        pass


@cuda.jit
def one_thread_waits(flag, out):
    i = cuda.grid(1)
    out[i] = i
    if i == 37:
        while cuda.atomic.add(flag, 0, 0) == 0:  # plain wait
            out[i] += 1


@cuda.jit
def waits_in_device_function(flag, out):
    if cuda.grid(1) == 5:
        wait_in_device(flag)


@cuda.jit
def waits_after_a_barrier(flag, out):
    s = cuda.shared.array(8, np.int64)
    s[cuda.threadIdx.x] = 1
    cuda.syncthreads()
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 3:
        while cuda.atomic.add(flag, 0, 0) == 0:  # barrier wait
            out[0] += s[0]


@cuda.jit
def waits_in_the_outer_loop(flag, out):
    first = True
    while cuda.atomic.add(flag, 0, 0) == 0:  # outer wait
        if first:
            j = 0
            while j < 3:  # inner loop
                j += 1
            out[0] = j
        first = False


@cuda.jit
def waits_without_a_while_loop(flag, out):
    for k in range(1 << 60):
        if cuda.atomic.add(flag, 0, 0) != 0:
            break


def position_while_it_runs(kernel, grid, block, wanted):
    """Launch on a thread, wait until the position says ``wanted``, release the kernel; the position."""
    flag, out = np.zeros(1, np.int32), np.zeros(grid * block, np.int64)
    kernel[grid, block](np.ones(1, np.int32), out)  # compiled (and run to its end) first
    runner = threading.Thread(target=lambda: kernel[grid, block](flag, out), daemon=True)
    runner.start()
    seen = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not any(wanted in s for s in seen):
            time.sleep(0.01)
            seen = progress.describe()
    finally:
        flag[0] = 1
        runner.join(30)
    assert not runner.is_alive(), "the kernel did not end once released"
    assert progress.describe() == []  # nothing is left registered once the launch ended
    return seen


def test_the_thread_that_waits_is_named_by_block_and_loop():
    seen = position_while_it_runs(one_thread_waits, 4, 16, "last entered")
    assert seen == [f"one_thread_waits: a thread of block (2, 0, 0) last entered the while loop at "
                    f"{HERE}:{line_of('# plain wait')}"], seen


def test_a_device_functions_loop_names_the_device_function():
    seen = position_while_it_runs(waits_in_device_function, 2, 4, "last entered")
    assert seen == [f"waits_in_device_function: a thread of block (1, 0, 0) last entered the while loop of "
                    f"device function wait_in_device at {HERE}:{line_of('# device wait')}"], seen


def test_a_kernel_with_barriers_is_named_too():
    seen = position_while_it_runs(waits_after_a_barrier, 3, 8, "last entered")
    assert seen == [f"waits_after_a_barrier: a thread of block (1, 0, 0) last entered the while loop at "
                    f"{HERE}:{line_of('# barrier wait')}"], seen


def test_leaving_a_nested_loop_names_the_enclosing_one_again():
    seen = position_while_it_runs(waits_in_the_outer_loop, 1, 1, f":{line_of('# outer wait')}")
    assert seen == [f"waits_in_the_outer_loop: a thread of block (0, 0, 0) last entered the while loop at "
                    f"{HERE}:{line_of('# outer wait')}"], seen


def test_without_a_while_loop_only_the_blocks_are_said():
    seen = position_while_it_runs(waits_without_a_while_loop, 4, 2, "no thread")
    assert seen == ["waits_without_a_while_loop: no thread entered a while loop (running the blocks from "
                    "(0, 0, 0) on, of 4)"], seen


@pytest.mark.parametrize("kernel,stores", [(waits_without_a_while_loop, 0), (one_thread_waits, 1),
                                           (waits_in_the_outer_loop, 3)])
def test_the_marks_cost_a_store_per_while_loop_and_none_without(kernel, stores):
    """The kernel's own code: an atomic store entering each while loop, one leaving a nested one;
    none in a kernel without while loops (the launcher body's loops never get any)."""
    import kdebug.session.live as live
    from kdebug import events as E
    from kdebug.lang import types as T
    session = live.Session(backend="cpu", passes_on_demand=True, snapshots=True)
    snapshots = []
    session.bus.subscribe(lambda ev: snapshots.append(ev) if isinstance(ev, E.Snapshot) else None)
    compiled = session.compile_kernel(kernel, (T.typeof(np.zeros(1, np.int32)), T.typeof(np.zeros(1, np.int64))))
    lowered = [ev.text for ev in snapshots if ev.phase == "lower" and ev.job == compiled.record.id]
    assert lowered, [(ev.job, ev.phase) for ev in snapshots]
    kernel_ir = lowered[0].split(f'@"{compiled.record.entry}"(')[1].split("\n}\n")[0]
    assert kernel_ir.count("store atomic") == stores, kernel_ir
