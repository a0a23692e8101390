"""A trace is input from anyone (attached to a bug report, shared by a colleague): neither opening it nor
opening the page ``kdebug export`` makes of it may run what its author wrote into it.

* Markup in any text of a trace (a job's name, key or arguments, a phase's or a pass's name, IR, a
  launch's name, a diagnostic, the script's name, an edited stage's file) stays text in the page: a real headless Chromium opens
  the exported page, walks every job, stage, diff and the timeline, and no element, attribute or script
  of the payload appears, nothing the Content-Security-Policy refuses is even tried, the title is
  kdebug's. The page's CSP allows its own two scripts (by hash) and style, nothing else.
* A crafted or damaged trace (nested 200,000 deep, fields of the wrong type, a pass snapshot based on
  itself, colliding ids, edits with text for bounds) is one located error line and exit status 2 from
  ``export`` and ``replay --headless``, never a traceback; text that is no text (an unpaired surrogate,
  bytes that are not UTF-8) is shown as U+FFFD with one warning.
* ``--html`` naming the trace itself (the same path, a symbolic or a hard link) is refused: the trace is
  left as it was.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
from html.parser import HTMLParser

import pytest

from conftest import run_kdebug
from test_export import READY, in_browser, needs_chromium, page_data, wait_for
from test_export import _module_chromium  # noqa: F401 - closes the shared Chromium with this module too

from kdebug import events as E
from kdebug.tui.synthetic import cycle_events, write_trace

# each would set the title (or add an element) if it reached the page as markup
IMG = "<img src=x onerror=\"document.title='pwned'\">"
CLOSE = "</script><script>document.title='pwned'</script><!--"
ATTR = "x\"><img src=x onerror=\"document.title='pwned'\" data-x=\"'"  # out of a quoted attribute
SVG = "'><svg onload=\"document.title='pwned'\"></svg><a href='javascript:document.title=1'>"
PHASE = "lower" + ATTR  # a phase's name ends up in links (no "/": the page's anchors still reach it)
# an edited file's name (kdebug run --override): the model keeps it up to its first space, so none here
EDITED = "002_b_03-lower\"'><script>document.title='pwned'</script><img/src=x/onerror=document.title='pwned'>.ll"


def hostile_events() -> list[E.Event]:
    """cycle_events' session (three jobs, passes, a re-entrant cycle, launches) with a payload in every
    text a page shows."""
    events = cycle_events(passes=12)
    for ev in events:
        if isinstance(ev, E.SessionStarted):
            ev.script = f"cycle{IMG}.py"
        if isinstance(ev, E.JobEvent) and ev.job == 2:
            ev.name, ev.key = f"b{IMG}{CLOSE}", f"key{SVG}"
        if isinstance(ev, E.JobRequested) and ev.job == 2:
            ev.argtypes, ev.source_file = [f"int64{ATTR}", IMG], f"src{IMG}.py"
        if isinstance(ev, (E.PhaseStarted, E.PhaseFinished, E.Snapshot)) and ev.job == 2 and ev.phase == "lower":
            ev.phase = PHASE
        if isinstance(ev, E.Snapshot) and ev.job == 2 and ev.phase == PHASE:
            ev.text += f"\n; {CLOSE}\n  call void @\"{IMG}\"()"
        if isinstance(ev, E.PassSnapshot) and ev.job == 1:
            ev.pass_name += SVG
        if isinstance(ev, E.PassList) and ev.job == 1:
            ev.passes = [[name + SVG, unit + ATTR, changed] for name, unit, changed in ev.passes]
        if isinstance(ev, E.Reentrant):
            ev.cycle_names = [n + IMG for n in ev.cycle_names]
        if isinstance(ev, E.LaunchStarted) and ev.launch == 2:
            ev.name = f"b{ATTR}"
    events.insert(-1, E.Diagnostic(severity="error", message=f"bad {CLOSE}", category="runtime", job=2,
                                   text=f"bad {CLOSE}\n{IMG}", t=events[-1].t))
    events.insert(-1, E.Diagnostic(severity="note", category="override", job=2, t=events[-1].t,
                                   message=f"job #2 b: the {PHASE} stage is {EDITED}"))
    return events


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory):
    """The hostile trace, exported by the command; (trace, page path, page text)."""
    folder = tmp_path_factory.mktemp("hostile")
    trace = write_trace(hostile_events(), str(folder / "hostile.jsonl"))
    out = folder / "hostile.html"
    r = run_kdebug("export", trace, "--html", str(out), timeout=90)
    assert r.returncode == 0, r.stderr
    return trace, str(out), out.read_text(encoding="utf-8")


class Elements(HTMLParser):
    """Every start tag of a page, with its attributes; and the text of each script and style element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in self.texts:
            self._in = tag
            self.texts[tag].append("")

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self.texts[self._in][-1] += data


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_pages_markup_holds_no_element_of_the_trace_and_a_strict_policy(hostile_page):
    _trace, _path, page = hostile_page
    parsed = Elements()
    parsed.feed(page)
    tags = [t for t, _ in parsed.tags]
    assert not {"img", "svg", "iframe", "object", "embed", "base", "link", "form"} & set(tags), tags
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on") or a == "style"], (tag, attrs)  # no handler, no style=
        for a in ("href", "src", "action"):
            assert not (attrs.get(a) or "").strip().lower().startswith("javascript:"), (tag, attrs)
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert len(scripts) == 3 and scripts[1] == {"type": "application/json", "id": "kdebug-data"}, scripts
    data_text = parsed.texts["script"][1]
    assert "<" not in data_text  # nothing in the data can end its element or open a comment
    # the policy: the first thing after the charset; only the page's own inline scripts and style
    head = page[:page.index("<title>")]
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', head)
    assert csp and head.index("<meta charset") < csp.start(), head
    policy = {d.split()[0]: d.split()[1:] for d in html.unescape(csp.group(1)).split(";") if d.strip()}
    assert policy["default-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert sorted(policy["script-src"]) == sorted(sha256(t) for i, t in enumerate(parsed.texts["script"]) if i != 1)
    assert policy["style-src"] == [sha256(parsed.texts["style"][0])]
    # every payload is in the data, as the text it was
    data = page_data(page)
    b = next(j for j in data["jobs"] if j["id"] == 2)
    assert b["name"] == f"b{IMG}{CLOSE}" and b["key"] == f"key{SVG}" and b["argtypes"] == [f"int64{ATTR}", IMG]
    assert any(st[0] == PHASE for st in b["stages"])
    assert b["edited"] == {PHASE: EDITED}  # the edited stage's file, as the text it was
    # and escaped where the static part marks it: the tree's title, the header's count, above the stage's text
    assert f'title="{html.escape(f"edited: {PHASE}: {EDITED}")}">edited</span>' in page
    assert '<p class="edited">edited: this run used --override, 1 edited stage of 1 job</p>' in page
    assert f'<p class="edited">edited: {html.escape(EDITED)}</p><pre class="hl">' in page
    assert f"<title>kdebug: {html.escape(f'cycle{IMG}.py')}</title>" in page


# installed before the page's own scripts: what the payload could do is recorded (DevTools' script: no CSP)
WATCH = """
window.kdebugSeen = {violations: [], added: []};
document.addEventListener("securitypolicyviolation", (e) =>
  window.kdebugSeen.violations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || "")));
new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes) {
  if (n.nodeType !== 1) continue;
  for (const el of [n, ...n.querySelectorAll("*")]) {
    if (/^(img|svg|iframe|object|embed|base|link)$/i.test(el.tagName) ||  // (scripts: counted at the end)
        [...el.attributes].some((a) => /^on/i.test(a.name) || a.name === "style" || /^\\s*javascript:/i.test(a.value)))
      window.kdebugSeen.added.push(el.outerHTML.slice(0, 200));
  }
} }).observe(document, {childList: true, subtree: true});
"""


@needs_chromium
def test_a_browser_shows_every_payload_as_text_and_runs_none(hostile_page):
    _trace, path, page = hostile_page
    data = page_data(page)
    anchors = []
    for job in data["jobs"]:
        anchors.append(f"#job-{job['id']}")
        for phase, snap, _changed, passes in job["stages"]:
            anchors += [f"#job-{job['id']}/{phase}:{k}" for k in range(1, len(passes or []) + 1)]
            if snap >= 0:
                anchors += [f"#job-{job['id']}/{phase}", f"#job-{job['id']}/diff/..{phase}"]

    async def steps(browser):
        await browser.call("Page.addScriptToEvaluateOnNewDocument", source=WATCH)
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, READY, "its script finished")
        shown = []
        for anchor in anchors:  # every job, stage, pass and diff drawn once
            await browser.evaluate(f"location.hash = {json.dumps(anchor)}")
            await wait_for(browser, "document.querySelector('#view h2') !== null", anchor)
            shown.append(await browser.evaluate("document.getElementById('view').textContent"))
        await browser.evaluate("document.getElementById('timeline').scrollIntoView()")
        await wait_for(browser, "document.querySelectorAll('table.timeline tr').length > 1", "the timeline")
        await browser.evaluate("document.querySelector('#jobs li.backref').click()")  # the cycle's highlight
        return (await browser.evaluate("document.title"), await browser.evaluate("window.kdebugSeen"),
                await browser.evaluate("document.querySelectorAll('img, svg, iframe, object, embed').length"),
                await browser.evaluate("document.scripts.length"), shown,
                await browser.evaluate("document.body.textContent"))

    title, seen, foreign, scripts, shown, text = in_browser(steps)
    assert title == f"kdebug: cycle{IMG}.py"  # kdebug's title, the script's name in it as text
    assert seen == {"violations": [], "added": []}, seen  # nothing injected, nothing even refused by the CSP
    assert foreign == 0 and scripts == 3
    assert any(f"b{IMG}{CLOSE} #2" in s for s in shown)  # the banner's job name, as text
    assert any(PHASE in s for s in shown) and any(SVG in s for s in shown)  # a phase's and a pass's name
    assert any(f"; {CLOSE}" in s for s in shown)  # the IR
    assert any(f"edited: {EDITED}" in s for s in shown)  # the edited stage's mark, its file's name as text
    for payload in (f"b{ATTR}", f"bad {CLOSE}", IMG):  # a launch, a diagnostic, the cycle's names
        assert payload in text


