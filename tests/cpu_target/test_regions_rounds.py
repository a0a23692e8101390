"""Grid-stride loops of region-form kernels run in rounds (kdebug/targets/cpu/forms/regions/cut.py ``emit_rounds``): the
rounds give every thread's outputs bit for bit as the coroutines give them, through early exits (the block
scheduler's rounds pass), breaks, negative indices (the lead iterations), steps that are not positive and
partial blocks, with memcheck on and off; a failed check in the rounds is reported as the coroutines report
it (the first failing thread in thread order, its index and extent). Each kernel's regions snapshot shows
that its loop does run in rounds."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import ROOT
from test_region_bounds import _load  # a kernel module written to a file and imported: its kernel k
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live

sys.path.insert(0, f"{ROOT}/sample_kernels")
import warp_reduce  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def sessions():
    """The region form (the loops in rounds) and the coroutines (the loops in lockstep), memcheck on and off."""
    previous = seam.current()
    made = {(regions, memcheck): live.Session(backend="cpu", snapshots=False, tiered=False, regions=regions,
                                              memcheck=memcheck)
            for regions in (True, False) for memcheck in (True, False)}
    for memcheck in (True, False):  # the regions snapshot: the loop runs in rounds
        made["snapshots", memcheck] = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, tiered=False, memcheck=memcheck)
    yield made
    live.set_session(previous)


def _kernel(loop: list[str], before: list[str] = ()) -> str:
    return "\n".join(["from kdebug import cuda", "from kdebug.cuda import float32, int32", "",
                      "@cuda.jit", "def k(x, out, u):",
                      "    t = cuda.threadIdx.x",
                      "    i = cuda.grid(1)",
                      "    acc = float32(0)",
                      "    m = int32(0)"]
                     + ["    " + line for line in before]
                     + ["    " + line for line in loop]
                     + ["    s = cuda.shared.array(64, float32)",  # here: a call before the loop would keep
                        "    s[t % 64] = acc",                       # it thread by thread (lockstep_rules.py)
                        "    cuda.syncthreads()",
                        "    out[i] = acc + s[(t + 1) % 64] + float32(m)", ""])


LOOPS = {
    "grid-stride": ["for k in range(i, x.size, cuda.gridsize(1)):", "    acc += x[k] * float32(k % 7)"],
    "break": ["for k in range(i, x.size, cuda.gridsize(1)):", "    if x[k] > float32(0.9):", "        break",
              "    acc += x[k]", "    m += int32(1)"],
    "continue": ["for k in range(i, x.size, cuda.gridsize(1)):", "    if k % 3 == u:", "        continue",
                 "    acc += x[k]"],
    "negative start": ["for k in range(i - 5, x.size, cuda.gridsize(1)):", "    acc = acc * float32(0.5) + x[k]"],
    "negative step": ["for k in range(x.size - 1 - i, -1, -cuda.gridsize(1)):", "    acc = acc * float32(0.5) + x[k]"],
    "runtime step": ["for k in range(i, x.size, u):", "    acc = acc * float32(0.5) + x[k]", "    m += int32(1)"],
    "early exit": ["for k in range(i, x.size, cuda.gridsize(1)):", "    acc += x[k]"],
    "k after": ["for k in range(i % 4, x.size, 5):", "    acc += x[k]", "m = int32(k)"],
}
BEFORE = {"early exit": ["if t % 5 == 3:", "    return"]}


def _run(session, kernel, blocks, threads, n, u):
    live.set_session(session)
    x = np.random.default_rng(n).random(n).astype(np.float32)
    out = np.full(blocks * threads, np.float32(-7), np.float32)
    try:
        kernel[blocks, threads](x, out, np.int32(u))
        error = None
    except KernelRuntimeError as exc:
        error = str(exc)
    return out, error


def _same_in_both_forms(sessions, kernel, memcheck, shapes, what):
    x = np.zeros(8, np.float32)
    types = (T.typeof(x), T.typeof(x), T.typeof(np.int32(0)))
    assert sessions[True, memcheck].compile_kernel(kernel, types).record.form == ("regions", None)
    snapshot = sessions["snapshots", memcheck].compile_kernel(kernel, types).record.snapshots["regions"]
    assert "runs in rounds (its iterations" in str(snapshot), (what, str(snapshot)[:600])
    errors = []
    for blocks, threads, n, u in shapes:
        got, got_error = _run(sessions[True, memcheck], kernel, blocks, threads, n, u)
        want, want_error = _run(sessions[False, memcheck], kernel, blocks, threads, n, u)
        assert got_error == want_error, (what, blocks, threads, n, u, got_error, want_error)
        if got_error is None:  # after a failed check the arrays other threads wrote before the report may
            # differ (docs/internals/cpu-forms.md "Lockstep loops"; the coroutines run four blocks' loops at once)
            assert got.tobytes() == want.tobytes(), (what, blocks, threads, n, u, got, want)
        errors.append(got_error)
    return errors


SHAPES = ((3, 64, 1000, 1), (2, 96, 130, 2), (1, 40, 7, 3), (4, 32, 4096, 5))


@pytest.mark.parametrize("memcheck", [True, False], ids=["memcheck", "no-memcheck"])
@pytest.mark.parametrize("name", list(LOOPS))
def test_loops_in_rounds_give_the_coroutines_outputs(sessions, name, memcheck):
    kernel = _load(_kernel(LOOPS[name], BEFORE.get(name, [])))
    assert _same_in_both_forms(sessions, kernel, memcheck, SHAPES, name) == [None] * len(SHAPES)


FAILING = {
    # threads fail at different iterations: thread i at its (i % 7)-th, so in rounds a later thread fails in
    # an earlier round than the first failing thread in thread order
    "the first failing thread in thread order": ["for k in range(i, x.size, cuda.gridsize(1)):",
                                                 "    acc += x[k + (i % 7) * cuda.gridsize(1) * int32(k > i + 40)]"],
    # thread 0's iterations from the fifth on fail, the other threads' later: the rounds go on after thread
    # 0's failure, which must end its loop (a later failure of its own must not replace the one reported)
    "the first failure of a thread": ["for k in range(i, x.size, cuda.gridsize(1)):",
                                      "    acc += x[k + 5000 * int32(k >= i + (4 + 4 * (i % 3)) * cuda.gridsize(1))]"],
    "a failure in the lead iterations": ["for k in range(i - 3 * x.size, x.size, cuda.gridsize(1)):",
                                         "    acc = acc * float32(0.5) + x[k]"],
    "a write out of bounds": ["for k in range(i, x.size, cuda.gridsize(1)):",
                              "    acc += x[k]",
                              "    if k % 5 == u % 5:",
                              "        out[k] = acc"],
}


@pytest.mark.parametrize("name", list(FAILING))
def test_a_failed_check_in_the_rounds_is_reported_as_the_coroutines_report_it(sessions, name):
    kernel = _load(_kernel(FAILING[name]))
    errors = _same_in_both_forms(sessions, kernel, True, (SHAPES[0], SHAPES[3]), name)
    assert all(e is not None and "out-of-bounds" in e for e in errors), errors


@pytest.mark.parametrize("memcheck", [True, False], ids=["memcheck", "no-memcheck"])
def test_warp_reduce_runs_its_grid_stride_loop_in_rounds(sessions, memcheck):
    """The sample's grid-stride loop runs in rounds in the region form, and one block's sum (the warps'
    atomic adds in one order) is the coroutines' bit for bit."""
    x = np.zeros(8, np.float32)
    types = (T.typeof(x), T.typeof(x))
    assert sessions[True, memcheck].compile_kernel(warp_reduce.warp_sum, types).record.form == ("regions", None)
    data = np.random.default_rng(0).random(1 << 14).astype(np.float32)
    got = {}
    for regions in (True, False):
        live.set_session(sessions[regions, memcheck])
        total = np.zeros(1, np.float32)
        warp_reduce.warp_sum[1, 96](data, total)
        got[regions] = total[0]
    assert got[True] == got[False], got
    np.testing.assert_allclose(got[True], data.astype(np.float64).sum(), rtol=1e-5)


