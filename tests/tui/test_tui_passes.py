"""The TUI's pass-by-pass IR and stage diff, driven with the Pilot: changed/unchanged marks in the
phase and pass bars, the hide toggle, the Diff tab's A and B, noise and function filter."""
from __future__ import annotations

import numpy as np

from test_tui import run
from test_tui_detail_views_and_help import SIZE, replay, screen_text, view_lines
from kdebug import cuda
from kdebug.lang import types as T
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from kdebug.tui.app import KdebugApp
from kdebug.tui.synthetic import cycle_events


def bar(app, which: str) -> str:
    return " ".join(str(app.query_one(f"#{which}").render()).split())


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause()


def test_phase_bar_marks_and_hides_the_phases_that_changed_nothing():
    async def go():
        app = replay(cycle_events())  # the synthetic optimize gives back lower's module
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "2", "comma")
            assert app.detail.phase == "lower"
            assert "optimize= " in bar(app, "phase-bar") and "lower=" not in bar(app, "phase-bar")
            await press(pilot, "full_stop")
            assert app.detail.phase == "optimize"  # shown, marked
            await press(pilot, "h")
            assert "1 unchanged hidden (h)" not in bar(app, "phase-bar")  # the current phase stays in the bar
            await press(pilot, "comma", "full_stop")
            assert app.detail.phase == "before_finish"  # stepping skips optimize
            assert "optimize" not in bar(app, "phase-bar") and "1 unchanged hidden (h)" in bar(app, "phase-bar")
            await press(pilot, "h")
            assert "optimize=" in bar(app, "phase-bar")
    run(go())


def test_pass_bar_steps_through_passes_marked_changed_or_not():
    async def go():
        app = replay(cycle_events(passes=12))
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "2", "comma")
            assert app.detail.phase == "lower" and not app.query_one("#pass-bar").display
            await press(pilot, "j")
            assert (app.detail.phase, app.detail.pass_index) == ("optimize", 1)
            text = bar(app, "pass-bar")
            assert "4/12 changed" in text and "1 = Annotation2MetadataPass on a" in text
            assert "changed nothing" in text  # pass 1 left lower's module as it was
            assert view_lines(app, "view-ir") == model_text(app, "lower")
            await press(pilot, "j", "j")
            assert app.detail.pass_index == 3 and "3 \u25cf InferFunctionAttrsPass on a" in bar(app, "pass-bar")
            assert view_lines(app, "view-ir") == app.model.pass_text(app.model.jobs[1].passes["optimize"][2].snapshot
                                                                ).splitlines()
            await press(pilot, "h", "j")
            assert app.detail.pass_index == 6  # 4 and 5 changed nothing: hidden, skipped
            assert "5 =" not in bar(app, "pass-bar") and "3 \u25cf" in bar(app, "pass-bar")
            await press(pilot, "k", "k")
            assert (app.detail.phase, app.detail.pass_index) == ("lower", None)  # passes 1 and 2 hidden
    run(go())


def model_text(app, phase: str) -> list[str]:
    return app.model.snapshot_text(1, phase).splitlines()


def test_diff_tab_compares_b_with_its_previous_change_noise_hidden():
    async def go():
        app = replay(cycle_events(passes=18))  # pass 15 renumbers an attribute group and adds metadata
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "8", *["k"] * 4)
            assert app.detail.active_tab == "diff" and app.detail.pass_index == 15
            head = bar(app, "diff-bar")
            assert "A optimize 12/18" in head and "B optimize 15/18" in head and "noise hidden" in head
            changed = [ln for ln in view_lines(app, "view-diff") if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
            assert len(changed) == 2 and "mul nuw" in changed[1]  # the one real change
            await press(pilot, "i")
            noisy = "\n".join(view_lines(app, "view-diff"))
            assert "+attributes #1 = { nounwind }" in noisy and "-attributes #0 = { nounwind }" in noisy and "!dbg !0" in noisy and "noise shown" in bar(app, "diff-bar")
            await press(pilot, "i", "f")
            assert "function: a" in bar(app, "diff-bar")
            assert not any(ln.startswith(("+attributes", "-attributes", " target")) for ln in view_lines(app, "view-diff"))
            await press(pilot, "f")
            assert "function: (module level)" in bar(app, "diff-bar")
            await press(pilot, "f", "d")
            assert "function: all" in bar(app, "diff-bar") and app.detail.diff_mode == "side"
            assert any("\u2502" in ln and "mul nuw" in ln for ln in view_lines(app, "view-diff"))
    run(go())


def test_diff_tab_a_pinned_then_b_moved():
    async def go():
        app = replay(cycle_events(passes=12))
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "2", "comma", "m")  # lower becomes A; m also opens the Diff tab
            assert app.detail.active_tab == "diff" and "A lower (m: follows B)" in bar(app, "diff-bar")
            await press(pilot, "full_stop")  # B: optimize's own snapshot, A stays lower
            head = bar(app, "diff-bar")
            assert "A lower" in head and "B optimize " in head
            assert "--- lower" in view_lines(app, "view-diff")[0]
            await press(pilot, "m")
            # unpinned: optimize's module is pass 12's, so A is the change before that
            assert "A optimize 9/12 " in bar(app, "diff-bar")
    run(go())


@cuda.jit
def _saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def test_a_real_compilation_shows_llvm_passes():
    session = Session(backend="cpu")
    events = []
    session.bus.subscribe(events.append)
    set_session(session)
    try:
        session.compile_kernel(_saxpy, tuple(T.typeof(v) for v in (np.float32(1), *(np.zeros(4, np.float32),) * 3)))
    finally:
        set_session(None)

    async def go():
        app = KdebugApp(model=SessionModel().extend(events), trace_path="saxpy.jsonl")
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "2", "h", "k")  # the last pass of optimize that changed it
            runs = app.model.jobs[1].passes["optimize"]
            last = [p for p in runs if p.changed][-1]
            assert app.detail.pass_index == last.index
            assert f"{last.index} \u25cf {last.name} on " in bar(app, "pass-bar")
            assert f"{sum(p.changed for p in runs)}/{len(runs)} changed" in bar(app, "pass-bar")
            assert "define" in "\n".join(view_lines(app, "view-ir"))
            await press(pilot, "8")
            assert "(no difference)" not in view_lines(app, "view-diff")[0]
            assert "saxpy" in screen_text(app)
    run(go())
