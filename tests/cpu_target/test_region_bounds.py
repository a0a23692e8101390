"""Thread-range narrowing (kdebug/targets/cpu/forms/regions/bounds.py): which regions the analysis narrows and to
what bound, and that a narrowed thread loop gives what the plain one and the coroutines give: outputs,
errors and warnings, with the guard's bound inside, above and below the block, in 2-D blocks, with exits
and out-of-bounds accesses under the guard, and for random guarded kernels."""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, module_folder, watched_session
from test_regions_property import _run  # one kernel launch: its outputs, error and warnings
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live

sys.path.insert(0, f"{ROOT}/sample_kernels")
import histogram  # noqa: E402
import matmul_tiled  # noqa: E402
import reduction  # noqa: E402
import scan  # noqa: E402
import stencil_halo  # noqa: E402

FORMS = ("narrowed", "plain", "coroutines")
_dir = module_folder("kdebug-bounds-")
_count = itertools.count()


@pytest.fixture(scope="module")
def sessions():
    """The region form with narrowed thread loops, the region form without, the coroutines: each session
    with the warnings it saw."""
    previous = seam.current()
    made = {}
    for form, (regions, narrow) in zip(FORMS, ((True, True), (True, False), (False, True))):
        made[form] = watched_session(tiered=False, regions=regions, narrow=narrow)
    yield made
    live.set_session(previous)


@pytest.fixture(scope="module")
def unchecked():
    """The three forms of ``sessions`` without memcheck: where a region's threads can stop alike (a failed
    check ends its thread, so with memcheck on the threads of a checked region may part ways)."""
    previous = seam.current()
    made = {}
    for form, (regions, narrow) in zip(FORMS, ((True, True), (True, False), (False, True))):
        made[form] = watched_session(tiered=False, regions=regions, narrow=narrow, memcheck=False)
    yield made
    live.set_session(previous)


def _bounds(session, dispatcher, *arrays) -> list:
    """Each region's bound in words, as the finish stage decided it."""
    rec = session.compile_kernel(dispatcher, tuple(T.typeof(a) for a in arrays)).record
    assert rec.form == ("regions", None), rec.form
    return rec.target_state.thread_bounds.get(rec.entry, [])  # none: no bound function made


def _iteration_regions(session, dispatcher, *arrays) -> set:
    """The numbers of the iteration regions of the kernel's loops in rounds (regions.emit_rounds)."""
    rec = session.compile_kernel(dispatcher, tuple(T.typeof(a) for a in arrays)).record
    return {region for _, region in rec.target_state.regions[rec.entry].rounds}


def _narrowed(bounds) -> list:
    return [k for k, b in enumerate(bounds) if "every thread" not in b]


def _alike(bounds) -> list:
    """The regions whose threads all stop alike (one state for all of them, no state columns)."""
    return [k for k, b in enumerate(bounds) if "stop alike" in b]


# ---- what the analysis decides on the samples ---------------------------------------------------------------
def test_the_reductions_tree_steps_and_its_last_write_are_narrowed(sessions):
    x = np.zeros(8, np.float32)
    bounds = _bounds(sessions["narrowed"][0], reduction.block_sum, x, x)
    # region 0 loads every thread's element; region 1 is the first step (t < 128); region 2 the later
    # steps (t < step) or, when the loop ends, thread 0's write of the block's sum (t == 0)
    assert _narrowed(bounds) == [1, 2], bounds
    assert "128" in bounds[1], bounds
    assert "step" in bounds[2] and "max(1," in bounds[2], bounds  # max(1, step // 2): the uniform entry of step


def test_the_stencils_guarded_output_is_narrowed_and_the_matmul_is_not(sessions):
    x = np.zeros(8, np.float32)
    assert _narrowed(_bounds(sessions["narrowed"][0], stencil_halo.stencil, x, x)) == [1]
    a = np.zeros((4, 4), np.float32)
    # every thread loads its tile elements and accumulates its own sum: nothing to narrow
    assert _narrowed(_bounds(sessions["narrowed"][0], matmul_tiled.matmul_tiled, a, a, a)) == []


