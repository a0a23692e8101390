"""Each deferred-codegen strategy against a stub target: the driver alone, nothing runs.

The stub target lowers a device-side launch to a call of ``stub.launch(marker)`` and
records which job entries its finish pass saw; emit and load do nothing.
"""
from __future__ import annotations

import os

import pytest
from llvmlite import ir

from conftest import ROOT
import kdebug
from kdebug.settings import CompileOptions
from kdebug import cuda
from kdebug import events as E
from kdebug.driver import strategies
from kdebug.driver.driver import Driver
from kdebug.errors import CompileError, ReentrantLoopError
from kdebug.lang import types as T
from kdebug.runtime.artifacts import CpuArtifact
from kdebug.targets.base import Target

I64_1D = T.Array(T.int64, 1)
F64_1D = T.Array(T.float64, 1)


class StubTarget(Target):
    name = "stub"

    def __init__(self) -> None:
        self.finished: list[int] = []

    def device_launch(self, lw, node, marker, grid, block, args, argtypes) -> None:
        fn = lw.module.globals.get("stub.launch")
        if fn is None:
            fn = ir.Function(lw.module, ir.FunctionType(ir.VoidType(), [marker.type]), name="stub.launch")
        lw.builder.call(fn, [marker])

    def finish_ir(self, mod, job, compilation) -> list[str]:
        self.finished.append(job.id)
        return []

    def emit(self, mod, jobs, compilation):
        return CpuArtifact(object=b"", asm=str(mod))

    def load(self, artifact, jobs):
        return {}


@cuda.jit
def leaf(out):
    out[0] += 1


@cuda.jit
def left(out):
    leaf[1, 1](out)


@cuda.jit
def right(out):
    leaf[1, 1](out)


@cuda.jit
def diamond(out):
    left[1, 1](out)
    right[1, 1](out)


@cuda.jit
def chain_a(out, n):
    if n < 3:
        chain_b[1, 1](out, n + 1)


@cuda.jit
def chain_b(out, n):
    chain_c[1, 1](out, n)


@cuda.jit
def chain_c(out, n):
    chain_a[1, 1](out, n)


@cuda.jit
def nest_top(out):
    nest_mid[1, 1](out)


@cuda.jit
def nest_mid(out):
    leaf[1, 1](out)


def compile_with(strategy: str, kernel, argtypes):
    target = StubTarget()
    bus = E.EventBus()
    events: list = []
    bus.subscribe(events.append)
    driver = Driver(bus, lambda _options: target, CompileOptions(target=target.name, strategy=strategy))
    error = None
    try:
        driver.compile_kernel(kernel, argtypes)
    except (CompileError, ReentrantLoopError) as exc:
        error = exc
    return driver, target, events, error


def names(driver, ids):
    return [driver.records[i].name for i in ids]


def of_kind(events, kind):
    return [e for e in events if e.kind == kind]


def test_registry_holds_the_three_strategies_by_name():
    assert strategies.names() == ("worklist", "toplevel", "recursive", "gpucompiler2")
    for name in strategies.names():
        s = strategies.get(name)
        assert s.name == name and str(s) == name and s.summary and s.description
    assert strategies.get(strategies.REGISTRY["toplevel"]) is strategies.REGISTRY["toplevel"]
    with pytest.raises(ValueError, match="worklist"):
        strategies.get("eager")


@pytest.mark.parametrize("strategy", ["worklist", "toplevel"])
def test_shared_table_compiles_a_diamond_once_and_finishes_every_job(strategy):
    driver, target, events, error = compile_with(strategy, diamond, (I64_1D,))
    assert error is None
    started = [driver.records[e.job].name for e in of_kind(events, "job_started")]
    assert sorted(started) == ["diamond", "leaf", "left", "right"]
    assert sorted(names(driver, target.finished)) == ["diamond", "leaf", "left", "right"]
    assert not of_kind(events, "reentrant")


def test_worklist_nested_job_resolves_its_own_marker():
    driver, _, events, error = compile_with("worklist", nest_top, (I64_1D,))
    assert error is None
    resolved = [(driver.records[e.job].name, driver.records[e.target_job].name, e.round)
                for e in of_kind(events, "deferred_resolved")]
    assert resolved == [("nest_top", "nest_mid", 0), ("nest_mid", "leaf", 0)]


def test_toplevel_expands_nested_markers_in_later_rounds():
    driver, _, events, error = compile_with("toplevel", nest_top, (I64_1D,))
    assert error is None
    resolved = [(driver.records[e.job].name, driver.records[e.target_job].name, e.round)
                for e in of_kind(events, "deferred_resolved")]
    assert resolved == [("nest_top", "nest_mid", 1), ("nest_top", "leaf", 2)]


