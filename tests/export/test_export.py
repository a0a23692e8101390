"""``kdebug export TRACE --html OUT.html`` and ``kdebug run --html``: a session as one offline HTML file.

Every sample's trace (recorded once per session, CPU backend, headless) is exported and read back:
every job and every stage (phases and passes) decodes from the page's data to the model's own
text, and nothing in the file names a network resource. A real headless Chromium (driven over the
DevTools protocol, as tests/serve/test_serve.py does) opens a page, clicks a job, switches to a diff and
follows a line anchor, and with JavaScript off still shows the job tree and the stages. Skipped,
saying why, where Chromium is not installed.
"""
from __future__ import annotations

import asyncio
import base64
import glob
import html
import json
import os
import re
import tempfile
import time

import pytest

from conftest import SAMPLES, run_kdebug
from test_serve import CHROMIUM, Browser

from kdebug.export.html import render
from kdebug.session import stage_diff
from kdebug.session.trace import load_model
from kdebug.tui.synthetic import big_events, cycle_events, write_trace
from kdebug.session.model import SessionModel

SAMPLE_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SAMPLES, "*.py")))
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="Chromium is not installed (apt-get install chromium; .ci/run does)")


def page_data(page: str) -> dict:
    start = page.index('<script type="application/json" id="kdebug-data">')
    body = page[page.index(">", start) + 1:page.index("</script>", start)]
    return json.loads(body.replace("<\\/", "</"))


