"""What the TUI keeps at 80x24 (a projector's terminal) and 120x36, each check a defect of the TUI's third
pass (failed before its fix): error banners, the header, the compare view, diagnostics and launches wrapped,
the launches table's columns, the bars and the IR's lines, the breakpoint dialog, the tree's duplicates;
nothing cut silently.

Recorded traces of the samples, replayed with the Pilot; a syntax error's live run. Waits are bounded.
"""
from __future__ import annotations

import os

import pytest

from conftest import ROOT, SAMPLES
from test_tui import live_app, run, view_lines, wait_for
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.textview import TextView

SMALL, MEDIUM = (80, 24), (120, 36)
SIZES = pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])


def screen_text(app: KdebugApp) -> str:
    """What the terminal shows, as text."""
    return "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())


async def press(pilot, *keys: str, settle: int = 1) -> None:
    """Press ``keys``, then let the app settle (``settle`` pauses: a zoom relayouts, then scrolls)."""
    await pilot.press(*keys)
    for _ in range(settle):
        await pilot.pause()


def replay_of(path: str) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(read_trace(path)), trace_path=path, cwd=os.path.dirname(path))


# 6 ---------------------------------------------------------------------------------------------
SYNTAX_ERROR = """import numpy as np
from kdebug import cuda


def f(:
    pass
"""


# 7 ---------------------------------------------------------------------------------------------
OUT_OF_BOUNDS = """import numpy as np
from kdebug import cuda


@cuda.jit
def shift(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i + 1] * 2.0


x = np.arange(64, dtype=np.float32)
out = np.zeros_like(x)
shift[2, 32](out, x)
"""


def widget_words(widget) -> str:
    """A widget's rendered lines, joined into one line of words."""
    lines = ["".join(seg.text for seg in widget.render_line(y)) for y in range(widget.size.height)]
    return " ".join(" ".join(lines).split())


@pytest.fixture(scope="module")
def oob_trace(tmp_path_factory) -> str:
    from conftest import run_kdebug
    folder = tmp_path_factory.mktemp("oob")
    (folder / "oob.py").write_text(OUT_OF_BOUNDS)
    trace = str(folder / "oob.jsonl")
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", trace, "oob.py", cwd=str(folder))
    assert r.returncode == 1 and "out-of-bounds read" in r.stdout, r.stdout + r.stderr
    return trace


@SIZES
def test_6_a_syntax_error_is_shown_located_in_the_main_view(tmp_path, size):
    script = tmp_path / "broken.py"
    script.write_text(SYNTAX_ERROR)

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            banner = str(app.query_one("#banner").render())
            assert "broken.py:5:7" in banner and "SyntaxError" in banner and "no job yet" not in banner
            assert app.detail.active_tab == "source" and app.bottom.active == "tab-diagnostics"
            source = view_lines(app, "view-source")
            assert source[0].startswith("broken.py:5:7: SyntaxError")
            at = next(i for i, ln in enumerate(source) if ln.startswith("\u25b6"))  # the faulting line, marked
            assert source[at].endswith("def f(:")
            caret = source[at + 1]
            assert caret.strip() == "^" and caret.index("^") == source[at].index("(:") + 1  # under the ':'
            assert "broken.py:5:7" in screen_text(app)  # on the screen, not only in the document
    run(go())


