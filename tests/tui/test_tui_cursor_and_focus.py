"""The TUI's focus and line cursor, each check a defect of the TUI's third pass (failed before its fix): the
view a tab key shows has the focus, the cursor line in reverse video and the high-contrast theme, the IR
cursor above the horizontal scrollbar, search moving the cursor, diffs opening at the first hunk with the
brackets stepping hunks and z keeping the place. At 80x24 and 120x36.

Recorded traces of the samples, replayed with the Pilot. Waits are bounded.
"""
from __future__ import annotations

import os

import pytest

from test_tui import run
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.textview import TextView


SMALL, MEDIUM = (80, 24), (120, 36)
SIZES = pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])


async def press(pilot, *keys: str, settle: int = 1) -> None:
    """Press ``keys``, then let the app settle (``settle`` pauses: a zoom relayouts, then scrolls)."""
    await pilot.press(*keys)
    for _ in range(settle):
        await pilot.pause()


def replay_of(path: str) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(read_trace(path)), trace_path=path, cwd=os.path.dirname(path))


# 1 ---------------------------------------------------------------------------------------------
@SIZES
def test_1_the_view_a_tab_key_shows_has_the_focus(sample_trace, size):
    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("tab")  # into Source
            assert app.focused is app.query_one("#view-source")
            for key, tab in (("2", "ir"), ("3", "finish"), ("6", "events"), ("8", "diff"), ("1", "source")):
                await press(pilot, key)
                assert app.detail.active_tab == tab
                assert app.focused is app.query_one(f"#view-{tab}"), (key, app.focused)
            await press(pilot, "7")  # the Strategy tab: its scroll
            assert app.focused is not None and app.detail.active_tab == "strategy"
            assert app.query_one("#tab-strategy") in app.focused.ancestors
            app.tree.focus()  # from the tree too: the key's view takes the focus
            await press(pilot, "2")
            view = app.query_one("#view-ir", TextView)
            assert app.focused is view
            before = view.cursor
            await press(pilot, "down")
            assert view.cursor == before + 1  # the arrows move the IR's cursor now
            await press(pilot, "8", "z")  # z zooms the Diff tab (the detail pane holds it)
            zoomed = app.screen.maximized
            assert zoomed is not None and zoomed in app.query_one("#view-diff").ancestors_with_self
    run(go())


# 15 --------------------------------------------------------------------------------------------
@SIZES
def test_15_diffs_open_at_the_first_hunk_brackets_step_hunks_and_z_keeps_the_place(sample_trace, size):
    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            stepped = 0
            for key, tab in (("3", "finish"), ("8", "diff")):
                for mode in ("unified", "side"):
                    await press(pilot, key)
                    if app.detail.diff_mode != mode:
                        await press(pilot, "d")
                    await pilot.pause()
                    view = app.query_one(f"#view-{tab}", TextView)
                    hunks = view.hunks()
                    assert hunks and hunks[0] > 0, (tab, mode)
                    above = view.hunk_above  # a unified hunk from its @@ line, side by side two rows above it
                    assert above == (0 if mode == "unified" else 2)
                    assert view.scroll_y == max(0, min(hunks[0] - above, view.max_scroll_y)), (tab, mode)
                    assert app.focused is view
                    if len(hunks) > 1 and view.max_scroll_y >= hunks[1] - above:
                        await press(pilot, "right_square_bracket")
                        assert view.scroll_y == hunks[1] - above
                        await press(pilot, "left_square_bracket")
                        assert view.scroll_y == hunks[0] - above
                        stepped += 1
                    job = app.detail.job_id
                    await press(pilot, "right_square_bracket")  # the next hunk (or "the last"), never the next job
                    assert app.detail.job_id == job
                    place = view.scroll_y
                    await press(pilot, "z", settle=2)
                    assert app.screen.maximized is not None and view.scroll_y == min(place, view.max_scroll_y)
                    await press(pilot, "z", settle=2)
                    assert app.screen.maximized is None and view.scroll_y == min(place, view.max_scroll_y)
            assert stepped >= 2  # the Finish diff has hunks enough to step through, in both layouts
            app.tree.focus()
            job = app.detail.job_id
            await press(pilot, "right_square_bracket")  # in the tree: ] is the next job
            assert app.detail.job_id != job
    run(go())


