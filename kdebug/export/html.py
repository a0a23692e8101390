"""The session model as one HTML file that opens offline in any browser.

What it holds: the header (script, backend, strategy, status, kdebug version, the command, and how
many stages of how many jobs a ``kdebug run --override`` file replaced), the job tree (deferred jobs
under their requesters, re-entrant references with their cycle, shared jobs, duplicates,
finish-coverage misses, edited jobs), every job's recorded stages (phases, and the passes of
``optimize`` and ``emit``) highlighted by pygments' HTML formatter, each edited one marked with the
file it is, the launches, the diagnostics with their source excerpts, and the events timeline.

How it stays small: every distinct line of every stage is highlighted once and kept once, in a line
table; a stage is a list of line numbers into it, stored as the edits (``kdebug.passes.edits``) that
turn the job's previous stage into it, so a pass that changed one line costs one line. ``page.js``
decodes them, shows any stage, diffs any two, and follows anchors such as
``#job-3/after_finish/L42``. Without JavaScript the page is static HTML: the tree, the diagnostics,
the launches, and each job's stages in full inside ``<noscript>`` (which a browser running scripts
does not even build); a big session keeps only the before/after-finish pair there, unhighlighted
when even that would not fit ``STATIC_BUDGET``.

What it trusts: nothing of the trace. Every text from it is escaped where the page is written (the
data for page.js is JSON with no ``<`` in it, so it can neither end its script element nor open a
comment), page.js turns it into markup only through a template that escapes every value, and a
Content-Security-Policy lets the page run its own two inline scripts and style (by their SHA-256) and
nothing else: no other script, handler, style attribute, image, frame or form submission.
"""
from __future__ import annotations

import base64
import hashlib
import html
import importlib
import importlib.resources
import io
import json
import re
import shlex

from pygments.formatters import HtmlFormatter
from pygments.token import Token

import kdebug
from kdebug import events as E
from kdebug import passes
from kdebug.lazy_dataclasses import dataclass
from kdebug.session import stage_diff
from kdebug.session.headless import render_ending
from kdebug.session.model import SessionModel

ARROW = " \u2192 "
STATE_MARK = {"queued": "\u00b7", "compiling": "\u27f3", "done": "\u2713", "cached": "\u2713", "failed": "\u2716"}
FINISH_PAIR = ("before_finish", "after_finish")
# bytes of highlighted stage HTML the static (no-JavaScript) view may hold; beyond, it keeps less
STATIC_BUDGET = 1_500_000
# the lexers of the TUI's views (kdebug/tui/documents.py), imported directly: a lookup by name scans them all
LEXERS = {"llvm": ("pygments.lexers.asm", "LlvmLexer"), "python": ("pygments.lexers.python", "PythonLexer"),
          "ptx": ("pygments.lexers.ptx", "PtxLexer"), "asm": ("pygments.lexers.asm", "GasLexer")}
# a highlighted line as pygments' HTML formatter writes it: escaped text in <span class="..."> elements; any
# other markup (none is expected) and the line is written as escaped plain text instead
SAFE_LINE = re.compile(r'(?:[^<>&]|&(?:lt|gt|amp|quot|#39|#x27);|<span class="[\w -]*">|</span>)*')
SURROGATE = re.compile("[\ud800-\udfff]")  # no character: a page holding one cannot be written as UTF-8
# the page runs its own two scripts and nothing else, loads nothing, and submits no form ({} for their hashes)
CSP = ("default-src 'none'; script-src {scripts}; style-src {styles}; img-src 'none'; base-uri 'none'; "
       "form-action 'none'")
# whitespace, punctuation and operators stay unstyled: a span for each would triple the file
PLAIN_TOKENS = (Token.Text, Token.Punctuation, Token.Error, Token.Generic)


@dataclass
class ExportStats:
    """What ``write_html`` wrote: for the command's last line and the benchmark."""

    path: str
    bytes: int
    jobs: int
    stages: int  # stage texts stored (phase and pass snapshots)
    lines: int  # distinct lines in the line table
    static: str  # what the no-JavaScript view holds: "all stages", "finish pair", "finish pair, plain"


