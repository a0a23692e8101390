"""Descend and ascend in the detail pane: the site marks of the Source and IR views, the path bar.

The detail pane calls ``mark`` after it loads a Source or IR document, and again when the
session comes to stand at a request (a pause, a replay step); the app keeps the ``DescendPath``.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kdebug.session import navigation as nav
from kdebug.tui.site_view import SiteView


class PathBar(Static):
    """``path: chain #1 → grad(f) #3  (u goes back)``: shown only while the path has a step."""

    DEFAULT_CSS = """
    PathBar { height: auto; max-height: 2; padding: 0 1; background: $panel; display: none; }
    PathBar.shown { display: block; }
    """

    def show_path(self, path: nav.DescendPath, model, here: int | None) -> None:
        if not len(path):
            self.set_class(False, "shown")
            return
        text = Text()
        text.append("path ", "dim")
        text.append(path.crumbs(model, here), "bold magenta")
        text.append("   u / \u232b back", "dim")
        self.update(text)
        self.set_class(True, "shown")


def _label(model):
    def label(jid: int) -> str:
        job = model.jobs.get(jid)
        return f"#{jid} {job.name}" if job is not None else f"#{jid}"
    return label


def follow_request(app, stepped: bool) -> None:
    """The request to highlight: the one the session stands at (a pause, a replay position); after a
    step from it, still that one, so the IR that lowering then prints shows its marker; none after
    a continue or a jump elsewhere."""
    here = nav.focused_request(app.model)
    last = app.detail.request_focus
    if here is not None:
        app.detail.request_focus = here
    elif not stepped or last is None or last.requester not in app.model.jobs:
        app.detail.request_focus = None


def mark(detail, tab: str, cursor: int | None = None) -> None:
    """Mark the sites of the job the detail pane shows in its ``tab`` view (source or ir)."""
    if tab not in ("source", "ir"):
        return
    view = detail.query_one(f"#view-{tab}", SiteView)
    model, job = detail.model, detail.model.jobs.get(detail.job_id) if detail.job_id is not None else None
    if job is None:
        return view.set_sites(lambda i: [], str)
    focus = detail.request_focus
    focus = focus if focus is not None and focus.requester == job.id else None
    doc = view.document
    if tab == "source":
        header = 1 if doc.lines and doc.lines[0].startswith("# ") and job.source_file else 0
        by_line = nav.source_sites(model, job, header)
        lines = {i for i, sites in by_line.items() if focus is not None and focus in sites}
        targets = lambda i: [s.target for s in by_line.get(i, ())]  # noqa: E731
    else:
        sites = nav.IrSites(model, job.id)
        lines = set(nav.marker_lines(doc.lines, focus, model.entries.get(focus.target))) if focus is not None else set()
        targets = lambda i: sites.targets(doc.lines[i]) if 0 <= i < len(doc.lines) else []  # noqa: E731
    view.set_sites(targets, _label(model), lines, cursor)


def _focused_view(app) -> SiteView | None:
    """The Source or IR view enter acts on: the focused one, else the one the detail pane shows."""
    focused = app.focused
    if isinstance(focused, SiteView):
        return focused
    tab = app.detail.active_tab
    return app.detail.query_one(f"#view-{tab}", SiteView) if tab in ("source", "ir") else None


def go_down(app) -> None:
    """enter: to the job the site under the cursor asks for; the job left goes on the path."""
    detail = app.detail
    view = _focused_view(app)
    if view is None or detail.job_id is None:
        app.notify("descend works in the Source and IR views (1, 2): enter on a line marked \u25c2")
        return
    targets = view.targets_at_cursor()
    if not targets:
        app.notify("no launch, pointer or grad site on this line: \u2191 \u2193 to a line marked \u25c2, then enter")
        return
    tab = detail.active_tab
    app.path.descend(nav.Stop(detail.job_id, tab, view.cursor, detail.phase))
    app.tree.select_job(targets[0])
    show_path(app, targets[0])


def go_up(app) -> None:
    """u / backspace: back to the job and line the last descend left from."""
    stop = app.path.ascend()
    if stop is None:
        app.notify("nothing to go back to: enter on a site in Source or IR descends into its job")
        return
    detail = app.detail
    detail.pending_cursor = (stop.job, stop.tab, stop.line)
    if stop.phase:
        detail.phase = stop.phase
    if detail.active_tab != stop.tab:
        detail.set_tab(stop.tab)
    if detail.job_id == stop.job:
        detail.mark_sites()
    app.tree.select_job(stop.job)
    show_path(app, stop.job)


def show_path(app, here: int | None) -> None:
    app.detail.query_one("#path", PathBar).show_path(app.path, app.model, here)