@needs_chromium
def test_without_javascript_the_static_page_shows_the_payloads_as_text(hostile_page):
    _trace, path, _page = hostile_page

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, "document.readyState === 'complete'", "the page")
        return (await browser.evaluate("document.title"),
                await browser.evaluate("document.querySelectorAll('img, svg, iframe, object, embed, [onerror], "
                                       "[onload], [style]').length"),
                await browser.evaluate("document.body.innerText"),
                await browser.evaluate("""[...document.querySelectorAll('#launches td:nth-child(2)')].map(td =>
                    [td.textContent, parseFloat(getComputedStyle(td).paddingLeft)])"""))

    title, foreign, text, launches = in_browser(steps, scripts=False)
    assert title == f"kdebug: cycle{IMG}.py" and foreign == 0
    assert f"b{IMG}{CLOSE} #2" in text and f"; {CLOSE}" in text and PHASE in text
    assert f"edited: {EDITED}" in text  # the edited stage's mark
    # the device-side launch is indented by the page's own (hashed) style: no style attribute, which the CSP refuses
    (outer, outer_pad), (inner, inner_pad) = launches
    assert outer == "a" and inner == f"\u21b3 b{ATTR}" and inner_pad > outer_pad + 5, launches


# ---- crafted and damaged traces ------------------------------------------------------------------
def base_lines() -> list[dict]:
    return [json.loads(E.to_line(ev)) for ev in cycle_events(passes=12)]