def test_a_region_that_keeps_every_thread_says_why_and_where_it_starts(sessions):
    """The regions view and the IR after finish name why a region is not narrowed, with the line it starts at:
    a guard `t % 3 == 0` (a multiple of no power of two) bounds nothing; the sample reduction's narrowed steps
    say nothing more than their bound."""
    source = _kernel_module("if t % 3 == 0:\n        s[t] = x[i]")
    kernel = _load(source)
    x = np.zeros(8, np.float32)
    bounds = _bounds(sessions["narrowed"][0], kernel, x, x, np.int32(0))
    barrier = 1 + source.splitlines().index("    cuda.syncthreads()")
    assert 1 not in _narrowed(bounds), bounds
    assert bounds[0].startswith("region 0: every thread (from the kernel's start: "), bounds
    assert bounds[1].startswith(f"region 1: every thread (from the cut of line {barrier}: what it does is under "
                                "no guard `threadIdx.x < bound` or `threadIdx.x % m == 0`"), bounds
    narrowed = _bounds(sessions["narrowed"][0], reduction.block_sum, x, x)
    assert all("under no guard" not in b for k, b in enumerate(narrowed) if k in _narrowed(narrowed)), narrowed


def test_numba_docs_reduction_steps_run_only_the_multiples_of_their_stride(sessions, unchecked):
    """numba's reduction example guards its tree step with `tid % (2 * s) == 0` (kdebug lowers `%` with a
    run-time test for a power-of-two divisor): each step's thread loop runs the multiples of 2s alone, and
    one idle thread for the others; the block's sum is the plain loop's and the coroutines', bit for bit."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from kernel_forms import reduction_forms
    x = np.zeros(8, np.float32)
    previous = seam.current()
    try:  # a tiered compile's optimised code picks the remainder with a select (x % 0 is 0) where the others branch
        tiered = _bounds(live.Session(backend="cpu", snapshots=False, tiered=True), reduction_forms.numba_docs, x, x)
    finally:
        live.set_session(previous)
    assert "region 2: threadIdx.x a multiple of (s << 1);" in tiered[2], tiered
    for made in (sessions, unchecked):
        bounds = _bounds(made["narrowed"][0], reduction_forms.numba_docs, x, x)
        assert "region 1: threadIdx.x a multiple of 2;" in bounds[1], bounds
        assert "region 2: threadIdx.x a multiple of (s << 1);" in bounds[2], bounds
        for blocks, n in ((1, 256), (3, 700), (2, 300)):
            data = np.random.default_rng(n).random(n).astype(np.float32)
            got = {}
            for form in FORMS:
                live.set_session(made[form][0])
                partial = np.zeros(blocks, np.float32)
                reduction_forms.numba_docs[blocks, reduction_forms.TPB](data, partial)
                got[form] = partial.tobytes()
            assert got["narrowed"] == got["plain"] == got["coroutines"], (blocks, n)
            np.testing.assert_allclose(np.frombuffer(got["narrowed"], np.float32).sum(), data.sum(), rtol=1e-5)


def test_the_samples_threads_all_stop_alike_with_and_without_memcheck(sessions, unchecked):
    """Every region of the samples ends with all its threads at one barrier (or all at the end): the
    launcher keeps one state for them. With memcheck too: a failed check ends its thread's step (a way out
    under a thread-dependent branch), but the launcher reports it after the thread loop before it reads any
    thread's state (regions.fail_fresh), so the analysis leaves those ways out."""
    x, a, i = np.zeros(8, np.float32), np.zeros((4, 4), np.float32), np.zeros(8, np.int64)
    for kernel, args, regions in ((reduction.block_sum, (x, x), 3), (matmul_tiled.matmul_tiled, (a, a, a), 3),
                                  (stencil_halo.stencil, (x, x), 2), (scan.block_scan, (i, i, i), None),
                                  (histogram.histogram, (i, i), None)):
        bounds = _bounds(unchecked["narrowed"][0], kernel, *args)
        # a loop in rounds' iteration region is run by the launcher's rounds, which keep no state (the
        # histogram's first loop, after its shared array's declaration)
        rounds = _iteration_regions(unchecked["narrowed"][0], kernel, *args)
        every = [k for k in range(len(bounds)) if k not in rounds]
        assert _alike(bounds) == every, (kernel.__name__, bounds)
        assert regions is None or len(bounds) == regions, bounds
        checked = _bounds(sessions["narrowed"][0], kernel, *args)
        assert _alike(checked) == every, (kernel.__name__, checked)
        if not rounds:  # (with memcheck, the region after a loop in rounds reports the loop's held failures)
            assert _narrowed(checked) == _narrowed(bounds), (kernel.__name__, checked, bounds)


