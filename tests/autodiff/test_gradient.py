"""Reverse-mode derivative jobs (kdebug.gradient): the samples under each strategy, the recorded
stages and the tape, the job keys, forward over reverse, and what cannot be differentiated."""
from __future__ import annotations

import math
import os
import runpy
import textwrap

import numpy as np
import pytest

import kdebug
from conftest import ROOT, run_kdebug, run_sample
from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from test_grad import all_finished, compiled_once, cycles, finish_misses, tree

K, G = "kernel", "derivative"
HVP = [("hvp", None, "host", K), ("gradient(f)", "hvp", "gradient", G),
       ("grad(gradient(f, argnum=0))", "hvp", "grad", G),
       ("gradient(f, argnum=0)", "grad(gradient(f, argnum=0))", "gradient", G),
       ("grad(gradient(f, argnum=0), argnum=1)", "hvp", "grad", G),
       ("grad(gradient(f, argnum=1))", "hvp", "grad", G),
       ("gradient(f, argnum=1)", "grad(gradient(f, argnum=1))", "gradient", G),
       ("grad(gradient(f, argnum=1), argnum=1)", "hvp", "grad", G)]
POINTER = [("chain", None, "host", K), ("g", "chain", "pointer", "device"),
           ("gradient(f, argnum=0)", "chain", "gradient", G),
           ("gradient(g, argnum=0)", "gradient(f, argnum=0)", "gradient", G),
           ("gradient(f)", "chain", "gradient", G)]
POWER = [("powers", None, "host", K), ("gradient(power, argnum=0)", "powers", "gradient", G),
         ("power", "gradient(power, argnum=0)", "pointer", "device"),
         ("grad(gradient(power, argnum=0))", "powers", "grad", G),
         ("grad(power)", "grad(gradient(power, argnum=0))", "grad", G)]


# ---- worklist: every sample works, each key once, finish on every job -----------------------------
@pytest.mark.timeout(600)  # the Hessian-vector sample compiles nine jobs
@pytest.mark.parametrize("sample,expected,expected_cycles", [
    ("gradient_hvp", HVP, []),
    ("gradient_pointer", POINTER, []),
    ("gradient_recursive_power", POWER, [(["gradient(power, argnum=0)", "gradient(power, argnum=0)"], "reference"),
                                         (["power", "power"], "reference"), (["grad(power)", "grad(power)"], "reference")]),
])
def test_worklist_compiles_every_gradient_once_and_finishes_it(sample, expected, expected_cycles):
    model, error = run_sample(sample, "worklist")
    assert error is None, error
    assert tree(model) == expected
    assert compiled_once(model), model.compilations
    assert cycles(model) == expected_cycles
    assert not finish_misses(model) and all_finished(model)
    assert all(j.state == "done" for j in model.jobs.values())
    assert len(model.launches) == 1 and all(lv.error is None for lv in model.launches.values())


# ---- toplevel: through a pointer or forward over reverse it fails, located --------------------------
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sample,job,held,line", [
    ("gradient_hvp", "grad(gradient(f, argnum=0))", "gradient(f, argnum=0)",
     "out[2, i] = hxx(x, y) * vx + hxy(x, y) * vy"),
    ("gradient_pointer", "gradient(f, argnum=0)", "g", "return k * kdebug.deferred(g)(x * x) + math.cos(x)"),
    ("gradient_recursive_power", "gradient(power, argnum=0)", "power", "return x * kdebug.deferred(power)(x, n - 1)"),
])
def test_toplevel_fails_with_the_explained_located_enzyme_error(sample, job, held, line):
    model, error = run_sample(sample, "toplevel")
    assert isinstance(error, CompileError)
    text = str(error)
    held_id = next(j.id for j in model.jobs.values() if j.name == held)
    assert f"{job}: the primal still holds the deferred-codegen marker for job #{held_id} {held}" in text
    assert "the toplevel strategy expands markers only in the toplevel job" in text
    assert "--strategy worklist" in text and "Enzyme.jl#1707" in text
    assert error.loc is not None and error.loc.source_line().strip() == line
    assert not model.launches
    assert any(j.name == job and j.state == "failed" for j in model.jobs.values())