@SIZES
def test_15_z_and_back_finds_the_place_a_taller_pane_clamped(sample_trace, size):
    """A view a little longer than its pane shows whole when zoomed (its place clamps to 0); going
    back returns to the reader's place. Failed before kdebug/tui/zoom.py: the view stayed at 0."""
    from kdebug.tui.documents import Document

    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await press(pilot, "2")
            view = app.query_one("#view-ir", TextView)
            view.set_document(Document([f"line {i}" for i in range(view.size.height + 3)]))
            await pilot.pause()
            assert view.max_scroll_y == 3
            view.scroll_to(y=2, animate=False)
            await pilot.pause()
            assert app.focused is view and view.scroll_y == 2
            await press(pilot, "z", settle=2)
            assert app.screen.maximized is not None and view.scroll_y == 0  # all of it shows
            await press(pilot, "z", settle=2)
            assert app.screen.maximized is None and view.scroll_y == 2
            view.set_document(Document([f"line {i}" for i in range(200)]))
            view.scroll_to(y=50, animate=False)
            await pilot.pause()
            await press(pilot, "z", settle=2)
            assert view.scroll_y == 50
            view.scroll_to(y=10, animate=False)  # the reader moves while zoomed: going back keeps that
            await pilot.pause()
            moved = view.scroll_y
            assert moved == 10
            await press(pilot, "escape", settle=2)
            assert app.screen.maximized is None and view.scroll_y == moved
    run(go())


# 11 --------------------------------------------------------------------------------------------
@SIZES
def test_11_search_moves_the_line_cursor_and_n_N_step_matches(sample_trace, size):
    async def go():
        app = replay_of(sample_trace("mutual_pointers.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("2")
            app.detail.set_phase("lower")  # the markers, before expand_deferred replaces them
            await pilot.pause()
            app.tree.focus()
            await press(pilot, "slash", *"kdebug.deferred", "enter")
            view = app.query_one("#view-ir")
            assert view.matches and app.focused is view
            first = view.matches[view.current_match]
            assert view.cursor == first and "kdebug.deferred" in view.document.plain(view.cursor)
            await press(pilot, "down")  # from the match, not from the top
            assert view.cursor == first + 1
            await press(pilot, "n")
            expected = view.matches[(view.matches.index(first) + 1) % len(view.matches)]
            assert view.cursor == expected
            await press(pilot, "N")
            assert view.cursor == first
            job = app.detail.job_id
            await press(pilot, "enter")  # descends from the match
            assert app.detail.job_id != job
    run(go())


# 10 --------------------------------------------------------------------------------------------
@SIZES
def test_10_the_ir_cursor_never_goes_under_the_horizontal_scrollbar(sample_trace, size):
    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await press(pilot, "2")
            view = app.query_one("#view-ir")
            assert view.show_horizontal_scrollbar  # long IR lines: the scrollbar takes the view's last row
            shown = view.scrollable_content_region.height
            for _ in range(shown + 5):
                before = int(view.scroll_y)
                await press(pilot, "down")
                top = int(view.scroll_y)
                assert top <= view.cursor < top + shown, (view.cursor, top, shown)  # a row that is drawn
                assert top - before in (0, 1)  # the view follows a line at a time, no jumps
            await press(pilot, "pagedown")
            top = int(view.scroll_y)
            assert top <= view.cursor < top + shown
    run(go())


# 9 ---------------------------------------------------------------------------------------------
def test_9_the_cursor_line_is_reverse_video_and_high_contrast_is_a_theme(sample_trace):
    from kdebug.cli import parse_args, run_options
    from kdebug.tui.key_help import commands

    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            await press(pilot, "1")
            view = app.query_one("#view-source")
            line = view.cursor - int(view.scroll_y)
            styles = [seg.style for seg in view.render_line(line) if seg.text.strip()]
            assert styles and all(s.reverse and s.bold for s in styles)  # survives any palette
            other = [seg.style for seg in view.render_line(line + 1) if seg.text.strip()]
            assert other and not any(s.reverse for s in other)
            palette = {title: action for title, _, action in commands(replay=True)}
            assert palette["Theme: high contrast (projector)"] == "app.set_theme('high-contrast')"
            await app.run_action(palette["Theme: high contrast (projector)"])
            await pilot.pause()
            assert app.theme == "kdebug-high-contrast"
            assert app.current_theme.background.lower() == "#000000"
    run(go())
    opts = run_options(parse_args(["run", "--theme", "high-contrast", "x.py"]))
    assert opts.theme == "high-contrast" and KdebugApp(opts=opts).theme == "kdebug-high-contrast"
    assert KdebugApp(opts=run_options(parse_args(["run", "--theme", "light", "x.py"]))).theme == "textual-light"
