"""One Pilot test per defect of the TUI's third pass (each failed before its fix).

Recorded traces of the samples where the defect is in what the app shows; a live
debuggee only where it is in how the app drives one. Sizes: 80x24 (a projector's
terminal) and 120x36 where the layout matters. Waits are bounded.
"""
from __future__ import annotations

import os

import pytest

from conftest import ROOT, SAMPLES
from test_tui import live_app, run, view_lines, wait_for
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.textview import TextView

SMALL, MEDIUM = (80, 24), (120, 36)
SIZES = pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])


def screen_text(app: KdebugApp) -> str:
    """What the terminal shows, as text."""
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


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
                await pilot.press(key)
                await pilot.pause()
                assert app.detail.active_tab == tab
                assert app.focused is app.query_one(f"#view-{tab}"), (key, app.focused)
            await pilot.press("7")  # the Strategy tab: its scroll
            await pilot.pause()
            assert app.focused is not None and app.detail.active_tab == "strategy"
            assert app.query_one("#tab-strategy") in app.focused.ancestors
            app.tree.focus()  # from the tree too: the key's view takes the focus
            await pilot.press("2")
            await pilot.pause()
            view = app.query_one("#view-ir", TextView)
            assert app.focused is view
            before = view.cursor
            await pilot.press("down")
            await pilot.pause()
            assert view.cursor == before + 1  # the arrows move the IR's cursor now
            await pilot.press("8", "z")  # z zooms the Diff tab (the detail pane holds it)
            await pilot.pause()
            zoomed = app.screen.maximized
            assert zoomed is not None and zoomed in app.query_one("#view-diff").ancestors_with_self
    run(go())
