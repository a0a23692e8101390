"""The TUI driving a live debuggee: p and s answered by a script stuck in plain Python, x's kill and what it
leaves (launches and jobs killed, never running or compiling), Ctrl-C that interrupts the script, keeps the
screen and exits 130, and compile and launch times that leave out the time held at a breakpoint. Each
check a defect of the TUI's second or third pass (failed before its fix).

A live debuggee in each test (replayed events where the defect is in what the app shows of a kill).
Waits are bounded.
"""
from __future__ import annotations

import asyncio
import os
import re
import textwrap

import pytest

from conftest import SAMPLES
from test_tui import live_app, run, view_lines, wait_for
from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.tui.app import KdebugApp
from kdebug.tui.synthetic import cycle_events


SIZE = (160, 48)

HUNG = """
import time
print("spinning", flush=True)
n = 0
while True:
    n += 1
"""


def replay(events, **kw) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(events), trace_path="trace.jsonl", **kw)


def write(tmp_path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)

SMALL, MEDIUM = (80, 24), (120, 36)


def screen_text(app: KdebugApp) -> str:
    """What the terminal shows, as text."""
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


async def press(pilot, *keys: str, settle: int = 1) -> None:
    """Press ``keys``, then let the app settle (``settle`` pauses: a zoom relayouts, then scrolls)."""
    await pilot.press(*keys)
    for _ in range(settle):
        await pilot.pause()

STUBBORN = """
import time
print("spinning", flush=True)
while True:
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        pass
"""


# 6 ---------------------------------------------------------------------------------------------
def test_6_a_launch_running_when_the_debuggee_is_killed_says_so():
    events = cycle_events()[:-1] + [E.LaunchStarted(launch=3, job=1, name="a", grid=[1, 1, 1], block=[1, 1, 1]),
                                    E.SessionEnded(status="killed", exit_code=-9, error="killed from the TUI")]

    async def go():
        app = replay(events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert str(app.query_one("#launches").get_cell("3", "status")) == "killed (the session ended)"
    run(go())


# 14 --------------------------------------------------------------------------------------------
def test_14_a_script_stuck_in_plain_python_answers_p_and_s_and_x_says_where(tmp_path):
    async def go():
        app = live_app(write(tmp_path, "hung", HUNG), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("spinning" in ln for ln in view_lines(app, "output")), "the script")
            await pilot.press("p")
            await pilot.pause()
            assert "pause requested" in app.status_text().plain
            assert any("stops at its next phase" in str(n.message) for n in app._notifications)
            await pilot.press("x")
            await wait_for(pilot, lambda: app.model.ended is not None, "the kill")
            error = app.model.ended.error
            assert app.model.ended.status == "killed"
            # the stack sample lands on the loop's test (line 5) or its body (line 6)
            assert "killed from the TUI" in error and re.search(r"hung\.py:[56] in <module>", error), error
            assert "hung.py" in " ".join(view_lines(app, "diagnostics"))
    run(go())


# 15 --------------------------------------------------------------------------------------------
def test_15_compile_and_launch_times_leave_out_time_at_a_breakpoint():
    async def go():
        app = live_app("--break", "reentrant,launch", os.path.join(SAMPLES, "recursive_launch.py"))
        async with app.run_test(size=SIZE) as pilot:
            held = 0.0
            while app.model.ended is None:
                await wait_for(pilot, lambda: app.model.paused is not None or app.model.ended is not None,
                               "a breakpoint or the end")
                if app.model.paused is None:
                    break
                paused = app.model.paused
                if paused.breakpoint == "launch" and paused.launch is not None and paused.launch >= 2:
                    await asyncio.sleep(0.6)  # a device-side launch held inside its parent's time
                    held += 0.6
                elif paused.breakpoint == "reentrant":
                    await asyncio.sleep(0.6)  # held while kernel_a compiles
                    held += 0.6
                await pilot.press("c")
                await wait_for(pilot, lambda: app.model.paused is not paused, "the continue")
            assert held >= 1.2
            m = app.model
            # kernel_a's compilation spans the re-entrant stop, launch 1 the device-side launch stops:
            # each time shown is its span less the time held, not the span
            first = lambda kind, **kw: next(ev for ev in m.events if ev.kind == kind and all(  # noqa: E731
                getattr(ev, k) == v for k, v in kw.items()))
            span = first("job_finished", job=1).t - first("job_started", job=1).t
            held_in = sum(min(b, first("job_finished", job=1).t) - max(a, first("job_started", job=1).t)
                          for a, b in m.held if a < first("job_finished", job=1).t and b > first("job_started", job=1).t)
            assert held_in >= 0.5 and m.jobs[1].compile_time <= span - held_in + 0.05
            launch = m.launches[1]
            assert launch.held_time >= 0.5
            launch_span = first("launch_finished", launch=1).t - first("launch_started", launch=1).t
            assert launch.duration <= launch_span - launch.held_time + 0.05
    run(go())


def test_17_ctrl_c_interrupts_the_script_and_a_second_quits(tmp_path):
    async def go():
        app = live_app(write(tmp_path, "hung", HUNG), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("spinning" in ln for ln in view_lines(app, "output")), "the script")
            await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: app.model.ended is not None, "the interrupted script to end")
            assert app.model.ended.status == "interrupted"
            assert app.is_running
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert not app.is_running or app._exit_renderables is not None or app.return_code is not None
    run(go())


@pytest.mark.parametrize("body", [HUNG, STUBBORN], ids=["plain-loop", "catches-keyboardinterrupt"])
def test_12_ctrl_c_interrupts_the_script_keeps_the_screen_and_q_exits_130(tmp_path, body):
    script = tmp_path / "spin.py"
    script.write_text(body)

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SMALL) as pilot:
            await wait_for(pilot, lambda: any("spinning" in ln for ln in view_lines(app, "output")), "the script")
            await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: app.model.ended is not None, "the interrupted script to end")
            ended = app.model.ended
            assert (ended.status, ended.exit_code) == ("interrupted", 130)
            assert "interrupted (Ctrl-C) at " in ended.error and "spin.py:" in ended.error  # where it was
            await pilot.pause()
            status = app.status_text().plain
            assert "session interrupted (exit status 130)" in status and "failed" not in status
            assert app.is_running and "interrupted" in screen_text(app)  # the screen stays
            await press(pilot, "q")
        assert app.exit_status == 130  # what run_tui returns
    run(go())


# 13 --------------------------------------------------------------------------------------------
def test_13_jobs_a_kill_ends_under_are_killed_not_compiling():
    from conftest import tree_labels

    async def go():
        app = live_app("--break", "deferred", os.path.join(SAMPLES, "grad_taylor.py"))
        async with app.run_test(size=MEDIUM) as pilot:
            await wait_for(pilot, lambda: app.model.paused is not None, "the deferred breakpoint")
            assert any(j.state == "compiling" for j in app.model.jobs.values())
            await pilot.press("x")
            await wait_for(pilot, lambda: app.model.ended is not None, "the kill")
            await pilot.pause()
            labels = tree_labels(app)
            assert labels and not any("compiling" in label for label in labels), labels
            assert any("killed in " in label for label in labels), labels
            assert not any(j.state in ("queued", "compiling") for j in app.model.jobs.values())
            assert "compiling" not in str(app.query_one("#banner").render())
    run(go())