ALIKE = {
    # thread-dependent branches that join again before the barrier: one stop for all
    "guarded work": ("if t < u:\n        s[t] = s[t + 1] + x[i]", [0, 1, 2]),
    "a thread-dependent loop": ("for q in range(t % 5):\n        s[t] += x[i] * q", [0, 1, 2]),
    # a block-uniform branch between two barriers: every thread takes the same one
    "a uniform choice of barrier": ("if u > 3:\n        s[t] = x[i]\n        cuda.syncthreads()\n    else:\n"
                                    "        cuda.syncthreads()\n        s[t] = -x[i]", None),
    # the threads part ways: some leave, the others wait at the barrier (the exit rule)
    "an exit under a guard": ("if t < u:\n        out[i] = -3\n        return", [0, 2]),
    # some threads wait at a barrier the others pass by: a divergent barrier, the block scheduler's error
    "a divergent barrier": ("if t < u:\n        cuda.syncthreads()", [0, 2, 3]),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(ALIKE))
def test_threads_that_may_part_ways_keep_a_state_each(unchecked, name):
    """The regions where every thread stops alike are those without a way out, or a state, that only some
    threads reach; and in each case the narrowed loops (one state where the threads stop alike) give the
    outputs, errors and warnings of the plain loops (a column each) and of the coroutines."""
    body, expected = ALIKE[name]
    kernel = _load(_kernel_module(body))
    x = np.zeros(8, np.float32)
    bounds = _bounds(unchecked["narrowed"][0], kernel, x, x, np.int32(0))
    if expected is None:
        assert _alike(bounds) == list(range(len(bounds))), bounds
    else:
        assert _alike(bounds) == expected, bounds
    outcomes = set()
    for blocks, threads, u in ((1, 64, 5), (3, 64, 63), (2, 33, 40), (2, 64, 0), (1, 1, 0), (2, 7, 3)):
        _, error, warnings = _same_in_every_form(unchecked, kernel, blocks, threads, u, (name, blocks, threads, u))
        outcomes.add((error is not None, bool(warnings)))
    if name == "a divergent barrier":
        assert (True, False) in outcomes, outcomes  # the error was met (in every form alike)


def test_updated_uniform_variables_of_every_width_advance_at_each_barrier(unchecked):
    """Block-uniform variables updated around barriers (one entry each, copied from the region's next entry
    at every barrier, at its own width): 1, 4, 8 and 16 bytes, in every form alike."""
    source = "\n".join([
        "import numpy as np",
        "from kdebug import cuda", "from kdebug.cuda import float32", "", "",
        "@cuda.jit", "def k(x, out, u):",
        "    s = cuda.shared.array(64, float32)",
        "    t = cuda.threadIdx.x",
        "    i = cuda.grid(1)",
        "    w = u",
        "    f = 0.5",
        "    c = 1j",
        "    flag = u > 2",
        "    g = float32(1)",
        "    s[t % 64] = float32(0)",
        "    cuda.syncthreads()",
        "    while w > 0:",
        "        if flag:",
        "            s[t % 64] += float32(f) + g + float32(c.real) + float32(c.imag) + x[i]",
        "        cuda.syncthreads()",
        "        w -= 1",
        "        f = f * 1.5",
        "        c = c * (1 + 1j)",
        "        flag = not flag",
        "        g = g + float32(2)",
        "    out[i] = s[t % 64] + float32(w)", ""])
    kernel = _load(source)
    x = np.zeros(8, np.float32)
    rec = unchecked["narrowed"][0].compile_kernel(kernel, (T.typeof(x), T.typeof(x), T.typeof(np.int32(0)))).record
    frame = rec.target_state.cuts[rec.entry]
    updated = sorted(name for name, size in frame.columns if size == -1)
    assert {"w", "f", "c", "flag", "g"} <= set(updated), frame.columns
    assert {n for _, n in frame.uniform_copy[3]} == {1, 4, 8, 16}, frame.uniform_copy  # bool, int32, float, complex
    for blocks, threads, u in ((1, 64, 5), (2, 33, 6), (1, 7, 0)):
        out, error, _ = _same_in_every_form(unchecked, kernel, blocks, threads, u, (blocks, threads, u))
        assert error is None
        got = np.frombuffer(out, np.float32)
        # thread 0's slot, summed over the trips where flag held (trips 0, 2, 4 for u > 2; 1, 3 else)
        f, c, g, want = 0.5, 1j, 1.0, 0.0
        flag = u > 2
        for _ in range(u):
            if flag:
                want += f + g + c.real + c.imag - 1.0  # x[0] is -1
            f, c, flag, g = f * 1.5, c * (1 + 1j), not flag, g + 2
        assert np.isclose(got[0], want, rtol=1e-5), (u, got[0], want)


