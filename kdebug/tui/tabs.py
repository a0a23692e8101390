"""The detail pane's tabs, in one table: the pane builds its strip from it, the key table binds 1-8 to it
(a tab's key is its place), and the help screen and the command palette name the tabs by it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tab:
    id: str  # the pane's name for it: its TabPane is tab-<id>, its view view-<id>
    label: str  # on the tab strip
    name: str  # in the help screen and the command palette
    shows: str  # the command palette's description: "Show the job's <shows>"
    short: str = ""  # on the strip below 100 columns (empty: the label)


TABS = (Tab("source", "Source", "Source", "Python source", "Src"),
        Tab("ir", "IR", "IR by phase", "IR after each phase"),
        Tab("finish", "Finish", "Finish diff", "before/after-finish diff", "Fin"),
        Tab("ptx", "PTX", "PTX", "PTX and ptxas report"),
        Tab("asm", "Host asm", "Host asm", "host assembly", "Asm"),
        Tab("events", "Events", "Events", "events", "Ev"),
        Tab("strategy", "Strategy", "Strategy", "deferred-codegen strategy explained", "Strat"),
        Tab("diff", "Diff", "Stage diff", "any two stages (phases, passes) compared"))
NARROW = 100  # columns: below, the strip shows the short labels
TAB_IDS = tuple(tab.id for tab in TABS)


def key_of(tab: Tab) -> str:
    """The key that shows ``tab``: its place on the strip, 1 to 8."""
    return str(TABS.index(tab) + 1)
