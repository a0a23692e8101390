"""Property: a random kernel with barriers (in uniform loops and branches, under thread-dependent
branches: bounds on the thread index and its multiples of a power of two; with shared and local arrays, early
exits before and after barriers, votes, out-of-bounds
reads) gives the same outputs, the same errors and the same warnings in the region form
(kdebug/targets/cpu/forms/regions/cut.py) as in the coroutine form, thread order and shuffled."""
from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import module_folder, watched_session
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.session import live

SHARED = 64
_dir = module_folder("kdebug-regions-")
_count = itertools.count()

# statements: leaves, and blocks that nest (depth-limited by the strategy's recursion)
leaf = st.one_of(
    st.tuples(st.just("shared_write"), st.integers(1, 3), st.integers(0, SHARED - 1)),
    st.tuples(st.just("shared_read"), st.integers(1, 3), st.integers(0, SHARED - 1)),
    st.tuples(st.just("local"), st.integers(0, 3)),
    st.tuples(st.just("global_read"), st.integers(0, 40)),  # some offsets read past x's end: memcheck
    st.just(("sync",)),
    st.tuples(st.just("count"), st.integers(0, 70)),
    st.tuples(st.just("exit"), st.integers(0, 70)),  # if t >= K: return
    st.tuples(st.just("divergent_sync"), st.integers(0, 70)),  # if t < K: cuda.syncthreads()
)


def _blocks(children):
    return st.one_of(
        st.tuples(st.just("for"), st.integers(0, 3), st.lists(children, min_size=1, max_size=4)),
        st.tuples(st.just("while"), st.lists(children, min_size=1, max_size=4)),
        st.tuples(st.just("uniform_if"), st.integers(0, 4), st.lists(children, min_size=1, max_size=3),
                  st.lists(children, max_size=3)),
        st.tuples(st.just("thread_if"), st.integers(0, 70), st.lists(children, min_size=1, max_size=3)),
        # the multiples of a power of two known at run time (the strided narrowing: kdebug/targets/cpu/forms/
        # regions/bounds.py), as numba's reduction example guards its tree step
        st.tuples(st.just("thread_multiple"), st.integers(0, 3), st.lists(children, min_size=1, max_size=3)),
    )


stmts = st.lists(st.recursive(leaf, _blocks, max_leaves=10), min_size=1, max_size=7)


def _emit(stmt, depth: int, out: list, wrap: bool = False) -> None:
    """``wrap``: global reads wrap around x's end (a kernel run without memcheck must stay in bounds)."""
    pad = "    " * depth
    kind = stmt[0]
    if kind == "shared_write":
        out.append(f"{pad}s[(t * {stmt[1]} + {stmt[2]}) % {SHARED}] = acc + float32(t)")
    elif kind == "shared_read":
        out.append(f"{pad}acc += s[(t * {stmt[1]} + {stmt[2]}) % {SHARED}] * float32(0.5)")
    elif kind == "local":
        out.append(f"{pad}loc[{stmt[1]}] = acc")
        out.append(f"{pad}acc += loc[(t + {stmt[1]}) % 4]")
    elif kind == "global_read":
        out.append(f"{pad}acc += x[(i + {stmt[1]}) % x.size]" if wrap else f"{pad}acc += x[i + {stmt[1]}]")
    elif kind == "sync":
        out.append(f"{pad}cuda.syncthreads()")
    elif kind == "count":
        out.append(f"{pad}c = cuda.syncthreads_count(t < {stmt[1]})")
        out.append(f"{pad}acc += float32(c)")
    elif kind == "exit":
        out.append(f"{pad}if t >= {stmt[1]}:")
        out.append(f"{pad}    return")
    elif kind == "divergent_sync":
        out.append(f"{pad}if t < {stmt[1]}:")
        out.append(f"{pad}    cuda.syncthreads()")
    elif kind == "for":
        var = f"j{depth}"
        out.append(f"{pad}for {var} in range({stmt[1]} + u % 2):")
        for s in stmt[2]:
            _emit(s, depth + 1, out, wrap)
        out.append(f"{pad}    acc += float32({var})")
    elif kind == "while":
        var = f"w{depth}"
        out.append(f"{pad}{var} = u")
        out.append(f"{pad}while {var} > 0:")
        for s in stmt[1]:
            _emit(s, depth + 1, out, wrap)
        out.append(f"{pad}    {var} //= 2")
    elif kind == "uniform_if":
        out.append(f"{pad}if u > {stmt[1]}:")
        for s in stmt[2]:
            _emit(s, depth + 1, out, wrap)
        if stmt[3]:
            out.append(f"{pad}else:")
            for s in stmt[3]:
                _emit(s, depth + 1, out, wrap)
    elif kind == "thread_if":
        out.append(f"{pad}if t < {stmt[1]}:")
        for s in stmt[2]:
            _emit(s, depth + 1, out, wrap)
    elif kind == "thread_multiple":
        out.append(f"{pad}if t % (1 << ((u + {stmt[1]}) % 4)) == 0:")
        for s in stmt[2]:
            _emit(s, depth + 1, out, wrap)


