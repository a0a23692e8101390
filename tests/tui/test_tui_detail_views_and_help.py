"""What the TUI's panes show, each check a defect of the TUI's second pass (failed before its fix): coloured
diff, diagnostics and events lines, a cycle and its resolution never cut, launch times with their units,
whole explanations, a side-by-side diff under a zoom, the ptxas report as prose, the screenshot's place,
the footer at small sizes, the help screen and the palette, the finish diff's noise, a deferred job's PTX dump.

Synthetic or recorded traces, replayed with the Pilot. Waits are bounded.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import SAMPLES, run_kdebug
from test_tui import run, tree_labels, view_lines, wait_for
from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.tui.app import KdebugApp
from kdebug.tui.synthetic import cycle_events
from kdebug.tui.textview import TextView


SIZE = (160, 48)
SMALL = (80, 24)


def screen_text(app: KdebugApp) -> str:
    """What the terminal shows, as text."""
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


def replay(events, **kw) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(events), trace_path="trace.jsonl", **kw)


def widget_text(widget) -> str:
    """A widget's rendered lines, joined into one line of words."""
    lines = ["".join(seg.text for seg in widget.render_line(y)) for y in range(widget.size.height)]
    return " ".join(" ".join(lines).split())


def line_styles(view: TextView, y: int) -> list:
    """The styles of the segments of rendered line ``y`` (its colours), as the screen gets them."""
    return [seg.style for seg in view.render_line(y) if seg.text.strip()]


# 2 ---------------------------------------------------------------------------------------------
def test_2_diff_diagnostics_and_events_lines_are_coloured():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause()
            view = app.query_one("#view-finish", TextView)
            view.scroll_to(0, 0, animate=False)  # the diff opens at its first hunk: rows from the top again
            await pilot.pause()
            lines = view_lines(app, "view-finish")
            minus = next(i for i, ln in enumerate(lines) if ln.startswith("-define"))
            plus = next(i for i, ln in enumerate(lines) if ln.startswith("+define"))
            assert {s.color.name for s in line_styles(view, minus)} == {"red"}
            assert {s.color.name for s in line_styles(view, plus)} == {"green"}
            app.query_one("#bottom").active = "tab-diagnostics"
            await pilot.pause()
            diagnostics = app.query_one("#diagnostics", TextView)
            assert {s.color.name for s in line_styles(diagnostics, 0)} == {"yellow"}  # a warning
            await pilot.press("6")
            await pilot.pause()
            events = app.query_one("#view-events", TextView)
            kinds = view_lines(app, "view-events")
            done = next(i for i, ln in enumerate(kinds) if "job_finished" in ln)
            assert {s.color.name for s in line_styles(events, done)} == {"green"}
    run(go())


# 3 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [SIZE, SMALL])
def test_3_the_cycle_and_its_resolution_are_never_cut(size):
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=size) as pilot:
            await pilot.press("down", "down", "down")
            await pilot.pause()
            assert app.detail.backref == 0
            banner = app.query_one("#banner")
            text = widget_text(banner)
            assert "re-entrant request, reference: cycle a \u2192 b \u2192 c \u2192 a" in " ".join(text.split())
            # the ↻ row puts the resolution before the path: a narrow pane cuts the path, not it
            assert tree_labels(app)[3].strip().startswith("\u21bb #1  reference ")
    run(go())


# 5 ---------------------------------------------------------------------------------------------
def test_5_launch_times_keep_their_units_and_leave_out_time_held():
    events = cycle_events()
    end = events.pop()
    events += [E.LaunchStarted(launch=3, job=1, name="a", grid=[1, 1, 1], block=[1, 1, 1], t=10.0),
               E.Paused(breakpoint="launch", launch=4, t=10.001), E.Resumed(t=25.849),
               E.LaunchFinished(launch=3, name="a", duration=15.8496, t=25.8496),
               E.LaunchStarted(launch=5, job=1, name="a", grid=[1, 1, 1], block=[1, 1, 1], t=26.0),
               E.LaunchFinished(launch=5, name="a", duration=0.01998, t=26.02), end]

    async def go():
        app = replay(events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.query_one("#launches")
            times = [str(table.get_cell(str(i), "time")) for i in (1, 3, 5)]
            assert times == ["1.10 ms", "1.60 ms (+15.85 s held)", "19.98 ms"]
            table.move_cursor(row=3)  # the last rows in view
            await pilot.pause()
            screen = screen_text(app)
            assert "1.60 ms (+15.85 s held)" in screen and "19.98 ms" in screen  # never cut
    run(go())


# 10 --------------------------------------------------------------------------------------------
def test_10_explanations_are_whole_collapsible_and_hidden_at_80x24():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=(100, 30 + 4)) as pilot:
            await pilot.press("2")
            await pilot.pause()
            assert app.detail.phase == "optimize"
            app.detail.set_phase("lower")
            await pilot.pause()
            help_box = app.query_one("#phase-help")
            assert help_box.display
            assert "carrying the requested job's id." in widget_text(help_box)  # the last words: nothing cut
            await pilot.press("e")
            await pilot.pause()
            assert not help_box.display and "carrying the requested" not in screen_text(app)
        app = replay(cycle_events())
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press("down", "3")
            await pilot.pause()
            finish_help = app.query_one("#finish-help")
            assert not finish_help.display  # 80x24: the diff gets the lines
            assert app.query_one("#view-finish").size.height >= 8
            await pilot.press("e")
            await pilot.pause()
            assert finish_help.display
    run(go())


