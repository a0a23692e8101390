"""The adjoint's static race check (kdebug/autodiff/adjoint_races.py): the races it proves are located
compile errors, and every one of them is a race ``--sanitize racecheck`` reports when the primal runs;
the kernels it lets through run their adjoints, and racecheck finds nothing in their primals."""
from __future__ import annotations

import runpy
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kdebug
from kdebug.errors import CompileError
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel

N, BLOCK = 64, 32

HEADER = """\
import numpy as np
from kdebug import cuda

@cuda.jit
def k(x, out, n):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    s = cuda.shared.array(32, np.float64)
"""

# (name, body, the line the error points at, words the message holds)
RACY = [
    ("neighbour in place", """
    if 0 < i < x.size - 1:
        x[i] = 0.5 * x[i - 1] + 0.5 * x[i + 1]
""", "x[i] = 0.5 * x[i - 1] + 0.5 * x[i + 1]", "read as x[i - 1]"),
    ("one element, all threads", """
    if i < n:
        out[0] = x[i]
""", "out[0] = x[i]", "every thread of a block writes out[0]"),
    ("one element per block", """
    out[cuda.blockIdx.x] = x[i]
""", "out[cuda.blockIdx.x] = x[i]", "write-after-write race on the differentiated array out"),
    ("a loop's element", """
    for j in range(4):
        out[j] = x[i] * j
""", "out[j] = x[i] * j", "every thread of a block writes out[j]"),
    ("shared, no barrier", """
    s[t] = x[i]
    if t < 31:
        out[i] = s[t + 1]
""", "s[t] = x[i]", "read as s[t + 1]"),
    ("after an early exit", """
    if i >= n - 1:
        return
    x[i] = x[i + 1] * 2.0
""", "x[i] = x[i + 1] * 2.0", "by the thread before in cuda.grid(1)"),
    ("an update reading its neighbour", """
    if i < n - 1:
        x[i] += x[i + 1]
""", "x[i] += x[i + 1]", "read-write race on the differentiated array x"),
    ("strided, two apart", """
    if i < n // 2 - 1:
        out[2 * i] = x[i]
        out[2 * i + 2] = x[i]
""", "out[2 * i] = x[i]", "written as out[2 * i + 2] (line 12) by the thread before"),
    ("written by the grid index, read by a shifted one", """
    j = i + 3
    if i < n - 3:
        x[i] = 1.0
        out[i] = x[j]
""", "x[i] = 1.0", "read as x[j] (line 13) by the thread 3 before"),
]

SAFE = [
    ("one thread writes", """
    if i == 0:
        out[0] = x[0]
"""),
    ("a constant bound leaving one thread", """
    if t < 1:
        out[cuda.blockIdx.x] = x[i]
"""),
    ("a barrier between", """
    s[t] = x[i]
    cuda.syncthreads()
    if t < 31:
        out[i] = s[t + 1]
"""),
    ("other array", """
    if 0 < i < n - 1:
        out[i] = x[i - 1] + x[i + 1]
"""),
    ("even threads read odd elements nobody writes", """
    if i % 2 == 0 and i < n - 1:
        x[i] = x[i + 1] * 2.0
"""),
    ("interleaved, never the same element", """
    if i < n // 2:
        out[2 * i] = x[i]
        out[2 * i + 1] = x[i]
"""),
    ("exclusive uniform branches", """
    if n > 1000:
        x[i] = 1.0
    elif i < n - 1:
        out[i] = x[i + 1]
"""),
    ("an update of one's own element", """
    if i < n:
        x[i] = x[i] * 2.0 + 1.0
"""),
    ("atomics", """
    if i < n:
        cuda.atomic.add(out, 0, x[i])
"""),
    ("an index read from memory", """
    if i < n:
        out[i + int(x[i] * 0.0)] = 2.0
"""),
]


def _kernel(tmp_path, body):
    path = tmp_path / "racy.py"
    path.write_text(HEADER + textwrap.dedent(body).replace("\n", "\n    ").rstrip() + "\n")
    return runpy.run_path(str(path))["k"]


def _session(**options):
    session = Session(backend="cpu", passes_on_demand=True, **options)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    return model


def _arrays():
    x = np.linspace(0.5, 1.5, N)
    return x, np.zeros(N), np.zeros(N), np.ones(N)


def _hazards(model):
    return [d.message for d in model.diagnostics if "hazard" in d.message]