def test_the_rounds_are_in_the_regions_snapshot():
    session = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, tiered=False)
    previous = seam.current()
    try:
        x = np.zeros(8, np.float32)
        rec = session.compile_kernel(warp_reduce.warp_sum, (T.typeof(x), T.typeof(x))).record
        text = rec.snapshots["regions"]
        line = warp_reduce.warp_sum.py_func.__code__.co_firstlineno + 5
        assert f"the loop of line {line} runs in rounds (its iterations: region 1;" in text, text[:800]
        assert "rounds.c (block-uniform: one entry)" in text
    finally:
        live.set_session(previous)


# the grid-stride loop as CUDA's books write it: a while loop (kdebug/frontend/grid_stride.py reads it as its range)
WHILES = {
    "while": ["k = i", "while k < x.size:", "    acc += x[k] * float32(k % 7)", "    k += cuda.gridsize(1)"],
    "while, the book's way": ["stride = cuda.blockDim.x * cuda.gridDim.x",
                              "k = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x",
                              "while k < len(x):", "    acc = acc * float32(0.5) + x[k]", "    m += int32(1)",
                              "    k += stride"],
    "while from a negative start": ["k = i - 5", "while k < x.size - 1:", "    acc += x[k + 1]",
                                    "    k += 3 * cuda.blockDim.x"],
}
# while loops that are not exactly their range stay while loops, run thread by thread (and still give the
# coroutines' outputs): k read after the loop, a continue (which skips the step), a step that may be 0
# (u), a stop the body changes, a break
WHILES_KEPT = {
    "k read after": ["k = i", "while k < x.size:", "    acc += x[k]", "    k += cuda.gridsize(1)", "m = int32(k % 5)"],
    "continue": ["k = i - cuda.gridsize(1)", "while k < x.size - cuda.gridsize(1):", "    k2 = k + cuda.gridsize(1)",
                 "    if k2 % 3 == u:", "        k += cuda.gridsize(1)", "        continue", "    acc += x[k2]",
                 "    k += cuda.gridsize(1)"],
    "a step of u": ["k = i", "while k < x.size:", "    acc += x[k]", "    k += u"],
    "a stop the body changes": ["k = i", "n = x.size", "while k < n:", "    acc += x[k]", "    n -= 1",
                                "    k += cuda.gridsize(1)"],
    "break": ["k = i", "while k < x.size:", "    if x[k] > float32(0.9):", "        break", "    acc += x[k]",
              "    k += cuda.gridsize(1)"],
}


