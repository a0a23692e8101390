"""Derivative jobs (kdebug.grad): the samples under each strategy, the recorded stages, the job keys,
re-entrance, constructs that cannot be differentiated, breakpoints and the PTX target."""
from __future__ import annotations

import runpy
import textwrap

import numpy as np
import pytest

import kdebug
from conftest import run_sample
from kdebug.settings import key_identity
from kdebug import cuda
from kdebug.session.live import Session, set_session
from kdebug.errors import CompileError, KdebugError
from kdebug.session.debuggee import breakpoint_of
from kdebug.session.model import SessionModel


def tree(model):
    return [(j.name, model.jobs[j.parent].name if j.parent else None, j.reason, j.kind) for j, _ in model.walk()]


def cycles(model):
    return [(ev.cycle_names, ev.resolution) for ev in model.reentrant]


def compiled_once(model):
    return all(n == 1 for n in model.compilations.values())


def finish_misses(model):
    return sorted(model.jobs[d.job].name for d in model.diagnostics if d.category == "finish")


def all_finished(model):
    return all({"before_finish", "after_finish"} <= set(j.snapshots) for j in model.jobs.values())


K, G = "kernel", "derivative"
NEWTON = [("newton", None, "host", K), ("grad(f)", "newton", "grad", G)]
TAYLOR = [("taylor", None, "host", K), ("grad(f)", "taylor", "grad", G), ("grad(grad(f))", "taylor", "grad", G),
          ("grad(grad(grad(f)))", "taylor", "grad", G)]
POINTER = [("chain", None, "host", K), ("g", "chain", "pointer", "device"), ("grad(f)", "chain", "grad", G),
           ("grad(g)", "grad(f)", "grad", G)]
POWER = [("powers", None, "host", K), ("grad(power)", "powers", "grad", G), ("power", "grad(power)", "pointer", "device"),
         ("grad(grad(power))", "powers", "grad", G)]


# ---- worklist: every sample works, each key once, finish on every job -----------------------------
@pytest.mark.parametrize("sample,expected,expected_cycles", [
    ("grad_newton", NEWTON, []),
    ("grad_taylor", TAYLOR, []),
    ("grad_pointer", POINTER, []),
    ("grad_recursive_power", POWER, [(["grad(power)", "grad(power)"], "reference"), (["power", "power"], "reference")]),
])
def test_worklist_compiles_every_derivative_once_and_finishes_it(sample, expected, expected_cycles):
    model, error = run_sample(sample, "worklist")
    assert error is None, error
    assert tree(model) == expected
    assert compiled_once(model), model.compilations
    assert cycles(model) == expected_cycles
    assert not finish_misses(model) and all_finished(model)
    assert all(j.state == "done" for j in model.jobs.values())
    assert len(model.launches) == 1 and all(lv.error is None for lv in model.launches.values())


# ---- toplevel: order 1 of a plain function works; through a pointer or at order >= 2 it fails --------
def test_toplevel_order_one_of_a_plain_function_works():
    model, error = run_sample("grad_newton", "toplevel")
    assert error is None and tree(model) == NEWTON and compiled_once(model) and not finish_misses(model)