def first(lines: list[dict], kind: str, **match) -> int:
    return next(i for i, o in enumerate(lines) if o["event"] == kind and all(o.get(k) == v for k, v in match.items()))


def write_lines(tmp_path, lines: list, name: str = "crafted.jsonl") -> str:
    """``lines``: event objects, or a line's raw text (bytes too) where JSON could not write it."""
    path = tmp_path / name
    with open(path, "wb") as f:
        for o in lines:
            raw = o if isinstance(o, (str, bytes)) else json.dumps(o, separators=(",", ":"))
            f.write((raw.encode() if isinstance(raw, str) else raw) + b"\n")
    return str(path)


def assert_located_error(r, path: str, lineno: int, *words: str) -> None:
    """Exit status 2 and one line: ``kdebug: error: PATH:LINE: ...`` with ``words``; no traceback."""
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"kdebug: error: {path}:{lineno}: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def both_refuse(tmp_path, path: str, lineno: int, *words: str) -> None:
    out = tmp_path / "out.html"
    assert_located_error(run_kdebug("export", path, "--html", str(out), timeout=60), path, lineno, *words)
    assert not out.exists()
    assert_located_error(run_kdebug("replay", "--headless", path, timeout=60), path, lineno, *words)


def test_a_line_nested_200000_deep_is_a_located_error(tmp_path):
    lines = base_lines()
    at = first(lines, "diagnostic")
    obj = json.dumps(lines[at], separators=(",", ":"))
    lines[at] = obj[:-1] + ',"details":' + "[" * 200_000 + "]" * 200_000 + "}"
    both_refuse(tmp_path, write_lines(tmp_path, lines), at + 1, "nested deeper than")


def test_nesting_past_the_limit_is_refused_even_where_python_would_read_it(tmp_path):
    lines = base_lines()
    at = first(lines, "diagnostic")
    nested: list = []
    for _ in range(40):
        nested = [nested]
    lines[at]["hazard"] = {"first": nested}
    both_refuse(tmp_path, write_lines(tmp_path, lines), at + 1, "field 'hazard'", "nested deeper than 32 levels")


