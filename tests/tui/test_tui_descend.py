"""Descend and ascend in the TUI (Cthulhu.jl's way) across a launch, a pointer and a grad site.

Traces of the samples are recorded once (``sample_trace``) and replayed; their times are
made uniform so that the snapshots do not depend on the machine's speed.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os

from conftest import SAMPLES
from kdebug import events as E
from kdebug.cli import parse_args, run_options
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp

SIZE = (160, 48)


def uniform_times(events: list[E.Event]) -> list[E.Event]:
    """The same events with times that say nothing of the machine: each event 1 ms after the last;
    without LLVM's remarks, which depend on the host's CPU model (tests/tui/test_tui_remarks.py has them)."""
    out = []
    for i, ev in enumerate(e for e in events if not isinstance(e, E.Remarks)):
        changes = {"t": i * 0.001}
        if hasattr(ev, "duration"):
            changes["duration"] = 0.001
        out.append(dataclasses.replace(ev, **changes))
    return out


def replay(path: str) -> KdebugApp:
    model = SessionModel().extend(uniform_times(list(read_trace(path))))
    return KdebugApp(model=model, trace_path=os.path.basename(path))


def job_named(app: KdebugApp, name: str) -> int:
    return next(j.id for j in app.model.jobs.values() if j.name == name)


async def to_site(pilot, tab: str, text: str | None = None, target: int | None = None) -> None:
    """Show ``tab``, focus its view and move its cursor down to the first site line holding ``text``
    (or asking for job ``target``)."""
    app = pilot.app
    await pilot.press({"source": "1", "ir": "2"}[tab])
    await pilot.pause()
    view = app.query_one(f"#view-{tab}")
    view.focus()
    await pilot.pause()
    line = next(i for i in view.site_lines() if (text is None or text in view.document.plain(i))
                and (target is None or target in view._targets(i)))
    view.move_cursor(0)
    for _ in range(line):
        await pilot.press("down")
    assert view.cursor == line and view.targets_at_cursor()


def path_bar(app: KdebugApp) -> str:
    """The path as the screen shows it: the path bar (it keeps its line, with a hint while the path is
    empty), or below 32 lines the banner's first words; "" while the path is empty."""
    if not len(app.detail.path):
        return ""
    if app.detail.compact:
        return str(app.query_one("#banner").render())
    return str(app.query_one("#path").render())


def run(coro) -> None:
    asyncio.run(coro)