def test_a_session_without_narrowing_keeps_every_thread(sessions):
    x = np.zeros(8, np.float32)
    assert _bounds(sessions["plain"][0], reduction.block_sum, x, x) == []  # no bound function made


# ---- narrowed loops run as the plain ones and the coroutines do -----------------------------------------
KERNELS = {
    # the guard's bound inside the block, above it, zero and below zero
    "bound inside": ("if t < u:\n        s[t] = s[t + 1] + x[i]", 0),
    "bound above the block": ("if t < u + 5000:\n        s[t % 64] += x[i]", 0),
    "bound zero": ("if t < u - u:\n        s[t] = x[i]", 0),
    "bound below zero": ("if t < u - 100:\n        s[t] = x[i]", 0),
    "equality": ("if t == u:\n        s[0] = x[i] * 3", 0),
    "less or equal, and a uniform test": ("if t <= u and u > 2:\n        s[t] = x[i] - 1", 0),
    "offset guard (the grid index)": ("if i < x.size - 3:\n        s[t] = x[i + 3]", 0),
    "greater or equal, the other side bounded": ("if t >= u:\n        pass\n    else:\n        s[t] = x[i]", 0),
    # an exit under the guard: threads t < u leave, the idle ones wait at the barrier (the exit rule)
    "exit under the guard": ("if t < u:\n        out[i] = -3\n        return", 0),
    # an out-of-bounds read under the guard: memcheck names the first thread in the region's order
    "out of bounds under the guard": ("if t < u:\n        s[t] = x[i + 5000]", 0),
    # a block-uniform branch on the idle path, the bound chosen by it
    "uniform branch before the guard": ("if u > 3:\n        w = u * 2\n    else:\n        w = u + 1\n"
                                        "    if t < w:\n        s[t] = x[i]", 0),
    # multiples: of a power of two known at run time (2, 8, 1, 1, 8, 8 in the shapes below), of a constant,
    # of a divisor that is a power of two only at times (6, 64, 41, 1, 1, 4), as a mask, and the threads
    # that are not multiples
    "a multiple of a run-time power of two": ("if t % (1 << (u % 4)) == 0:\n        s[t] = s[t + 1] + x[i]", 0),
    "a multiple of a constant": ("if t % 4 == 0:\n        s[t] = s[(t + 2) % 65] + x[i]", 0),
    "a multiple of any divisor": ("if t % (u + 1) == 0:\n        s[t % 65] += x[i]", 0),
    "a mask": ("if (t & ((1 << (u % 4)) - 1)) == 0:\n        s[t] = s[t + 1] * float32(2)", 0),
    "not a multiple, the other side": ("if t % (2 << (u % 3)) != 0:\n        pass\n    else:\n        s[t] = x[i]", 0),
    "a multiple, then thread 0 alone": ("if t % (1 << (u % 4)) == 0:\n        s[t] = x[i]\n"
                                        "    if t == 0:\n        s[64] = x[i] + float32(1)", 0),
    "a multiple, an out-of-bounds read": ("if t % (2 << (u % 3)) == 0:\n        s[t] = x[i + 5000]", 0),
}


