"""A recorded pipeline's passes printed in two steps (kdebug/targets/pass_dumps.py): each pass's own unit,
then the whole module in a fork only after the passes that may have changed it. The passes, their
changed flags and the module after each are those of the whole module printed after every pass; where a
rule misses a change (or the fork fails) the checks find it and every pass is printed whole."""
from __future__ import annotations

import os
import time

import llvmlite.binding as llvm
import numpy as np
import pytest

from kdebug import cuda
from kdebug.lang import types as T
from kdebug.passes import PassLog
from kdebug.session.live import Session, set_session
from kdebug.targets import pass_dumps, pass_record


@cuda.jit(device=True)
def _cube(x):
    r = x
    for _ in range(2):  # a constant trip count: unrolled whole (its loop invalidated)
        r = r * x
    return r


@cuda.jit(device=True)
def _poly(x, n):
    acc = 0.0
    for k in range(n):
        acc = acc * x + _cube(x + k)
    return acc


@cuda.jit
def _calls(x, out, n):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = _poly(x[i], n) + _cube(x[i])


@cuda.jit
def _saxpy(a, x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + out[i]


# the inliner's walk inlines leaf and mid whole and deletes them between passes (in no pass's unit)
INLINED_WHOLE = """
define internal i64 @leaf(i64 %x) {
  %y = mul i64 %x, 3
  %z = add i64 %y, 7
  ret i64 %z
}
define internal i64 @mid(i64 %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc1, %loop ]
  %v = call i64 @leaf(i64 %i)
  %acc1 = add i64 %acc, %v
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret i64 %acc1
}
define i64 @top(i64 %x, i64 %n) {
  %a = call i64 @mid(i64 %x, i64 %n)
  %b = call i64 @leaf(i64 %a)
  ret i64 %b
}
"""

KERNELS = {
    "device functions, loops": (_calls, lambda: (np.zeros(4), np.zeros(4), np.int64(3))),
    "saxpy": (_saxpy, lambda: (np.float32(2), np.zeros(4, np.float32), np.zeros(4, np.float32))),
}


@pytest.fixture(scope="module")
def optimize_inputs():
    """Each kernel's module as optimize gets it (the link_runtime stage's snapshot), as text."""
    texts = {}
    for name, (kernel, args) in KERNELS.items():
        session = Session(backend="cpu", snapshots=True)
        set_session(session)
        try:
            compiled = session.compile_kernel(kernel, tuple(T.typeof(v) for v in args()))
        finally:
            set_session(None)
        texts[name] = compiled.record.snapshots["link_runtime"]
    return texts


def _recorded(text: str, two_steps: bool, monkeypatch) -> tuple[PassLog, str]:
    """The O2 pipeline recorded on a module parsed from ``text``: its log and the module it made."""
    monkeypatch.setattr(pass_dumps, "TWO_STEP_BYTES", 0 if two_steps else 1 << 60)
    pass_record.init_llvm()
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    mod = llvm.parse_assembly(text)
    mod.name = "kdebug.test"
    log = PassLog()
    pass_record.run_recorded(lambda: llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(2)), mod, log)
    return log, str(mod)


def _runs(log: PassLog) -> list[tuple]:
    return [(r.name, r.unit, r.changed, r.text) for r in log.runs]


@pytest.fixture
def every_pass_calls(monkeypatch):
    """How often a recording printed every pass whole after all (a check failed, the fork failed)."""
    calls = []
    original = pass_dumps.Twin.every_pass

    def counted(self):
        calls.append(1)
        return original(self)
    monkeypatch.setattr(pass_dumps.Twin, "every_pass", counted)
    return calls


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_two_steps_record_the_passes_and_modules_of_whole_prints(optimize_inputs, monkeypatch, every_pass_calls, kernel):
    whole, whole_module = _recorded(optimize_inputs[kernel], False, monkeypatch)
    two, two_module = _recorded(optimize_inputs[kernel], True, monkeypatch)
    assert every_pass_calls == []  # the two steps' own texts, not the fallback's
    assert two_module == whole_module
    assert sum(r.changed for r in whole.runs) >= 10 and len(whole.runs) >= 100  # saxpy's module: 12 passes change it
    assert _runs(two) == _runs(whole)
    assert sorted(map(tuple, two.remarks)) == sorted(map(tuple, whole.remarks))


def test_a_change_no_rule_names_is_found_by_the_checks(optimize_inputs, monkeypatch, every_pass_calls):
    """Without the rule for the inliner's walk (it deletes the functions it inlined whole between passes), the
    module after the walk's first pass is not asked for: a module pass's print after it shows the change, and
    the passes are printed whole."""
    whole, _ = _recorded(INLINED_WHOLE, False, monkeypatch)
    two, _ = _recorded(INLINED_WHOLE, True, monkeypatch)
    assert every_pass_calls == [] and _runs(two) == _runs(whole)  # with the rule: asked for, no fallback
    assert [r.name for r in whole.runs if r.changed][-1].startswith(pass_dumps.AFTER_WALK)
    monkeypatch.setattr(pass_dumps, "AFTER_WALK", "no pass has this name")
    two, _ = _recorded(INLINED_WHOLE, True, monkeypatch)
    assert every_pass_calls == [1]
    assert _runs(two) == _runs(whole)