def plain(line_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", line_html))


def decode(data: dict, index: int, cache: dict) -> list[int]:
    """A stage's line ids, as page.js decodes them: the edits applied to the stage it is based on."""
    if index not in cache:
        language, base, edits = data["snaps"][index]
        before = decode(data, base, cache) if base >= 0 else []
        out, at = [], 0
        for start, end, lines in edits:
            out += before[at:start] + lines
            at = end
        cache[index] = out + before[at:]
    return cache[index]


def page_stages(data: dict, job: dict) -> dict[str, int]:
    """Stage key (``optimize``, ``optimize:12``) -> its stage text's index, as page.js lists them."""
    out = {}
    for phase, snap, _changed, passes in job["stages"]:
        for k, (_name, _unit, _ch, s) in enumerate(passes or [], 1):
            out[f"{phase}:{k}"] = s
        if snap >= 0:
            out[phase] = snap
    return out


NETWORK = re.compile(r"""(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:|ftp:|//))|"""
                     r"""(?:url\(\s*["']?\s*(?:https?:|//))|(?:@import)|(?:<link\b)|(?:\bfetch\s*\()|"""
                     r"""(?:XMLHttpRequest)|(?:new\s+WebSocket)|(?:<iframe\b)|(?:<img\b)""", re.I)


def check_page(model, page: str) -> dict:
    """Every job, every stage of it and its text are in the page; no network resource is named."""
    assert not NETWORK.search(page), NETWORK.search(page)
    assert "<!--" not in page
    data = page_data(page)
    lines = [plain(h) for h in data["lines"]]
    by_id = {j["id"]: j for j in data["jobs"]}
    assert set(by_id) == set(model.jobs)
    cache: dict = {}
    compared: set = set()  # (page stage, model snapshot) pairs already compared: a pass that changed nothing
    # shows the stage of the pass before it, the same pair again, and the same comparison would be made
    for job in model.jobs.values():
        assert f'data-job="{job.id}"><b>{html.escape(job.name)}</b> #{job.id}</a>' in page  # the static tree
        stages = page_stages(data, by_id[job.id])
        refs = stage_diff.job_stages(model, job.id)
        assert [f"{r.phase}:{r.index}" if r.is_pass else r.phase for r in refs] == list(stages)
        for ref in refs:
            key = f"{ref.phase}:{ref.index}" if ref.is_pass else ref.phase
            if ref.snapshot is not None and (stages[key], ref.snapshot) in compared:
                continue  # stage_text(model, ref) is the snapshot's text: compared with this stage above
            text = stage_diff.stage_text(model, ref)
            if text is None:
                assert stages[key] == -1
                continue
            compared.add((stages[key], ref.snapshot))
            shown = [lines[i] for i in decode(data, stages[key], cache)]
            assert shown == text.expandtabs(4).splitlines(), (job.name, key)
    return data


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``recorded("saxpy.py")``: the path of that sample's trace, recorded once per module by the runner
    the debuggee runs (``run_in_process``, CPU backend, every snapshot and pass), in this process: a
    child per sample would cost its start-up and imports nineteen times."""
    from kdebug.session.live import set_session
    from kdebug.session.options import RunOptions
    from kdebug.session.runner import run_in_process
    from kdebug.session.trace import TraceWriter

    folder = tmp_path_factory.mktemp("sample-traces")
    cache: dict[str, str] = {}

    def record(sample: str) -> str:
        if sample not in cache:
            path = str(folder / sample.replace(".py", ".jsonl"))
            writer = TraceWriter(path)
            try:
                run_in_process(RunOptions(script=os.path.join(SAMPLES, sample), backend="cpu"), [writer])
            finally:
                writer.close()
                set_session(None)
            cache[sample] = path
        return cache[sample]
    return record


@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_every_samples_trace_exports_whole(sample, recorded):
    model = load_model(recorded(sample))
    assert model.ended is not None and model.jobs
    page, stats = render(model, sample)
    data = check_page(model, page)
    assert stats.jobs == len(model.jobs) and stats.bytes == len(page.encode())
    static = page[page.index("<noscript>", page.index('<div id="detail">')):]
    for job in model.jobs.values():  # without JavaScript: each job's before/after finish stages
        for phase in ("before_finish", "after_finish"):
            if phase in job.snapshots:
                assert f'id="job-{job.id}/{phase}"' in static
    assert len(data["events"]) == len(model.events)


def test_the_command_writes_the_page_and_a_trace_that_never_ended_says_so(tmp_path, sample_trace):
    trace = sample_trace("recursive_launch.py")
    out = tmp_path / "session.html"
    r = run_kdebug("export", trace, "--html", str(out))
    assert r.returncode == 0, r.stderr
    assert f"kdebug: wrote {out}" in r.stderr and "never ended" not in r.stderr
    page = out.read_text()
    assert "Session never ended" not in page and "<code>ok (exit status 0)</code>" in page
    assert "kdebug run --backend cpu --strategy worklist sample_kernels/recursive_launch.py" in page

    cut = tmp_path / "cut.jsonl"  # the recorder was killed: no session_ended, the last line torn
    lines = open(trace).read().splitlines(keepends=True)
    cut.write_text("".join(lines[:len(lines) // 2]) + lines[len(lines) // 2][:25])
    r = run_kdebug("export", str(cut), "--html", str(tmp_path / "cut.html"))
    assert r.returncode == 0, r.stderr
    assert "the session never ended" in r.stderr
    header = (tmp_path / "cut.html").read_text().split("</header>")[0]
    assert "<code>never ended</code>" in header
    assert "Session never ended: the trace stops after" in header


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02binary\xff\xfe", "not a text file"),
    (b'{"hello": "world"}\n', "not a kdebug event"),
    (b"", "is empty"),
    (b"first line\nsecond line\n", "not a JSON event"),
    (b'{"v":1,"event":"job_started","t":0.1,"job":7,"name":"k","parent":null,"key":"k"}\n',
     "does not follow from the events before it"),
    (b'{"v":1,"event":"launch_started","t":0.1}\n', "no session_started event"),
])
def test_a_damaged_trace_or_none_is_exit_2(tmp_path, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    out = tmp_path / "out.html"
    r = run_kdebug("export", str(bad), "--html", str(out), timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and r.stderr.startswith("kdebug: error: ")
    assert not out.exists()


def test_a_damaged_middle_line_is_exit_2(tmp_path, sample_trace):
    lines = open(sample_trace("recursive_launch.py")).read().splitlines(keepends=True)
    lines[3] = lines[3][:40] + "\n"
    bad = tmp_path / "torn.jsonl"
    bad.write_text("".join(lines))
    r = run_kdebug("export", str(bad), "--html", str(tmp_path / "out.html"), timeout=60)
    assert r.returncode == 2 and "torn.jsonl:4: not a JSON event" in r.stderr


def test_bad_outputs_are_refused_before_reading(tmp_path, sample_trace):
    trace = sample_trace("recursive_launch.py")
    r = run_kdebug("export", trace, "--html", str(tmp_path / "no" / "such" / "folder.html"), timeout=60)
    assert r.returncode == 2 and "does not exist; create it first" in r.stderr
    r = run_kdebug("export", trace, "--html", str(tmp_path), timeout=60)
    assert r.returncode == 2 and "is a directory; name a file" in r.stderr
    r = run_kdebug("export", trace, timeout=60)
    assert r.returncode == 2 and "--html" in r.stderr


def test_run_html_records_and_exports_in_one_go(tmp_path):
    out = tmp_path / "run.html"
    r = run_kdebug("run", "--backend", "cpu", "--strategy", "recursive", "--html", str(out),
                   os.path.join("sample_kernels", "nested_deferred.py"))
    assert r.returncode == 1, r.stderr  # the recursive strategy misses the finish passes: the run fails
    assert "missed the finish passes" in r.stdout  # the headless report still comes
    page = out.read_text()
    assert "<code>failed (exit status 1)</code>" in page and "missed the finish passes" in page
    data = page_data(page)
    reported = re.findall(r"^\s+#\d+  (\w+)\(", r.stdout.split("\nLaunches")[0], re.M)  # the report's job tree
    assert len(reported) == 4 and [j["name"] for j in data["jobs"]] == reported
    assert any(j["miss"] for j in data["jobs"])
    assert any(passes for j in data["jobs"] for _p, _s, _c, passes in j["stages"])  # passes were recorded


@pytest.fixture(scope="module")
def override_page(tmp_path_factory):
    """A run with ``--override`` (test_override's scale kernel, its optimised IR's constant edited),
    recorded and exported: (the model of its trace, the page's path, the page, the edited file's name)."""
    from test_override import ENV, SCALE, _dump, _edit, _script, _stage_file

    tmp = tmp_path_factory.mktemp("override")
    script = _script(tmp, "scale.py", SCALE)
    folder = tmp / "dump"
    _dump(script, folder)
    edited = _stage_file(folder, "001_scale", "optimize")
    _edit(edited, "3.000000e+00", "5.000000e+00")
    trace, out = tmp / "run.jsonl", tmp / "run.html"
    r = run_kdebug("run", "--headless", "--override", str(folder), "--trace", str(trace), script, env=ENV)
    assert r.returncode == 0 and "out[0] = 5.0" in r.stdout, r.stdout + r.stderr
    r = run_kdebug("export", str(trace), "--html", str(out))
    assert r.returncode == 0, r.stderr
    return load_model(str(trace)), str(out), out.read_text(encoding="utf-8"), edited.name


def test_the_page_of_a_run_with_override_marks_the_edited_stage(override_page):
    model, _path, page, name = override_page
    data = check_page(model, page)
    assert model.jobs[1].edited == {"optimize": name}
    # the data page.js renders: the job's edited stages and their files
    assert [j["edited"] for j in data["jobs"]] == [{"optimize": name}]
    # the header says the run used --override
    header = page[:page.index("</header>")]
    assert '<p class="edited">edited: this run used --override, 1 edited stage of 1 job</p>' in header
    # the tree marks the job; the static view (no JavaScript) marks the stage, above its text
    tree = page[page.index('<ul class="tree">'):page.index("</nav>", page.index('<ul class="tree">'))]
    assert f'<span class="edited" title="edited: optimize: {name}">edited</span>' in tree
    static = page[page.index("<noscript>"):page.index("</noscript>")]
    assert (f'<h3 id="job-1/optimize">optimize <span class="edited">edited</span></h3>'
            f'<p class="edited">edited: {name}</p><pre class="hl">') in static
    assert static.count('class="edited"') == 2  # that stage only


def test_the_page_of_a_run_with_override_shows_the_edited_stage_original_as_a_stage(override_page):
    model, _path, page, _name = override_page
    data = check_page(model, page)
    groups = [g[0] for g in data["jobs"][0]["stages"]]  # [phase, snapshot, changed, passes] each
    shown = [g[0] for g in data["jobs"][0]["stages"] if g[1] >= 0]
    assert shown[shown.index("optimize.original") + 1] == "optimize"  # the original, then the edit
    assert groups.index("optimize") < groups.index("optimize.original")  # the passes first: they made it
    static = page[page.index("<noscript>"):page.index("</noscript>")]
    assert '<h3 id="job-1/optimize.original">optimize.original</h3>' in static  # no edited mark


def test_a_run_without_override_marks_nothing(cycle_page):
    model, path = cycle_page
    page = open(path, encoding="utf-8").read()
    assert all(j["edited"] == {} for j in page_data(page)["jobs"])
    body = page[page.index("<body>"):page.index('<script type="application/json"')]
    assert 'class="edited"' not in body and "--override" not in body


@needs_chromium
def test_a_browser_marks_the_edited_stage_with_and_without_javascript(override_page):
    _model, path, _page, name = override_page

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}#job-1/optimize")
        await wait_for(browser, READY, "its script finished")
        await wait_for(browser, "!!document.querySelector('#code p.label')", "the optimize stage")
        tab = await browser.evaluate("[document.querySelector('a.stage.edited').textContent, "
                                     "document.querySelector('a.stage.edited').title]")
        mark = await browser.evaluate("document.querySelector('#code p.edited').textContent")
        label = await browser.evaluate("document.querySelector('#code p.label').textContent")
        banner = await browser.evaluate("document.querySelector('#view dl.facts').innerText")
        header = await browser.evaluate("document.querySelector('header p.edited').textContent")
        await browser.evaluate("location.hash = '#job-1/after_finish'")
        await wait_for(browser, "document.querySelector('#code p.label').textContent.startsWith('after_finish')",
                       "after_finish")
        other = await browser.evaluate("document.querySelector('#code p.edited')")
        return tab, mark, label, banner, header, other

    tab, mark, label, banner, header, other = in_browser(steps)
    assert tab == ["optimize edited", f"edited: {name}"]  # the stage's tab, its file in its title
    assert mark == f"edited: {name}" and label.startswith("optimize ")  # above the stage's text
    assert f"optimize: {name}" in banner
    assert header == "edited: this run used --override, 1 edited stage of 1 job"
    assert other is None  # a stage not edited has no mark

    async def static(browser):
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, "document.readyState === 'complete'", "the page")
        return (await browser.evaluate("document.querySelector('header').innerText"),
                await browser.evaluate("document.getElementById('job-1').innerText"))

    header, job = in_browser(static, scripts=False)
    assert "edited: this run used --override, 1 edited stage of 1 job" in header
    assert re.search(rf"optimize edited\s+edited: {re.escape(name)}\s", job), job[:2000]


def test_a_thousand_jobs_stay_under_ten_megabytes():
    model = SessionModel().extend(big_events(1000, 200_000, passes=30))
    page, stats = render(model)
    assert len(model.jobs) == 1000 and stats.bytes < 10_000_000
    assert stats.static == "finish pair, plain"  # the static view keeps each job's finish pair
    data = page_data(page)
    assert len(data["jobs"]) == 1000 and sum(len(p or []) for j in data["jobs"] for *_x, p in j["stages"]) == 30_000
    assert page.count('<section class="job" id="job-') == 1000


# ---- in a browser --------------------------------------------------------------------------------
READY = "document.readyState === 'complete' && document.documentElement.dataset.ready !== undefined"


async def wait_for(browser: Browser, expression: str, what: str, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while True:
        value = await browser.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            where = await browser.evaluate("location.hash + ' ' + (document.getElementById('view') || {}).innerText")
            raise AssertionError(f"the page never showed {what}: {(where or '')[:600]}")
        await asyncio.sleep(0.05)


async def click(browser: Browser, selector: str) -> None:
    """A real mouse click in the middle of the element (scrolled into view first)."""
    box = await browser.evaluate(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
        if (!el) return null; el.scrollIntoView({{block: "center"}}); const r = el.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
    assert box, f"nothing matches {selector}"
    for kind in ("mousePressed", "mouseReleased"):
        await browser.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


_CHROMIUM: dict = {}  # the module's headless Chromium ("browser") and its profile folder ("profile")


@pytest.fixture(scope="module", autouse=True)
def _module_chromium():
    """The Chromium ``in_browser`` starts for this module's first browser test is closed with the module."""
    yield
    browser, profile = _CHROMIUM.pop("browser", None), _CHROMIUM.pop("profile", None)
    if browser is not None:
        browser.close()
    if profile is not None:
        profile.cleanup()


async def _fresh_tab(http) -> Browser:
    """The module's Chromium (started on first use, and again if it has gone) connected to a new tab of its
    own: a tab costs a tenth of a browser's start; each test still gets a page nothing else touched."""
    browser = _CHROMIUM.get("browser")
    if browser is None or browser.proc.poll() is not None:
        if browser is not None:
            browser.close()
            _CHROMIUM.pop("profile").cleanup()
        _CHROMIUM["profile"] = tempfile.TemporaryDirectory()
        browser = _CHROMIUM["browser"] = Browser(_CHROMIUM["profile"].name)
        await browser.open(http)  # waits for the DevTools endpoint; its first tab is left as it is
        await browser.ws.close()
    async with http.put(f"http://127.0.0.1:{browser.port}/json/new?about:blank") as r:
        browser.tab = await r.json()
    browser.ws = await http.ws_connect(browser.tab["webSocketDebuggerUrl"], max_msg_size=0)
    return browser


def in_browser(steps, scripts: bool = True):
    async def go():
        import aiohttp
        async with aiohttp.ClientSession() as http:
            browser = await _fresh_tab(http)
            try:
                await browser.call("Page.enable")
                if not scripts:
                    await browser.call("Emulation.setScriptExecutionDisabled", value=True)
                return await steps(browser)
            finally:
                await browser.ws.close()
                try:  # a browser that has gone needs no tab closed (the next test starts another)
                    async with http.get(f"http://127.0.0.1:{browser.port}/json/close/{browser.tab['id']}") as r:
                        await r.read()
                except (OSError, aiohttp.ClientError):
                    pass
    return asyncio.run(go())


@pytest.fixture(scope="module")
def cycle_page(tmp_path_factory):
    """The page of a re-entrant cycle a -> b -> c -> a, with passes recorded."""
    model = SessionModel().extend(cycle_events(passes=12))
    path = tmp_path_factory.mktemp("export") / "cycle.html"
    path.write_text(render(model)[0])
    return model, str(path)


@needs_chromium
def test_a_browser_opens_the_page_clicks_a_job_diffs_and_follows_an_anchor(cycle_page):
    model, path = cycle_page
    after = model.snapshot_text(3, "after_finish").splitlines()
    before = set(model.snapshot_text(3, "before_finish").splitlines())
    added = next(n for n, line in enumerate(after, 1) if line not in before)  # a line the finish passes added

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, READY, "its script finished")
        assert await browser.evaluate("document.querySelector('#view h2').textContent") == "a #1"
        await click(browser, '#jobs a.job[data-job="3"]')
        await wait_for(browser, "location.hash === '#job-3'", "the job's anchor")
        await wait_for(browser, "document.querySelector('#view h2').textContent === 'c #3'", "job c")
        assert await browser.evaluate("document.querySelector('#tree-3').classList.contains('sel')")
        assert "after_finish" in await browser.evaluate("document.querySelector('#code p.label').textContent")
        await click(browser, "a.stage.diff")
        await wait_for(browser, "location.hash === '#job-3/diff/before_finish..after_finish'", "the diff's anchor")
        await wait_for(browser, "!!document.querySelector('table.unified')", "a unified diff")
        added_rows = await browser.evaluate("[...document.querySelectorAll('table.unified tr.add td.c')]"
                                            ".map(td => td.textContent)")
        assert f"+{after[added - 1]}" in added_rows
        await click(browser, 'form.diffbar input[name="side"]')  # side by side: the added line on the right
        await wait_for(browser, "!!document.querySelector('table.side')", "the side-by-side diff")
        right = await browser.evaluate("[...document.querySelectorAll('table.side td.c.add')].map(td => td.textContent)")
        assert after[added - 1] in right
        await click(browser, 'form.diffbar input[name="side"]')
        await wait_for(browser, "!!document.querySelector('table.unified')", "the unified diff again")
        # the B side's line number is an anchor to that line of after_finish: follow it
        await click(browser, f'table.unified a[href="#job-3/after_finish/L{added}"]')
        await wait_for(browser, f"location.hash === '#job-3/after_finish/L{added}'", "the line's anchor")
        row = await wait_for(browser, f"(() => {{ const r = document.getElementById('L{added}');"
                             " return r && r.classList.contains('target') && r.textContent; })()", "the line")
        assert row == f"{added}{after[added - 1]}"
        # an anchor opened from outside (a bug report's link): a fresh load goes to the job, stage and line
        await browser.call("Page.navigate", url="about:blank")
        await wait_for(browser, "location.href === 'about:blank'", "a blank page")
        await browser.call("Page.navigate", url=f"file://{path}#job-2/lower/L7")
        await wait_for(browser, READY, "its script finished")
        await wait_for(browser, "document.querySelector('#view h2') && "
                       "document.querySelector('#view h2').textContent === 'b #2'", "job b")
        shown = await wait_for(browser, """(() => { const r = document.getElementById('L7');
            if (!r || !r.classList.contains('target')) return null; const b = r.getBoundingClientRect();
            return [r.textContent, b.top >= 0 && b.bottom <= innerHeight]; })()""", "line 7 of b's lower")
        assert shown == ["7" + model.snapshot_text(2, "lower").splitlines()[6], True]
        # a pass of optimize, and its diff against the change before it
        await browser.call("Page.navigate", url=f"file://{path}#job-1/diff/..optimize:6")
        await wait_for(browser, "!!document.querySelector('table.unified')", "the pass's diff")
        label = await browser.evaluate("document.querySelector('#code p.label').textContent")
        assert label.startswith("optimize 3/12") and "optimize 6/12" in label, label
        # the events timeline, built once it scrolls into sight
        await browser.evaluate("document.getElementById('timeline').scrollIntoView()")
        # (the header row alone, or no table yet, is not the timeline: -1 and 0 must both keep waiting)
        rows = await wait_for(browser, "Math.max(document.querySelectorAll('table.timeline tr').length - 1, 0)",
                              "the timeline")
        assert rows == len(model.events)
        assert "reentrant" in await browser.evaluate("document.querySelector('table.timeline').innerText")
        return True

    assert in_browser(steps)


