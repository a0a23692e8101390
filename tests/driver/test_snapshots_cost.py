"""Snapshots cost nothing when nobody looks: a session without snapshots prints no module to text
(beyond handing each llvmlite.ir module it builds to LLVM once) and parses nothing more; with
snapshots every phase is still recorded. Calls are counted, nothing is timed."""
from __future__ import annotations

import collections

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from kdebug import cuda
from kdebug.frontend import typeinfer
from kdebug.session.live import Session, default_session, set_session
from kdebug.targets.cpu import launcher


@cuda.jit
def _saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def _block_sum(x, out):
    s = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t == 0:
        acc = np.float32(0)
        for k in range(32):
            acc += s[k]
        out[0] = acc


class Counts:
    """Counts LLVM module printing (binding and llvmlite.ir), parsing, assembly and typed listings."""

    def __init__(self, monkeypatch) -> None:
        self.calls: collections.Counter = collections.Counter()
        self.parsed: list[str] = []
        self._wrap(monkeypatch, llvm.ModuleRef, "__str__", "module printed by LLVM")
        # a function printed whole; single instructions are printed by the region form's bound analysis
        # (region_bounds.py: an icmp's predicate, a switch's cases, which llvmlite has no accessor for)
        self._wrap(monkeypatch, llvm.ValueRef, "__str__",
                   lambda v: "function printed by LLVM" if v.is_function else "an instruction printed by LLVM")
        self._wrap(monkeypatch, llvm.TargetMachine, "emit_assembly", "assembly emitted")
        self._wrap(monkeypatch, ir.Module, "__str__", "llvmlite.ir module printed")
        self._wrap(monkeypatch, typeinfer.TypedFunction, "listing", "typed listing")
        parse = llvm.parse_assembly

        def counting_parse(text, *a, **kw):
            if "define " in text:  # a module with code (not a one-line type probe)
                self.parsed.append(text)
            return parse(text, *a, **kw)

        for mod in (llvm, __import__("llvmlite.binding.module", fromlist=["x"])):
            monkeypatch.setattr(mod, "parse_assembly", counting_parse)

    def _wrap(self, monkeypatch, cls, name, what) -> None:
        original = getattr(cls, name)

        def counting(obj, *a, **kw):
            self.calls[what(obj) if callable(what) else what] += 1
            return original(obj, *a, **kw)

        monkeypatch.setattr(cls, name, counting)


def _compile(session, kernel, argtypes):
    set_session(session)
    try:
        return session.compile_kernel(kernel, argtypes)
    finally:
        set_session(None)


def _argtypes(*arrays):
    from kdebug.lang import types as T
    return tuple(T.typeof(a) for a in arrays)


CASES = {
    "saxpy": (_saxpy, lambda: _argtypes(np.float32(1), *(np.zeros(4, np.float32),) * 3)),
    "barriers": (_block_sum, lambda: _argtypes(np.zeros(32, np.float32), np.zeros(1, np.float32))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_phase_prints_or_parses_a_module_when_snapshots_are_off(monkeypatch, case):
    kernel, argtypes = CASES[case]
    session = Session(backend="cpu", snapshots=False)
    monkeypatch.setattr(launcher, "_cache", collections.OrderedDict())  # launchers are built once per process
    counts = Counts(monkeypatch)
    compiled = _compile(session, kernel, argtypes())
    assert compiled.entry_address
    assert compiled.artifact.tiers is None or compiled.artifact.tiers.wait(60)
    # the kernel's module and its grid launcher, each printed once by llvmlite.ir and parsed once; and a
    # kernel in the region form, its bound function (region_bounds.py: made from its optimised code, by
    # tier 0 and again by tier 1 from its own)
    bound = 2 if case == "barriers" else 0
    # and a tiered straight-line kernel with memcheck's stopping check, a second launcher: tier 0's has no
    # shuffled path, tier 1's (built on its thread) is the untiered compile's (target.py's finish_ir); so too a
    # tiered region-form kernel whose checks read the thread index (the reduction's s[t]): tier 0's launcher has
    # no copy for small blocks (block_limits.py)
    tier1_launcher = 1 if case in ("saxpy", "barriers") and compiled.artifact.tiers is not None else 0
    assert counts.calls["llvmlite.ir module printed"] == 2 + bound + tier1_launcher
    assert len(counts.parsed) == 2 + bound + tier1_launcher
    # compiled again (a new session): the launcher of that signature is cloned, not built again
    again = _compile(Session(backend="cpu", snapshots=False), kernel, argtypes())
    assert again.entry_address
    assert again.artifact.tiers is None or again.artifact.tiers.wait(60)
    assert counts.calls["llvmlite.ir module printed"] == 3 + 2 * bound + tier1_launcher
    assert len(counts.parsed) == 3 + 2 * bound + tier1_launcher
    for what in ("module printed by LLVM", "function printed by LLVM", "assembly emitted", "typed listing"):
        assert counts.calls[what] == 0, what
    assert compiled.record.snapshots == {}
    # the IR stays at hand for whoever asks later (numba's inspect_llvm), printed only then
    assert "define" in compiled.record.ir_after_finish()


@pytest.mark.parametrize("case", sorted(CASES))
def test_with_snapshots_every_phase_is_still_recorded(monkeypatch, case):
    kernel, argtypes = CASES[case]
    session = Session(backend="cpu")
    counts = Counts(monkeypatch)
    compiled = _compile(session, kernel, argtypes())
    snaps = compiled.record.snapshots
    for phase in ("parse", "typeinfer", "lower", "expand_deferred", "link_runtime", "optimize", "before_finish",
                  "finish", "after_finish", "validate", "emit"):
        assert snaps.get(phase), phase
    assert "define" in snaps["after_finish"] and compiled.record.ir_after_finish() == snaps["after_finish"]
    assert counts.calls["module printed by LLVM"] > 0 and counts.calls["assembly emitted"] == 1
    assert counts.calls["typed listing"] == 1


def test_a_plain_script_session_records_no_snapshots():
    session = default_session()
    assert session.driver.snapshots is False and session.target.record_host_asm is False
