"""Target hooks see a small LoweringContext, never the lowerer, and keep what they produce in the
target's own record of the module (``Target.module_state``), which the job carries to finish_ir."""
from __future__ import annotations

import ast
import dataclasses
import os

import numpy as np
import pytest
from llvmlite import ir

from kdebug.settings import CompileOptions
from kdebug import cuda
from kdebug import events as E
from kdebug.driver.driver import Driver
from kdebug.frontend.hook_context import LoweringContext
from kdebug.frontend.lower import FunctionLowerer
from kdebug.lang import types as T
from kdebug.runtime.artifacts import CpuArtifact
from kdebug.targets.base import Target
from kdebug.targets.cpu import CpuTarget

from conftest import ROOT
I64_1D = T.Array(T.int64, 1)


class Accesses:
    """The stub target's record of a module: every access its hooks saw."""

    def __init__(self) -> None:
        self.bounds: list[str] = []
        self.instrumented: list[str] = []
        self.epilogues: list[str] = []


class RecordingTarget(Target):
    """A minimal target: special registers are 0; its hooks record what they were given."""
    name = "stub"

    def __init__(self) -> None:
        self.contexts: list = []
        self.finished_states: list = []
        self.states: list[Accesses] = []

    def module_state(self):
        self.states.append(Accesses())
        return self.states[-1]

    def special_register(self, lc, reg, dim):
        self.contexts.append(lc)
        return ir.Constant(ir.IntType(32), 0)

    def check_bounds(self, lc, node, arr_t, indices, extents, access):
        self.contexts.append(lc)
        lc.state.bounds.append(access)

    def instrument_access(self, lc, node, arr_t, ptr, indices, access):
        lc.state.instrumented.append(access)

    def function_epilogue(self, lc):
        lc.state.epilogues.append(lc.fn.name)

    def finish_ir(self, mod, job, compilation):
        self.finished_states.append(job.target_state)
        return []

    def emit(self, mod, jobs, compilation):
        return CpuArtifact(object=b"", asm=str(mod))

    def load(self, artifact, jobs):
        return {}


@cuda.jit
def four_accesses(out, x):
    i = cuda.grid(1)
    out[i] += 1
    out[0] = x[1]
    cuda.atomic.add(out, 0, 1)


def test_hooks_get_a_frozen_lowering_context_and_fill_the_jobs_module_state():
    target = RecordingTarget()
    driver = Driver(E.EventBus(), lambda _options: target, CompileOptions(target=target.name))
    driver.compile_kernel(four_accesses, (I64_1D, I64_1D))
    assert target.contexts and all(type(lc) is LoweringContext for lc in target.contexts)
    lc = target.contexts[0]
    assert not isinstance(lc, FunctionLowerer) and not hasattr(lc, "target")
    with pytest.raises(dataclasses.FrozenInstanceError):
        lc.module = None
    assert lc.tf.name == "four_accesses" and lc.function_tf is lc.tf and lc.fn.name.startswith("four_accesses")
    # one module, one record; the job hands the very same record to finish_ir
    [state] = target.states
    assert target.finished_states == [state]
    # out[i] += 1 reads and writes once (update); out[0] = x[1] reads x, writes out; then the atomic
    assert state.bounds == ["update", "read", "write", "atomic"]
    assert state.instrumented == state.bounds
    assert state.epilogues == [lc.fn.name]


@cuda.jit
def two_shared_arrays(out):
    a = cuda.shared.array(10, dtype=np.float32)  # 40 bytes at offset 0
    c = cuda.shared.array(3, dtype=np.int64)  # 24 bytes at the next 16-byte boundary, 48
    t = cuda.threadIdx.x
    a[t] = t
    c[0] = 5
    cuda.syncthreads()
    out[t] = a[9 - t] + c[0]


@pytest.mark.parametrize("regions", [True, False])
def test_cpu_target_records_shared_layout_and_the_kernels_form_in_the_module_state(regions):
    driver = Driver(E.EventBus(), CpuTarget, CompileOptions(regions=regions))
    compiled = driver.compile_kernel(two_shared_arrays, (T.Array(T.float32, 1),))
    state = compiled.record.target_state
    assert state.shared_bytes == 48 + 24
    entry = compiled.record.entry
    if regions:  # the barrier cut it into regions
        assert list(state.regions) == [entry] and list(state.coroutines) == []
        assert state.forms[entry] == ("regions", None) == compiled.record.form
    else:  # the barrier made it a coroutine
        assert list(state.coroutines) == [entry] and list(state.regions) == []
        assert state.forms[entry][0] == "coroutines"
    assert state.grid_sync == set()


def test_cpu_target_shared_layout_runs():
    out = np.zeros(10, dtype=np.float32)
    two_shared_arrays[1, 10](out)
    assert out.tolist() == [float(9 - t + 5) for t in range(10)]


def _assigned_attributes(tree):
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute):
                yield t


def _root_and_chain(attr: ast.Attribute):
    chain = []
    while isinstance(attr, ast.Attribute):
        chain.append(attr.attr)
        attr = attr.value
    return (attr.id if isinstance(attr, ast.Name) else None), chain[::-1]


def bad_writes(tree) -> list[str]:
    """``line: what`` for each attribute written onto a hook's context (other than lc.state.x) and
    each ``kdebug_`` attribute written onto anything."""
    bad = []
    for t in _assigned_attributes(tree):
        root, chain = _root_and_chain(t)
        onto_context = root == "lc" and not (len(chain) == 2 and chain[0] == "state")
        if onto_context or chain[-1].startswith(("kdebug_", "_kdebug")):
            bad.append(f"{t.lineno}: {root}.{'.'.join(chain)}")
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "setattr" and n.args \
                and getattr(n.args[0], "id", None) == "lc":
            bad.append(f"{n.lineno}: setattr(lc, ...)")
    return bad


def test_targets_write_nothing_onto_lowering_objects():
    # a hook may change its own record (lc.state.x = ...), nothing else it is shown
    bad = []
    for folder, _, files in os.walk(os.path.join(ROOT, "kdebug", "targets")):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                bad += [f"{os.path.relpath(path, ROOT)}:{b}" for b in bad_writes(ast.parse(f.read()))]
    assert bad == []


def test_the_write_check_finds_attributes_written_onto_lowering_objects():
    tree = ast.parse("def hook(self, lc, node):\n    lc.module.kdebug_shared_bytes = 4\n    lc.state.n = 1\n"
                     "    lc.coro = 2\n    node.kdebug_access = 'atomic'\n    setattr(lc, 'x', 1)\n")
    assert bad_writes(tree) == ["2: lc.module.kdebug_shared_bytes", "4: lc.coro", "5: node.kdebug_access",
                                "6: setattr(lc, ...)"]


def test_the_frontend_hands_hooks_the_context_not_the_lowerer():
    import inspect
    import re

    hooks = {n for klass in Target.__mro__[:-1] for n, f in vars(klass).items()  # the four groups' hooks
             if callable(f) and not isinstance(f, type) and "lc" in inspect.signature(f).parameters}
    assert {"special_register", "check_bounds", "barrier", "device_launch"} <= hooks
    frontend = os.path.join(ROOT, "kdebug", "frontend")
    bad = []
    for name in sorted(os.listdir(frontend)):
        if name.endswith(".py"):
            with open(os.path.join(frontend, name), encoding="utf-8") as f:
                for k, line in enumerate(f, 1):
                    for hook in re.findall(r"\.target\.(\w+)\((?:self|lw)\s*[,)]", line):
                        if hook in hooks:
                            bad.append(f"kdebug/frontend/{name}:{k}: {hook}")
    assert bad == []
