"""Snapshot tests of the TUI on a deterministic synthetic trace (a -> b -> c -> a).

Update the stored SVGs after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``.
"""
from __future__ import annotations

from kdebug.session.model import SessionModel
from kdebug.tui.app import KdebugApp
from kdebug.tui.synthetic import cycle_events

SIZE = (160, 48)


def cycle_app() -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(cycle_events()), trace_path="cycle.jsonl")


def keys(*presses: str):
    """Press the keys, then drop notifications (they time out, so they would make snapshots flaky)."""
    async def run_before(pilot) -> None:
        await pilot.press(*presses)
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()
    return run_before


def test_snapshot_replay_opens_on_the_first_job(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=SIZE, run_before=keys())


def test_snapshot_backref_with_cycle_and_finish_diff(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=SIZE, run_before=keys("down", "down", "down", "3"))


def test_snapshot_side_by_side_finish_diff(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=SIZE, run_before=keys("down", "3", "d"))


def test_snapshot_ir_with_phase_help_and_search(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=SIZE, run_before=keys("2", "slash", *"add", "enter"))


def test_snapshot_help_screen(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=SIZE, run_before=keys("question_mark"))


def test_snapshot_80x24_cycle_with_resolution_and_coloured_diff(snap_compare):
    assert snap_compare(cycle_app(), terminal_size=(80, 24), run_before=keys("down", "down", "down", "3"))


def passes_app() -> KdebugApp:
    """The cycle with 18 optimize passes a job: every third changes the module, the 15th adds noise."""
    return KdebugApp(model=SessionModel().extend(cycle_events(passes=18)), trace_path="cycle.jsonl")


def test_snapshot_pass_bar_with_changed_and_unchanged_marks(snap_compare):
    # lower, then into optimize's passes: pass 4 changed nothing (=), its neighbours 3 and 6 did (●)
    assert snap_compare(passes_app(), terminal_size=SIZE,
                        run_before=keys("2", "comma", *["j"] * 4))


def test_snapshot_two_stage_diff_with_noise_hidden(snap_compare):
    # B: pass 15 (renumbers an attribute group, adds metadata); A: its previous change, pass 12
    assert snap_compare(passes_app(), terminal_size=SIZE, run_before=keys("8", *["k"] * 4))
