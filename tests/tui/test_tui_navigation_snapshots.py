"""Snapshots of descending across a launch, a pointer and a grad site (the path bar, the site marks),
of a replay stepped back to a re-entrant request, and of two runs side by side.

The samples' traces are replayed with uniform times (``test_tui_descend.uniform_times``).
Update after an intended change: ``pytest tests/tui/test_tui_navigation_snapshots.py --snapshot-update``.
"""
from __future__ import annotations

from test_tui_descend import SIZE, replay, to_site
from kdebug import events as E


def descend_at(tab: str, text: str, phase: str | None = None, then: tuple[str, ...] = ()):
    async def run_before(pilot) -> None:
        await pilot.pause()
        if phase is not None:
            await pilot.press("2")
            pilot.app.detail.set_phase(phase)
        await to_site(pilot, tab, text)
        await pilot.press("enter", *then)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()
    return run_before


def test_snapshot_descend_across_a_launch(snap_compare, sample_trace):
    app = replay(sample_trace("dynamic_parallel.py"))
    assert snap_compare(app, terminal_size=SIZE, run_before=descend_at("source", "scale_range["))


def test_snapshot_descend_across_a_pointer_from_ir(snap_compare, sample_trace):
    app = replay(sample_trace("mutual_pointers.py"))
    assert snap_compare(app, terminal_size=SIZE, run_before=descend_at("ir", "kdebug.deferred.2", phase="lower",
                                                                       then=("1",)))


def test_snapshot_descend_across_a_grad_site_and_back(snap_compare, sample_trace):
    """Down into grad(f), back up: the cursor is on the grad site again, the path bar gone."""
    app = replay(sample_trace("grad_pointer.py"))
    assert snap_compare(app, terminal_size=SIZE, run_before=descend_at("source", "kdebug.grad(f)", then=("u",)))


def test_snapshot_descend_across_a_grad_site(snap_compare, sample_trace):
    app = replay(sample_trace("grad_pointer.py"))
    assert snap_compare(app, terminal_size=SIZE, run_before=descend_at("source", "kdebug.grad(f)"))


def keys(*presses: str):
    async def run_before(pilot) -> None:
        await pilot.pause()
        await pilot.press(*presses)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()
    return run_before


def test_snapshot_replay_stepped_back_to_a_reentrant_request(snap_compare, sample_trace):
    """The recursive strategy's stopped cycle: { from the end lands on the re-entrant request
    (the failures after it are not there yet), its requesting line highlighted in Source."""
    app = replay(sample_trace("recursive_launch.py", "--strategy", "recursive"))

    async def back_to_the_request(pilot) -> None:
        await pilot.pause()
        for _ in range(10):
            await pilot.press("left_curly_bracket")
            await pilot.pause()
            if isinstance(pilot.app.model.events[-1], E.Reentrant):
                break
        await pilot.press("1")
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()
    assert snap_compare(app, terminal_size=SIZE, run_before=back_to_the_request)


def test_snapshot_two_runs_side_by_side(snap_compare, sample_trace):
    """recursive_launch under worklist beside recursive: ↻ reference against stopped, done against failed."""
    from kdebug.session.model import SessionModel
    from kdebug.session.trace import read_trace
    from kdebug.tui.compare import CompareScreen
    from test_tui_descend import uniform_times

    previous = SessionModel().extend(uniform_times(list(read_trace(sample_trace("recursive_launch.py")))))
    app = replay(sample_trace("recursive_launch.py", "--strategy", "recursive"))

    async def compare_runs(pilot) -> None:
        await pilot.pause()
        pilot.app.push_screen(CompareScreen(previous, pilot.app.model, ("worklist", "recursive")))
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()
    assert snap_compare(app, terminal_size=SIZE, run_before=compare_runs)
