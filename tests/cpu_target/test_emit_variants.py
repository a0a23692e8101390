"""What the CPU target generates for a launch: only the paths a launch can take. The shuffled-thread
path of a barrier-free kernel's launcher (an out-of-line copy of the kernel and its own loop) exists
only in a session that shuffles, or where the kernel has memcheck's stopping check (target.py's
finish_ir says why); turning shuffling on later compiles the kernels again with it.
The IR is inspected, nothing is timed."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2 * x[i]


@cuda.jit
def last_writer(out):
    out[0] = cuda.threadIdx.x


@cuda.jit
def horner(x, out):
    """A loop: memcheck's failed checks end only their thread (no stopping check)."""
    i = cuda.grid(1)
    if i < x.size:
        acc = x[i]
        for _ in range(4):
            acc = acc * x[i] + 1
        out[i] = acc


@pytest.fixture(params=["no memcheck", "thread-ending checks"])
def session(request):
    """Sessions whose barrier-free launchers leave the shuffled path out unless asked."""
    previous = seam.current()
    s = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, memcheck=request.param != "no memcheck")
    s.kernel = scale if request.param == "no memcheck" else horner
    live.set_session(s)
    yield s
    live.set_session(previous)


def _launcher_body(s, dispatcher, *arrays) -> str:
    """The launcher body after finish (the kernel not yet inlined into it)."""
    compiled = s.compile_kernel(dispatcher, tuple(T.typeof(a) for a in arrays))
    text = compiled.record.ir_after_finish()
    entry = compiled.record.entry
    body = text.split(f"define internal void @{entry}.grid.body(", 1)[1].split("\n}\n", 1)[0]
    return body, entry


def _calls_of_kernel(body: str, entry: str) -> int:
    """Calls of the kernel itself in the launcher body."""
    return body.count(f"call void @{entry}(")


def test_no_shuffled_path_unless_the_session_shuffles(session):
    x = np.ones(64, np.float32)
    body, entry = _launcher_body(session, session.kernel, x, x)
    assert _calls_of_kernel(body, entry) == 1  # the ordered loop's call only: no out-of-line one


def test_a_shuffling_session_compiles_the_shuffled_path(session):
    session.set_options(shuffle_threads=3)
    x = np.ones(64, np.float32)
    body, entry = _launcher_body(session, session.kernel, x, x)
    assert _calls_of_kernel(body, entry) == 2  # ordered (inlined later) and shuffled (out of line)


def test_turning_shuffling_on_recompiles_with_the_shuffled_path(session):
    out = np.zeros(1, np.int32)
    last_writer[1, 64](out)
    assert out[0] == 63  # thread order: the last thread writes last
    first = session.compile_kernel(last_writer, (T.typeof(out),))
    seen = set()
    for seed in range(4):
        session.set_options(shuffle_threads=seed)
        last_writer[1, 64](out)
        seen.add(int(out[0]))
    again = session.compile_kernel(last_writer, (T.typeof(out),))
    assert again is not first and session.target.shuffle
    assert seen != {63}  # the shuffled orders ended with other threads
    session.set_options(shuffle_threads=None)
    last_writer[1, 64](out)
    assert out[0] == 63  # shuffling off: in order again (the shuffled path is not taken)


def test_shuffle_seed_assigned_directly_also_recompiles(session):
    """The runner sets ``session.shuffle_seed`` itself, before the script compiles anything."""
    session.shuffle_seed = 5
    assert session.target.shuffle
    x = np.ones(64, np.float32)
    assert _calls_of_kernel(*_launcher_body(session, session.kernel, x, x)) == 2


def test_the_stopping_check_keeps_the_shuffled_path():
    s = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, memcheck=True)
    x = np.ones(64, np.float32)
    assert _calls_of_kernel(*_launcher_body(s, scale, x, x)) == 2


@cuda.jit
def block_sum(x, out):
    """A barrier kernel in the region form; its last block's threads past x's end return before the barrier."""
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.size:
        return
    s[t] = x[i]
    cuda.syncthreads()
    if t == 0:
        acc = 0.0
        for k in range(min(64, x.size - i)):
            acc += s[k]
        out[cuda.blockIdx.x] = acc


def test_the_region_forms_block_scheduler_is_a_function_of_its_own_that_llvm_does_not_optimise():
    """The block scheduler's code (threads at different barriers, some exited: what a thread loop hands over)
    is most of a region-form launcher: in ``<entry>.grid.scheduler``, marked ``optnone``, emit's -O2 spends
    nothing on it (kdebug/targets/cpu/forms/regions/scheduler.py, ``_scheduler_function``). It still runs the
    blocks it is handed: here the last block's exited threads send that block to it."""
    previous = seam.current()
    s = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, tiered=False)
    live.set_session(s)
    try:
        x = np.arange(100, dtype=np.float32)
        out = np.zeros(2, np.float32)
        block_sum[2, 64](x, out)
        compiled = s.compile_kernel(block_sum, (T.typeof(x), T.typeof(out)))
    finally:
        live.set_session(previous)
    assert compiled.record.form == ("regions", None), compiled.record.form
    assert list(out) == [float(x[:64].sum()), float(x[64:].sum())]
    text, entry = compiled.record.ir_after_finish(), compiled.record.entry
    head = next(line for line in text.splitlines() if f"@{entry}.grid.scheduler(" in line and line.startswith("define"))
    attrs = head.rsplit(")", 1)[1]  # the attribute group named after the parameters
    group = attrs.split("#")[1].split()[0] if "#" in attrs else None
    named = [line for line in text.splitlines() if group is not None and line.startswith(f"attributes #{group} ")]
    flags = attrs + " ".join(named)
    assert "optnone" in flags and "noinline" in flags, (head, named)
    body, _ = _launcher_body_of(text, entry)
    assert f"@{entry}.grid.scheduler(" in body  # the body hands a block over by a call
    assert "resume.k" not in body and "sched.mismatch" not in body  # and keeps none of the scheduler's code


def _launcher_body_of(text: str, entry: str) -> tuple[str, str]:
    return text.split(f"define internal void @{entry}.grid.body(", 1)[1].split("\n}\n", 1)[0], entry
