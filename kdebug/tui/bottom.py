"""The bottom panel: the launches, every alert, the script's output, one tab each (- + resize it)."""
from __future__ import annotations

from textual.widgets import TabbedContent, TabPane

from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.tui.diagnostics import DiagnosticsPanel
from kdebug.tui.launches import LaunchesPanel, tab_label
from kdebug.tui.output import OutputPanel


class BottomPanel(TabbedContent):
    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__(id=id)
        self.compose_add_child(TabPane("Launches", LaunchesPanel(model, id="launches"), id="tab-launches"))
        self.compose_add_child(TabPane("Diagnostics", DiagnosticsPanel(model, id="diagnostics"), id="tab-diagnostics"))
        self.compose_add_child(TabPane("Output", OutputPanel(id="output"), id="tab-output"))

    def reset(self, model: SessionModel) -> None:
        self.query_one("#launches", LaunchesPanel).reset(model)
        self.get_tab("tab-launches").label = tab_label(model)
        self.query_one("#diagnostics", DiagnosticsPanel).reset(model)
        self.query_one("#output", OutputPanel).reset()

    def add_events(self, events: list[E.Event]) -> None:
        """New events (already in the model): the launches and the alerts."""
        self.query_one("#launches", LaunchesPanel).add_events(events)
        label = tab_label(self.query_one("#launches", LaunchesPanel).model)
        tab = self.get_tab("tab-launches")
        if str(tab.label) != label:
            tab.label = label
        self.query_one("#diagnostics", DiagnosticsPanel).refresh_alerts()

    def add_output(self, lines: list[str], events: list[E.Event]) -> None:
        """The script's output lines, and its kernels' print() among ``events``."""
        output = self.query_one("#output", OutputPanel)
        if lines:
            output.add_lines(lines)
        for ev in events:
            if isinstance(ev, E.KernelOutput):
                output.add_kernel_output(ev)

    def action_resize(self, step: int) -> None:
        self.styles.height = max(3, min(self.app.size.height - 8, self.size.height + step))
        self.styles.min_height = 0
