"""Kernel adjoints (kdebug.adjoint): the samples under each strategy, Duplicated semantics (reads
accumulate, writes read and zero their shadows, in-place updates chain), the tape's atomics, and
what cannot be differentiated."""
from __future__ import annotations

import math
import runpy
import textwrap

import numpy as np
import pytest

import kdebug
from conftest import run_sample
from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from test_grad import compiled_once, tree


@pytest.mark.parametrize("sample,kernel", [("adjoint_stencil", "smooth"), ("adjoint_least_squares", "residuals")])
@pytest.mark.parametrize("strategy", ["worklist", "toplevel", "recursive"])
def test_samples_check_themselves_under_every_strategy(sample, kernel, strategy):
    # an adjoint's body needs the kernel's body, which is its own job's primal: no marker stands between
    model, error = run_sample(sample, strategy)
    assert error is None, error
    assert tree(model) == [(f"{kernel}_adjoint", None, "host", "kernel"),
                           (f"adjoint({kernel})", f"{kernel}_adjoint", "adjoint", "derivative")]
    assert compiled_once(model)
    (job,) = [j for j in model.jobs.values() if j.reason == "adjoint"]
    for stage in ("primal", "primal_resolved", "activity", "augmented_forward", "reverse", "tape"):
        assert stage in job.snapshots, stage
    tape = model.snapshots[job.snapshots["tape"]].text
    assert "becomes an atomic accumulation (atomicrmw fadd) into its shadow" in tape
    if sample == "adjoint_stencil":  # each cached value and atomic read names its source line (debug locations)
        line = next(n for n, text in enumerate(job.source.splitlines(), job.source_line)
                    if "0.25 * x[i - 1]" in text)
        cached = [t for t in tape.splitlines() if t.strip().startswith(("cached %", "atomic:"))]
        assert cached and all(f" at {sample}.py:{line}:" in t for t in cached), tape


@cuda.jit
def scale_in_place(x, y, c):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * x[i] * c + y[i]


@cuda.jit
def accumulate_sum(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i] * x[i])


def test_in_place_update_chains_through_and_scalars_are_constants():
    set_session(Session(backend="cpu"))
    rng = np.random.default_rng(1)
    x0, y = rng.standard_normal(16), rng.standard_normal(16)
    x, dx, dy = x0.copy(), rng.standard_normal(16), np.zeros(16)
    seed = dx.copy()
    kdebug.adjoint(scale_in_place)[1, 16](x, dx, y, dy, 3.0)
    np.testing.assert_allclose(x, x0 * x0 * 3.0 + y, rtol=1e-14)  # the primal's effect
    np.testing.assert_allclose(dx, seed * 2 * x0 * 3.0, rtol=1e-14)  # the adjoint of x's initial value
    np.testing.assert_allclose(dy, seed, rtol=1e-14)


def test_an_atomic_add_in_the_primal_is_differentiated():
    set_session(Session(backend="cpu"))
    x = np.linspace(-1, 1, 32)
    total, dx, dtotal = np.zeros(1), np.zeros(32), np.array([2.0])
    try:
        kdebug.adjoint(accumulate_sum)[1, 32](x, dx, total, dtotal)
    except CompileError as exc:  # said where it is written, with the construct and the job
        pytest.fail(str(exc))
    np.testing.assert_allclose(total, [np.sum(x * x)], rtol=1e-13)
    np.testing.assert_allclose(dx, 2.0 * 2 * x, rtol=1e-14)
    np.testing.assert_allclose(dtotal, [2.0])  # an accumulation keeps the adjoint of what it added to


def _write(tmp_path, text):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("body,what,line", [
    ("cuda.atomic.max(out, 0, x[i])", "an atomic other than add and sub (cuda.atomic.max)",
     "cuda.atomic.max(out, 0, x[i])"),
    ("child[1, 1](out)", "a device-side launch", "child[1, 1](out)"),
    ("cuda.syncthreads()", "a barrier (cuda.syncthreads)", "cuda.syncthreads()"),
])
def test_constructs_an_adjoint_cannot_take_are_located_errors(tmp_path, body, what, line):
    path = _write(tmp_path, f"""
        import numpy as np
        import kdebug
        from kdebug import cuda

        @cuda.jit
        def child(out):
            out[0] = 1.0

        @cuda.jit
        def k(x, out):
            i = cuda.grid(1)
            {body}

        x, out = np.ones(4), np.zeros(4)
        kdebug.adjoint(k)[1, 4](x, np.zeros(4), out, np.zeros(4))
    """)
    set_session(Session(backend="cpu"))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert f"{what}" in str(info.value) and "cannot be differentiated: job #2 adjoint(k)" in str(info.value)
    assert info.value.loc.source_line().strip() == line


def test_adjoint_argument_errors():
    with pytest.raises(CompileError, match="takes a @cuda.jit kernel") as info:
        kdebug.adjoint(kdebug.gradient)
    assert "kdebug.gradient(fn)" in info.value.hint
    set_session(Session(backend="cpu"))
    with pytest.raises(CompileError, match="each array followed by its shadow"):
        kdebug.adjoint(scale_in_place)[1, 4](np.ones(4), np.ones(4), np.ones(4), 3.0)


@cuda.jit(device=True)
def point(x, y):
    return x / (x * x + 1.0) + math.sin(y)


@cuda.jit
def pointwise(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = point(a[i], b[i])


def test_a_device_function_called_by_the_kernel_passes_its_adjoints_on():
    # found by the property test: the callee's gradient twin is a function's, not the kernel's
    set_session(Session(backend="cpu"))
    a, b, out = np.linspace(-1, 1, 8), np.ones(8), np.zeros(8)
    da, db, dout = np.zeros(8), np.zeros(8), np.full(8, 2.0)
    kdebug.adjoint(pointwise)[1, 8](a, da, b, db, out, dout)
    np.testing.assert_allclose(da, 2.0 * (1 - a * a) / (a * a + 1) ** 2, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(db, 2.0 * np.cos(b), rtol=1e-14)
