"""The detail pane: one job's views, a tab each (kdebug/tui/tabs.py names them).

``pane.py`` is the shell: the banner, the descend path, the tab strip, and what every tab shares (the
job shown, the phase and pass the IR and Diff tabs stand at, the diff layout). Each tab is a widget of
its own module, with its rendering and the keys that are its own: ``source_tab.py``, ``ir_tab.py``,
``finish_tab.py``, ``ptx_tab.py``, ``asm_tab.py``, ``events_tab.py``, ``strategy_tab.py``,
``diff_tab.py``. Only the active tab is computed, and only again when what it shows changed.
"""
from kdebug.tui.detail.pane import DetailPane

__all__ = ["DetailPane"]