def kernel_source(body, wrap: bool = False) -> str:
    lines = ["from kdebug import cuda", "from kdebug.cuda import float32", "", "",
             "@cuda.jit", "def k(x, out, u):",
             f"    s = cuda.shared.array({SHARED}, float32)",
             "    loc = cuda.local.array(4, float32)",
             "    t = cuda.threadIdx.x",
             "    i = cuda.grid(1)",
             "    acc = float32(0)",
             "    c = 0",
             "    for q in range(4):",
             "        loc[q] = float32(q)",
             # every entry written before any is read: shared memory starts undefined, and the forms keep
             # a block's in different buffers (coroutines with lockstep loops: 4 blocks' at once)
             f"    for q in range({SHARED}):",
             "        s[q] = float32(0)",
             "    cuda.syncthreads()"]
    for stmt in body:
        _emit(stmt, 1, lines, wrap)
    lines.append("    out[i] = acc + float32(c)")
    return "\n".join(lines) + "\n"


def load_kernel(body, wrap: bool = False):
    path = os.path.join(_dir, f"regions_k{next(_count)}.py")
    with open(path, "w") as f:
        f.write(kernel_source(body, wrap))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@pytest.fixture(scope="module")
def sessions():
    """CPU sessions with the region form on and off, in thread order and shuffled (seed 3), each with its
    warnings: a session that shuffles compiles with the shuffled path from then on, so the orders keep
    sessions of their own. In thread order also without memcheck, where the region form's threads that
    all stop alike keep one state (region_bounds.Region.alike; a failed check ends its thread, so with
    memcheck a region's threads may part ways)."""
    previous = seam.current()
    made = {}
    for on in (True, False):
        for shuffle, memcheck in ((None, True), (3, True), (None, False)):
            s, seen = watched_session(tiered=False, regions=on, memcheck=memcheck)
            s.set_options(shuffle_threads=shuffle)
            made[on, shuffle if memcheck else "unchecked"] = (s, seen)
    yield made
    live.set_session(previous)


def _run(session, seen, kernel, blocks, threads, u):
    """One launch of ``kernel(x, out, u)``, ``threads`` a block's size or shape: its outputs, error and warnings."""
    live.set_session(session)
    n = blocks * int(np.prod(threads))
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


ORDERS = [None, 3, "unchecked"]
PARTS = [1, 2]
# the examples (110 in all) are shared among the three orders and two parts of each, each a test of its own:
# xdist runs them side by side (one test of 110 examples took two minutes on 2 idle cores; a third of them 41-65 s
# beside the suite's other tests)
EXAMPLES = -(-int(os.environ.get("KDEBUG_REGIONS_EXAMPLES", "110")) // (len(ORDERS) * len(PARTS)))


@pytest.mark.slow  # two compilations per example: under a minute on 2 idle cores, more on a busy machine
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("part", PARTS)  # the examples' parts: independent draws
@pytest.mark.parametrize("shuffle", ORDERS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(body=stmts, blocks=st.integers(1, 2), threads=st.sampled_from([1, 7, 32, 64]), u=st.integers(0, 6))
# found by CI: the second loop reads what other threads' first loop wrote; the coroutines ran every thread's
# first loop before any thread's second (an earlier lockstep loop counted as a suspend point)
@example(body=[("for", 0, [("shared_write", 1, 0)]), ("for", 0, [("shared_read", 1, 1)])], blocks=1, threads=7, u=1)
def test_the_region_form_runs_as_the_coroutines_do(sessions, shuffle, part, body, blocks, threads, u):
    """``shuffle``: thread order, shuffled (seed 3), or thread order without memcheck ("unchecked")."""
    wrap = shuffle == "unchecked"
    kernel = load_kernel(body, wrap)
    got = {on: _run(*sessions[on, shuffle], kernel, blocks, threads, u) for on in (True, False)}
    regions_out, regions_error, regions_warnings = got[True]
    coro_out, coro_error, coro_warnings = got[False]
    assert regions_error == coro_error, kernel_source(body, wrap)
    assert regions_warnings == coro_warnings, kernel_source(body, wrap)
    if regions_error is None:
        assert regions_out == coro_out, kernel_source(body, wrap)
    # after a failed check the report is the same, the outputs need not be: in the region form the threads
    # after the failing one in its thread loop still run their step (docs/internals/cpu-forms.md, "Memcheck in
    # the region form"), where the coroutines stop at the failing thread (found by this test: thread 0 reads
    # x[7] of 7 elements under `if t < 1`, threads 1-6 write out[i] after it in the region form only)
    # every kernel of this grammar takes the region form (its barriers are statements, no warp operations)
    records = sessions[True, shuffle][0].driver.records
    latest = records[max(j for j, r in records.items() if r.name == "k")]
    if shuffle != 3:
        assert latest.form == ("regions", None)
    else:  # shuffled runs keep the coroutines until the region launcher shuffles as they do
        assert latest.form[0] == "coroutines" and "--shuffle-threads" in latest.form[1]
