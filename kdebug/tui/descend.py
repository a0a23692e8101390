"""Descend and ascend in the detail pane: the site marks of the Source and IR views, the path bar.

The detail pane keeps the ``DescendPath`` and calls these with what they need: ``mark`` after it
loads a Source or IR document, and again when the session comes to stand at a request (a pause, a
replay step); ``go_down`` and ``go_up`` say where to go (or why not), and the pane goes there.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kdebug.session import navigation as nav
from kdebug.tui.site_view import SiteView

NOT_A_SITE_VIEW = "descend works in the Source and IR views (1, 2): enter on a line marked \u25c2"
NO_SITE = "no launch, pointer or grad site on this line: \u2191 \u2193 to a line marked \u25c2, then enter"
NOTHING_ABOVE = "nothing to go back to: enter on a site in Source or IR descends into its job"


class PathBar(Static):
    """``path: chain #1 → grad(f) #3  (u goes back)``. It keeps its line whether the path has a step or
    not (a bar that came and went with enter and u made the views below it jump); below 32 lines, where
    a line is dear, it takes none: the banner begins with the way back (``way_back``)."""

    DEFAULT_CSS = """
    PathBar { height: 1; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    Screen.-short PathBar, Screen.-tiny PathBar { display: none; }
    """

    def show_path(self, path: nav.DescendPath, model, here: int | None) -> None:
        text = Text()
        text.append("path ", "dim")
        if not len(path):
            text.append("(enter on a line marked \u25c2 descends into its job; u comes back)", "dim")
        else:
            text.append(path.crumbs(model, here), "bold magenta")
            text.append("   u / \u232b back", "dim")
        if text.plain != getattr(self, "_shown", None):  # one line, always: no layout to redo
            self._shown = text.plain
            self.update(text, layout=False)


def way_back(path: nav.DescendPath, model) -> Text | None:
    """Below 32 lines, the banner's first words while the path has a step: ``parent #1 ◂ u ·``."""
    if not len(path):
        return None
    text = Text()
    text.append(path.crumbs(model, None), "bold magenta")
    text.append(" \u25c2 u \u00b7 ", "dim")
    return text


def _label(model):
    def label(jid: int) -> str:
        job = model.jobs.get(jid)
        return f"#{jid} {job.name}" if job is not None else f"#{jid}"
    return label


def follow_request(model, last, stepped: bool):
    """The request to highlight: the one the session stands at (a pause, a replay position); after a
    step from it, still that one (``last``), so the IR that lowering then prints shows its marker; none
    after a continue or a jump elsewhere."""
    here = nav.focused_request(model)
    if here is not None:
        return here
    if not stepped or last is None or last.requester not in model.jobs:
        return None
    return last


def mark(view: SiteView, model, job, focus, tab: str, cursor: int | None = None) -> None:
    """Mark the sites of ``job`` in its ``tab`` view (source or ir); ``focus``: the request to highlight."""
    view.faults = {}
    if job is None:
        return view.set_sites(lambda i: [], str)
    focus = focus if focus is not None and focus.requester == job.id else None
    doc = view.document
    if tab == "source":
        header = 1 if doc.lines and doc.lines[0].startswith("# ") and job.source_file else 0
        by_line = nav.source_sites(model, job, header)
        lines = {i for i, sites in by_line.items() if focus is not None and focus in sites}
        targets = lambda i: [s.target for s in by_line.get(i, ())]  # noqa: E731
        view.faults = nav.fault_lines(model, job, header)
    else:
        sites = nav.IrSites(model, job.id)
        lines = set(nav.marker_lines(doc.lines, focus, model.entries.get(focus.target))) if focus is not None else set()
        targets = lambda i: sites.targets(doc.lines[i]) if 0 <= i < len(doc.lines) else []  # noqa: E731
    view.set_sites(targets, _label(model), lines, cursor)


def go_down(path: nav.DescendPath, view: SiteView | None, job: int | None, tab: str, phase: str) -> int | str:
    """enter: the job the site under ``view``'s cursor asks for, the job left put on ``path``; or why not."""
    if view is None or job is None:
        return NOT_A_SITE_VIEW
    targets = view.targets_at_cursor()
    if not targets:
        return NO_SITE
    path.descend(nav.Stop(job, tab, view.cursor, phase))
    return targets[0]


def go_up(path: nav.DescendPath) -> nav.Stop | str:
    """u / backspace: the job and line the last descend left from; or why there is none."""
    stop = path.ascend()
    return stop if stop is not None else NOTHING_ABOVE
