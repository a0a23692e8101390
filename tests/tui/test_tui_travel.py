"""Replay as time travel in the TUI: ( ) one event, { } to re-entrant requests, finish misses, failures."""
from __future__ import annotations

from functools import partial

from conftest import tree_labels
from test_tui_descend import SIZE, replay, run
from kdebug import events as E

labels = partial(tree_labels, indent=False)


def test_replay_steps_back_to_a_reentrant_request_and_forward_again(sample_trace):
    async def go():
        app = replay(sample_trace("recursive_launch.py", "--strategy", "recursive"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            events = list(app.model.events)
            end_labels, end_alerts = labels(app), [(a.title, list(a.detail)) for a in app.model.alerts]
            assert app.model.ended is not None and app.travel is None
            k = max(i for i, ev in enumerate(events) if isinstance(ev, E.Reentrant))
            await pilot.press("left_curly_bracket")  # back from the end: the failures after it first
            await pilot.pause()
            while app.travel.position != k + 1:
                await pilot.press("left_curly_bracket")
                await pilot.pause()
            m = app.model
            assert m.events[-1] is events[k] and m.ended is None
            # the alert as it was: the request alone, before the compile error that stopping it raised
            [(title, detail)] = [(a.title, a.detail) for a in m.alerts]
            assert title == end_alerts[0][0] and title.startswith("re-entrant request") and detail == []
            assert end_alerts[0][1] and not any("failed" in label for label in labels(app))
            status = app.status_text().plain
            assert f"replay at event {k + 1}/{len(events)}: reentrant" in status and "re-entrant request" in status
            # the tree as it was: the stopped request's ↻ and jobs still compiling, no launch yet
            assert any("\u21bb" in label and "stopped" in label for label in labels(app))
            assert any("compiling" in label for label in labels(app)) and not m.launches
            requester = events[k].job
            assert app.detail.job_id == requester
            await pilot.press("1")
            await pilot.pause()
            view = app.query_one("#view-source")
            [line] = view.focus_lines
            assert events[k].site["line"] - m.jobs[requester].source_line + 1 == line

            await pilot.press("left_parenthesis")  # one event back: before the request
            await pilot.pause()
            assert app.travel.position == k and not app.model.reentrant
            assert not any("\u21bb" in label for label in labels(app))
            await pilot.press("right_parenthesis")
            await pilot.pause()
            assert app.model.events[-1] is events[k] and len(app.model.reentrant) == 1
            while not app.travel.at_end:
                await pilot.press("right_curly_bracket")
                await pilot.pause()
            assert labels(app) == end_labels and [(a.title, a.detail) for a in app.model.alerts] == end_alerts
            assert "replay at" not in app.status_text().plain
    run(go())


def test_time_travel_keys_are_for_replays_only(sample_trace):
    from test_tui import live_app, wait_for
    async def go():
        app = replay(sample_trace("saxpy.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            n = len(app.model.events)
            await pilot.press("left_parenthesis", "left_parenthesis")
            await pilot.pause()
            assert app.travel.position == n - 2 and len(app.model.events) == n - 2
            await pilot.press("left_curly_bracket")  # nothing notable in a clean run: it says so, stays
            await pilot.pause()
            assert app.travel.position == n - 2
            await pilot.press("right_curly_bracket")  # and on: to the end
            await pilot.pause()
            assert app.travel.at_end
        live = live_app("--break", "launch", "sample_kernels/saxpy.py")
        async with live.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: live.model.paused is not None, "the launch breakpoint")
            await pilot.press("left_parenthesis")
            await pilot.pause()
            assert live.travel is None and live.model.paused is not None
    run(go())


def test_stepping_on_from_a_reentrant_request_shows_its_marker_once_lowered(sample_trace):
    async def go():
        app = replay(sample_trace("mutual_pointers.py"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("left_curly_bracket")
            await pilot.pause()
            request = app.model.events[-1]
            assert isinstance(request, E.Reentrant) and request.resolution == "reference"
            odd = request.job
            steps = 0
            while "lower" not in app.model.jobs[odd].snapshots:
                await pilot.press("right_parenthesis")
                await pilot.pause()
                steps += 1
            assert steps > 1 and not isinstance(app.model.events[-1], E.Reentrant)
            await pilot.press("2")
            app.detail.set_phase("lower")
            await pilot.pause()
            assert app.detail.job_id == odd
            ir = app.query_one("#view-ir")
            assert ir.focus_lines and all(request.marker in ir.document.plain(i) for i in ir.focus_lines)
            await pilot.press("right_curly_bracket")  # a jump: the session no longer stands by that request
            await pilot.pause()
            assert not app.query_one("#view-ir").focus_lines
    run(go())
