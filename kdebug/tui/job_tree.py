"""The job tree: toplevel jobs, deferred jobs under the job that requested them, ↻ back-references."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from kdebug import events as E
from kdebug.session.model import JobView, SessionModel
from kdebug.tui.messages import JobChosen

ARROW = " \u2192 "
STATE_STYLE = {"queued": "dim", "compiling": "yellow", "done": "green", "cached": "cyan", "failed": "bold red",
               "killed": "bold red", "crashed": "bold red", "interrupted": "bold yellow", "abandoned": "dim red"}
STATE_MARK = {"queued": "\u00b7", "compiling": "\u27f3", "done": "\u2713", "cached": "\u2713", "failed": "\u2716",
              "killed": "\u25a0", "crashed": "\u2716", "interrupted": "\u25a0", "abandoned": "\u25a0"}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds else ""


NAME_MIN = 10  # columns a name keeps however narrow the pane


def short_name(name: str, room: int) -> str:
    """``name`` in ``room`` columns: its middle gives way (``grad(gradient(…argnum=1)``), both ends kept."""
    if len(name) <= room:
        return name
    room = max(room, NAME_MIN)
    head = (room - 1 + 1) // 2
    return name[:head] + "\u2026" + name[len(name) - (room - 1 - head):]


def job_label(job: JobView, model: SessionModel, room: int | None = None) -> Text:
    """``✓ name #id[=#N]  reason  state  time  (argument types)``: what matters first, the long part last.
    ``room``: the columns the label has in the pane; a longer name is shortened so that its ``#id``
    is never cut (the banner names the job whole)."""
    state, phase = model.job_state(job.id)
    alert = model.job_alert.get(job.id)
    style = STATE_STYLE.get(state, "")
    text = Text(no_wrap=True)
    if job.id == model.paused_job:
        text.append("\u23f8 ", "bold reverse yellow")
    if alert and not (alert == "error" and state == "failed"):
        text.append("\u26a0 " if alert == "warning" else "\u2716 ", "bold yellow" if alert == "warning" else "bold red")
    text.append(STATE_MARK.get(state, "") + " ", style)
    ident = f" #{job.id}" + (f"=#{job.duplicate_of}" if job.duplicate_of is not None else "")
    name = job.name if room is None else short_name(job.name, room - text.cell_len - len(ident))
    text.append(name, "bold reverse magenta" if job.id in model.cycle else "bold")
    text.append(f" #{job.id}", "dim")
    if job.duplicate_of is not None:  # next to the name: a deep, narrow tree keeps it (the banner says it whole)
        text.append(f"=#{job.duplicate_of}", "bold yellow")  # #7=#3: the same key as #3, compiled again
    if job.kind == "derivative":
        text.append("  derivative", "blue")
    if job.reason != "host":
        text.append(f"  {job.reason}", "magenta")
    if job.resolved_round:
        text.append(f"  round {job.resolved_round}", "cyan")
    text.append(f"  {state}" + (f": {phase}" if state == "compiling" and phase else
                                f" in {job.stopped_in}" if job.stopped_in else ""), style)
    if job.cache_hits:
        text.append(f" +{job.cache_hits} cached", "cyan")
    if job.compile_time:
        text.append(f"  {_ms(job.compile_time)}", "dim")
    text.append("  (" + ", ".join(job.argtypes) + ")", "dim")
    return text


def backref_label(ev: E.Reentrant) -> Text:
    """The resolution first: on a narrow pane the cycle path may be cut, never what happened to it."""
    text = Text(no_wrap=True)
    text.append(f"\u21bb #{ev.target_job} ", "bold reverse magenta")
    text.append(f" {ev.resolution} ", "bold red" if ev.resolution == "stopped" else "magenta")
    names = ev.cycle_names or [str(j) for j in ev.cycle]
    text.append(" " + ARROW.join(names), "bold magenta")
    return text


def shared_label(job: JobView) -> Text:
    """A second requester's edge to a job listed under its first requester (a diamond)."""
    text = Text(no_wrap=True)
    text.append(f"\u2192 #{job.id} {job.name}", "cyan")
    text.append("  shared: compiled once, under its first requester", "dim")
    return text


class JobTree(Tree):
    """Grows live from events; ``data`` of a node is ("job", id) or ("backref", index into model.reentrant)."""

    def __init__(self, model: SessionModel, id: str | None = None) -> None:
        super().__init__("jobs", id=id)
        self.model = model
        self.show_root = False
        self.guide_depth = 3
        self.job_nodes: dict[int, TreeNode] = {}
        self.shared_nodes: set[tuple[int, int]] = set()  # (requester, job) edges shown as → leaves

    def on_mount(self) -> None:
        self.border_title = "Jobs"

    def reset(self, model: SessionModel) -> None:
        self.model = model
        self.clear()
        self.job_nodes.clear()
        self.shared_nodes.clear()

    def add_events(self, events: list[E.Event]) -> None:
        """Grow the tree by a batch of events (already applied to the model).

        New nodes are created after the batch is scanned, with their final labels, so
        replaying a whole trace labels each node once. Marks (alerts, paused, cycle)
        come from the model: the tree only redraws the jobs whose marks changed.
        """
        model = self.model
        adds: list[tuple[str, object]] = []  # ("job", id), ("backref", Reentrant), ("shared", (from, to))
        dirty: set[int] = model.take_changed()
        for ev in events:
            job = getattr(ev, "job", None)
            if isinstance(ev, E.JobRequested):
                adds.append(("job", ev.job))
            elif isinstance(ev, E.Reentrant):
                adds.append(("backref", ev))
            elif isinstance(ev, E.DeferredResolved) and ev.job in model.jobs \
                    and ev.target_job in model.jobs[ev.job].shared:
                adds.append(("shared", (ev.job, ev.target_job)))
            elif isinstance(job, int) and not isinstance(ev, (E.Snapshot, E.PhaseFinished)):
                dirty.add(job)
        backref_index = {id(ev): i for i, ev in enumerate(model.reentrant)} if any(
            kind == "backref" for kind, _ in adds) else {}
        for kind, what in adds:
            if kind == "job":
                view = model.jobs[what]
                parent = self.job_nodes.get(view.parent) if view.parent is not None else None
                self.job_nodes[what] = (parent or self.root).add(
                    self._label(what), data=("job", what), expand=True, allow_expand=False)
                dirty.discard(what)
                if parent is not None and not parent.allow_expand:
                    parent.allow_expand = True
            elif kind == "backref":
                node = self.job_nodes.get(what.job)
                if node is not None:
                    node.add_leaf(backref_label(what), data=("backref", backref_index[id(what)]))
                    node.allow_expand = True
            elif what not in self.shared_nodes and what[0] in self.job_nodes:
                self.shared_nodes.add(what)
                node = self.job_nodes[what[0]]
                node.add_leaf(shared_label(model.jobs[what[1]]), data=("job", what[1]))
                node.allow_expand = True
        # a toplevel's phase shows in its waiting nested jobs' labels (compiling: finish (in #1))
        dirty |= {c for r in dirty if r in model.roots for c in self._waiting_under(r)}
        for jid in dirty:
            node, view = self.job_nodes.get(jid), model.jobs.get(jid)
            if node is not None and view is not None:
                node.set_label(self._label(jid))

    def _waiting_under(self, jid: int):
        for c in self.model.jobs[jid].children:
            child = self.model.jobs[c]
            if child.state == "compiling" and child.phase is None:
                yield c
            yield from self._waiting_under(c)

    def _label(self, job_id: int) -> Text:
        return job_label(self.model.jobs[job_id], self.model, self._room(job_id))

    def _room(self, job_id: int) -> int | None:
        """The columns a job's label has: the pane's, less the guides of its depth and the fold icon."""
        width = self.scrollable_content_region.width
        if not width:
            return None
        jobs, depth, jid = self.model.jobs, 0, job_id
        while jobs[jid].parent in jobs and depth < len(jobs):
            jid, depth = jobs[jid].parent, depth + 1
        # the fold icon's room is kept on every row: a job gets it when its first child comes
        return width - depth * self.guide_depth - len(self.ICON_NODE)

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        if width != getattr(self, "_labelled_at", None):  # the names shorten to the pane's new width
            self._labelled_at = width
            for jid, node in self.job_nodes.items():
                job = self.model.jobs.get(jid)
                # only a label whose name is or was shortened changes (1,000 labels made again cost a
                # fifth more time to the first screen): one shorter than any room as it is stays
                if job is not None and (len(job.name) > NAME_MIN or "\u2026" in str(node.label)):
                    label = self._label(jid)
                    if label.plain != str(node.label):
                        node.set_label(label)

    def show_cycle(self, backref: int | None) -> None:
        """Highlight the jobs of the cycle a selected ↻ closes (None clears it): the model says which."""
        for jid in self.model.select_cycle(backref):
            node = self.job_nodes.get(jid)
            if node is not None and jid in self.model.jobs:
                node.set_label(self._label(jid))

    def get_label_width(self, node: TreeNode) -> int:
        # Tree measures every label on each rebuild (focus changes included) by rendering it;
        # our labels are plain Text, so their length is enough, and 30x cheaper on 1,000 jobs.
        return node.label.cell_len + (len(self.ICON_NODE) if node.allow_expand else 0)

    def select_job(self, job_id: int) -> None:
        node = self.job_nodes.get(job_id)
        if node is not None:
            # NOTE: nodes added since the last idle have no line yet; building the lines now
            # (Tree does it lazily) lets the cursor land on a node that arrived in this batch.
            self.last_line  # noqa: B018 - Tree's public count of its lines, which builds them
            self.move_cursor(node)

    def selected(self) -> tuple[str, int] | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def _at(self) -> tuple[int | None, int | None]:
        """(job, back-reference) of the cursor: a ↻ node's job is the one that made the request."""
        kind, value = self.selected() or ("job", None)
        return (value, None) if kind == "job" else (self.model.reentrant[value].job, value)

    # ---- the actions of the keys the key table gives the tree ---------------------------
    def action_step_job(self, step: int) -> None:
        order = [job.id for job, _ in self.model.walk()]
        if order:
            cur = self._at()[0]
            i = order.index(cur) if cur in order else -step
            self.select_job(order[(i + step) % len(order)])

    def action_next_alert(self) -> None:
        """The next job, in tree order, that raised an alert (a re-entrant request, an error)."""
        order = [job.id for job, _ in self.model.walk()]
        cur = self._at()[0]
        start = order.index(cur) + 1 if cur in order else 0
        jid = next((j for j in order[start:] + order[:start] if j in self.model.job_alert), None)
        if jid is None:
            return self.notify("no job has an alert")
        self.select_job(jid)

    def action_reduce(self) -> None:
        """R: ``kdebug reduce`` on the script, keeping the alert at the cursor (kdebug/tui/reducing.py)."""
        from kdebug.tui.reducing import ReduceScreen, alert_to_reduce  # kept lazy for start-up time
        opts = getattr(self.app, "opts", None)
        if opts is None or getattr(self.app, "replay", False):
            return self.notify("a replay has no script to run: run it with kdebug SCRIPT, then R on the alert")
        spec, what = alert_to_reduce(self.model, *self._at())
        if spec is None:
            return self.notify(what)
        self.app.push_screen(ReduceScreen(opts, spec, what))

    def action_goto_target(self) -> None:
        job_id, backref = self._at()
        if backref is None:
            job = self.model.jobs.get(job_id)
            if job is None or not job.backrefs:
                return self.notify("select a \u21bb back-reference first")
            backref = job.backrefs[0]
        self.select_job(self.model.reentrant[backref].target_job)

    def action_resize(self, step: int) -> None:
        self.styles.width = max(12, min(self.app.size.width - 20, self.size.width + step))

    def on_tree_node_highlighted(self, message: Tree.NodeHighlighted) -> None:
        message.stop()
        if message.node.data is None:
            return
        kind, value = message.node.data
        if kind == "job":
            self.post_message(JobChosen(value, node=message.node))
        else:
            self.post_message(JobChosen(self.model.reentrant[value].job, backref=value, node=message.node))

    def on_tree_node_selected(self, message: Tree.NodeSelected) -> None:
        message.stop()