class LineTable:
    """Every distinct (language, line) once, highlighted once by pygments' HTML formatter."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int] = {}
        self.keys: list[tuple[str, str]] = []
        self._by_language: dict[str, dict[str, int]] = {}  # the same ids, a dict of lines per language
        self._recorded: dict[str, dict[str, int]] = {}  # language -> a pass's line as recorded -> its id
        self._formatter = HtmlFormatter(nowrap=True)
        self._lexers: dict[str, object] = {}

    def id_of(self, language: str, line: str) -> int:
        key = (language, line)
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.keys)
            self.keys.append(key)
            self._by_language.setdefault(language, {})[line] = i
        return i

    def ids_of(self, language: str, lines: list[str]) -> list[int]:
        """``[id_of(language, line) for line in lines]``, looked up in one pass (a stage holds thousands of
        lines, most of them seen in the stage before); new lines numbered in order as ``id_of`` would."""
        ids = list(map(self._by_language.setdefault(language, {}).get, lines))
        if None in ids:
            for k, i in enumerate(ids):
                if i is None:
                    ids[k] = self.id_of(language, lines[k])
        return ids

    def pass_ids(self, language: str, lines: list[str]) -> list[int] | None:
        """``ids_of(language, text.expandtabs(4).splitlines())`` for the text ``"\\n".join(lines) + "\\n"`` of a
        recorded pass (``SessionModel.pass_lines``), from a dict of the lines as recorded: a pass's list
        shares its unchanged lines with the pass before, so most are found at once. None where a line
        would not stay one line of the text (a line break of ``str.splitlines`` in it; no lines at all):
        the caller takes the text."""
        if not lines:
            return None
        seen = self._recorded.setdefault(language, {})
        ids = list(map(seen.get, lines))
        if None in ids:
            for k, i in enumerate(ids):
                if i is None:
                    line = lines[k]
                    expanded = line.expandtabs(4) if "\t" in line else line
                    if expanded and expanded.splitlines() != [expanded]:
                        return None
                    ids[k] = seen[line] = self.id_of(language, expanded)
        return ids

    def _lexer(self, language: str):
        if language not in self._lexers:
            where = LEXERS.get(language)
            if where is None:
                self._lexers[language] = None
            else:
                module = importlib.import_module(where[0])
                self._lexers[language] = getattr(module, where[1])(stripnl=False, ensurenl=False)
        return self._lexers[language]

    def highlight(self, language: str, line: str) -> str:
        """One line as HTML. Line by line, as the TUI highlights (``kdebug/tui/documents.py``): the
        line is lexed with its newline, so rules that end at one (LLVM's ``;`` comments) match."""
        lexer = self._lexer(language)
        if lexer is None or not line.strip():
            return html.escape(line, quote=False)
        tokens = [(Token.Text if _plain(ttype) else ttype, value) for ttype, value in lexer.get_tokens(line + "\n")]
        out = io.StringIO()
        self._formatter.format(tokens, out)
        return out.getvalue().rstrip("\n")

    def all_html(self) -> list[str]:
        out = []
        for lang, line in self.keys:
            h = self.highlight(lang, line)
            out.append(h if SAFE_LINE.fullmatch(h) else html.escape(line, quote=True))
        return out


def _plain(ttype) -> bool:
    plain = _PLAIN.get(ttype)
    if plain is None:  # a few dozen token types, hundreds of thousands of tokens: each type decided once
        plain = _PLAIN[ttype] = any(ttype in t for t in PLAIN_TOKENS) or (
            ttype in Token.Operator and ttype not in Token.Operator.Word)
    return plain


_PLAIN: dict = {}


def _finish_misses(model: SessionModel) -> dict[int, str]:
    """Job -> the finish-coverage diagnostic that names it."""
    return {d.job: d.message for d in model.diagnostics if d.category == "finish" and d.job is not None}


def _stage_groups(stages: list[stage_diff.StageRef], snap_index: dict[int, int], strings: dict[str, int]) -> list[list]:
    """The job's stages for page.js: ``[phase, snapshot, changed, passes]`` per phase, in order, where
    ``passes`` is ``[[name, unit, changed, snapshot], ...]`` (or 0; name and unit index ``strings``:
    a pipeline's pass names repeat in every job) and a snapshot is an index into the page's stage
    texts (-1: none)."""
    groups: list[list] = []
    by_phase: dict[str, list] = {}
    for st in stages:
        group = by_phase.get(st.phase)
        if group is None or (not st.is_pass and (group[1] != -1 or group is not groups[-1])):  # (an edited phase:
            # its passes, then its original, optimize.original, then the edited snapshot, a group of its own)
            group = by_phase[st.phase] = [st.phase, -1, 1, 0]
            groups.append(group)
        snap = snap_index.get(st.snapshot, -1) if st.snapshot is not None else -1
        if st.is_pass:
            if not group[3]:
                group[3] = []
            group[3].append([strings.setdefault(st.name, len(strings)), strings.setdefault(st.unit, len(strings)),
                             int(st.changed), snap])
        else:
            group[1], group[2] = snap, int(st.changed)
    return groups


def _event_text(ev: E.Event) -> str:
    """One event of the timeline, in a line (as the TUI's Events tab writes it)."""
    bits = []
    for name in ("phase", "pass_name", "reason", "duration", "target_job", "round", "resolution", "breakpoint",
                 "message", "error", "severity", "category", "status"):
        value = getattr(ev, name, None)
        if value in (None, "", 0.0, 0):
            continue
        if name == "duration":
            value = f"{value * 1e3:.2f} ms"
        if isinstance(value, str):
            value = value.splitlines()[0] if value.strip() else value
        bits.append(f"{name}={value}" if name not in ("phase", "message", "pass_name") else str(value))
    if isinstance(ev, E.Snapshot):
        bits.append(f"{ev.text.count(chr(10)) + 1} lines")
    if isinstance(ev, E.Reentrant):
        bits.append(ARROW.join(ev.cycle_names))
    if isinstance(ev, (E.LaunchStarted, E.LaunchFinished)):
        bits.insert(0, f"#{ev.launch} {ev.name}")
        if isinstance(ev, E.LaunchStarted):
            bits.append(f"grid={tuple(ev.grid)} block={tuple(ev.block)}")
    if isinstance(ev, E.KernelOutput):
        dropped = f", {ev.dropped} not kept" if ev.dropped else ""
        bits.append(f"#{ev.launch} {ev.name}: {len(ev.lines)} lines printed{dropped}")
    if isinstance(ev, E.Paused) and ev.job is not None:
        bits.append(f"job #{ev.job}")
    if isinstance(ev, E.PassList):
        bits.append(f"{len(ev.passes)} passes, {sum(1 for p in ev.passes if p[2])} changed")
    if isinstance(ev, E.SessionStarted):
        bits.append(ev.script)
    return "  ".join(bits)


def command_line(started: E.SessionStarted | None) -> str:
    """The recorded run as a command: what the session_started event says of its options."""
    if started is None:
        return ""
    words = ["kdebug", "run", "--backend", started.backend, "--strategy", started.strategy]
    if sorted(started.sanitizers) != ["memcheck", "synccheck"]:
        words += ["--sanitize", ",".join(started.sanitizers) or "synccheck"]
    words += [started.script, *started.argv]
    return shlex.join(words)


class Page:
    """Builds the page from a model: ``data`` for page.js, the static HTML around it."""

    def __init__(self, model: SessionModel, trace_name: str = "") -> None:
        self.model = model
        self.trace_name = trace_name
        self.lines = LineTable()
        self.snaps: list[list] = []  # [language, base (-1: none), edits]
        self.job_stages: dict[int, list[stage_diff.StageRef]] = {}
        self.job_snap: dict[int, dict[int, int]] = {}  # job -> model snapshot id -> index in snaps
        self.job_texts: dict[int, dict[str, list[int]]] = {}  # job -> phase -> its line ids (static view)
        self.launch_depths: set[int] = set()  # nesting depths of the launches table's rows (device-side launches)

    # ---- the stage texts ------------------------------------------------------------------
    def encode_stages(self) -> None:
        model = self.model
        for job, _ in model.walk():
            stages = stage_diff.job_stages(model, job.id)
            self.job_stages[job.id] = stages
            index: dict[int, int] = {}
            texts: dict[str, list[int]] = {}
            previous, base = [], -1
            for st in stages:
                if st.snapshot is None or st.snapshot in index:
                    continue  # an unchanged pass shows the stage an earlier one stored
                ids = None
                if st.snapshot in model.pass_snapshots:  # its lines as the model keeps them: no text to split
                    language = st.language
                    ids = self.lines.pass_ids(language, model.pass_lines(st.snapshot))
                if ids is None:
                    text = stage_diff.stage_text(model, st)
                    if text is None:
                        continue
                    language = st.language if st.is_pass else model.snapshots[st.snapshot].language
                    ids = self.lines.ids_of(language, (text.expandtabs(4) if "\t" in text else text).splitlines())
                edits = passes.edits(previous, ids) if base >= 0 else [[0, 0, ids]]
                index[st.snapshot] = len(self.snaps)
                self.snaps.append([language, base, edits])
                base, previous = len(self.snaps) - 1, ids
                if not st.is_pass:
                    texts[st.phase] = ids
            self.job_snap[job.id] = index
            self.job_texts[job.id] = texts

    # ---- data for page.js -------------------------------------------------------------------
    def data(self, line_html: list[str]) -> dict:
        model = self.model
        misses = _finish_misses(model)
        jobs, strings = [], {}
        for job, depth in model.walk():
            state, phase = model.job_state(job.id)
            jobs.append({
                "id": job.id, "name": job.name, "parent": job.parent, "depth": depth, "reason": job.reason,
                "kind": job.kind, "target": job.target, "key": job.key, "argtypes": job.argtypes, "state": state,
                "phase": phase,
                "time": job.compile_time, "phases": job.phase_times, "cached": job.cache_hits,
                "round": job.resolved_round, "dup": job.duplicate_of, "error": job.error,
                "file": job.source_file, "line": job.source_line, "children": job.children,
                "shared": job.shared, "alert": model.job_alert.get(job.id), "miss": misses.get(job.id),
                "backrefs": [self._backref(i) for i in job.backrefs],
                "stages": _stage_groups(self.job_stages[job.id], self.job_snap[job.id], strings),
                "events": job.events, "edited": job.edited,
            })
        timeline = [[round(ev.t, 6), ev.kind, getattr(ev, "job", None) if isinstance(getattr(ev, "job", None), int)
                     else None, _event_text(ev)] for ev in model.events]
        return {"lines": line_html, "snaps": self.snaps, "jobs": jobs, "strings": list(strings), "events": timeline}

    def _backref(self, index: int) -> dict:
        ev = self.model.reentrant[index]
        return {"target": ev.target_job, "resolution": ev.resolution, "cycle": ev.cycle,
                "names": ev.cycle_names or [str(j) for j in ev.cycle]}

    # ---- static HTML ---------------------------------------------------------------------------
    def header(self) -> str:
        model, s = self.model, self.model.started
        ended = model.ended
        status = (ended.status if ended is not None else "never ended") or "unknown"
        rows = [("script", s.script), ("backend", s.backend), ("strategy", f"{s.strategy} ({s.origin})"),
                ("sanitizers", ", ".join(s.sanitizers) or "none"),
                ("status", status + (f" (exit status {ended.exit_code})" if ended is not None else "")),
                ("command", command_line(s)), ("kdebug", kdebug.__version__)]
        if self.trace_name:
            rows.append(("trace", self.trace_name))
        counts = (f"{len(model.jobs)} job(s), {len(model.launches)} launch(es), {len(model.alerts)} alert(s), "
                  f"{len(model.events)} events")
        out = [f'<header><h1>kdebug: <code>{_e(s.script)}</code></h1>',
               f'<p class="counts">{_e(counts)}</p><dl class="facts">']
        for name, value in rows:
            cls = f' class="status-{_e((status.split() or ["unknown"])[0])}"' if name == "status" else ""
            out.append(f"<dt>{name}</dt><dd{cls}><code>{_e(value)}</code></dd>")
        out.append("</dl>")
        edited = self.edited_line()
        if edited:
            out.append(f'<p class="edited">{_e(edited)}</p>')
        ending = render_ending(model)
        if ending:
            kind = "never-ended" if ended is None else "ended-badly"
            out.append(f'<pre class="ending {kind}">{_e(chr(10).join(ending))}</pre>')
        out.append('<nav class="sections"><a href="#jobs">jobs</a> <a href="#diagnostics">diagnostics</a> '
                   '<a href="#launches">launches</a> <a href="#timeline">timeline</a></nav></header>')
        return "".join(out)

    def edited_line(self) -> str:
        """The header's line of a run with ``--override``: how many stages of how many jobs were edited."""
        edited = [job.edited for job in self.model.jobs.values() if job.edited]
        if not edited:
            return ""
        stages = sum(len(e) for e in edited)
        return (f"edited: this run used --override, {stages} edited stage{'s' if stages != 1 else ''} of "
                f"{len(edited)} job{'s' if len(edited) != 1 else ''}")

    def tree(self) -> str:
        model = self.model
        misses = _finish_misses(model)
        out = ['<ul class="tree">']

        def visit(jid: int) -> None:
            job = model.jobs[jid]
            state, phase = model.job_state(jid)
            alert = model.job_alert.get(jid)
            mark = ("\u26a0 " if alert == "warning" else "\u2716 ") if alert and not (
                alert == "error" and state == "failed") else ""
            bits = [f'<span class="mark">{mark}{STATE_MARK.get(state, "")}</span> ',
                    f'<a class="job" href="#job-{_e(jid)}" data-job="{_e(jid)}"><b>{_e(job.name)}</b> #{_e(jid)}</a>']
            if job.kind == "derivative":
                bits.append(' <span class="kind">derivative</span>')
            if job.reason != "host":
                bits.append(f' <span class="reason">{_e(job.reason)}</span>')
            if job.resolved_round:
                bits.append(f' <span class="round">round {_e(job.resolved_round)}</span>')
            bits.append(f' <span class="state state-{_e(state)}">{_e(state)}'
                        f'{_e(": " + phase) if state == "compiling" and phase else ""}</span>')
            if job.duplicate_of is not None:
                bits.append(f' <span class="dup">duplicate of <a href="#job-{_e(job.duplicate_of)}">'
                            f'#{_e(job.duplicate_of)}</a></span>')
            if job.cache_hits:
                bits.append(f' <span class="cached">+{_e(job.cache_hits)} cached</span>')
            if jid in misses:
                bits.append(' <span class="miss">missed the finish passes</span>')
            if job.edited:
                files = "; ".join(f"{stage}: {file}" for stage, file in job.edited.items())
                bits.append(f' <span class="edited" title="{_e("edited: " + files)}">edited</span>')
            if job.compile_time:
                bits.append(f' <span class="time">{_e(_ms(job.compile_time, 1))}</span>')
            bits.append(f' <span class="args">({_e(", ".join(job.argtypes))})</span>')
            out.append(f'<li id="tree-{_e(jid)}" class="alert-{_e(alert or "none")}">' + "".join(bits))
            leaves = [self._backref_leaf(i) for i in job.backrefs]
            leaves += [f'<li class="shared">\u2192 <a href="#job-{_e(t)}">#{_e(t)} {_e(model.jobs[t].name)}</a> '
                       '<span class="note">shared: compiled once, under its first requester</span></li>'
                       for t in job.shared if t in model.jobs]
            if job.children or leaves:
                out.append("<ul>")
                for c in job.children:
                    visit(c)
                out.extend(leaves)
                out.append("</ul>")
            out.append("</li>")

        for r in model.roots:
            visit(r)
        if not model.roots:
            out.append("<li>(no jobs)</li>")
        out.append("</ul>")
        return "".join(out)

    def _backref_leaf(self, index: int) -> str:
        ev = self.model.reentrant[index]
        names = ev.cycle_names or [str(j) for j in ev.cycle]
        path = ARROW.join(f'<a href="#job-{_e(j)}">{_e(n)}</a>' for j, n in zip(ev.cycle, names)) if len(
            names) == len(ev.cycle) else _e(ARROW.join(names))
        return (f'<li class="backref backref-{_e(ev.resolution)}" data-cycle="{_e(" ".join(map(str, ev.cycle)))}">'
                f'\u21bb <a href="#job-{_e(ev.target_job)}">#{_e(ev.target_job)}</a> <b>{_e(ev.resolution)}</b> '
                f'{path}</li>')

    def diagnostics(self) -> str:
        alerts = self.model.alerts
        out = ['<section id="diagnostics"><h2>Diagnostics</h2>']
        if not alerts:
            out.append("<p>(none)</p>")
        for a in alerts:
            job = f' <a href="#job-{_e(a.job)}">job #{_e(a.job)}</a>' if a.job is not None else ""
            detail = f"<pre>{_e(chr(10).join(a.detail))}</pre>" if a.detail else ""
            out.append(f'<div class="alert alert-{_e(a.severity)}"><p><b>{_e(a.severity)}</b>{job}: '
                       f'{_e(a.title)}</p>{detail}</div>')
        out.append("</section>")
        return "".join(out)

    def launches(self) -> str:
        model = self.model
        out = ['<section id="launches"><h2>Launches</h2>']
        if not model.launches:
            out.append("<p>(none)</p></section>")
            return "".join(out)
        out.append("<table><tr><th>#</th><th>kernel</th><th>job</th><th>grid</th><th>block</th><th>backend</th>"
                   "<th>time</th><th>status</th></tr>")
        for ln in model.launches.values():
            depth = model.launch_depth(ln.id)
            nested = "\u21b3 " if depth else ""
            status = "ok" if ln.state == "ok" else (f"error: {ln.error.splitlines()[0]}" if ln.error else ln.state)
            time = _ms(ln.duration, 3) if ln.duration is not None else ""
            if ln.held_time >= 1e-3:
                time += f" (+{_ms(ln.held_time, 1)} held)"
            job = f'<a href="#job-{_e(ln.job)}">#{_e(ln.job)}</a>' if ln.job is not None else ""
            self.launch_depths.add(depth)  # indented by a rule of the page's style: it allows no style attribute
            out.append(f'<tr class="launch-{_e(ln.state)}"><td>{_e(ln.id)}</td><td class="depth-{depth}">'
                       f'{nested}{_e(ln.name)}</td><td>{job}</td><td>{_e(_dims(ln.grid))}</td>'
                       f'<td>{_e(_dims(ln.block))}</td><td>{_e(ln.backend)}</td><td>{_e(time)}</td>'
                       f'<td>{_e(status)}</td></tr>')
        out.append("</table></section>")
        return "".join(out)

    def static_stages(self, line_html: list[str]) -> tuple[str, str]:
        """Every job's stages for a browser without JavaScript, and what they hold (the budget's tier)."""
        def size(phases, highlighted: bool) -> int:
            return sum(len(line_html[i]) if highlighted else len(self.lines.keys[i][1]) + 8
                       for texts in self.job_texts.values() for ph, ids in texts.items()
                       if phases is None or ph in phases for i in ids)

        if size(None, True) <= STATIC_BUDGET:
            phases, highlighted, tier = None, True, "all stages"
        elif size(FINISH_PAIR, True) <= STATIC_BUDGET:
            phases, highlighted, tier = FINISH_PAIR, True, "finish pair"
        else:
            phases, highlighted, tier = FINISH_PAIR, False, "finish pair, plain"
        out = []
        if tier != "all stages":
            out.append('<p class="note">Without JavaScript this page shows each job\'s before_finish and '
                       f'after_finish{" without highlighting" if not highlighted else ""}: every stage would be '
                       f'more than {STATIC_BUDGET / 1e6:.1f} MB of highlighted text here. Turn JavaScript on for '
                       'every stage, pass and diff.</p>')
        for job, _ in self.model.walk():
            out.append(f'<section class="job" id="job-{_e(job.id)}"><h2>{_e(job.name)} #{_e(job.id)}</h2>'
                       f'<p class="key"><code>{_e(job.key)}</code></p>')
            if job.error:
                out.append(f'<pre class="error">{_e(job.error)}</pre>')
            texts = self.job_texts[job.id]
            shown = [ph for ph in texts if phases is None or ph in phases]
            for stage, file in job.edited.items():  # an edited stage this view leaves out still says so
                if stage not in shown:
                    out.append(f'<p class="edited">edited: {_e(file)} (the {_e(stage)} stage)</p>')
            if not shown:
                out.append("<p>(no stage recorded)</p>")
            for ph in shown:
                ids = texts[ph]
                body = "\n".join(line_html[i] if highlighted else _e(self.lines.keys[i][1]) for i in ids)
                file = job.edited.get(ph)
                mark = ' <span class="edited">edited</span>' if file is not None else ""
                note = f'<p class="edited">edited: {_e(file)}</p>' if file is not None else ""
                out.append(f'<h3 id="job-{_e(job.id)}/{_e(ph)}">{_e(ph)}{mark}</h3>{note}<pre class="hl">{body}</pre>')
            out.append("</section>")
        return "".join(out), tier

    # ---- the page ---------------------------------------------------------------------------
    def render(self) -> tuple[str, ExportStats]:
        self.encode_stages()
        line_html = self.lines.all_html()
        static, tier = self.static_stages(line_html)
        data = json.dumps(self.data(line_html), separators=(",", ":"), ensure_ascii=False)
        # nothing in the data may close the script element, open a comment or a script inside it: no "<" at all
        data = data.replace("<", "\\u003c")
        body = "".join([
            self.header(),
            '<main><nav id="jobs"><h2>Jobs</h2>', self.tree(), "</nav>",
            '<div id="detail"><div id="view"></div><noscript>', static, "</noscript></div></main>",
            self.diagnostics(), self.launches(),
            '<section id="timeline"><h2>Events</h2><noscript><p>The events timeline needs JavaScript.</p>'
            '</noscript><div id="events"></div></section>',
            f'<script type="application/json" id="kdebug-data">{data}</script>',
        ])
        css = "\n".join(ln for ln in HtmlFormatter().get_style_defs(".hl").splitlines() if ln.startswith(".hl"))
        depths = "".join(f"\n#launches td.depth-{d} {{ padding-left: {d + 0.3}em; }}"
                         for d in sorted(self.launch_depths))
        style = f"{_asset('page.css')}\n{css}{depths}"
        early, script = "document.documentElement.classList.add('js')", _asset("page.js")
        csp = CSP.format(scripts=f"{_sha256(early)} {_sha256(script)}", styles=_sha256(style))
        page = "".join([
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
            f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>kdebug: {_e(self.model.started.script)}</title>",
            f"<script>{early}</script>",
            f"<style>{style}</style></head><body>",
            body,
            f"<script>{script}</script></body></html>\n",
        ])
        page = SURROGATE.sub("\ufffd", page)  # text of a model made in memory (a live session) may hold one
        stats = ExportStats("", len(page.encode("utf-8")), len(self.model.jobs), len(self.snaps),
                            len(self.lines.keys), tier)
        return page, stats


def _sha256(text: str) -> str:
    """The Content-Security-Policy source of an inline script or style with exactly this text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _ms(seconds, digits: int) -> str:
    return f"{seconds * 1e3:.{digits}f} ms"


def _dims(d) -> str:
    return "(" + ",".join(str(x) for x in d) + ")"


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _asset(name: str) -> str:
    return importlib.resources.files("kdebug.export").joinpath(name).read_text(encoding="utf-8")


def render(model: SessionModel, trace_name: str = "") -> tuple[str, ExportStats]:
    """The page of a session model (it needs its session_started event) and what it holds."""
    if model.started is None:
        raise ValueError("no session_started event: nothing to export")
    model.replay_all()  # passes kept for a replay (a trace the live TUI saved): the page shows them all
    return Page(model, trace_name).render()


def write_html(model: SessionModel, path: str, trace_name: str = "") -> ExportStats:
    """Write the page of ``model`` to ``path``; OSError when it cannot be written."""
    page, stats = render(model, trace_name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    stats.path = path
    return stats
