"""Warp operations in the region form (kdebug/targets/cpu/forms/regions/cut.py): a shuffle, vote, match, activemask or
syncwarp that every thread of the block reaches alike is a cut, as a barrier is, and the launcher hands
each lane its peers' operands when the block's threads all wait there. Which kernels take the form (and
why the others stay coroutines), and that both forms give the same outputs, errors and warnings: every
kind of warp operation, partial warps, 2-D blocks, and random kernels."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, watched_session
from test_region_bounds import _load  # a kernel module written to a file and imported: its kernel k
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live

sys.path.insert(0, f"{ROOT}/sample_kernels")
import warp_reduce  # noqa: E402



@pytest.fixture(scope="module")
def sessions():
    """The region form and the coroutines, each with memcheck on and off, each with the warnings it saw."""
    previous = seam.current()
    made = {}
    for regions in (True, False):
        for memcheck in (True, False):
            made[regions, memcheck] = watched_session(tiered=False, regions=regions, memcheck=memcheck)
    yield made
    live.set_session(previous)


def _kernel(body: list[str]) -> str:
    return "\n".join(["from kdebug import cuda", "from kdebug.cuda import float32, int32", "", "FULL = 0xFFFFFFFF", "",
                      "@cuda.jit", "def k(x, out, u):",
                      "    s = cuda.shared.array(128, float32)",
                      "    t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y",
                      "    i = cuda.grid(1)",
                      "    acc = x[i % x.size]",
                      "    n = int32(0)",
                      # every entry written before any is read (shared memory starts undefined, and the
                      # forms keep a block's shared memory in different buffers)
                      "    for q in range(128):",
                      "        s[q] = float32(q)",
                      "    cuda.syncthreads()",
                      "    s[t % 128] = acc"]
                     + ["    " + line for line in body]
                     + ["    out[i % out.size] = acc + float32(n)", ""])


def _form(session, kernel):
    x = np.zeros(8, np.float32)
    return session.compile_kernel(kernel, (T.typeof(x), T.typeof(x), T.typeof(np.int32(0)))).record.form


def _run(session, seen, kernel, blocks, threads, u):
    live.set_session(session)
    n = int(np.prod(blocks)) * int(np.prod(threads))
    x = np.linspace(-1, 1, n, dtype=np.float32)
    out = np.full(n, np.float32(-7), np.float32)
    del seen[:]
    try:
        kernel[blocks, threads](x, out, np.int32(u))
        error = None
    except KernelRuntimeError as exc:
        error = str(exc)
    warnings = [(d.severity, d.message) for d in seen if d.severity == "warning"]
    return out.tobytes(), error, warnings


def _same_in_both_forms(sessions, kernel, memcheck, blocks, threads, u, what):
    regions = _run(*sessions[True, memcheck], kernel, blocks, threads, u)
    coroutines = _run(*sessions[False, memcheck], kernel, blocks, threads, u)
    assert regions[1] == coroutines[1], (what, "error")
    assert regions[2] == coroutines[2], (what, "warnings")
    assert regions[0] == coroutines[0], (what, "outputs")
    return regions


# ---- the sample ----------------------------------------------------------------------------------------------
def test_warp_reduce_without_lockstep_loops_takes_the_region_form_and_sums_as_the_coroutines_do(sessions):
    """Without lockstep loops the sample's grid-stride loop stays inside its region (with them it runs in
    rounds, tests/cpu_target/test_regions_rounds.py); its warp operations are the region form's cuts either way."""
    plain = {regions: live.Session(backend="cpu", snapshots=False, tiered=False, regions=regions, lockstep=False)
             for regions in (True, False)}
    x = np.zeros(8, np.float32)
    rec = plain[True].compile_kernel(warp_reduce.warp_sum, (T.typeof(x), T.typeof(x))).record
    assert rec.form == ("regions", None), rec.form
    data = np.random.default_rng(0).random(1 << 14).astype(np.float32)
    got = {}
    for regions in (True, False):
        live.set_session(plain[regions])
        total = np.zeros(1, np.float32)
        warp_reduce.warp_sum[1, 96](data, total)  # one block: the warps' atomic adds in one order
        got[regions] = total[0]
    assert got[True] == got[False], got
    np.testing.assert_allclose(got[True], data.astype(np.float64).sum(), rtol=1e-5)