# 5 ---------------------------------------------------------------------------------------------
@SIZES
def test_5_an_error_banner_is_never_cut_silently_and_o_opens_it_all(sample_trace, size):
    from kdebug.tui.message_screen import MessageScreen

    async def go():
        app = replay_of(sample_trace("grad_taylor.py", "--strategy", "toplevel"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            job = next(j for j in app.model.jobs.values() if j.name == "grad(grad(f))")
            app.tree.select_job(job.id)
            await pilot.pause()
            await pilot.pause()
            banner = " ".join(str(app.query_one("#banner").render()).split())
            shown = " ".join(screen_text(app).split())
            if size == MEDIUM:  # room enough: the hint is on the screen
                assert "hint: --strategy worklist" in banner
                assert "hint: --strategy worklist" in " ".join(
                    line.split("\u2502")[-1].strip() for line in screen_text(app).splitlines())
            else:  # no room: the banner says so, and o opens the whole message
                assert banner.endswith("\u2026 o: more") and "\u2026 o: more" in shown
            await press(pilot, "o")
            assert isinstance(app.screen, MessageScreen)
            full = " ".join(str(app.screen.query_one("#message-text").render()).split())
            assert "hint: --strategy worklist expands each nested job's markers" in full
            assert "^" in full  # the whole error: its source line and caret too
            await press(pilot, "escape")
            assert not isinstance(app.screen, MessageScreen)
    run(go())


@SIZES
def test_7_diagnostics_and_launches_wrap_and_source_marks_the_faulting_line(oob_trace, size):
    async def go():
        app = replay_of(oob_trace)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            assert "\u25c2 \u2716 memcheck" in screen_text(app)  # on the screen: the faulting line is marked
            app.bottom.action_resize(8)  # room for the wrapped lines
            await pilot.pause()
            launches = app.query_one("#launches")
            words = widget_words(launches)
            assert "thread (31, 0, 0)" in words and "status" in words  # the whole error, in its column
            app.bottom.active = "tab-diagnostics"
            await pilot.pause()
            diag = app.query_one("#diagnostics", TextView)

            def wide() -> list[str]:  # the lines wider than the panel, once it is laid out
                return [line for line in view_lines(app, "diagnostics") if len(line) > diag.size.width]
            # the panel wraps again on its Resize, which a loaded machine may deliver a frame later
            await wait_for(pilot, lambda: diag.size.width and not wide(), "the diagnostics wrapped", 20)
            lines = view_lines(app, "diagnostics")
            assert lines and not wide(), wide()  # wrapped, not cut
            joined = " ".join(" ".join(lines).split())
            assert "thread (31, 0, 0)" in joined and "hint: check the index arithmetic" in joined
            assert "--no-memcheck to skip these checks" in joined
            source = app.query_one("#view-source")
            (line, category), = source.faults.items()
            assert "x[i + 1]" in source.document.plain(line) and category == "memcheck"
    run(go())


# 4 ---------------------------------------------------------------------------------------------
@SIZES
def test_4_the_header_keeps_backend_and_strategy_and_shortens_the_path(sample_trace, size):
    async def go():
        trace = sample_trace("grad_taylor.py", "--strategy", "toplevel")
        model = SessionModel().extend(read_trace(trace))
        model.started.script = os.path.join(ROOT, "sample_kernels", "grad_taylor.py")  # an absolute path
        app = KdebugApp(model=model, trace_path=trace, cwd=os.path.dirname(trace))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            top = screen_text(app).splitlines()[0]
            # the script's file name is never cut (issue: the header cut it at 80x24): the path's folders
            # give way first, then the words "backend" and "strategy"
            assert "grad_taylor.py" in top and ROOT not in top, top
            assert ("backend cpu \u00b7 strategy toplevel" if size == MEDIUM else "cpu \u00b7 toplevel") in top, top
    run(go())


# 3 ---------------------------------------------------------------------------------------------
@SIZES
@pytest.mark.parametrize("sample", ["grad_taylor.py", "recursive_launch.py"])
def test_3_the_compare_view_never_cuts_counts_resolutions_or_what_differs(sample_trace, size, sample):
    from kdebug.session.compare import compare
    from kdebug.tui.compare import CompareScreen

    async def go():
        top = SessionModel().extend(read_trace(sample_trace(sample, "--strategy", "toplevel")))
        rec = SessionModel().extend(read_trace(sample_trace(sample, "--strategy", "recursive")))
        app = replay_of(sample_trace(sample, "--strategy", "recursive"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            app.push_screen(CompareScreen(top, rec, ("toplevel", "recursive")))
            await pilot.pause()
            await pilot.pause()
            view = app.screen.query_one("#compare-view", TextView)
            doc = view.document
            lines = [doc.plain(i) for i in range(len(doc))]
            assert all(len(line) <= size[0] for line in lines), max(lines, key=len)
            text = " ".join(" ".join(lines).split())
            comparison = compare(top, rec, ("toplevel", "recursive"))
            assert comparison.differences
            for row in comparison.rows:
                if row.changes:  # what differs, whole
                    assert "; ".join(row.changes) in text, row.changes
                for side in (row.a, row.b):
                    if side is None:
                        continue
                    alert = {"error": " \u2716 error", "warning": " \u26a0 warning"}.get(side.alert or "", "")
                    tail = f"#{side.target} {side.state}" if side.backref else \
                        f"#{side.job} {side.state} \u00d7{side.compiled}{alert}"
                    assert tail in text, tail  # the counts and a ↻'s resolution
    run(go())


# 14 --------------------------------------------------------------------------------------------
def test_14_at_80x24_the_bars_take_a_line_each_and_the_ir_keeps_12_lines(sample_trace):
    async def go():
        app = replay_of(sample_trace("grad_taylor.py"))
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            shown = screen_text(app)
            strip = next(line for line in shown.splitlines() if "IR" in line and "Diff" in line)
            for label in ("Src", "IR", "Fin", "PTX", "Asm", "Ev", "Strat", "Diff"):  # the whole strip fits
                assert f" {label} " in strip + " ", (label, strip)
            await press(pilot, "2")
            view = app.query_one("#view-ir", TextView)
            bars = [app.query_one(f"#{b}") for b in ("phase-bar", "pass-bar")]
            assert all(bar.display and bar.size.height == 1 for bar in bars)
            assert view.scrollable_content_region.height >= 12  # lines of IR, the scrollbar left out
            region = view.region
            for key in ("k", "k", "k", "j", "k", "k"):  # into optimize's passes and about: nothing moves
                await press(pilot, key)
                assert app.detail.pass_index is not None or key == "j"
                assert all(bar.size.height == 1 for bar in bars) and view.region == region, key
            assert "pass " in " ".join(screen_text(app).split())
            await press(pilot, "8")
            diff = app.query_one("#view-diff", TextView)
            assert app.query_one("#diff-bar").size.height == 1
            assert diff.scrollable_content_region.height >= 12
    run(go())


# 18 --------------------------------------------------------------------------------------------
@SIZES
def test_18_the_launches_table_keeps_every_column_at_80_wide(sample_trace, size):
    from kdebug.tui.launches import _time

    async def go():
        app = replay_of(sample_trace("recursive_launch.py"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            app.bottom.action_resize(6)
            await pilot.pause()
            await pilot.pause()
            table = app.query_one("#launches")
            assert table.max_scroll_x == 0  # nothing to the right of the view
            rows = ["".join(seg.text for seg in table.render_line(y)) for y in range(table.size.height)]
            assert "time" in rows[0] and "status" in rows[0]
            shown = [ln for ln in app.model.launches.values()][:table.size.height - 2]
            assert len(shown) >= 3
            for ln in shown:
                row = next(r for r in rows[1:] if r.split()[:1] == [str(ln.id)])
                assert _time(ln) in row and row.rstrip().endswith("ok"), row  # the unit, and the status
    run(go())


# 16 --------------------------------------------------------------------------------------------
@SIZES
def test_16_the_breakpoint_dialog_cuts_no_label_and_empty_boxes_are_empty(size):
    from kdebug.tui import teaching
    from kdebug.tui.breakpoints import BreakpointsScreen

    async def go():
        app = live_app("--break", "finish", os.path.join(SAMPLES, "saxpy.py"))
        async with app.run_test(size=size) as pilot:
            await press(pilot, "b")
            assert isinstance(app.screen, BreakpointsScreen)
            labels = list(app.screen.query(".bp-what"))
            assert len(labels) == len(teaching.BREAKPOINTS)
            for label, what in zip(labels, teaching.BREAKPOINTS.values()):
                assert widget_words(label) == what, what  # every description whole, as drawn
                assert label.region.right <= size[0]
            for kind in teaching.BREAKPOINTS:
                box = app.screen.query_one(f"#bp-{kind}")
                inner = "".join(seg.text for seg in box.render_line(box.size.height // 2))
                assert ("\u2713" in inner) == (kind == "finish") and "X" not in inner, (kind, inner)
            await pilot.press("escape")
    run(go())


# 17 --------------------------------------------------------------------------------------------
@SIZES
def test_17_duplicates_fit_in_the_tree_and_the_banner_names_a_finish_miss(sample_trace, size):
    async def go():
        app = replay_of(sample_trace("grad_taylor.py", "--strategy", "recursive"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            dups = [j for j in app.model.jobs.values() if j.duplicate_of is not None]
            assert len(dups) >= 3
            tree = app.query_one("#jobs")
            rows = [line[tree.region.x:tree.region.right] for line in screen_text(app).splitlines()]
            shown = [j for j in dups if any(f"#{j.id}=#{j.duplicate_of}" in row for row in rows)]
            assert len(shown) >= 3, rows  # on the screen, inside the Jobs pane
        app = replay_of(sample_trace("nested_deferred.py", "--strategy", "recursive"))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            miss = next(d for d in app.model.diagnostics if d.category == "finish")
            app.tree.select_job(miss.job)
            await pilot.pause()
            await press(pilot, "o")  # the banner in full (at 80x24 it is one line)
            full = " ".join(str(app.screen.query_one("#message-text").render()).split())
            assert "finish-coverage miss: " + " ".join(miss.message.splitlines()[0].split()) in full
    run(go())
