"""Any two stages compared, without a UI: the stage list and its changed marks, noise, functions."""
from __future__ import annotations

from kdebug.session import stage_diff as SD
from kdebug.session.model import SessionModel
from kdebug.tui.synthetic import cycle_events

BEFORE = """; ModuleID = 'm'
source_filename = "m.py"

; Function Attrs: nounwind
define void @f(ptr %p) #0 {
entry:
  %x = load i32, ptr %p, align 4, !tbaa !1
  store i32 %x, ptr %p, align 4, !dbg !3
  ret void
}

define i32 @g(i32 %a) #1 {
  %b = add i32 %a, 1
  ret i32 %b
}

declare void @h()

attributes #0 = { nounwind }
attributes #1 = { readnone }
!1 = !{!"int", !2}
!3 = !DILocation(line: 3, scope: !4)
"""

# g's attribute group renumbered (a group added before it), metadata renumbered, one real change in f
AFTER = """; ModuleID = 'm2'
source_filename = "m.py"

; Function Attrs: nounwind willreturn
define void @f(ptr %p) #0 {
entry:
  %x = load i32, ptr %p, align 4, !tbaa !7
  store i32 %x, ptr %p, align 8, !dbg !9
  ret void
}

define i32 @g(i32 %a) #2 {
  %b = add i32 %a, 1
  ret i32 %b
}

declare void @h() #1

attributes #0 = { nounwind }
attributes #1 = { cold }
attributes #2 = { readnone }
!7 = !{!"int", !8}
!9 = !DILocation(line: 3, scope: !10)
"""


def test_noise_hidden_leaves_the_real_changes():
    diff = SD.compare(BEFORE, AFTER, ignore_noise=True)
    lines = SD.unified(diff, ("a", "b"), context=0)
    changed = [ln for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == ["-  store i32 %x, ptr %p, align 4", "+  store i32 %x, ptr %p, align 8",
                       "-declare void @h()", "+declare void @h() #1", "+attributes #1 = { cold }"]
    assert not any("!" in ln or "ModuleID" in ln or "Function Attrs" in ln for ln in diff.before + diff.after)


def test_noise_shown_is_every_line_that_differs():
    lines = SD.unified(SD.compare(BEFORE, AFTER, ignore_noise=False), ("a", "b"), context=0)
    text = "\n".join(lines)
    for noisy in ("+define i32 @g(i32 %a) #2 {", "+; ModuleID = 'm2'", "+!9 = !DILocation(line: 3, scope: !10)",
                  "+  %x = load i32, ptr %p, align 4, !tbaa !7", "+; Function Attrs: nounwind willreturn"):
        assert noisy in text, noisy


def test_equal_modules_but_for_noise_are_no_change():
    renumbered = BEFORE.replace("#1", "#5").replace("!3", "!30").replace("'m'", "'other'")
    assert not SD.compare(BEFORE, renumbered, ignore_noise=True).changed
    assert SD.compare(BEFORE, renumbered, ignore_noise=False).changed
    assert SD.unified(SD.compare(BEFORE, renumbered), ("a", "b")) == []


def test_functions_split_and_filtered():
    parts = SD.split_functions(BEFORE.splitlines())
    assert list(parts) == [SD.MODULE_LEVEL, "f", "g"]
    assert parts["f"][0] == "; Function Attrs: nounwind" and parts["f"][-1] == "}"
    assert "declare void @h()" in parts[SD.MODULE_LEVEL] and "attributes #0 = { nounwind }" in parts[SD.MODULE_LEVEL]
    assert SD.function_names(BEFORE, AFTER + 'define void @"k.grid"() {\n  ret void\n}\n') == ["f", "g", "k.grid"]
    only_g = SD.compare(BEFORE, AFTER, function="g")
    assert not only_g.changed and only_g.after[0] == "define i32 @g(i32 %a) #2 {"  # renumbering is no change
    only_f = SD.unified(SD.compare(BEFORE, AFTER, function="f"), ("a", "b"), context=0)
    assert [ln for ln in only_f if ln[:1] == "+" and ln[:3] != "+++"] == ["+  store i32 %x, ptr %p, align 8"]
    module = SD.unified(SD.compare(BEFORE, AFTER, function=SD.MODULE_LEVEL), ("a", "b"), context=0)
    assert "+attributes #1 = { cold }" in module and not any("store" in ln for ln in module)


def test_side_by_side_rows_pair_the_lines():
    rows = SD.side_by_side(SD.compare(BEFORE, AFTER, function="f"))
    assert ("  store i32 %x, ptr %p, align 4", "  store i32 %x, ptr %p, align 8", "replace") in rows
    assert all(tag == "equal" for left, right, tag in rows if left == right)


def test_stage_list_marks_what_changed_nothing():
    model = SessionModel().extend(cycle_events(passes=12))
    stages = SD.job_stages(model, 1)
    labels = [s.label for s in stages]
    assert labels[:3] == ["parse", "lower", "optimize 1/12 Annotation2MetadataPass on a"]
    passes = [s for s in stages if s.is_pass]
    assert len(passes) == 12 and [s.changed for s in passes] == [i % 3 == 0 for i in range(1, 13)]
    # an unchanged pass shows what the last change left: lower's module before the first change
    assert passes[0].snapshot == model.jobs[1].snapshots["lower"]
    assert passes[4].snapshot == passes[2].snapshot and passes[2].snapshot in model.pass_snapshots
    changes = SD.phase_changes(stages)
    assert changes["optimize"] is True and changes["after_finish"] is True
    # without passes the synthetic optimize gives back lower's module: a phase that changed nothing
    plain = SD.phase_changes(SD.job_stages(SessionModel().extend(cycle_events()), 1))
    assert plain == {"parse": True, "lower": True, "optimize": False, "before_finish": True, "after_finish": True}


def test_default_base_is_the_previous_change():
    model = SessionModel().extend(cycle_events(passes=12))
    stages = SD.job_stages(model, 1)
    at = {s.label.split(" on ")[0]: k for k, s in enumerate(stages)}
    assert stages[SD.default_base(model, stages, at["optimize 6/12 SimplifyCFGPass"])].label.startswith("optimize 3/12")
    assert stages[SD.default_base(model, stages, at["optimize 3/12 InferFunctionAttrsPass"])].label == "lower"
    # an unchanged pass: the change before the module it shows
    assert stages[SD.default_base(model, stages, at["optimize 5/12 LowerExpectIntrinsicPass"])].label == "lower"
    assert SD.default_base(model, stages, at["parse"]) is None  # nothing earlier in Python
    after = at["after_finish"]
    assert stages[SD.default_base(model, stages, after)].label == "before_finish"