@pytest.mark.parametrize("memcheck", [True, False], ids=["memcheck", "no-memcheck"])
@pytest.mark.parametrize("name", list(WHILES))
def test_a_grid_stride_while_loop_runs_in_rounds_and_gives_the_coroutines_outputs(sessions, name, memcheck):
    kernel = _load(_kernel(WHILES[name]))
    assert _same_in_both_forms(sessions, kernel, memcheck, SHAPES, name) == [None] * len(SHAPES)


@pytest.mark.parametrize("name", list(WHILES_KEPT))
def test_a_while_loop_that_is_not_exactly_its_range_stays_a_while_loop(sessions, name):
    kernel = _load(_kernel(WHILES_KEPT[name]))
    x = np.zeros(8, np.float32)
    types = (T.typeof(x), T.typeof(x), T.typeof(np.int32(0)))
    snapshot = str(sessions["snapshots", True].compile_kernel(kernel, types).record.snapshots["regions"])
    assert "runs in rounds (its iterations" not in snapshot and "runs thread by thread in its region" in snapshot, \
        (name, snapshot[:800])
    for blocks, threads, n, u in SHAPES:
        got, got_error = _run(sessions[True, True], kernel, blocks, threads, n, u)
        want, want_error = _run(sessions[False, True], kernel, blocks, threads, n, u)
        assert (got_error, got.tobytes()) == (want_error, want.tobytes()), (name, blocks, threads, n, u)


def test_a_failed_check_in_a_grid_stride_while_loop_is_reported_as_the_coroutines_report_it(sessions):
    kernel = _load(_kernel(["k = i", "while k < x.size:",
                            "    acc += x[k + 5000 * int32(k >= i + (4 + 4 * (i % 3)) * cuda.gridsize(1))]",
                            "    k += cuda.gridsize(1)"]))
    errors = _same_in_both_forms(sessions, kernel, True, (SHAPES[0], SHAPES[3]), "a failing while")
    assert all(e is not None and "out-of-bounds" in e for e in errors), errors