# 11 --------------------------------------------------------------------------------------------
def test_11_side_by_side_diff_follows_a_zoom():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SMALL) as pilot:  # narrow: the columns are cut to the view's width
            await pilot.press("down", "3", "d")
            await pilot.pause()
            view = app.query_one("#view-finish", TextView)
            narrow = view.document.column
            view.focus()
            await pilot.press("z")  # zoom (maximize) the detail pane
            await wait_for(pilot, lambda: view.document.column > narrow, "the zoomed diff", limit=10)
            assert app.screen.maximized is not None
            assert view.document.column == (view.size.width - 3) // 2
            await pilot.press("z")
            await wait_for(pilot, lambda: view.document.column == narrow, "the diff back in its pane", limit=10)
            assert app.screen.maximized is None
    run(go())


# 12 --------------------------------------------------------------------------------------------
def test_12_the_screenshot_goes_to_the_working_directory_and_says_where(tmp_path):
    async def go():
        app = replay(cycle_events(), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.deliver_screenshot()  # what the palette's Screenshot calls
            await pilot.pause()
            saved = [p for p in os.listdir(tmp_path) if p.endswith(".svg")]
            assert len(saved) == 1
            assert any(str(tmp_path / saved[0]) in str(n.message) for n in app._notifications)
            app.deliver_screenshot(path=str(tmp_path / "missing" / "folder"))
            await pilot.pause()
            assert any("screenshot not saved" in str(n.message) for n in app._notifications)
    run(go())


# 13 --------------------------------------------------------------------------------------------
def test_13_the_ptxas_report_is_prose_not_ptx():
    events = cycle_events()
    end = events.pop()
    job = {"job": 1, "name": "a", "parent": None, "key": "synthetic.a(float32[::1], int64)/kernel/cpu"}
    events += [E.Snapshot(**job, id=900, phase="ptx", language="ptx", text=".version 8.5\n.target sm_90\n"),
               E.Snapshot(**job, id=901, phase="ptxas", language="text",
                          text="Used 12 registers, used 0 barriers, 16 bytes stack frame"), end]

    async def go():
        app = replay(events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("4")
            await pilot.pause()
            view = app.query_one("#view-ptx", TextView)
            assert view_lines(app, "view-ptx")[0] == "// ptxas: Used 12 registers, used 0 barriers, 16 bytes stack frame"
            assert len(set(line_styles(view, 0))) == 1  # one style: not split into tokens (st|ack, reg|isters)
            assert len(set(line_styles(view, 2))) > 1  # the PTX itself is highlighted
    run(go())


# 16 --------------------------------------------------------------------------------------------
def test_16_small_terminals_keep_the_footers_first_keys_and_the_tree():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            footer = screen_text(app).splitlines()[-1]
            for key in ("? F1", "Help", " q ", "Quit", "^p", "Palette"):
                assert key in footer, footer
        app = replay(cycle_events())
        async with app.run_test(size=(40, 12)) as pilot:
            await pilot.pause()
            assert app.tree.size.height >= 3  # rows of jobs, not just the border
            assert "a #1" in screen_text(app)
    run(go())


# 17 --------------------------------------------------------------------------------------------
def test_17_help_screen_escape_and_palette_names():
    from kdebug.tui.help import HelpScreen
    from kdebug.tui.key_help import KEYS

    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SIZE) as pilot:
            for key in ("question_mark", "f1"):
                await pilot.press(key)
                await pilot.pause()
                assert isinstance(app.screen, HelpScreen)
                text = screen_text(app)
                for k in KEYS:
                    if not k.live:
                        assert k.what[:30] in " ".join(text.split()), k.what
                await pilot.press("escape")
                await pilot.pause()
                assert not isinstance(app.screen, HelpScreen)
            app.action_show_help_panel()  # Textual's keys panel, from the palette
            await pilot.pause()
            assert app.screen.query("HelpPanel")
            await pilot.press("escape")
            await pilot.pause()
            assert not app.screen.query("HelpPanel")
            titles = {cmd.title for cmd in app.get_system_commands(app.screen)}
            assert {"Source tab", "IR by phase tab", "Finish diff tab", "PTX tab", "Host asm tab",
                    "Events tab", "Strategy tab", "Help: every key"} <= titles
    run(go())


def test_17_every_binding_is_on_the_help_screen():
    from kdebug.tui.key_help import KEYS, binding_action
    bound = {b.action for b in KdebugApp.BINDINGS}
    listed = {binding_action(k, name) for k in KEYS for name in k.keys}
    assert bound <= listed


# 18 --------------------------------------------------------------------------------------------
def test_18_small_inconsistencies(tmp_path):
    events = cycle_events()
    finish_at = next(i for i, ev in enumerate(events) if isinstance(ev, E.PhaseStarted) and ev.phase == "finish")
    at_finish = SessionModel().extend(events[:finish_at + 1])
    # nested jobs wait for their toplevel's finish, they are not in expand_deferred any more
    assert at_finish.job_state(3) == ("compiling", "finish (in #1)")

    async def go():
        app = replay(events[:finish_at + 1] + [E.Paused(breakpoint="step", job=1, message="before phase finish")])
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            labels = tree_labels(app)
            assert "compiling: finish (in #1)" in labels[2] and "expand_deferred" not in labels[2]
            app._stop_asked = "pause"
            assert app.status_text().plain.startswith("\u23f8 paused: before phase finish")
            app._stop_asked = "step"
            assert app.status_text().plain.startswith("\u23f8 stepped: before phase finish")
        # a queued job: no explanation above "no IR"
        queued = [ev for ev in cycle_events() if not isinstance(ev, E.JobStarted) or ev.job != 3]
        queued = queued[:next(i for i, ev in enumerate(queued) if isinstance(ev, E.PhaseStarted) and ev.job == 3)]
        app = replay(queued)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.tree.select_job(3)
            await pilot.press("2")
            await pilot.pause()
            assert view_lines(app, "view-ir") == ["(no IR yet: the job is queued)"]
            assert not app.query_one("#phase-help").display
    run(go())


def test_18_finish_diff_ignores_attribute_group_renumbering():
    from kdebug.tui.documents import SideBySideDocument, UnifiedDiffDocument
    before = "define void @f() #0 {\n  ret void\n}\nattributes #0 = { nounwind }\n"
    after = ("define void @g() #0 {\n  ret void\n}\ndefine void @f() #1 {\n  ret void\n}\n"
             "attributes #0 = { alwaysinline }\nattributes #1 = { nounwind }\n")
    lines = UnifiedDiffDocument(before, after).lines
    changed = [ln for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == ["+define void @g() #0 {", "+  ret void", "+}", "+attributes #0 = { alwaysinline }"]
    assert " define void @f() #1 {" in lines  # shown as it is after, but not as a change
    side = SideBySideDocument(before, after)
    assert [tag for _, right, tag in side.rows if "@f" in right] == ["equal"]


# 19 --------------------------------------------------------------------------------------------
def test_19_dump_ptx_of_a_deferred_job_is_named_an_excerpt_and_points_to_the_module(tmp_path):
    out = tmp_path / "dump"
    r = run_kdebug("dump", os.path.join(SAMPLES, "recursive_launch.py"), "--target", "ptx", "--backend", "cpu", "--out", str(out))
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in out.rglob("*") if p.is_file())
    excerpts = [p for p in out.rglob("*.excerpt.ptx")]
    assert excerpts, files
    assert {p.name.split("_")[0] for p in excerpts} == {"002", "003"}  # the deferred jobs, not the toplevel
    for path in excerpts:
        text = path.read_text()
        assert text.startswith("// an excerpt of the toplevel module's PTX"), text[:200]
        module = text.splitlines()[1].removeprefix("// assemble the module: ").strip()
        assert (out / module).is_file() and ".version" in (out / module).read_text()
    # a file named .ptx alone is a whole module: ptxas accepts it where the toolkit is here
    ptxas = shutil.which("ptxas")
    for path in out.rglob("*.ptx"):
        if not path.name.endswith(".excerpt.ptx") and ptxas:
            r = subprocess.run([ptxas, "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "m.o")],
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