@needs_chromium
def test_without_javascript_the_page_shows_the_job_tree_and_stages(cycle_page):
    model, path = cycle_page

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, "document.readyState === 'complete'", "the page")
        assert await browser.evaluate("document.documentElement.dataset.ready") is None  # no script ran
        tree = await browser.evaluate("document.getElementById('jobs').innerText")
        static = await browser.evaluate("document.getElementById('job-3') && document.getElementById('job-3').innerText")
        diagnostics = await browser.evaluate("document.getElementById('diagnostics').innerText")
        return tree, static, diagnostics

    tree, static, diagnostics = in_browser(steps, scripts=False)
    for jid in (1, 2, 3):
        assert f"{model.jobs[jid].name} #{jid}" in tree
    assert "\u21bb #1 reference a \u2192 b \u2192 c \u2192 a" in tree
    assert static is not None and "after_finish" in static and "define internal void @c(" in static
    assert "re-entrant request #3 \u2192 #1" in diagnostics


@needs_chromium
def test_the_browsers_diff_of_two_real_stages_rebuilds_both(recorded, tmp_path):
    """page.js's diff (Myers' algorithm) on saxpy's lower against its optimized module, side by side: the
    numbered left cells are A's lines and the numbered right cells B's, in order, metadata left out."""
    model = load_model(recorded("saxpy.py"))
    path = tmp_path / "saxpy.html"
    path.write_text(render(model)[0])
    jid = model.roots[0]

    def kept(phase):
        return [ln for ln in model.snapshot_text(jid, phase).expandtabs(4).splitlines()
                if not stage_diff.NOISE_LINE.match(ln)]

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}#job-{jid}/diff/lower..optimize")
        await wait_for(browser, "!!document.querySelector('table.unified')", "the diff")
        await click(browser, 'form.diffbar input[name="side"]')
        await wait_for(browser, "!!document.querySelector('table.side')", "the side-by-side diff")
        return await browser.evaluate("""[...document.querySelectorAll('table.side tr')].map(tr => {
            const td = tr.querySelectorAll('td');
            return [td[0].textContent, td[1].textContent, td[2].textContent, td[3].textContent]; })""")

    rows = in_browser(steps)
    left = [(int(n), text) for n, text, _, _ in rows if n]
    right = [(int(n), text) for _, _, n, text in rows if n]
    lower, optimize = model.snapshot_text(jid, "lower").expandtabs(4).splitlines(), \
        model.snapshot_text(jid, "optimize").expandtabs(4).splitlines()
    assert [t for _, t in left] == kept("lower") and [t for _, t in right] == kept("optimize")
    assert all(lower[n - 1] == t for n, t in left) and all(optimize[n - 1] == t for n, t in right)
    assert sum(1 for r in rows if r[0] and r[2] and r[1] == r[3]) >= 5  # lines both share are matched (8 of saxpy's)