def _kernel_module(body: str) -> str:
    return "\n".join([
        "from kdebug import cuda", "from kdebug.cuda import float32", "", "",
        "@cuda.jit", "def k(x, out, u):",
        "    s = cuda.shared.array(65, float32)",
        "    t = cuda.threadIdx.x",
        "    i = cuda.grid(1)",
        "    s[t % 65] = float32(t)",
        "    cuda.syncthreads()",
        f"    {body}",
        "    cuda.syncthreads()",
        "    if t == 0:",
        "        acc = float32(0)",
        "        for q in range(65):",
        "            acc += s[q] * float32(q + 1)",
        "        out[cuda.blockIdx.x] = acc",
        ""])


def _load(source: str):
    path = os.path.join(_dir, f"bounds_k{next(_count)}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def _same_in_every_form(sessions, kernel, blocks, threads, u, what):
    got = {form: _run(*sessions[form], kernel, blocks, threads, u) for form in FORMS}
    for form in FORMS[1:]:
        assert got["narrowed"][1] == got[form][1], (what, form, "error")
        assert got["narrowed"][2] == got[form][2], (what, form, "warnings")
        assert got["narrowed"][0] == got[form][0], (what, form, "outputs")
    return got["narrowed"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(KERNELS))
def test_a_narrowed_loop_gives_what_the_plain_loop_and_the_coroutines_give(sessions, name):
    body, _ = KERNELS[name]
    kernel = _load(_kernel_module(body))
    x = np.zeros(8, np.float32)
    bounds = _bounds(sessions["narrowed"][0], kernel, x, x, np.int32(0))
    assert _narrowed(bounds), bounds  # the guard's region is narrowed, or the comparison proves nothing
    outcomes = set()
    for blocks, threads, u in ((1, 64, 5), (3, 64, 63), (2, 33, 40), (2, 64, 0), (1, 1, 0), (2, 7, 3)):
        _, error, warnings = _same_in_every_form(sessions, kernel, blocks, threads, u, (name, blocks, threads, u))
        outcomes.add((error is not None, bool(warnings)))
    if name in ("out of bounds under the guard", "a multiple, an out-of-bounds read"):
        assert (True, False) in outcomes  # the error was really met (and named the same thread)


def test_a_guard_whose_bound_changes_in_a_loop_is_not_narrowed(sessions):
    """The bound must be one value for the region; a guard in a loop that changes it (``w //= 2``) is not
    followed, and the region keeps every thread (and its results)."""
    kernel = _load(_kernel_module("w = u\n    while w > 0:\n        if t < w:\n            s[t] += x[i]\n"
                                  "        w //= 2"))
    x = np.zeros(8, np.float32)
    assert _narrowed(_bounds(sessions["narrowed"][0], kernel, x, x, np.int32(0))) == []
    _same_in_every_form(sessions, kernel, 2, 64, 37, "loop")


def test_a_narrowed_loop_in_a_2d_block(sessions):
    source = "\n".join([
        "from kdebug import cuda", "from kdebug.cuda import float32", "", "",
        "@cuda.jit", "def k(x, out, u):",
        "    s = cuda.shared.array((8, 8), float32)",
        "    tx = cuda.threadIdx.x",
        "    ty = cuda.threadIdx.y",
        "    s[ty, tx] = float32(tx + 10 * ty)",
        "    cuda.syncthreads()",
        "    if tx < u:",
        "        s[ty, tx] = s[ty, (tx + 1) % 8] + x[ty * 8 + tx]",
        "    cuda.syncthreads()",
        "    out[ty * 8 + tx] = s[ty, tx]", ""])
    kernel = _load(source)
    x = np.zeros(8, np.float32)
    assert _narrowed(_bounds(sessions["narrowed"][0], kernel, x, x, np.int32(0))) == [1]
    for u in (0, 3, 7, 20):
        got = {}
        for form in FORMS:
            live.set_session(sessions[form][0])
            xx = np.linspace(-1, 1, 64, dtype=np.float32)
            out = np.zeros(64, np.float32)
            kernel[1, (8, 8)](xx, out, np.int32(u))
            got[form] = out.tobytes()
        assert got["narrowed"] == got["plain"] == got["coroutines"], u


# ---- random guarded kernels --------------------------------------------------------------------------
guard = st.tuples(st.sampled_from(["<", "<=", "==", ">=", "%"]), st.integers(-3, 70), st.booleans())
stmt = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 3), st.integers(0, 64)),
    st.tuples(st.just("read"), st.integers(0, 64)),
    st.tuples(st.just("exit"),),
)
region = st.tuples(st.one_of(st.none(), guard), st.lists(stmt, min_size=1, max_size=3))


