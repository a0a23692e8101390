"""z: the focused pane fills the screen, and going back finds the reader's place again.

A taller pane clamps a view's scroll position (a short diff shows whole, at 0); when the pane goes
back the view returns to where the reader left it, unless the reader moved while it was zoomed.
"""
from __future__ import annotations

from textual.app import App


class Zoom:
    def __init__(self, app: App) -> None:
        self.app = app
        self._from: tuple[object, float, float] | None = None  # (view, its place, the place once zoomed)

    @property
    def zoomed(self) -> bool:
        return self.app.screen.maximized is not None

    def toggle(self) -> None:
        screen = self.app.screen
        if screen.maximized is not None:
            return self.back()
        view = screen.focused
        if view is None:
            return
        place = view.scroll_y
        screen.maximize(view)
        self.app.call_after_refresh(lambda: setattr(self, "_from", (view, place, view.scroll_y)))

    def back(self) -> None:
        self.app.screen.minimize()
        zoomed, self._from = self._from, None
        if zoomed is None:
            return
        view, place, clamped = zoomed
        if view.scroll_y == clamped:  # the reader did not move while zoomed
            self.app.call_after_refresh(lambda: view.scroll_to(y=min(place, view.max_scroll_y), animate=False))