def test_the_tuis_palette_exports_the_session(tmp_path):
    """The TUI's palette entry *Export the session as HTML* writes what ``kdebug export`` writes."""
    from kdebug.tui.app import KdebugApp

    events = cycle_events()
    trace = write_trace(events, str(tmp_path / "cycle.jsonl"))
    model = SessionModel().extend(events)

    async def go():
        app = KdebugApp(model=model, trace_path=trace, cwd=str(tmp_path))
        async with app.run_test(size=(120, 40)) as pilot:
            titles = {cmd.title for cmd in app.get_system_commands(app.screen)}
            assert "Export the session as HTML" in titles
            await app.run_action("app.on('detail','export_html')")
            await pilot.pause()
            return [n.message for n in app._notifications]

    notes = asyncio.run(go())
    assert any("exported the session to kdebug-session.html" in n for n in notes), notes
    page = (tmp_path / "kdebug-session.html").read_text()
    check_page(model, page)
    assert page == render(SessionModel().extend(events), "cycle.jsonl")[0]


def test_text_from_the_session_cannot_break_out_of_the_page():
    """A job name, a source line or a diagnostic holding markup stays text: escaped in the HTML, and
    unable to close the data's script element or open a comment inside it."""
    from kdebug import events as E

    hostile = "</script><script>alert(1)</script><!--"
    events = cycle_events()
    for ev in events:
        if isinstance(ev, E.JobRequested) and ev.job == 2:
            ev.name = hostile
        if isinstance(ev, E.Snapshot) and ev.job == 2 and ev.phase == "lower":
            ev.text += f"\n; {hostile}"
    events.insert(-1, E.Diagnostic(severity="error", message=hostile, category="runtime", job=2, text=hostile))
    model = SessionModel().extend(events)
    page, _ = render(model)
    assert "<script>alert(1)" not in page and "<!--" not in page
    data = page_data(page)
    assert next(j for j in data["jobs"] if j["id"] == 2)["name"] == hostile
    assert f"; {hostile}" in [plain(h) for h in data["lines"]]
    check_page(model, page)