def test_toplevel_order_one_of_a_plain_function_works(tmp_path):
    set_session(Session(backend="cpu", passes_on_demand=True, strategy="toplevel"))
    xs = np.linspace(-1, 1, 8)
    out = np.zeros((2, 8))
    _issue_kernel[1, 8](out, xs)
    np.testing.assert_allclose(out[0], np.cos(xs) * 2.0 + 2.0 * np.exp(2.0 * xs), rtol=1e-13)


# ---- recursive: works without cycles, at a cost; a cycle is stopped -------------------------------
@pytest.mark.timeout(600)
def test_recursive_forward_over_reverse_duplicates_the_reverse_jobs_and_misses_finish():
    model, error = run_sample("gradient_hvp", "recursive")
    assert error is None, error
    dup = {k: n for k, n in model.compilations.items() if n > 1}
    assert sorted(k.split("(")[0] for k in dup) == ["reverse.grad[0]", "reverse.grad[1]"]
    assert [d for d in model.diagnostics if d.category == "duplicate"]
    assert finish_misses(model) == ["gradient(f, argnum=0)", "gradient(f, argnum=0)", "gradient(f, argnum=1)",
                                    "gradient(f, argnum=1)"]


def test_recursive_gradient_through_a_pointer_compiles_the_pointer_job_again():
    model, error = run_sample("gradient_pointer", "recursive")
    assert error is None, error
    assert [n for k, n in model.compilations.items() if ".g(float64)" in k] == [3]
    assert finish_misses(model) == ["g", "g"]


def test_recursive_stops_the_recursive_power_at_the_first_reentry():
    model, error = run_sample("gradient_recursive_power", "recursive")
    assert error is not None and "power \u2192 power" in str(error)
    assert cycles(model) == [(["power", "power"], "stopped")]
    assert not model.launches


# ---- the issue's example: one reverse sweep, the tuple, one partial, forward over reverse ------------
@cuda.jit(device=True)
def issue_f(x, y):
    return math.sin(x) * y + math.exp(x * y)


