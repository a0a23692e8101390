"""Keyboard focus around tab strips. Tab goes from the job tree straight into the detail's view, whose
tabs are switched with 1-8 (a focused tab strip took the arrows the view's cursor waits for, silently);
down on a focused tab strip (the bottom panel's: Launches, Diagnostics, Output) enters its pane."""
from __future__ import annotations

from textual import events
from textual.app import App
from textual.widgets import TabbedContent, Tabs


def skip_tab_strip(tabbed: TabbedContent) -> None:
    """Tab and shift+tab pass ``tabbed``'s strip by."""
    for strip in tabbed.query(Tabs):
        strip.can_focus = False


def enter_pane(app: App, event: events.Key) -> None:
    """down on a focused tab strip: focus the first focusable widget of its active pane."""
    strip = app.focused
    if event.key != "down" or not isinstance(strip, Tabs):
        return
    tabbed = next((a for a in strip.ancestors if isinstance(a, TabbedContent)), None)
    if tabbed is None or not tabbed.active:
        return
    target = next((w for w in tabbed.get_pane(tabbed.active).query("*") if w.focusable), None)
    if target is not None:
        target.focus()
        event.stop()
        event.prevent_default()