def _divisor(k: int, with_u: bool) -> str:
    return f"(1 << ((u + {k}) % 4))" if with_u else str(max(k, 1))


def _narrows(g) -> bool:
    """Whether a guard lets the analysis narrow its region: bounded above, or a multiple of a power of two (a
    constant one, or one known at run time)."""
    op, k, with_u = g
    if op == "%":
        d = int(_divisor(k, with_u)) if not with_u else None
        return with_u or (d >= 2 and d & (d - 1) == 0)
    return op != ">="


def _random_kernel(regions) -> str:
    lines = ["from kdebug import cuda", "from kdebug.cuda import float32", "", "",
             "@cuda.jit", "def k(x, out, u):",
             "    s = cuda.shared.array(130, float32)",
             "    t = cuda.threadIdx.x",
             "    i = cuda.grid(1)",
             "    s[t % 130] = float32(t)",
             "    cuda.syncthreads()"]
    for g, body in regions:
        pad = "    "
        if g is not None:
            op, k, with_u = g
            if op == "%":  # t a multiple of a power of two known at run time, or of a constant
                lines.append(f"    if t % {_divisor(k, with_u)} == 0:")
            else:
                bound = f"u + {k}" if with_u else str(k)
                lines.append(f"    if t {op} {bound}:")
            pad = "        "
        for s in body:
            if s[0] == "write":
                lines.append(f"{pad}s[(t * {s[1]} + {s[2]}) % 130] = s[(t + {s[2]}) % 130] + x[i]")
            elif s[0] == "read":
                lines.append(f"{pad}out[i] = s[(t + {s[1]}) % 130]")
            else:
                lines.append(f"{pad}return")
        lines.append("    cuda.syncthreads()")
    lines.append("    if t == 0:")
    lines.append("        out[i] += s[1] + s[64]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(900)
@settings(max_examples=int(os.environ.get("KDEBUG_BOUNDS_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(regions=st.lists(region, min_size=1, max_size=4), blocks=st.integers(1, 2),
       threads=st.sampled_from([1, 5, 32, 64, 100]), u=st.integers(-2, 40))
def test_random_guarded_kernels_run_alike_narrowed_plain_and_as_coroutines(sessions, regions, blocks, threads, u):
    source = _random_kernel(regions)
    kernel = _load(source)
    got = {form: _run(*sessions[form], kernel, blocks, threads, u) for form in FORMS}
    for form in FORMS[1:]:
        assert got["narrowed"] == got[form], (source, form)
    # and the analysis narrows what it claims to: a region under a guard bounded above (<, <=, ==) or that
    # lets in the multiples of a power of two, that does something there (a write or a read before any return), and a region that does nothing at all
    # (bound 0: one thread stands for all); up to the first region every thread leaves (then dead code)
    x = np.zeros(8, np.float32)
    narrowed = _narrowed(_bounds(sessions["narrowed"][0], kernel, x, x, np.int32(0)))
    expected, live_regions = [], len(regions) + 1
    for k, (g, body) in enumerate(regions, start=1):
        if g is not None and g[0] == "%" and not g[2] and _divisor(g[1], False) == "1":
            g = None  # t % 1 == 0 holds for every thread: LLVM folds the guard away (found by this test)
        work = list(itertools.takewhile(lambda st_: st_[0] != "exit", body))
        if (g is not None and _narrows(g) and work) or (g is None and not work):
            expected.append(k)
        if g is None and ("exit",) in body:
            live_regions = k
            break
    else:
        expected.append(len(regions) + 1)  # the last region: thread 0's write
    assert [k for k in narrowed if k <= live_regions] == expected, (source, narrowed)