@pytest.fixture(scope="module")
def hvp_page(recorded, tmp_path_factory):
    """gradient_hvp's session and its exported page: eight jobs, long names, a long first job's IR (loaded
    and rendered once for the tests that open it; the browser only reads the file)."""
    model = load_model(recorded("gradient_hvp.py"))
    path = tmp_path_factory.mktemp("hvp") / "hvp.html"
    path.write_text(render(model)[0])
    return model, path


@needs_chromium
@pytest.mark.parametrize("section", ["launches", "diagnostics"])
def test_a_page_opened_at_a_section_shows_that_section(hvp_page, tmp_path, section):
    """Before: run.html#launches opened directly was an all-white screen (the browser scrolled before the
    job's view was drawn above the section)."""
    model, path = hvp_page

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}#{section}")
        await wait_for(browser, READY, "its script finished")
        await asyncio.sleep(0.3)
        shot = await browser.call("Page.captureScreenshot", format="png")
        (tmp_path / f"{section}.png").write_bytes(base64.b64decode(shot["data"]))
        return await browser.evaluate(f"""(() => {{ const r = document.getElementById({json.dumps(section)})
            .getBoundingClientRect(); return [r.top, r.bottom, innerHeight,
            document.getElementById('view').innerText.length]; }})()""")

    top, bottom, height, view = in_browser(steps)
    assert -2 <= top < height and bottom > 0, (top, bottom, height)  # the section is on the screen
    assert view > 0  # and the job's view drawn


