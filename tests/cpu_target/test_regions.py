"""The region form (kdebug/targets/cpu/forms/regions/cut.py): which kernels take it, why the others stay coroutines
(each reason in the job's record and the regions snapshot), the samples' forms and results in both forms,
and the cut shown in the regions stage."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import ROOT
from kdebug import cuda
from kdebug.cuda import float32
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live

sys.path.insert(0, f"{ROOT}/sample_kernels")
import histogram  # noqa: E402
import matmul_tiled  # noqa: E402
import reduction  # noqa: E402
import scan  # noqa: E402
import stencil_halo  # noqa: E402
import warp_reduce  # noqa: E402


@pytest.fixture(scope="module")
def sessions():
    """CPU sessions with the region form on and off (each compiles its own code)."""
    previous = seam.current()
    made = {on: live.Session(backend="cpu", passes_on_demand=True, snapshots=True, tiered=False, regions=on) for on in (True, False)}
    yield made
    live.set_session(previous)


def _record(session, dispatcher, *arrays):
    compiled = session.compile_kernel(dispatcher, tuple(T.typeof(a) for a in arrays))
    return compiled.record


def _form(session, dispatcher, *arrays):
    return _record(session, dispatcher, *arrays).form


# ---- the samples -----------------------------------------------------------------------------------------
F1 = np.zeros(8, np.float32)
F2 = np.zeros((4, 4), np.float32)
I1 = np.zeros(8, np.int32)
L1 = np.zeros(8, np.int64)


@pytest.mark.parametrize("dispatcher, arrays", [
    (reduction.block_sum, (F1, F1)),
    (matmul_tiled.matmul_tiled, (F2, F2, F2)),
    (scan.block_scan, (L1, L1, L1)),
    (stencil_halo.stencil, (F1, F1)),
    (histogram.histogram, (I1, L1)),
], ids=["reduction", "matmul_tiled", "scan", "stencil_halo", "histogram"])
def test_the_samples_with_barriers_take_the_region_form(sessions, dispatcher, arrays):
    assert _form(sessions[True], dispatcher, *arrays) == ("regions", None)
    form, why = _form(sessions[False], dispatcher, *arrays)
    assert form == "coroutines" and "turned off" in why


def test_warp_reduce_takes_the_region_form_with_its_loop_in_rounds(sessions):
    """The warp-shuffle sample's warp operations are cuts of the region form and its grid-stride loop runs in
    rounds (tests/cpu_target/test_regions_rounds.py); with lockstep loops off the loop stays inside its region."""
    assert _form(sessions[True], warp_reduce.warp_sum, F1, F1) == ("regions", None)
    line = warp_reduce.warp_sum.py_func.__code__.co_firstlineno + 5
    text = _record(sessions[True], warp_reduce.warp_sum, F1, F1).snapshots["regions"]
    assert f"; the loop of line {line} runs in rounds" in str(text)
    plain = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, tiered=False, regions=True, lockstep=False)
    try:
        assert _form(plain, warp_reduce.warp_sum, F1, F1) == ("regions", None)
        assert "runs in rounds" not in str(_record(plain, warp_reduce.warp_sum, F1, F1).snapshots["regions"])
    finally:
        live.set_session(sessions[True])


@cuda.jit
def block_warp_sum(x, out):
    """Each warp's sum by shuffles, the warps' sums by thread 0 after a barrier."""
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    acc = x[cuda.grid(1)]
    off = 16
    while off > 0:
        acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, off)
        off //= 2
    if t % 32 == 0:
        s[t // 32] = acc
    cuda.syncthreads()
    if t == 0:
        total = float32(0)
        for w in range((cuda.blockDim.x + 31) // 32):
            total += s[w]
        out[cuda.blockIdx.x] = total


@cuda.jit
def divergent_shuffle(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    if t < 16:
        v = cuda.shfl_down_sync(0xFFFFFFFF, v, 1)
    out[t] = v


def test_a_warp_operation_under_a_thread_dependent_branch_stays_coroutines_and_says_why(sessions):
    """Warp operations are cuts only where every thread of the block reaches them alike
    (tests/cpu_target/test_regions_warp.py has the other reasons and runs both forms)."""
    form, why = _form(sessions[True], divergent_shuffle, F1, F1)
    line = divergent_shuffle.py_func.__code__.co_firstlineno + 5
    assert form == "coroutines" and why.startswith(f"cuda.shfl_down_sync() at test_regions.py:{line}: "), why
    assert "every thread of the block reaches it alike" in why


def test_a_barrier_free_kernel_is_one_thread_loop(sessions):
    import saxpy
    rec = sessions[True].compile_kernel(saxpy.saxpy, (T.float32, T.typeof(F1), T.typeof(F1), T.typeof(F1))).record
    assert rec.form == ("thread loop", None)


def _run_samples():
    """Each sample's own check (it asserts against numpy) and its outputs."""
    rng = np.random.default_rng(1)
    x = rng.random(5000).astype(np.float32)
    xi = rng.integers(-50, 100, 5000).astype(np.int64)
    out = {"reduction": np.float64(reduction.total(x.copy())), "scan": scan.scan(xi)}
    np.testing.assert_array_equal(out["scan"], np.cumsum(xi))
    xs = rng.random(3000).astype(np.float32)
    o = np.zeros_like(xs)
    stencil_halo.stencil[(xs.size + stencil_halo.TPB - 1) // stencil_halo.TPB, stencil_halo.TPB](xs, o)
    np.testing.assert_allclose(o, stencil_halo.reference(xs), rtol=1e-6)
    out["stencil"] = o
    data = rng.integers(0, 1 << 30, 20000).astype(np.int32)
    bins = np.zeros(histogram.NBINS, np.int64)
    histogram.histogram[13, histogram.TPB](data, bins)
    np.testing.assert_array_equal(bins, np.bincount(data % histogram.NBINS, minlength=histogram.NBINS))
    out["histogram"] = bins
    A = rng.random((40, 24)).astype(np.float32)
    B = rng.random((24, 33)).astype(np.float32)
    C = np.zeros((40, 33), np.float32)
    tpb = matmul_tiled.TPB
    matmul_tiled.matmul_tiled[((33 + tpb - 1) // tpb, (40 + tpb - 1) // tpb), (tpb, tpb)](A, B, C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4)
    sums = np.zeros(5, np.float32)
    block_warp_sum[5, 96](x[:480], sums)  # warp shuffles, then a barrier
    np.testing.assert_allclose(sums, x[:480].reshape(5, 96).sum(axis=1), rtol=1e-5)
    out["block_warp_sum"] = sums
    out["matmul"] = C
    return out


def test_the_samples_give_the_coroutine_forms_results_bit_for_bit(sessions):
    got = {}
    for on in (True, False):
        live.set_session(sessions[on])
        got[on] = _run_samples()
    for name in got[True]:
        assert np.asarray(got[True][name]).tobytes() == np.asarray(got[False][name]).tobytes(), name


# ---- the fallback reasons -----------------------------------------------------------------------------------
@cuda.jit(debug=True)
def debug_kernel(x, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[31 - t]


@cuda.jit
def grid_kernel(x, out):
    i = cuda.grid(1)
    out[i] = x[i]
    cuda.cg.this_grid().sync()
    out[i] += x[(i + 1) % x.size]


@cuda.jit
def barrier_in_expression(x, out):
    t = cuda.threadIdx.x
    out[t] = x[t] + cuda.syncthreads_count(x[t] > 0)


@cuda.jit(device=True)
def device_with_barrier(s, t):
    cuda.syncthreads()
    return s[(t + 1) % 32]


@cuda.jit(device=True)
def device_barrier_inner(s, t):
    cuda.syncthreads()
    return s[(t + 1) % 32]


@cuda.jit
def device_barrier_in_expression(x, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = x[t] * device_barrier_inner(s, t)


@cuda.jit
def device_barrier_statement(x, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    v = device_with_barrier(s, t)
    out[t] = v


def test_debug_kernels_stay_coroutines(sessions):
    form, why = _form(sessions[True], debug_kernel, F1, F1)
    assert form == "coroutines" and why.startswith("debug=True")


def test_grid_barriers_stay_coroutines(sessions):
    form, why = _form(sessions[True], grid_kernel, F1, F1)
    assert form == "coroutines" and "grid barrier" in why


def test_a_barrier_inside_an_expression_stays_coroutines(sessions):
    form, why = _form(sessions[True], barrier_in_expression, F1, F1)
    assert form == "coroutines" and "cuda.syncthreads_count() inside an expression" in why
    assert f"test_regions.py:{barrier_in_expression.py_func.__code__.co_firstlineno + 3}" in why


def test_a_device_function_with_a_barrier_inside_an_expression_stays_coroutines(sessions):
    form, why = _form(sessions[True], device_barrier_in_expression, F1, F1)
    assert form == "coroutines" and "device_barrier_inner() (it has a barrier) inside an expression" in why


def test_a_device_function_with_a_barrier_as_a_statement_is_cut(sessions):
    assert _form(sessions[True], device_barrier_statement, F1, F1) == ("regions", None)
    x = np.arange(32, dtype=np.float32)
    got = {}
    for on in (True, False):
        live.set_session(sessions[on])
        out = np.zeros(32, np.float32)
        device_barrier_statement[1, 32](x, out)
        got[on] = out
    np.testing.assert_array_equal(got[True], np.roll(x, -1))
    np.testing.assert_array_equal(got[True], got[False])


@pytest.mark.parametrize("option, words", [("racecheck", "racecheck/initcheck"), ("initcheck", "racecheck/initcheck")])
def test_the_shadow_memory_sanitizers_stay_coroutines(option, words):
    previous = seam.current()
    try:
        s = live.Session(backend="cpu", snapshots=False, tiered=False, **{option: True})
        form, why = _form(s, reduction.block_sum, F1, F1)
    finally:
        live.set_session(previous)
    assert form == "coroutines" and why.startswith(words)


def test_shuffled_runs_stay_coroutines():
    """--shuffle-threads: the region launcher's shuffled order differs from the coroutine scheduler's (a
    kernel whose threads 5 and 6 both read out of bounds after a barrier reported thread 6 in the region
    form and thread 5 as coroutines), so a shuffled run keeps the coroutines and says why."""
    previous = seam.current()
    try:
        s = live.Session(backend="cpu", snapshots=False, tiered=False)
        unshuffled = _form(s, reduction.block_sum, F1, F1)
        s.set_options(shuffle_threads=3)
        form, why = _form(s, reduction.block_sum, F1, F1)
    finally:
        live.set_session(previous)
    assert unshuffled == ("regions", None)
    assert form == "coroutines" and why.startswith("--shuffle-threads")


def test_kdebug_regions_0_turns_the_form_off(monkeypatch):
    previous = seam.current()
    monkeypatch.setenv("KDEBUG_REGIONS", "0")
    try:
        s = live.Session(backend="cpu", snapshots=False, tiered=False)
        assert s.regions is False
        assert _form(s, reduction.block_sum, F1, F1)[0] == "coroutines"
        s.set_options(regions=True)
        assert _form(s, reduction.block_sum, F1, F1) == ("regions", None)
    finally:
        live.set_session(previous)


# ---- the regions stage ----------------------------------------------------------------------------------
def test_the_regions_snapshot_shows_the_cut_and_the_columns(sessions):
    rec = _record(sessions[True], reduction.block_sum, F1, F1)
    text = rec.snapshots["regions"]
    text = text if isinstance(text, str) else str(text)
    first = reduction.block_sum.py_func.__code__.co_firstlineno
    assert text.startswith(f"; {rec.entry}: region form, 3 regions (cut at the barriers of lines {first + 6}, "
                           f"{first + 11})")
    # step = TPB // 2 ... step //= 2 is the same in every thread: one entry per region, not a column
    assert "per-thread columns (1024 threads each, 128 bytes per block): step (block-uniform, updated" in text
    # t = threadIdx.x, the shared array and the argument are computed again, not kept in columns
    assert "; computed again where a region needs them (thread-constant): t, s, partial\n" in text
    assert '%"region.frame"' in text and '%"lane"' in text
    assert "switch i32" in text and "region.after.barrier.line" in text
    lowered = rec.snapshots["lower"]
    lowered = lowered if isinstance(lowered, str) else str(lowered)
    assert "region.frame" not in lowered  # the columns are the regions stage's work


def test_the_coroutine_kernels_regions_snapshot_says_why(sessions):
    rec = _record(sessions[True], divergent_shuffle, F1, F1)
    text = rec.snapshots["regions"]
    text = text if isinstance(text, str) else str(text)
    assert text.startswith(f"; {rec.entry}: coroutines, one per thread (not the region form: cuda.shfl_down_sync()")


def test_a_warp_kernels_regions_snapshot_shows_its_cuts_and_it_sums_as_the_coroutines_do(sessions):
    rec = _record(sessions[True], block_warp_sum, F1, F1)
    text = rec.snapshots["regions"]
    text = text if isinstance(text, str) else str(text)
    first = block_warp_sum.py_func.__code__.co_firstlineno
    assert text.startswith(f"; {rec.entry}: region form, 3 regions (cut at the barriers and warp operations of "
                           f"lines {first + 8}, {first + 12})"), text[:200]
    # the lanes' operands and the copies their peers read: columns of the region frame
    assert "warp.operands" in text and "warp.copies" in text
    x = np.random.default_rng(3).random(5 * 96).astype(np.float32)
    got = {}
    for on in (True, False):
        live.set_session(sessions[on])
        out = np.zeros(5, np.float32)
        block_warp_sum[5, 96](x, out)
        got[on] = out
    assert got[True].tobytes() == got[False].tobytes()
    np.testing.assert_allclose(got[True], x.reshape(5, 96).sum(axis=1), rtol=1e-5)


def test_the_column_layout_is_llvms_own():
    """regions.abi_layout (sizes without printing a module) agrees with LLVM's data layout."""
    from llvmlite import ir
    from kdebug.targets.cpu.layout import CONTEXT
    from kdebug.targets.cpu.forms.regions.cut import abi_layout
    td = live.Session(backend="cpu", snapshots=False, tiered=False).target.tm.target_data
    types = [ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.HalfType(),
             ir.FloatType(), ir.DoubleType(), ir.ArrayType(ir.FloatType(), 7), CONTEXT,
             ir.LiteralStructType([ir.PointerType(ir.FloatType()), ir.ArrayType(ir.IntType(64), 2)]),
             ir.LiteralStructType([ir.IntType(8), ir.DoubleType(), ir.IntType(32)]),
             ir.LiteralStructType([ir.IntType(1), ir.IntType(16)])]
    for t in types:
        assert abi_layout(t, td) == (t.get_abi_size(td), t.get_abi_alignment(td)), str(t)


BARRIER_IN_EXPRESSION_SCRIPT = """\
import numpy as np
from kdebug import cuda


@cuda.jit
def counted(x, out):
    i = cuda.grid(1)
    out[i] = x[i] + cuda.syncthreads_count(x[i] > 0)


x = np.arange(64, dtype=np.float32) - 8
out = np.zeros_like(x)
counted[2, 32](x, out)
"""


def test_the_headless_report_says_each_kernels_form_and_why_not_the_region_form_with_the_line(tmp_path):
    """The report names the form a kernel runs in; a kernel with barriers kept as coroutines says why,
    with the line (issue: "where a form cannot take the fast path, the report says why, with the line")."""
    from conftest import run_kdebug
    r = run_kdebug("run", "--headless", "--backend", "cpu", "sample_kernels/reduction.py")
    assert r.returncode == 0, r.stderr
    assert "block_sum(float32[::1], float32[::1])  kernel  done" in r.stdout
    assert next(ln for ln in r.stdout.splitlines() if "#1  block_sum(" in ln).endswith("form regions")
    script = tmp_path / "counted.py"
    script.write_text(BARRIER_IN_EXPRESSION_SCRIPT)
    r = run_kdebug("run", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "#1  counted(" in ln)
    assert "form coroutines (cuda.syncthreads_count() inside an expression at counted.py:8" in line, line
    r = run_kdebug("run", "--headless", "--backend", "cpu", "sample_kernels/saxpy.py")
    assert next(ln for ln in r.stdout.splitlines() if "#1  saxpy(" in ln).endswith("form thread loop")