@pytest.mark.parametrize("strategy", ["worklist", "toplevel"])
def test_shared_table_resolves_a_cycle_to_a_reference(strategy):
    driver, target, events, error = compile_with(strategy, chain_a, (I64_1D, T.int64))
    assert error is None
    (ev,) = of_kind(events, "reentrant")
    assert ev.cycle_names == ["chain_a", "chain_b", "chain_c", "chain_a"] and ev.resolution == "reference"
    assert len(of_kind(events, "job_started")) == 3


def test_recursive_stops_a_cycle_at_the_first_reentry():
    driver, _, events, error = compile_with("recursive", chain_a, (I64_1D, T.int64))
    assert isinstance(error, ReentrantLoopError)
    assert "chain_a \u2192 chain_b \u2192 chain_c \u2192 chain_a" in str(error)
    (ev,) = of_kind(events, "reentrant")
    assert ev.resolution == "stopped"


def test_recursive_duplicates_shared_jobs_and_misses_finish_on_grandchildren():
    driver, target, events, error = compile_with("recursive", diamond, (I64_1D,))
    assert isinstance(error, CompileError) and "missed the finish passes" in str(error)
    started = [driver.records[e.job].name for e in of_kind(events, "job_started")]
    assert started.count("leaf") == 2
    dup = [d for d in of_kind(events, "diagnostic") if d.category == "duplicate"]
    assert len(dup) == 1
    assert sorted(names(driver, target.finished)) == ["diamond", "left", "right"]  # the leaves never finished


# ---- derivative jobs: how each strategy hands a derivative its primal -------------------------------
@cuda.jit(device=True)
def cube(x):
    return x * x * x


@cuda.jit(device=True)
def through_pointer(x):
    return kdebug.deferred(cube)(x) + x


@cuda.jit
def second_order(out):
    out[0] = kdebug.grad(kdebug.grad(cube))(2.0)


@cuda.jit
def via_pointer(out):
    out[0] = kdebug.grad(through_pointer)(2.0)


def stage_text(driver, name, stage):
    (rec,) = [r for r in driver.records.values() if r.name == name]
    return rec.snapshots[stage]


@pytest.mark.parametrize("kernel", [second_order, via_pointer])
def test_worklist_gives_a_derivative_its_primal_resolved(kernel):
    driver, target, events, error = compile_with("worklist", kernel, (F64_1D,))
    assert error is None, error
    names = sorted(r.name for r in driver.records.values())
    top = "grad(grad(cube))" if kernel is second_order else "grad(through_pointer)"
    assert "kdebug.deferred." not in stage_text(driver, top, "primal_resolved")
    assert "kdebug.deferred." in stage_text(driver, top, "primal")
    assert sorted(driver.records[i].name for i in target.finished) == names  # finish on every job
    assert all(n == 1 for n in driver.compile_counts.values())


@pytest.mark.parametrize("kernel,held", [(second_order, "grad(cube)"), (via_pointer, "cube")])
def test_toplevel_leaves_a_derivatives_primal_markers_in_place(kernel, held):
    driver, target, events, error = compile_with("toplevel", kernel, (F64_1D,))
    assert isinstance(error, CompileError)
    assert "the primal still holds the deferred-codegen marker for job #" in str(error) and held in str(error)
    assert strategies.get("toplevel").unresolved_markers in str(error)


def test_recursive_compiles_a_derivatives_primal_job_again_with_a_fresh_table():
    driver, target, events, error = compile_with("recursive", second_order, (F64_1D,))
    assert error is None, error
    assert [r.name for r in driver.records.values()] == ["second_order", "grad(grad(cube))", "grad(cube)"]
    assert "kdebug.deferred." not in stage_text(driver, "grad(grad(cube))", "primal_resolved")
    assert sorted(driver.records[i].name for i in target.finished) == ["grad(grad(cube))", "second_order"]


def test_the_architecture_page_and_the_command_line_list_every_registered_strategy():
    from kdebug.cli import build_parser
    with open(os.path.join(ROOT, "docs", "internals", "architecture.md"), encoding="utf-8") as f:
        readme = f.read()
    for name in strategies.names():
        assert f"| `{name}`" in readme, name
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    (option,) = [a for a in run._actions if "--strategy" in a.option_strings]
    assert tuple(option.choices) == strategies.names()


def test_a_strategy_sees_the_driver_only_through_its_compilation_context():
    """Every attribute a strategy reads of ``cx`` is one of CompilationContext's (kdebug/driver/context.py);
    no strategy names the driver. The context is the strategies' whole interface: a dozen members, not the
    driver's ~40."""
    import ast
    import inspect

    from kdebug.driver import strategies
    from kdebug.driver.context import CompilationContext
    from kdebug.driver.driver import Driver
    tree = ast.parse(inspect.getsource(strategies))
    used = {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "cx"}
    offered = {name for name in vars(CompilationContext) if not name.startswith("_")}
    assert used and used <= offered, f"strategies reach past their context: {sorted(used - offered)}"
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "driver"]
    driver_members = {name for name in vars(Driver) if not name.startswith("_")}
    assert len(offered) <= 14 < len(driver_members)
