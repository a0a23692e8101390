"""Property: racecheck's verdict on random straight-line shared-memory kernels equals a brute-force
reference that enumerates every pair of accesses with their barrier epochs."""
from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import module_folder
import kdebug
from kdebug.session.live import get_session

ELEMS = 8
BLOCKS = 2
_dir = module_folder("kdebug-racecheck-")
_count = itertools.count()

op = st.one_of(
    st.tuples(st.just("read"), st.integers(0, 3), st.integers(0, ELEMS - 1)),
    st.tuples(st.just("write"), st.integers(0, 3), st.integers(0, ELEMS - 1)),
    st.just(("sync",)),
)


def kernel_source(ops) -> str:
    lines = ["import numpy as np", "from kdebug import cuda", "from kdebug.cuda import int32", "",
             "@cuda.jit", "def k(out):", f"    s = cuda.shared.array({ELEMS}, int32)", "    t = cuda.threadIdx.x",
             "    acc = 0"]
    for o in ops:
        if o[0] == "sync":
            lines.append("    cuda.syncthreads()")
        elif o[0] == "read":
            lines.append(f"    acc += s[({o[1]} * t + {o[2]}) % {ELEMS}]")
        else:
            lines.append(f"    s[({o[1]} * t + {o[2]}) % {ELEMS}] = t")
    lines.append("    out[cuda.grid(1)] = acc")
    return "\n".join(lines) + "\n"


def load_kernel(ops):
    path = os.path.join(_dir, f"k{next(_count)}.py")
    with open(path, "w") as f:
        f.write(kernel_source(ops))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


def reference(ops, threads):
    """(write-after-write, read/write) occurrences: (element, epoch) pairs of one block where two different
    threads wrote, or one thread wrote and another read; times the number of blocks."""
    accesses = {}  # (epoch, element) -> list of (thread, is_write)
    epoch = 0
    for o in ops:
        if o[0] == "sync":
            epoch += 1
            continue
        for t in range(threads):
            accesses.setdefault((epoch, (o[1] * t + o[2]) % ELEMS), []).append((t, o[0] == "write"))
    waw = rw = 0
    for acc in accesses.values():
        pairs = [(x, y) for x, y in itertools.combinations(acc, 2) if x[0] != y[0]]
        waw += any(x[1] and y[1] for x, y in pairs)
        rw += any(x[1] != y[1] for x, y in pairs)
    return waw * BLOCKS, rw * BLOCKS


@pytest.mark.timeout(400)  # every example compiles a kernel: slow on a busy machine
@settings(max_examples=int(os.environ.get("KDEBUG_PROPERTY_EXAMPLES", 30)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=7), threads=st.integers(2, 8),
       seed=st.one_of(st.none(), st.integers(0, 3)))
def test_racecheck_matches_the_brute_force_reference(ops, threads, seed):
    from kdebug.session.live import set_session
    set_session(None)
    kdebug.set_options(racecheck=True, shuffle_threads=seed)
    kernel = load_kernel(ops)
    kernel[BLOCKS, threads](np.zeros(BLOCKS * threads, np.int64))
    found = get_session().hazards
    assert all(h.space == "shared" for h in found)
    waw = sum(h.count for h in found if h.kind == "write-after-write")
    rw = sum(h.count for h in found if h.kind in ("read-after-write", "write-after-read"))
    assert (waw, rw) == reference(ops, threads), kernel_source(ops)
    assert bool(found) == any(reference(ops, threads))