@cuda.jit
def _issue_kernel(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[0, i] = kdebug.gradient(issue_f, argnum=0)(xs[i], 2.0)


@cuda.jit
def issue_kernel(out, xs, ns):
    i = cuda.grid(1)
    if i < xs.size:
        x = xs[i]
        dx, dy = kdebug.gradient(issue_f)(x, 2.0)
        out[0, i] = dx
        out[1, i] = dy
        out[2, i] = kdebug.gradient(issue_f, argnum=1)(x, 2.0)
        out[3, i] = kdebug.grad(kdebug.gradient(issue_f, argnum=0), argnum=1)(x, 2.0)
        (dn,) = kdebug.gradient(scaled)(x, ns[i])  # the integer argument is a constant
        out[4, i] = dn


@cuda.jit(device=True)
def scaled(x, n):
    return x * x * n


def test_gradient_is_one_job_giving_every_float_partial_and_nests_under_grad():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    xs = np.linspace(-1, 1, 16)
    ns = np.arange(16, dtype=np.int64)
    out = np.zeros((5, 16))
    issue_kernel[1, 16](out, xs, ns)
    y = 2.0
    np.testing.assert_allclose(out[0], np.cos(xs) * y + y * np.exp(xs * y), rtol=1e-13)
    np.testing.assert_allclose(out[1], np.sin(xs) + xs * np.exp(xs * y), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out[2], out[1], rtol=1e-15)
    np.testing.assert_allclose(out[3], np.cos(xs) + np.exp(xs * y) * (1 + xs * y), rtol=1e-13)
    np.testing.assert_allclose(out[4], 2 * xs * ns, rtol=1e-15)
    names = sorted(j.name for j in model.jobs.values() if j.kind == "derivative")
    # the tuple of both partials is one reverse job (one sweep), not a forward job per argument
    assert names == ["grad(gradient(issue_f, argnum=0), argnum=1)", "gradient(issue_f)",
                     "gradient(issue_f, argnum=0)", "gradient(issue_f, argnum=1)", "gradient(scaled)"]
    keys = sorted(k for k in model.compilations if k.startswith("reverse.grad"))
    assert keys[0].startswith("reverse.grad[0](test_gradient.issue_f(float64, float64)/device/cpu#")
    assert any(k.startswith("reverse.grad[None](test_gradient.issue_f(float64, float64)") for k in keys)
    (g,) = [j for j in model.jobs.values() if j.name == "gradient(issue_f)"]
    assert g.kind == "derivative" and g.reason == "gradient"
    for stage in ("parse", "typeinfer", "primal", "primal_resolved", "activity", "augmented_forward", "reverse",
                  "tape", "expand_deferred", "before_finish", "after_finish"):
        assert stage in g.snapshots, stage
    assert "derivative" not in g.snapshots  # the forward-mode stage is grad's
    text = lambda s: model.snapshots[g.snapshots[s]].text  # noqa: E731
    assert "reverse:" in text("augmented_forward") and "unreachable" in text("augmented_forward")
    # no cycles: a static reverse, each block's reverse going straight to its predecessor's (no linked tape)
    assert "reverse.done:" in text("reverse") and "reverse.entry:" in text("reverse")
    assert "tape.head" not in text("reverse")
    assert "active (carry an adjoint)" in text("activity")
    tape = text("tape")
    # straight-line code: the entry block runs once and dominates the reverse sweep, nothing is kept
    assert "bytes per thread: 0 for the blocks outside loops" in tape and "block entry: one record, 0 bytes" in tape
    assert "reverse sweep: static (no cycles" in tape
    assert "cached" not in tape


@cuda.jit(device=True)
def looped(x, y):
    v = y
    for k in range(4):
        v = math.sin(v * x) + k
    return v


@cuda.jit
def looped_kernel(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[0, i] = kdebug.gradient(looped, argnum=0)(xs[i], 0.5)
        out[1, i] = kdebug.grad(looped)(xs[i], 0.5)


@pytest.mark.timeout(600)
def test_a_loop_keeps_a_record_per_trip_on_the_tape():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    xs = np.linspace(-1, 1, 8)
    out = np.zeros((2, 8))
    looped_kernel[1, 8](out, xs)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-13)
    (g,) = [j for j in model.jobs.values() if j.name == "gradient(looped, argnum=0)"]
    tape = model.snapshots[g.snapshots["tape"]].text
    assert "a record per run (in a loop)" in tape and "overwritten in a loop: kept per trip" in tape
    assert "cached %" in tape and "plus per loop trip" in tape


@pytest.mark.timeout(400)
def test_kdebug_dump_writes_each_reverse_stage_and_the_tape(tmp_path):
    out = tmp_path / "dump"
    proc = run_kdebug("dump", os.path.join(ROOT, "sample_kernels", "gradient_pointer.py"), "--out", str(out),
                      timeout=360)
    assert proc.returncode == 0, proc.stderr
    names = sorted(os.listdir(out))
    for stage in ("activity.txt", "augmented_forward.ll", "reverse.ll", "tape.txt"):
        assert any("gradient_f_" in n and n.endswith(stage) for n in names), stage
    tape = next(n for n in names if n.startswith(tuple("0123456789")) and "gradient_g_" in n and n.endswith("tape.txt"))
    assert "bytes per thread" in (out / tape).read_text()


# ---- what cannot be differentiated ---------------------------------------------------------------------
def _write(tmp_path, text):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("body,what,line", [
    ("out[0] = x\n    return x", "a write to the global array out", "out[0] = x"),
    ("cuda.atomic.max(out, 0, x)\n    return x", "an atomic (cuda.atomic.max)", "cuda.atomic.max(out, 0, x)"),
])
def test_constructs_a_gradient_cannot_take_are_located_errors(tmp_path, body, what, line):
    path = _write(tmp_path, f"""
import numpy as np
import kdebug
from kdebug import cuda

@cuda.jit(device=True)
def side(x, out):
    {body}

@cuda.jit
def k(out):
    out[1] = kdebug.gradient(side, argnum=0)(2.0, out)

k[1, 1](np.zeros(2))
""")
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert f"{what} cannot be differentiated: job #2 gradient(side, argnum=0)" in str(info.value)
    assert info.value.loc.source_line().strip() == line


def test_gradient_argument_errors_are_located_at_the_call():
    with pytest.raises(CompileError) as info:
        kdebug.gradient(issue_kernel)
    assert "kdebug.gradient() takes a @cuda.jit(device=True) function" in str(info.value)
    assert "kdebug.adjoint(kernel)" in info.value.hint
    assert info.value.loc is not None and "kdebug.gradient(issue_kernel)" in info.value.loc.source_line()
    with pytest.raises(CompileError, match="argnum must be an int from 0 to 1"):
        kdebug.gradient(issue_f, argnum=2)
    with pytest.raises(CompileError, match="returns a tuple of partials") as info:
        kdebug.grad(kdebug.gradient(issue_f))
    assert "gradient(issue_f, argnum=0)" in info.value.hint


def test_differentiating_by_an_integer_argument_is_a_located_error(tmp_path):
    path = _write(tmp_path, """
        import numpy as np
        import kdebug
        from kdebug import cuda

        @cuda.jit(device=True)
        def p(x, n):
            return x * n

        @cuda.jit
        def k(out):
            out[0] = kdebug.gradient(p, argnum=1)(2.0, 3)

        k[1, 1](np.zeros(1))
    """)
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert "differentiates by argument 1 (n), which is int64 here" in str(info.value)
    assert info.value.loc.source_line().strip() == "out[0] = kdebug.gradient(p, argnum=1)(2.0, 3)"


def test_local_arrays_and_branches_in_a_gradient(tmp_path):
    path = _write(tmp_path, """
        import math
        import numpy as np
        import kdebug
        from kdebug import cuda

        @cuda.jit(device=True)
        def h(x, y):
            acc = cuda.local.array(3, np.float64)
            for k in range(3):
                acc[k] = x ** (k + 1)
            s = acc[0] + acc[1] * y + acc[2]
            if s > 1.0:
                s = s * s
            return s

        @cuda.jit
        def k(out, xs):
            i = cuda.grid(1)
            if i < xs.size:
                a, b = kdebug.gradient(h)(xs[i], 0.5)
                out[0, i] = a
                out[1, i] = b
                out[2, i] = kdebug.grad(h)(xs[i], 0.5)
                out[3, i] = kdebug.grad(h, argnum=1)(xs[i], 0.5)

        xs = np.linspace(-2, 2, 9)
        out = np.zeros((4, 9))
        k[1, 9](out, xs)
    """)
    set_session(Session(backend="cpu", passes_on_demand=True))
    out = runpy.run_path(str(path))["out"]
    xs = np.linspace(-2, 2, 9)
    s = xs + xs * xs * 0.5 + xs ** 3
    ds = 1 + xs + 3 * xs * xs
    np.testing.assert_allclose(out[0], np.where(s > 1.0, 2 * s * ds, ds), rtol=1e-13)
    np.testing.assert_allclose(out[0], out[2], rtol=1e-13)
    np.testing.assert_allclose(out[1], out[3], rtol=1e-13)


@cuda.jit(device=True)
def overwritten(x, y):
    v = math.sin(x + 0.5)
    v = math.sin(math.pow(math.cos(v) + 2.0, 0.8))  # v read, then overwritten, in the same block
    return v + y


@cuda.jit
def overwritten_kernel(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[0, i] = kdebug.gradient(overwritten, argnum=0)(xs[i], 2.0)
        out[1, i] = kdebug.grad(overwritten)(xs[i], 2.0)


def test_a_variable_overwritten_where_the_function_starts_keeps_each_value():
    # found by the property test: a read of v before its second store must not be read again later
    set_session(Session(backend="cpu", passes_on_demand=True))
    xs = np.array([-1.5, -0.5, 0.25, 1.0])
    out = np.zeros((2, 4))
    overwritten_kernel[1, 4](out, xs)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-13, atol=1e-15)
    fd = [(math.sin(math.pow(math.cos(math.sin(x + 0.5 + 1e-6)) + 2.0, 0.8))
           - math.sin(math.pow(math.cos(math.sin(x + 0.5 - 1e-6)) + 2.0, 0.8))) / 2e-6 for x in xs]
    np.testing.assert_allclose(out[0], fd, rtol=1e-6, atol=1e-9)
