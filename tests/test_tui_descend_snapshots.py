"""Snapshots of descending across a launch, a pointer and a grad site (the path bar, the site marks).

The samples' traces are replayed with uniform times (``test_tui_descend.uniform_times``).
Update after an intended change: ``pytest tests/test_tui_descend_snapshots.py --snapshot-update``.
"""
from __future__ import annotations

from test_tui_descend import SIZE, replay, to_site


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