WRONG_TYPES = [  # (event kind and which of them, field, its value, what the error names)
    ("phase_finished", {}, "duration", "fast", "field 'duration' of a phase_finished event: expected a number"),
    ("snapshot", {}, "text", 42, "field 'text' of a snapshot event: expected text, not a number"),
    ("job_started", {}, "t", "soon", "field 't' of a job_started event: expected a number, not text"),
    ("launch_started", {}, "grid", ["4", 1, 1], "field 'grid'[0] of a launch_started event: expected a whole number"),
    ("job_requested", {"job": 2}, "job", '2"><img src=x onerror=alert(1)>', "field 'job' of a job_requested event"),
    ("pass_list", {}, "passes", [["InstCombinePass"]], "field 'passes'[0] of a pass_list event: expected a list of 3"),
    ("phase_finished", {}, "duration", 1e400, "field 'duration' of a phase_finished event: expected a finite number"),
    ("launch_finished", {}, "duration", 10 ** 400, "field 'duration' of a launch_finished event: expected a finite"),
    ("session_ended", {}, "status", None, "field 'status' of a session_ended event: expected text, not null"),
]


@pytest.mark.parametrize("kind, match, field, value, words", WRONG_TYPES,
                         ids=[f"{k}.{f}-{type(v).__name__}" for k, _m, f, v, _w in WRONG_TYPES])
def test_a_field_of_the_wrong_type_is_a_located_error(tmp_path, kind, match, field, value, words):
    lines = base_lines()
    at = first(lines, kind, **match)
    lines[at][field] = value
    raw = [json.dumps(o, separators=(",", ":")) for o in lines]
    raw[at] = raw[at].replace("Infinity", "1e400")  # (what json.dumps writes for 1e400; a crafted file has this)
    both_refuse(tmp_path, write_lines(tmp_path, raw), at + 1, words, "re-record the trace")


def test_a_pass_snapshot_based_on_itself_is_a_located_error(tmp_path):
    lines = base_lines()
    at = first(lines, "pass_snapshot", base=None)
    lines[at]["base"] = lines[at]["id"]
    both_refuse(tmp_path, write_lines(tmp_path, lines), at + 1, "field 'base'", "based on itself")


def test_colliding_pass_snapshot_ids_are_a_located_error(tmp_path):
    """A snapshot with an earlier one's id, based on a snapshot based on that one: a cycle of bases."""
    lines = base_lines()
    a = first(lines, "pass_snapshot", base=None)
    b = next(i for i, o in enumerate(lines) if o["event"] == "pass_snapshot" and o["base"] == lines[a]["id"])
    lines.insert(b + 1, dict(lines[b], id=lines[a]["id"], base=lines[b]["id"], edits=[]))
    both_refuse(tmp_path, write_lines(tmp_path, lines), b + 2, f"pass snapshot {lines[a]['id']} again",
                f"first at line {a + 1}")


def test_a_job_requested_again_or_by_itself_is_a_located_error(tmp_path):
    lines = base_lines()
    at = first(lines, "job_requested", job=2)
    again = dict(lines[at], parent=2)  # job 2 again, requested by job 2: the job tree would be a loop
    lines.insert(at + 1, again)
    both_refuse(tmp_path, write_lines(tmp_path, lines), at + 2, "job #2 is requested again (first at line")
    lines = base_lines()
    lines[at]["parent"] = 2
    both_refuse(tmp_path, write_lines(tmp_path, lines, "self.jsonl"), at + 1, "job #2 is requested by itself")


def test_edits_with_text_for_bounds_or_bounds_outside_their_base_are_a_located_error(tmp_path):
    lines = base_lines()
    at = next(i for i, o in enumerate(lines) if o["event"] == "pass_snapshot" and o["base"] is not None and o["edits"])
    start, end, new = lines[at]["edits"][0]
    lines[at]["edits"][0] = [str(start), str(end), new]
    both_refuse(tmp_path, write_lines(tmp_path, lines), at + 1,
                "field 'edits'[0][0] of a pass_snapshot event: expected a whole number, not text")
    lines[at]["edits"][0] = [start, 10 ** 9, new]
    both_refuse(tmp_path, write_lines(tmp_path, lines, "far.jsonl"), at + 1, "field 'edits'[0]: lines",
                "are not in order inside the")