# ---- every kind of warp operation ----------------------------------------------------------------------------
KINDS = {
    "shfl_down": ["off = 16", "while off > 0:", "    acc += cuda.shfl_down_sync(FULL, acc, off)", "    off //= 2"],
    "shfl_up, width 8": ["acc += cuda.shfl_up_sync(FULL, acc, 1, 8)"],
    "shfl_xor": ["for m in range(5):", "    acc += cuda.shfl_xor_sync(FULL, acc, 1 << m)"],
    "shfl_sync, a lane from u": ["acc = cuda.shfl_sync(FULL, acc, u)"],
    "shfl of an int": ["n = cuda.shfl_down_sync(FULL, int32(t * 3), 1)"],
    "votes": ["n = cuda.ballot_sync(FULL, acc > 0)", "v = cuda.all_sync(FULL, acc > -2)", "if v:", "    acc += 1",
              "v = cuda.any_sync(FULL, acc > 0.5)", "if v:", "    acc += 2", "v = cuda.eq_sync(FULL, t < 20)",
              "if v:", "    acc += 4"],
    "match_any": ["n = cuda.match_any_sync(FULL, t % 3)"],
    "activemask and syncwarp": ["m = cuda.activemask()", "cuda.syncwarp()", "acc += float32(m & 7)"],
    "beside block barriers": ["cuda.syncthreads()", "acc += s[(t + 1) % 128]", "cuda.syncthreads()",
                              "acc += cuda.shfl_xor_sync(FULL, acc, 2)", "s[t % 128] = acc", "cuda.syncthreads()",
                              "acc += s[(t + 5) % 128]"],
    "in a uniform branch and loop": ["if u > 2:", "    for q in range(u % 3):",
                                     "        acc += cuda.shfl_down_sync(FULL, acc, q + 1)",
                                     "else:", "    n = cuda.ballot_sync(FULL, acc > 0)"],
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_of_warp_operation_runs_as_the_coroutines_do(sessions, name):
    kernel = _load(_kernel(KINDS[name]))
    assert _form(sessions[True, True][0], kernel) == ("regions", None)
    outcomes = set()
    for memcheck in (True, False):
        for blocks, threads, u in ((1, 32, 3), (2, 64, 5), (1, 96, 1), (2, 40, 4), (1, 7, 3), ((2, 1), (16, 4), 6)):
            _, error, _ = _same_in_both_forms(sessions, kernel, memcheck, blocks, threads, u,
                                              (name, memcheck, blocks, threads, u))
            outcomes.add(error is None)
    assert True in outcomes, name  # a launch that ran through (not only errors compared)


def test_a_shuffle_from_a_lane_past_the_block_is_the_coroutines_error(sessions):
    """In a partial warp (40 threads: the second warp has 8 lanes) lane 7's shfl_down by 4 reads lane 11,
    which does not exist: both forms stop the launch with the same error, naming the same thread."""
    kernel = _load(_kernel(["acc += cuda.shfl_down_sync(FULL, acc, 4)"]))
    _, error, _ = _same_in_both_forms(sessions, kernel, True, 1, 40, 0, "partial warp")
    assert error is not None and "lane" in error, error


# ---- what stays coroutines, and why ----------------------------------------------------------------------------
STAYS = {
    "thread-dependent position": (["if t < 20:", "    acc += cuda.shfl_down_sync(FULL, acc, 1)"], "every thread"),
    "a mask other than all lanes": (["acc += cuda.shfl_down_sync(0xFFFF, acc, 1)"], "all 32 lanes"),
    "an early exit": (["if t > u:", "    return", "acc += cuda.shfl_down_sync(FULL, acc, 1)"], "exit"),
    "inside an expression": (["acc = 2 * cuda.shfl_down_sync(FULL, acc, 1)"], "statements of their own"),
    "a thread-dependent break": (["for q in range(4):", "    if t == q:", "        break",
                                  "    acc += cuda.shfl_xor_sync(FULL, acc, 1)"], "every thread"),
    "a block barrier under a thread-dependent branch": (["if t < 40:", "    cuda.syncthreads()",
                                                         "acc += cuda.shfl_xor_sync(FULL, acc, 1)"],
                                                        "under thread-dependent control"),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(STAYS))
def test_warp_operations_the_form_cannot_prove_alike_stay_coroutines_and_say_why(sessions, name):
    body, reason = STAYS[name]
    kernel = _load(_kernel(body))
    form, why = _form(sessions[True, True][0], kernel)
    assert form == "coroutines" and reason in why, (form, why)
    _same_in_both_forms(sessions, kernel, True, 2, 40, 3, name)  # and it runs as the coroutines do (it is one)


# ---- random kernels -------------------------------------------------------------------------------------------
leaf = st.one_of(
    st.tuples(st.just("shfl"), st.sampled_from(["down", "up", "xor", "idx"]), st.integers(0, 40)),
    st.tuples(st.just("vote"), st.sampled_from(["ballot_sync", "any_sync", "all_sync", "eq_sync"]),
              st.integers(-3, 3)),
    st.tuples(st.just("match"), st.integers(1, 4)),
    st.just(("activemask",)),
    st.just(("syncwarp",)),
    st.just(("sync",)),
    st.tuples(st.just("shared"), st.integers(0, 127)),
    st.tuples(st.just("guarded"), st.integers(0, 70)),  # thread-dependent work with no warp operation in it
)


def _blocks(children):
    return st.one_of(
        st.tuples(st.just("for"), st.integers(0, 3), st.lists(children, min_size=1, max_size=3)),
        st.tuples(st.just("if"), st.integers(0, 4), st.lists(children, min_size=1, max_size=3)),
    )


stmts = st.lists(st.recursive(leaf, _blocks, max_leaves=8), min_size=1, max_size=6)


def _emit(stmt, depth: int, out: list) -> None:
    pad = "    " * depth
    kind = stmt[0]
    if kind == "shfl":
        fn = {"down": "shfl_down_sync", "up": "shfl_up_sync", "xor": "shfl_xor_sync", "idx": "shfl_sync"}[stmt[1]]
        arg = stmt[2] % 32 if stmt[1] in ("xor", "idx") else stmt[2] % 17
        out.append(f"{pad}acc += cuda.{fn}(FULL, acc * float32(0.5), {arg})")
    elif kind == "vote" and stmt[1] == "ballot_sync":
        out.append(f"{pad}n += cuda.ballot_sync(FULL, acc > float32({stmt[2]}))")
    elif kind == "vote":
        out.append(f"{pad}v = cuda.{stmt[1]}(FULL, acc > float32({stmt[2]}))")
        out.append(f"{pad}n += int32(v)")
    elif kind == "match":
        out.append(f"{pad}n += cuda.match_any_sync(FULL, t % {stmt[1]})")
    elif kind == "activemask":
        out.append(f"{pad}m = cuda.activemask()")
        out.append(f"{pad}n += int32(m & 255)")
    elif kind == "syncwarp":
        out.append(f"{pad}cuda.syncwarp()")
    elif kind == "sync":
        out.append(f"{pad}cuda.syncthreads()")
    elif kind == "shared":
        out.append(f"{pad}s[(t + {stmt[1]}) % 128] = acc")
        out.append(f"{pad}acc += s[(t * 3 + {stmt[1]}) % 128] * float32(0.25)")
    elif kind == "guarded":
        out.append(f"{pad}if t < {stmt[1]}:")
        out.append(f"{pad}    acc += float32(t)")
    elif kind == "for":
        var = f"j{depth}"
        out.append(f"{pad}for {var} in range({stmt[1]} + u % 2):")
        for s in stmt[2]:
            _emit(s, depth + 1, out)
    elif kind == "if":
        out.append(f"{pad}if u > {stmt[1]}:")
        for s in stmt[2]:
            _emit(s, depth + 1, out)


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("memcheck", [True, False])  # 50 examples in all, half each: xdist runs them side by side
@settings(max_examples=-(-int(os.environ.get("KDEBUG_WARP_REGIONS_EXAMPLES", "50")) // 2), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(body=stmts, blocks=st.integers(1, 2), threads=st.sampled_from([1, 7, 32, 40, 64]), u=st.integers(0, 6))
def test_random_warp_kernels_run_alike_in_both_forms(sessions, memcheck, body, blocks, threads, u):
    lines: list = []
    for s in body:
        _emit(s, 0, lines)
    lines.append("acc += cuda.shfl_xor_sync(FULL, acc, 1)")  # at least one warp operation
    source = _kernel(lines)
    kernel = _load(source)
    assert _form(sessions[True, memcheck][0], kernel) == ("regions", None), source
    _same_in_both_forms(sessions, kernel, memcheck, blocks, threads, u, source)
