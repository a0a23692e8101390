"""R in the TUI: the selected job's alert reduced to a reproducer, its trials shown as they go, the
result shown and run (kdebug/tui/reducing.py). Live debuggees; every wait is bounded."""
from __future__ import annotations

import ast

import pytest

from reduce_scripts import buried
from test_tui import live_app, run, view_lines, wait_for
from kdebug.session.model import SessionModel
from kdebug.tui.reducing import ReduceScreen, alert_to_reduce

SIZE = (120, 36)


def defined(source: str) -> set[str]:
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


async def _start_on_the_alert(app, pilot):
    await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
    await pilot.pause()
    assert app.model.alerts, "the buried cycle raised no alert"
    app.tree.focus()
    await pilot.press("a")  # the next job with an alert
    await pilot.pause()
    await pilot.press("R")
    await pilot.pause()
    assert isinstance(app.screen, ReduceScreen)
    return app.screen


@pytest.mark.timeout(400)
def test_R_reduces_the_reentrant_alert_shows_progress_and_the_result_then_runs_it(tmp_path):
    script = tmp_path / "cycle_bug.py"
    script.write_text(buried("reentrant", small=True))
    original = script.read_text()
    out = tmp_path / "cycle_bug.reduced.py"

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            screen = await _start_on_the_alert(app, pilot)
            assert screen.spec == "reentrant:kernel_a,kernel_b"
            seen: list[str] = []
            await wait_for(pilot, lambda: (seen.append(screen.progress_line) or not screen.reducing),
                           "the reduction to end", limit=300)
            assert screen.failure is None, screen.failure
            assert any(line.startswith("reduce: ") and "trials" in line for line in seen)  # shown as it went
            assert screen.cuts and screen.cuts[0].startswith("cut 1:")
            r = screen.reduced
            assert r.holds and r.out == str(out) and r.lines < r.original_lines
            assert "kernel_a" in defined(out.read_text()) and "saxpy" not in defined(out.read_text())
            assert script.read_text() == original  # the original is only read
            assert "\n".join(view_lines(screen, "reduce-view")) == out.read_text().rstrip("\n")
            header = str(screen.query_one("#reduce-progress").render())
            assert f"{r.original_lines} \u2192 {r.lines} code lines" in header and "cycle_bug.reduced.py" in header
            await pilot.press("enter")  # run the reduced script here
            await pilot.pause()
            assert not isinstance(app.screen, ReduceScreen)
            assert app.opts.script == str(out)
            await wait_for(pilot, lambda: app.model.ended is not None, "the reduced script's run to end", limit=120)
            assert any(a.title.lower().startswith("re-entrant") or "kernel_a" in a.title for a in app.model.alerts)
            assert app.previous_run is not None  # v: beside the original's run
    run(go())


@pytest.mark.timeout(300)
def test_escape_stops_a_reduction_and_keeps_the_smallest_script_so_far(tmp_path):
    script = tmp_path / "cycle_bug.py"
    script.write_text(buried("reentrant", small=True))

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            screen = await _start_on_the_alert(app, pilot)
            await wait_for(pilot, lambda: screen.progress_line.startswith("reduce: ") or not screen.reducing,
                           "the reduction's first trials", limit=200)
            await pilot.press("escape")  # stop
            await pilot.pause()
            assert isinstance(app.screen, ReduceScreen)  # stopping is not closing
            await wait_for(pilot, lambda: not screen.reducing, "the reduction to stop", limit=200)
            # stopped at its first trials (a whole reduction takes tens of them)
            assert screen.reduced is None and screen.failure.startswith("stopped; the smallest script so far")
            kept = (tmp_path / "cycle_bug.reduced.py").read_text()
            assert screen.written and {"kernel_a", "kernel_b"} <= defined(kept)
            assert "enter: run it" in str(screen.query_one("#reduce-progress").render())
            await pilot.press("escape")  # close
            await pilot.pause()
            assert not isinstance(app.screen, ReduceScreen)
            assert app.model.ended is not None  # the session is as it was
    run(go())


def test_the_alert_to_keep_is_the_selected_jobs_and_one_without_says_so(sample_trace):
    from kdebug.session.trace import read_trace
    model = SessionModel().extend(read_trace(sample_trace("recursive_launch.py")))
    assert alert_to_reduce(model, None, None)[0] is None
    backref = 0
    job = model.reentrant[backref].job
    spec, what = alert_to_reduce(model, job, backref)
    names = model.reentrant[backref].cycle_names
    assert spec is not None and spec.startswith("reentrant:") and set(spec[10:].split(",")) == set(names)
    assert what  # the alert's title, shown in the dialog
    quiet = next(j for j in model.jobs if j not in model.job_alert)
    spec, why = alert_to_reduce(model, quiet, None)
    assert spec is None and f"job #{quiet} has no alert" in why
