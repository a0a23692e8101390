"""memcheck in barrier-free kernels with loops: a failed check records its access and ends only its
thread, so the thread loop keeps no early exit and LLVM still vectorises it; the launcher reports the
block's first failed thread. Straight-line kernels keep the check that stops at once (memcheck_ir.has_loop
says why). The IR is inspected, nothing is timed."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import float32
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.session import live
from kdebug.targets.cpu.target import emit_pipeline


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def horner(x, out):
    """A polynomial per element: the per-thread work that vectorising the thread loop pays back."""
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        acc = float32(0.0)
        for _ in range(32):
            acc = acc * v + float32(1.0)
        out[i] = acc


@pytest.fixture
def session():
    previous = seam.current()
    s = live.Session(backend="cpu", passes_on_demand=True, snapshots=True)
    live.set_session(s)
    yield s
    live.set_session(previous)


def _launcher_body_after_emit(s, dispatcher, argtypes) -> str:
    """The grid launcher's body as emit optimises it (the CPU target's own emit pipeline)."""
    compiled = s.compile_kernel(dispatcher, argtypes)
    mod = llvm.parse_assembly(compiled.record.ir_after_finish())
    emit_pipeline(s.target.tm, mod, s.target.speed_level)
    return str(mod.get_function(compiled.record.entry + ".grid.body"))


def _types(*arrays):
    from kdebug.lang import types as T
    return tuple(T.typeof(a) for a in arrays)


@pytest.mark.parametrize("memcheck", [True, False])
def test_the_thread_loop_of_a_barrier_free_kernel_is_vectorised(memcheck):
    # the vectoriser's choices depend on the CPU model: pinned to AVX2 (compiled only, never run here)
    session = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, memcheck=memcheck, host_cpu="x86-64-v3")
    x = np.zeros(4, np.float32)
    body = _launcher_body_after_emit(session, horner, _types(x, x))
    assert re.search(r"<\d+ x float>", body), "the thread loop was not vectorised"
    if memcheck:  # the checks are there: failed accesses go to the slots, reported after the loop
        assert "kdebug.rt.first_failure" in body
        assert "kdebug.rt.oob" not in body


def test_a_straight_line_kernel_keeps_the_check_that_stops_at_once(session):
    from kdebug.lang import types as T
    x = np.zeros(4, np.float32)
    body = _launcher_body_after_emit(session, saxpy, (T.float32,) + _types(x, x, x))
    assert "kdebug.rt.oob" in body and "kdebug.rt.first_failure" not in body


def test_the_stopping_check_calls_the_one_definition_the_engine_holds(session):
    """A kernel's module declares ``kdebug.rt.oob``; its one definition is the JIT engine's runtime module
    (memcheck_ir.runtime_module), loaded with the engine. A failed check through it reports the access."""
    from kdebug.lang import types as T
    from kdebug.targets.cpu import target as cpu_target
    x = np.zeros(4, np.float32)
    compiled = session.compile_kernel(saxpy, (T.float32,) + _types(x, x, x))
    finished = compiled.record.ir_after_finish()
    assert re.search(r"^declare .*@kdebug\.rt\.oob\(", finished, re.M), finished
    assert not re.search(r"^define .*@kdebug\.rt\.oob\(", finished, re.M)
    assert cpu_target.execution_engine().get_function_address("kdebug.rt.oob") != 0
    with pytest.raises(KernelRuntimeError, match=r"read of global array 'y' .*index 4 is outside shape \(4,\), "
                                                 r"in block \(0, 0, 0\), thread \(4, 0, 0\)"):
        saxpy[1, 8](np.float32(1), np.zeros(8, np.float32), x, np.zeros(8, np.float32))


def test_the_first_failed_thread_in_thread_order_is_reported_though_all_ran():
    @cuda.jit
    def kern(idx, out):
        i = cuda.grid(1)
        for _ in range(1):
            out[idx[i]] = i  # threads 37 and 200 of block 1 write out of bounds

    idx = np.arange(512, dtype=np.int64) % 64
    idx[256 + 200] = 1000
    idx[256 + 37] = 64
    out = np.full(64, -1, np.int64)
    with pytest.raises(KernelRuntimeError) as info:
        kern[2, 256](idx, out)
    text = str(info.value)
    assert "index 64 is outside shape (64,)" in text and "block (1, 0, 0), thread (37, 0, 0)" in text
    # block 0 and the rest of block 1 ran (a failed check ends only its thread); nothing was written
    # out of bounds
    assert (out != -1).all()


def test_a_failed_thread_stops_there_and_later_blocks_do_not_run():
    @cuda.jit
    def kern(x, out, mark):
        i = cuda.grid(1)
        mark[cuda.blockIdx.x] = 1
        for _ in range(1):
            v = x[i + 1]  # the grid's last thread reads past the end
            out[i] = v

    n = 64
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    mark = np.zeros(4, np.int32)
    with pytest.raises(KernelRuntimeError, match=r"index 64 is outside shape \(64,\)"):
        kern[2, 32](x, out, mark)
    assert out[n - 1] == 0 and (out[:n - 1] == x[1:]).all()
    assert mark[0] == 1 and mark[1] == 1 and mark[2] == 0  # blocks 0, 1 ran, nothing after


def test_a_3d_block_reports_the_failed_thread_as_x_y_z():
    @cuda.jit
    def kern(out):
        x, y, z = cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
        for _ in range(1):
            out[z, y, x + (4 if x == 2 and y == 3 and z == 1 else 0)] = 1.0

    out = np.zeros((2, 4, 4), np.float64)
    with pytest.raises(KernelRuntimeError) as info:
        kern[1, (4, 4, 2)](out)
    text = str(info.value)
    assert "index (1, 3, 6) is outside shape (2, 4, 4)" in text and "thread (2, 3, 1)" in text


def test_shuffled_threads_report_the_first_failure_in_the_order_they_ran(session):
    @cuda.jit
    def kern(out):
        t = cuda.threadIdx.x
        for _ in range(1):
            out[t + (100 if t % 2 == 1 else 0)] = t  # every odd thread fails

    out = np.zeros(64, np.int32)
    session.set_options(shuffle_threads=7)
    with pytest.raises(KernelRuntimeError) as info:
        kern[1, 64](out)
    reported = int(re.search(r"thread \((\d+), 0, 0\)", str(info.value)).group(1))
    order = np.random.default_rng(7).permutation(64)
    first_odd = next(int(t) for t in order if t % 2 == 1)
    assert reported == first_odd
    assert out[[int(t) for t in order[:list(order).index(first_odd)]]].tolist() == \
        [int(t) for t in order[:list(order).index(first_odd)]]  # those before it ran, in that order


def test_the_thread_ending_check_is_the_one_those_kernels_compile(session):
    """The tests above exercise the thread-ending check, not the stopping one."""
    @cuda.jit
    def kern(out):
        for _ in range(1):
            out[cuda.threadIdx.x] = 1

    out = np.zeros(8, np.int32)
    body = _launcher_body_after_emit(session, kern, _types(out))
    assert "kdebug.rt.first_failure" in body and "kdebug.rt.oob" not in body