@needs_chromium
def test_the_page_opens_on_a_stage_that_changed_something_and_never_cuts_an_id(hvp_page):
    """Before: without an anchor the page opened on saxpy's after_finish, which changed nothing; the jobs
    pane cut long rows (a cycle's path, an #id) at its width."""
    model, path = hvp_page

    async def steps(browser):
        await browser.call("Page.navigate", url=f"file://{path}")
        await wait_for(browser, READY, "its script finished")
        label = await browser.evaluate("document.querySelector('#code p.label').textContent")
        stage = await browser.evaluate("document.querySelector('a.stage.cur') && "
                                       "document.querySelector('a.stage.cur').textContent")
        cut = await browser.evaluate("""[...document.querySelectorAll('#jobs li')].filter(li => {
            const nav = document.getElementById('jobs').getBoundingClientRect();
            return [...li.querySelectorAll(':scope > a, :scope > span')].some(el => {
              const r = el.getBoundingClientRect(); return r.width > 0 && r.right > nav.right + 1; });
            }).map(li => li.textContent.slice(0, 60))""")
        return label, stage, cut

    label, stage, cut = in_browser(steps)
    assert stage is not None and not stage.startswith("="), (label, stage)  # not a stage that changed nothing
    assert " llvm, " in label, label  # its IR (the last phase of IR that changed it), not the host assembly
    assert not cut, cut