@pytest.mark.parametrize("name,body,line,words", RACY, ids=[r[0] for r in RACY])
def test_a_race_the_check_proves_is_a_located_error_and_racecheck_sees_it(tmp_path, name, body, line, words):
    k = _kernel(tmp_path, body)
    x, dx, out, dout = _arrays()
    _session()
    with pytest.raises(CompileError) as info:
        kdebug.adjoint(k)[N // BLOCK, BLOCK](x, dx, out, dout, N)
    message = str(info.value)
    assert "a race cannot be differentiated" in message and words in message, message
    assert "job #2 adjoint(k) takes the adjoint of k" in message
    assert info.value.loc.source_line().strip() == line
    assert "--sanitize racecheck" in info.value.hint
    model = _session(racecheck=True)  # the primal, as the sanitizer sees it
    k[N // BLOCK, BLOCK](x, out, N)
    assert _hazards(model), f"racecheck found no race in {name!r}"


@pytest.mark.parametrize("name,body", SAFE, ids=[s[0] for s in SAFE])
def test_what_the_check_cannot_prove_racy_runs_and_racecheck_agrees(tmp_path, name, body):
    k = _kernel(tmp_path, body)
    x, dx, out, dout = _arrays()
    model = _session(racecheck=True)
    k[N // BLOCK, BLOCK](x.copy(), out.copy(), N)
    assert not _hazards(model), _hazards(model)
    _session()
    kdebug.adjoint(k)[N // BLOCK, BLOCK](x, dx, out, dout, N)  # compiles and runs: no race error
    assert np.isfinite(dx).all()


EXIT_AFTER_SHARED = """
    s[t] = x[i] * x[i]
    if t >= 16:
        return
    cuda.syncthreads()
    if t == 0:
        total = 0.0
        for j in range(32):
            total += s[j]
        out[cuda.blockIdx.x] = total
"""


def test_an_exit_between_a_shared_write_and_a_barrier_is_a_located_error(tmp_path):
    """Threads 16..31 would run their reverse sweep as they return, before thread 0 adds what it read of
    s into their shadow elements: their dx would stay 0 (measured before the check existed)."""
    k = _kernel(tmp_path, EXIT_AFTER_SHARED)
    x, dx, out, dout = _arrays()
    _session()
    with pytest.raises(CompileError) as info:
        kdebug.adjoint(k)[N // BLOCK, BLOCK](x, dx, out, dout, N)
    message = str(info.value)
    assert "an early exit cannot be differentiated" in message, message
    assert "writing the shared array s (s[t], line 10)" in message and "the barrier at line 13" in message
    assert info.value.loc.source_line().strip() == "return" and info.value.loc.line == 12


def test_returning_before_the_first_shared_write_stays_allowed(tmp_path):
    body = EXIT_AFTER_SHARED.replace("    s[t] = x[i] * x[i]\n    if t >= 16:\n        return\n",
                                     "    if i >= n:\n        return\n    s[t] = x[i] * x[i]\n")
    k = _kernel(tmp_path, body)
    x, dx, out, dout = _arrays()
    _session()
    kdebug.adjoint(k)[N // BLOCK, BLOCK](x, dx, out, dout, N)
    np.testing.assert_allclose(out[:2], [(x[:32] ** 2).sum(), (x[32:] ** 2).sum()])
    np.testing.assert_allclose(dx, 2 * x)


# ---- the check against racecheck on random access pairs

GUARDS = {"none": None, "symbolic bound": "{v} < n - 4", "one thread": "{v} == 0", "even threads": "{v} % 2 == 0",
          "below 1": "{v} < 1", "below 8": "{v} < 8"}


def _pair_kernel(space, a, c1, c2, second_writes, guard, barrier):
    """A write of A[a*v + c1] and, after it (a barrier between or not), a read or a write of A[a*v + c2]:
    v the thread's cuda.grid(1) for a global A, its cuda.threadIdx.x for a shared one."""
    v, arr = ("i", "x") if space == "global" else ("t", "s")
    cond = GUARDS[guard]

    def guarded(stmt):
        return f"    if {cond.format(v=v)}:\n        {stmt}\n" if cond else f"    {stmt}\n"
    second = f"{arr}[{a} * {v} + {c2 + 4}] = 3.0" if second_writes else f"out[i] = {arr}[{a} * {v} + {c2 + 4}]"
    return (HEADER.replace("cuda.shared.array(32,", "cuda.shared.array(80,")
            + guarded(f"{arr}[{a} * {v} + {c1 + 4}] = 2.0")
            + ("    cuda.syncthreads()\n" if barrier else "")
            + guarded(second))


def _proved(tmp_path, text):
    """The static check alone on the kernel ``text``: its message, or None."""
    from types import SimpleNamespace

    from kdebug.autodiff.adjoint_races import check_races
    from kdebug.frontend.typeinfer import infer_function
    from kdebug.lang import types as T
    path = tmp_path / f"pair{next(_pairs)}.py"
    path.write_text(text)
    k = runpy.run_path(str(path))["k"]
    arr = T.Array(T.float64, 1, "C")
    tf = infer_function(k.py_func, (arr, arr, T.int64), "device")
    try:
        check_races(SimpleNamespace(id=2, name="adjoint(k)"), tf)
    except CompileError as exc:
        return k, str(exc)
    return k, None


_pairs = __import__("itertools").count()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(space=st.sampled_from(["global", "shared"]), a=st.sampled_from([1, 2]), c1=st.integers(-2, 2),
       apart=st.sampled_from([1, -1, 2, -2, 4, 0]), second_writes=st.booleans(),
       guard=st.sampled_from(["symbolic bound", "none", "below 8", "one thread", "even threads", "below 1"]),
       barrier=st.sampled_from([False, False, True]))
def test_every_race_the_check_proves_racecheck_reports(tmp_path, space, a, c1, apart, second_writes, guard, barrier):
    """Sound: a race the check proves is one racecheck sees when the primal runs (64 threads, 2 blocks).
    Not vacuous: in the class it claims (no barrier between, conditions leaving more threads than the
    pair's distance, offsets a multiple of a apart) it proves every one."""
    c2 = c1 + apart
    k, proved = _proved(tmp_path, _pair_kernel(space, a, c1, c2, second_writes, guard, barrier))
    k_dist, k_mod = divmod(c1 - c2, a)
    in_class = not barrier and c1 != c2 and k_mod == 0 and (
        guard in ("none", "symbolic bound") or guard == "below 8" and abs(k_dist) < 8)
    if in_class:
        assert proved, "the check missed a race of the class it claims"
    if proved:
        model = _session(racecheck=True)
        x, out = np.zeros(2 * N + 16), np.zeros(N)
        k[N // BLOCK, BLOCK](x, out, N)
        assert _hazards(model), f"the check proved a race racecheck does not see: {proved}"