def test_a_fork_that_fails_leaves_every_pass_printed_whole(optimize_inputs, monkeypatch, every_pass_calls):
    whole, _ = _recorded(optimize_inputs["device functions, loops"], False, monkeypatch)
    monkeypatch.setattr(pass_dumps.Twin, "whole_after", lambda self, numbers: None)
    two, _ = _recorded(optimize_inputs["device functions, loops"], True, monkeypatch)
    assert every_pass_calls == [1]
    assert _runs(two) == _runs(whole)


def test_a_print_asked_for_that_never_came_leaves_every_pass_printed_whole(optimize_inputs, monkeypatch,
                                                                           every_pass_calls):
    whole, _ = _recorded(optimize_inputs["device functions, loops"], False, monkeypatch)
    original = pass_dumps.Twin.whole_after

    def one_missing(self, numbers):
        found = original(self, numbers)
        found.pop(max(found))  # the last pass asked for: its module would be the one before it
        return found
    monkeypatch.setattr(pass_dumps.Twin, "whole_after", one_missing)
    two, _ = _recorded(optimize_inputs["device functions, loops"], True, monkeypatch)
    assert every_pass_calls == [1]
    assert _runs(two) == _runs(whole)


def test_a_twin_that_cannot_print_at_all_is_an_error_not_a_wrong_record(optimize_inputs, monkeypatch):
    monkeypatch.setattr(pass_dumps.Twin, "whole_after", lambda self, numbers: None)
    monkeypatch.setattr(pass_dumps.Twin, "every_pass", lambda self: None)
    with pytest.raises(RuntimeError, match="could not be recorded"):
        _recorded(optimize_inputs["saxpy"], True, monkeypatch)


def test_dumps_that_share_a_number_are_read_in_the_order_llvm_wrote_them(tmp_path):
    """A loop pass that deleted its loop is numbered as the pass before it; its file's name sorts first."""
    for name, unit in (("LoopDeletionPass-after", "loop %body in function f"),
                       ("LoopFullUnrollPass-invalidated", "loop %body in function f (invalidated)")):
        (tmp_path / f"7-abc-loop-def-{name}.ll").write_text(f"; *** IR Dump After {name.split('-')[0]} on {unit} ***\n; {name}\n")
        time.sleep(0.01)
    (tmp_path / "6-abc-module-GlobalOptPass-after.ll").write_text("; *** IR Dump After GlobalOptPass on [module] ***\n")
    dumps = pass_dumps.read(str(tmp_path))
    assert [(d.number, d.name) for d in dumps] == [(6, "GlobalOptPass"), (7, "LoopDeletionPass"), (7, "LoopFullUnrollPass")]


def test_each_dump_gets_the_number_llvm_counts_it_by():
    """Files are numbered otherwise where a pass invalidated its unit (as the pass before) and where a pass ran
    passes inside it (as the last of them); -print-pass-numbers' lines give every pass's own."""
    printed = [" Running pass 5 LoopDeletionPass on loop %b in function f",
               " Running pass 6 LoopFullUnrollPass on loop %b in function f",
               " Running pass 7 CoroCleanupPass on [module]",
               " Running pass 8 SimplifyCFGPass on f",
               " Running pass 9 GlobalOptPass on [module]"]
    dumps = [pass_dumps.Dump(5, "LoopDeletionPass", "loop %b in function f", ""),
             pass_dumps.Dump(5, "LoopFullUnrollPass", "loop %b in function f", "; ModuleID = 'm'"),
             pass_dumps.Dump(8, "SimplifyCFGPass", "f", ""),
             pass_dumps.Dump(8, "CoroCleanupPass", "[module]", "; ModuleID = 'm'"),
             pass_dumps.Dump(9, "GlobalOptPass", "[module]", "; ModuleID = 'm'")]
    numbers, inside = pass_dumps.numbers(dumps, printed)
    assert numbers == [5, 6, 8, 7, 9]
    assert inside == {8}


def test_the_functions_of_a_print_carry_their_attributes():
    text = ("; Function Attrs: nounwind\ndefine internal i64 @f(i64 %x) #0 {\nentry:\n  ret i64 %x\n}\n\n"
            "declare void @g()\n\n; Function Attrs: cold\ndefine void @\"h.1 2\"() #1 {\n  ret void\n}\n")
    found = pass_dumps.functions(text)
    assert sorted(found) == ["f", "h.1 2"]
    assert found["f"].startswith("; Function Attrs: nounwind\ndefine") and found["f"].endswith("\n}")
    assert found["h.1 2"].startswith("; Function Attrs: cold")


def test_no_dump_folder_is_left_behind(optimize_inputs, monkeypatch, tmp_path):
    monkeypatch.setattr(pass_dumps, "MEMORY_DIR", str(tmp_path))
    _recorded(optimize_inputs["device functions, loops"], True, monkeypatch)
    assert os.listdir(tmp_path) == []