@pytest.mark.parametrize("sample,job,held,line", [
    ("grad_taylor", "grad(grad(f))", "grad(f)", "t2 = t1 + d2(a) * h * h / 2.0"),
    ("grad_pointer", "grad(f)", "g", "return k * kdebug.deferred(g)(x * x) + math.cos(x)"),
    ("grad_recursive_power", "grad(power)", "power", "return x * kdebug.deferred(power)(x, n - 1)"),
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


# ---- recursive: works without cycles, at a cost; a cycle is stopped -------------------------------
def test_recursive_nested_derivatives_duplicate_codegen_and_miss_finish():
    model, error = run_sample("grad_taylor", "recursive")
    assert error is None, error  # the results are right ...
    dup = {k: n for k, n in model.compilations.items() if n > 1}
    assert any(k.startswith("forward.grad[0](__main__.f(float64)") for k in dup)  # ... grad(f) compiled again
    assert [d for d in model.diagnostics if d.category == "duplicate"]
    assert finish_misses(model) == ["grad(f)", "grad(f)", "grad(f)", "grad(grad(f))", "grad(grad(f))"]


def test_recursive_derivative_through_a_pointer_compiles_the_pointer_job_twice():
    model, error = run_sample("grad_pointer", "recursive")
    assert error is None, error
    assert [n for k, n in model.compilations.items() if ".g(float64)" in k] == [2]
    assert finish_misses(model) == ["g"]


def test_recursive_stops_the_recursive_power_at_the_first_reentry():
    model, error = run_sample("grad_recursive_power", "recursive")
    assert error is not None and "power \u2192 power" in str(error)
    assert cycles(model) == [(["power", "power"], "stopped")]
    assert not model.launches


def test_recursive_newton_matches_worklist():
    model, error = run_sample("grad_newton", "recursive")
    assert error is None and tree(model) == NEWTON and compiled_once(model)


# ---- the job: key, stages, cache ---------------------------------------------------------------------
@cuda.jit(device=True)
def poly(x, y):
    return x * x * y + 3.0 * x


@cuda.jit
def poly_kernel(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = kdebug.grad(poly)(xs[i], 2.0) + kdebug.grad(poly, argnum=1)(xs[i], 2.0)


@cuda.jit
def poly_kernel_again(out, xs):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = kdebug.grad(poly)(xs[i], 2.0)


def test_derivative_jobs_are_keyed_by_transform_argnum_function_types_and_target():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    xs = np.linspace(-1, 1, 16)
    out = np.zeros(16)
    poly_kernel[1, 16](out, xs)
    np.testing.assert_allclose(out, 2 * xs * 2.0 + 3.0 + xs * xs, rtol=1e-14)
    out2 = np.zeros(16)
    poly_kernel_again[1, 16](out2, xs)  # grad(poly) again, from another kernel: the same key, not compiled again
    np.testing.assert_allclose(out2, 2 * xs * 2.0 + 3.0, rtol=1e-14)
    keys = sorted(k for k in model.compilations if k.startswith("forward.grad"))
    assert len(keys) == 2 and all(model.compilations[k] == 1 for k in keys)
    assert keys[0].startswith("forward.grad[0](test_grad.poly(float64, float64)/device/cpu#")
    # then the compile options' digest (kdebug/settings.py), the same for both
    assert key_identity(keys[0]).endswith("/derivative/cpu") and keys[1].startswith("forward.grad[1](")
    assert keys[0].rsplit("@", 1)[1] == keys[1].rsplit("@", 1)[1] == session.options.digest
    (dx,) = [j for j in model.jobs.values() if j.name == "grad(poly)"]
    assert dx.kind == "derivative" and dx.reason == "grad"
    for stage in ("parse", "typeinfer", "primal", "primal_resolved", "derivative", "expand_deferred",
                  "before_finish", "after_finish"):
        assert stage in dx.snapshots, stage
    derivative_ir = model.snapshots[dx.snapshots["derivative"]].text
    assert f"define double @{dx.id and 'grad_poly__j' + str(dx.id)}(" in derivative_ir


def test_stages_show_the_primal_marker_then_its_resolution():
    model, error = run_sample("grad_pointer", "worklist")
    assert error is None
    (d,) = [j for j in model.jobs.values() if j.name == "grad(f)"]
    text = {s: model.snapshots[d.snapshots[s]].text for s in ("primal", "primal_resolved", "derivative")}
    g_id = next(j.id for j in model.jobs.values() if j.name == "g")
    assert f"call i8* @\"kdebug.deferred.{g_id}\"()" in text["primal"]  # the primal as compiled: the marker in place
    assert "kdebug.deferred." not in text["primal_resolved"] and f"@g_j{g_id}" in text["primal_resolved"]
    dg_id = next(j.id for j in model.jobs.values() if j.name == "grad(g)")
    assert f"call ptr @kdebug.deferred.{dg_id}()" in text["derivative"]  # the callee's derivative: a new request


# ---- re-entrance: a request that needs a body of a job on its own path -------------------------------
def _write(tmp_path, body):
    path = tmp_path / "reentrant_grad.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_derivative_needing_the_body_of_a_job_on_its_path_is_stopped(tmp_path):
    path = _write(tmp_path, """
        import numpy as np
        import kdebug
        from kdebug import cuda

        @cuda.jit("float64(float64)", device=True)
        def h(x):
            return kdebug.grad(h)(x) + x

        @cuda.jit
        def k(out):
            out[0] = kdebug.grad(h)(1.0)

        k[1, 1](np.zeros(1))
    """)
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    with pytest.raises(KdebugError) as info:
        runpy.run_path(str(path))
    assert "re-entrant codegen loop" in str(info.value)
    assert [r for r in cycles(model) if r[1] == "stopped"] == [(["grad(h)", "grad(grad(h))", "grad(h)"], "stopped")]
    assert (["grad(h)", "grad(h)"], "reference") in cycles(model)  # the address-only request before it
    assert info.value.loc is not None


# ---- what cannot be differentiated ---------------------------------------------------------------------
@pytest.mark.parametrize("body,what,line", [
    ("out[0] = x\n    return x", "a write to the global array out", "out[0] = x"),
    ("cuda.atomic.add(out, 0, x)\n    return x", "an atomic (cuda.atomic.add)", "cuda.atomic.add(out, 0, x)"),
])
def test_constructs_a_derivative_cannot_take_are_located_errors(tmp_path, body, what, line):
    path = _write(tmp_path, f"""
import numpy as np
import kdebug
from kdebug import cuda

@cuda.jit(device=True)
def side(x, out):
    {body}

@cuda.jit
def k(out):
    out[1] = kdebug.grad(side)(2.0, out)

k[1, 1](np.zeros(2))
""")
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert f"{what} cannot be differentiated: job #2 grad(side)" in str(info.value)
    assert info.value.loc.source_line().strip() == line


def test_a_launch_inside_a_differentiated_function_is_a_located_error(tmp_path):
    path = _write(tmp_path, """
import numpy as np
import kdebug
from kdebug import cuda

@cuda.jit
def child(out):
    out[0] = 1.0

@cuda.jit(device=True)
def side(x, out):
    child[1, 1](out)
    return x * x

@cuda.jit
def k(out):
    out[1] = kdebug.grad(side)(2.0, out)

k[1, 1](np.zeros(2))
""")
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert "a device-side launch cannot be differentiated: job #2 grad(side)" in str(info.value)
    assert info.value.loc.source_line().strip() == "child[1, 1](out)"


def test_grad_argument_errors_are_located_at_the_call():
    with pytest.raises(CompileError) as info:
        kdebug.grad(poly_kernel)
    assert "takes a @cuda.jit(device=True) function" in str(info.value)
    assert info.value.loc is not None and "kdebug.grad(poly_kernel)" in info.value.loc.source_line()
    with pytest.raises(CompileError, match="argnum must be an int from 0 to 1"):
        kdebug.grad(poly, argnum=2)


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
            out[0] = kdebug.grad(p, argnum=1)(2.0, 3)

        k[1, 1](np.zeros(1))
    """)
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert "differentiates by argument 1 (n), which is int64 here" in str(info.value)


# ---- faces ------------------------------------------------------------------------------------------------
def test_breakpoints_on_deferred_requests_stop_at_grad_requests():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    events = []
    session.bus.subscribe(events.append)
    poly_kernel[1, 4](np.zeros(4), np.ones(4))
    grads = [e for e in events if e.kind == "job_requested" and e.reason == "grad"]
    assert len(grads) == 2 and all(breakpoint_of(e) == "deferred" for e in grads)
