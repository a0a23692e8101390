"""Two runs side by side: the session layer's merge of two job trees, and the TUI's v after r."""
from __future__ import annotations

import asyncio

from kdebug.session.compare import compare
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.synthetic import cycle_events


def model(path: str) -> SessionModel:
    return SessionModel().extend(read_trace(path))


def by_name(comparison) -> dict:
    return {(r.a or r.b).name: r for r in comparison.rows}


def test_the_same_run_twice_has_no_difference():
    c = compare(SessionModel().extend(cycle_events()), SessionModel().extend(cycle_events()))
    assert [(r.depth, r.a.name, r.b.name) for r in c.rows] == [(0, "a", "a"), (1, "b", "b"), (2, "c", "c"),
                                                             (3, "\u21bb a \u2192 b \u2192 c \u2192 a", "\u21bb a \u2192 b \u2192 c \u2192 a")]
    assert c.differences == 0 and all(r.same for r in c.rows)
    assert c.a == c.b and c.a.line() == "worklist: ok, 3 jobs, 3 compilations, 1 alert"


def test_a_job_in_one_run_only_is_marked_with_its_subtree():
    events = cycle_events()
    fewer = [ev for ev in events if getattr(ev, "job", None) != 3]  # c never requested
    c = compare(SessionModel().extend(events), SessionModel().extend(fewer))
    rows = by_name(c)
    assert rows["c"].b is None and rows["c"].changes == ["only in the previous run"]
    backref = next(r for r in c.rows if r.a is not None and r.a.backref)
    assert backref.b is None and backref.depth == 3  # under c, which is gone too
    assert rows["a"].same and rows["b"].same and c.differences == 2
    c = compare(SessionModel().extend(fewer), SessionModel().extend(events))
    assert by_name(c)["c"].changes == ["only in this run"]


def test_worklist_against_recursive_on_a_cycle(sample_trace):
    c = compare(model(sample_trace("recursive_launch.py")), model(sample_trace("recursive_launch.py", "--strategy",
                                                                                "recursive")))
    assert (c.a.strategy, c.a.status, c.b.strategy, c.b.status) == ("worklist", "ok", "recursive", "failed")
    rows = by_name(c)
    assert rows["kernel_a"].changes == ["done \u2192 failed"]
    assert rows["kernel_c"].changes == ["done \u2192 failed", "alert warning \u2192 error"]  # the request's own alert
    backref = next(r for r in c.rows if r.a is not None and r.a.backref)
    assert (backref.a.state, backref.b.state) == ("reference", "stopped") and backref.changes == [
        "reference \u2192 stopped"]


def test_compile_counts_and_duplicate_jobs_differ_under_recursive(sample_trace):
    """grad_taylor: worklist compiles each key once; recursive compiles grad(f) four times."""
    a, b = model(sample_trace("grad_taylor.py")), model(sample_trace("grad_taylor.py", "--strategy", "recursive"))
    c = compare(a, b)
    counted = [r for r in c.rows if r.a is not None and r.b is not None and r.a.compiled != r.b.compiled]
    assert counted and all(f"compiled {r.a.compiled}\u00d7 \u2192 {r.b.compiled}\u00d7" in r.changes for r in counted)
    assert any(r.a.name == "grad(f)" and r.b.compiled == 4 for r in counted)
    only_b = [r for r in c.rows if r.a is None]
    assert only_b and all(r.changes == ["only in recursive"] for r in only_b)
    assert c.b.compilations > c.a.compilations and c.b.jobs == len(b.jobs) and c.a.jobs == len(a.jobs)


def test_v_after_r_shows_both_runs_side_by_side():
    from test_tui import RECURSIVE, SIZE, live_app, wait_for
    from kdebug.tui.compare import CompareScreen

    async def go():
        app = live_app("--strategy", "toplevel", RECURSIVE)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the toplevel run")
            await pilot.press("v")  # nothing to compare yet: it says so
            await pilot.pause()
            assert not isinstance(app.screen, CompareScreen)
            first = app.model
            await pilot.press("r")  # -> recursive
            await wait_for(pilot, lambda: app.model is not first and app.model.ended is not None, "the recursive run")
            await pilot.press("v")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, CompareScreen) and screen.previous is first and screen.current is app.model
            await wait_for(pilot, lambda: screen._shown[0] == len(app.model.events), "the comparison")
            head = str(screen.query_one("#compare-head").render())
            assert "toplevel: ok" in head and "recursive: failed" in head and "row(s) differ" in head
            doc = screen.query_one("#compare-view").document
            lines = [doc.plain(i) for i in range(len(doc))]
            assert any("kernel_a" in ln and "done \u2192 failed" in ln for ln in lines)
            assert any("reference \u2192 stopped" in ln for ln in lines)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, CompareScreen)
    asyncio.run(go())


def test_jobs_whose_keys_differ_are_matched_by_function_and_kind_and_the_row_says_so():
    """A reduced script passes other argument types: every key differs. Before, every row read "only in the
    previous run" or "only in this run"; now jobs of the same function and kind pair up, saying why."""
    import dataclasses
    events = cycle_events()
    other = []
    for ev in events:
        key = getattr(ev, "key", None)
        if isinstance(key, str) and "(float32[::1], int64)" in key:
            ev = dataclasses.replace(ev, key=key.replace("(float32[::1], int64)", "(float64[::1], int32)"))
        if hasattr(ev, "argtypes"):
            ev = dataclasses.replace(ev, argtypes=["float64[::1]", "int32"])
        other.append(ev)
    c = compare(SessionModel().extend(events), SessionModel().extend(other))
    rows = by_name(c)
    assert all(r.a is not None and r.b is not None for r in c.rows), [(r.a, r.b) for r in c.rows]
    assert rows["a"].changes == ["matched by function: argument types (float32[::1], int64) \u2192 (float64[::1], int32)"]
    assert not any("only in" in change for r in c.rows for change in r.changes)
