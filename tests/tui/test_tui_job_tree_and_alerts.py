"""The TUI's job tree, banner and alerts, each check a defect of the TUI's second pass (failed before its fix):
queued selections settle on the cursor, a child's compile error on the child, the top-level strategy's round,
one alert per re-entrant request, a diamond's every edge, launch rows nested by depth.

Synthetic or recorded traces, replayed with the Pilot. Waits are bounded.
"""
from __future__ import annotations

import os
import textwrap

import pytest

from conftest import SAMPLES, run_kdebug
from test_tui import run, tree_labels, view_lines
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.synthetic import cycle_events


SIZE = (160, 48)

DIAMOND = """
    import numpy as np
    from kdebug import cuda

    @cuda.jit
    def leaf(out, k):
        out[k] += 1

    @cuda.jit
    def left(out):
        leaf[1, 1](out, 0)

    @cuda.jit
    def right(out):
        leaf[1, 1](out, 1)

    @cuda.jit
    def top(out):
        left[1, 1](out)
        right[1, 1](out)

    top[1, 1](np.zeros(2, dtype=np.int64))
"""

CHILD_ERROR = """
    import numpy as np
    from kdebug import cuda

    @cuda.jit
    def child(out):
        out[0] = undefined_name

    @cuda.jit
    def parent(out):
        child[1, 1](out)

    parent[1, 1](np.zeros(1, dtype=np.int64))
"""


def replay(events, **kw) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(events), trace_path="trace.jsonl", **kw)


def write(tmp_path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def recorded(tmp_path, script: str, *options: str) -> SessionModel:
    trace = str(tmp_path / "run.jsonl")
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", trace, *options, script)
    assert os.path.exists(trace), r.stderr
    return SessionModel().extend(read_trace(trace))


# 1 ---------------------------------------------------------------------------------------------
def test_1_two_queued_selections_settle_on_the_cursor_and_never_loop():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = []
            show = app.detail.show
            app.detail.show = lambda job, backref=None: (shown.append(job), show(job, backref))
            tree = app.tree
            # key repeat on a busy machine: two cursor moves before either selection is handled
            tree.move_cursor(tree.job_nodes[2])
            tree.move_cursor(tree.job_nodes[3])
            for _ in range(30):
                await pilot.pause(0.01)
            assert tree.cursor_node is tree.job_nodes[3] and app.detail.job_id == 3
            assert shown == [3]  # the stale selection (#2) was dropped, nothing re-posted
            await pilot.press("up", "up")
            await pilot.pause()
            assert app.detail.job_id == tree.cursor_node.data[1] == 1
    run(go())


# 4 ---------------------------------------------------------------------------------------------
def test_4_a_child_compile_error_is_on_the_child_not_its_parent(tmp_path):
    model = recorded(tmp_path, write(tmp_path, "child_error", CHILD_ERROR))
    by_name = {j.name: j for j in model.jobs.values()}
    child, parent = by_name["child"], by_name["parent"]
    assert child.state == "failed" and "undefined_name" in child.error
    assert parent.state == "failed" and parent.error == f"deferred job #{child.id} child failed to compile"
    assert [a.job for a in model.alerts if a.severity == "error" and a.title.startswith("compile")] == [child.id]

    async def go():
        app = replay(model.events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.tree.select_job(parent.id)
            await pilot.pause()
            banner = str(app.query_one("#banner").render())
            assert "child failed to compile" in banner and "undefined_name" not in banner
            app.tree.select_job(child.id)
            await pilot.pause()
            assert "undefined_name" in str(app.query_one("#banner").render())
            assert "\u2716" in tree_labels(app)[1]  # the child carries the error mark
    run(go())


# 7 ---------------------------------------------------------------------------------------------
def test_7_the_toplevel_strategys_round_shows_in_the_tree_banner_and_events(tmp_path):
    model = recorded(tmp_path, os.path.join(SAMPLES, "nested_deferred.py"), "--strategy", "toplevel")
    rounds = {j.name: j.resolved_round for j in model.jobs.values() if j.resolved_round}
    assert rounds and max(rounds.values()) >= 2

    async def go():
        app = replay(model.events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            labels = tree_labels(app)
            for name, rnd in rounds.items():
                assert any(f"{name} #" in ln and f"round {rnd}" in ln for ln in labels), (name, labels)
            jid = next(j.id for j in model.jobs.values() if j.resolved_round == 2)
            app.tree.select_job(jid)
            await pilot.press("6")
            await pilot.pause()
            assert "resolved by the toplevel in round 2" in str(app.query_one("#banner").render())
            top = model.roots[0]
            app.tree.select_job(top)
            await pilot.pause()
            assert any("deferred_resolved" in ln and "round=2" in ln for ln in view_lines(app, "view-events"))
    run(go())


# 8 ---------------------------------------------------------------------------------------------
def test_8_one_reentrant_request_is_one_alert_in_one_entry():
    async def go():
        app = replay(cycle_events())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert "1 alert" in app.status_text().plain
            lines = view_lines(app, "diagnostics")
            assert [ln for ln in lines if not ln.startswith("    ")] == [
                "warning: re-entrant request #3 \u2192 #1: a \u2192 b \u2192 c \u2192 a (reference)"]
            assert len(lines) <= 2
    run(go())


# 9 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["worklist", "recursive"])
def test_9_a_diamond_shows_every_edge_and_recursive_duplicates(tmp_path, strategy):
    model = recorded(tmp_path, write(tmp_path, "diamond", DIAMOND), "--strategy", strategy)

    async def go():
        app = replay(model.events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            labels = [ln.strip() for ln in tree_labels(app)]
            right = next(i for i, ln in enumerate(labels) if "right #" in ln)
            under_right = labels[right + 1]
            leaves = [j for j in model.jobs.values() if j.name == "leaf"]
            if strategy == "worklist":
                assert len(leaves) == 1
                assert under_right.startswith(f"\u2192 #{leaves[0].id} leaf") and "shared" in under_right
            else:
                assert len(leaves) == 2
                assert f"leaf #{leaves[1].id}" in under_right and f"=#{leaves[0].id}" in under_right
    run(go())


def test_18_launch_rows_nest_by_depth_and_name_the_parent_launch(tmp_path):
    model = recorded(tmp_path, os.path.join(SAMPLES, "self_launch.py"))

    async def go():
        app = replay(model.events)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.query_one("#launches")
            kernels = [str(table.get_cell(str(i), "kernel")) for i in sorted(model.launches)]
            assert kernels[0] == "countdown" and kernels[1] == "\u2514 countdown from #1"
            assert kernels[8] == " " * 7 + "\u2514 countdown from #8"
    run(go())