def test_descend_and_ascend_across_a_launch_site(sample_trace):
    async def go():
        app = replay(sample_trace("dynamic_parallel.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            parent, child = job_named(app, "parent"), job_named(app, "scale_range")
            await to_site(pilot, "source", "scale_range[")
            line = app.query_one("#view-source").cursor
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == child and app.tree.selected() == ("job", child)
            assert app.detail.active_tab == "source" and "parent #1 \u2192 scale_range #2" in path_bar(app)
            await pilot.press("backspace")
            await pilot.pause()
            assert app.detail.job_id == parent and app.query_one("#view-source").cursor == line
            assert path_bar(app) == ""
            await pilot.press("u")  # the top of the path: it says so, nothing moves
            await pilot.pause()
            assert app.detail.job_id == parent
            await pilot.press("up", "enter")  # a line without a site descends nowhere
            await pilot.pause()
            assert app.detail.job_id == parent and not len(app.detail.path)
    run(go())


def test_descend_through_pointers_in_ir_and_source_then_back_twice(sample_trace):
    async def go():
        app = replay(sample_trace("mutual_pointers.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            parity, even, odd = (job_named(app, n) for n in ("parity", "is_even", "is_odd"))
            await pilot.press("2")
            app.detail.set_phase("lower")  # the marker, before expand_deferred replaces it
            await pilot.pause()
            await to_site(pilot, "ir", f"kdebug.deferred.{even}")
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == even and app.detail.active_tab == "ir"
            await to_site(pilot, "source", "kdebug.deferred(is_odd)")
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == odd
            assert "parity #1 \u2192 is_even #2 \u2192 is_odd #3" in path_bar(app)
            await pilot.press("u")
            await pilot.pause()
            assert app.detail.job_id == even and app.detail.active_tab == "source"
            await pilot.press("u")
            await pilot.pause()
            assert app.detail.job_id == parity and app.detail.active_tab == "ir" and app.detail.phase == "lower"
            view = app.query_one("#view-ir")
            assert f"kdebug.deferred.{even}" in view.document.plain(view.cursor)
    run(go())


def test_descend_through_grad_sites_to_a_derivative_of_a_derivative(sample_trace):
    async def go():
        app = replay(sample_trace("grad_pointer.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            gf, gg = job_named(app, "grad(f)"), job_named(app, "grad(g)")
            await to_site(pilot, "source", "kdebug.grad(f)")
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == gf
            await pilot.press("2")
            app.detail.set_phase("derivative")  # the transform asks for grad(g) for f's call of g
            await pilot.pause()
            await to_site(pilot, "ir", f"kdebug.deferred.{gg}", target=gg)
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == gg and "chain #1 \u2192 grad(f) #3 \u2192 grad(g) #4" in path_bar(app)
            await pilot.press("u", "u")
            await pilot.pause()
            assert app.detail.job_id == job_named(app, "chain") and not len(app.detail.path)
    run(go())


def test_a_reentrant_pause_highlights_the_requesting_line(tmp_path):
    """Live: at the re-entrant breakpoint the tree shows the requester, its request line highlighted."""
    async def go():
        opts = run_options(parse_args(["run", "--backend", "cpu", "--break", "reentrant",
                                       os.path.join(SAMPLES, "mutual_pointers.py")]))
        app = KdebugApp(opts=opts, cwd=os.path.dirname(SAMPLES))
        async with app.run_test(size=SIZE) as pilot:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while app.model.paused is None:
                assert loop.time() < deadline, "gave up waiting for the re-entrant breakpoint"
                await pilot.pause(0.05)
            odd = job_named(app, "is_odd")
            await pilot.press("1")
            await pilot.pause()
            assert app.detail.job_id == odd
            view = app.query_one("#view-source")
            [line] = view.focus_lines
            assert "kdebug.deferred(is_even)" in view.document.plain(line) and view.cursor == line
            await pilot.press("c")
            while app.model.ended is None:
                assert loop.time() < deadline, "gave up waiting for the end"
                await pilot.pause(0.05)
            await pilot.pause()
            assert not app.query_one("#view-source").focus_lines  # the session no longer stands there
    run(go())


def test_after_a_step_from_a_deferred_pause_the_ir_marker_is_highlighted():
    """Live: paused at the launch request, the requester's Source line; a step on, the lowered IR
    holds the marker, highlighted; a continue ends the highlight."""
    async def go():
        opts = run_options(parse_args(["run", "--backend", "cpu", "--break", "deferred",
                                       os.path.join(SAMPLES, "dynamic_parallel.py")]))
        app = KdebugApp(opts=opts, cwd=os.path.dirname(SAMPLES))
        async with app.run_test(size=SIZE) as pilot:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60

            async def until(condition, what):
                while not condition():
                    assert loop.time() < deadline, f"gave up waiting for {what}"
                    await pilot.pause(0.05)
            await until(lambda: app.model.paused is not None, "the deferred breakpoint")
            parent, child = job_named(app, "parent"), job_named(app, "scale_range")
            await pilot.press("1")
            await until(lambda: app.detail.job_id == parent and app.query_one("#view-source").focus_lines,
                        "the highlighted launch line")
            view = app.query_one("#view-source")
            assert "scale_range[" in view.document.plain(min(view.focus_lines))
            assert "lower" not in app.model.jobs[parent].snapshots  # lowering is still emitting the marker
            first = app.model.paused
            await pilot.press("s")
            await until(lambda: app.model.paused is not None and app.model.paused is not first, "the step")
            assert "lower" in app.model.jobs[parent].snapshots
            await pilot.press("2")
            app.detail.set_phase("lower")
            await until(lambda: app.query_one("#view-ir").focus_lines, "the highlighted marker")
            ir = app.query_one("#view-ir")
            assert all(f"kdebug.deferred.{child}" in ir.document.plain(i) for i in ir.focus_lines)
            await pilot.press("c")
            await until(lambda: app.model.ended is not None, "the end")
            await pilot.pause()
            assert not app.query_one("#view-ir").focus_lines
    run(go())


def test_tab_from_the_tree_reaches_the_source_cursor_and_down_enters_the_bottom_panel(sample_trace):
    """As a user does it, keys only: tab from the tree, arrows, enter. The first tab used to land on the
    detail's tab strip, where the arrows did nothing and enter said there was no site on the line."""
    async def go():
        app = replay(sample_trace("dynamic_parallel.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            parent, child = job_named(app, "parent"), job_named(app, "scale_range")
            app.tree.select_job(parent)
            await pilot.pause()
            view = app.query_one("#view-source")
            await pilot.press("tab")
            assert app.focused is view
            line = next(i for i in view.site_lines() if "scale_range[" in view.document.plain(i))
            for _ in range(line):
                await pilot.press("down")
            await pilot.press("enter")
            await pilot.pause()
            assert app.detail.job_id == child, (view.cursor, line)
            await pilot.press("tab")  # on to the bottom panel's tab strip; down goes into its active pane
            await pilot.press("down")
            assert app.focused is app.query_one("#launches")
    run(go())