@pytest.mark.parametrize("how", ["escaped surrogate", "bytes that are not UTF-8"])
def test_text_that_is_no_text_is_replaced_and_said_once(tmp_path, how):
    lines = base_lines()
    at = first(lines, "job_requested", job=2)
    raw = [json.dumps(o, separators=(",", ":")).encode() for o in lines]
    for i, o in enumerate(lines):  # job 2's name, in each of its events; a pass's name too
        if o.get("job") == 2 and o.get("name") == "b":
            raw[i] = raw[i].replace(b'"name":"b"', b'"name":"b\\ud800"' if how == "escaped surrogate"
                                    else b'"name":"b\xff\xfe"')
    path = write_lines(tmp_path, raw)
    out = tmp_path / "out.html"
    for args in (("export", path, "--html", str(out)), ("replay", "--headless", path)):
        r = run_kdebug(*args, timeout=60)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
        warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("kdebug: warning: ")]
        assert len(warnings) == 1 and f"{path}:{at + 1} (and " in warnings[0] and "U+FFFD" in warnings[0], r.stderr
    assert "b\ufffd" in out.read_text(encoding="utf-8") and "b\ufffd" in r.stdout  # the page, the report


# ---- the page must not replace the trace ----------------------------------------------------------
@pytest.mark.parametrize("how", ["same path", "symbolic link", "hard link", "same file another way"])
def test_an_output_that_is_the_trace_itself_is_refused(tmp_path, how):
    trace = write_trace(cycle_events(), str(tmp_path / "t.jsonl"))
    before = open(trace, "rb").read()
    out = {"same path": trace, "symbolic link": str(tmp_path / "link.html"), "hard link": str(tmp_path / "hard.html"),
           "same file another way": str(tmp_path / "." / ".." / tmp_path.name / "t.jsonl")}[how]
    if how == "symbolic link":
        os.symlink(trace, out)
    elif how == "hard link":
        os.link(trace, out)
    r = run_kdebug("export", trace, "--html", out, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"kdebug: error: --html {out}: is the trace"), r.stderr
    assert "name another file" in r.stderr
    assert open(trace, "rb").read() == before


def test_run_refuses_an_html_page_over_its_own_trace(tmp_path):
    trace = tmp_path / "run.jsonl"
    r = run_kdebug("run", "--headless", "--trace", str(trace), "--html", str(trace), "no_such_script.py", timeout=60)
    assert r.returncode == 2 and "is the trace it records" in r.stderr, r.stderr
    assert not trace.exists()


def test_text_of_a_session_in_memory_that_is_no_text_still_makes_a_page():
    """The TUI's palette exports its live model, read from no file: an unpaired surrogate there (a path
    decoded with surrogateescape, say) is U+FFFD in the page, which is written as UTF-8."""
    from kdebug.export.html import render
    from kdebug.session.model import SessionModel

    events = cycle_events()
    for ev in events:
        if isinstance(ev, E.JobEvent) and ev.job == 2:
            ev.name = "b\udcff"
    page, stats = render(SessionModel().extend(events))
    assert stats.bytes == len(page.encode("utf-8")) and "b\ufffd #2" in page


def test_passes_replayed_after_a_trace_is_loaded_keep_those_it_holds(tmp_path):
    """The TUI replays the passes of the jobs someone looks at and saves the trace with them (their
    snapshots numbered -1, -2, ...); ``kdebug export`` (or a replay opening it) replays the rest: their
    snapshots are numbered below, never over, those the trace holds, and the saved trace loads again."""
    from conftest import SAMPLES
    from kdebug.session.model import SessionModel
    from kdebug.session.options import RunOptions
    from kdebug.session.runner import run_in_process
    from kdebug.session.trace import load_model

    model = SessionModel()
    options = RunOptions(script=os.path.join(SAMPLES, "device_functions.py"), backend="cpu")
    run_in_process(options.replace(passes_on_demand=True), [model.apply])
    pending = [j.id for j in model.jobs.values() if j.passes_pending]
    assert len(pending) >= 2
    model.apply_replayed(pending[0], *model.replayed_events(pending[0]))  # the TUI showed one job's passes
    loaded = load_model(write_trace(model.events, str(tmp_path / "saved.jsonl")))
    texts = {sid: loaded.pass_text(sid) for sid in loaded.pass_snapshots}
    assert texts and min(texts) < 0
    loaded.replay_all()  # what export does
    assert len(loaded.pass_snapshots) > len(texts)
    assert all(loaded.pass_text(sid) == text for sid, text in texts.items())
    again = load_model(write_trace(loaded.events, str(tmp_path / "again.jsonl")))
    assert sorted(again.pass_snapshots) == sorted(loaded.pass_snapshots)
