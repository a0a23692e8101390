"""Derivative jobs in the TUI (a replayed trace of sample_kernels/grad_pointer.py): the tree shows
their kind and reason, the IR view diffs primal -> primal_resolved -> derivative, the Strategy tab
says why a derivative needs the body."""
from __future__ import annotations

import asyncio
import os

import pytest

from conftest import SAMPLES, run_kdebug, tree_labels
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.documents import UnifiedDiffDocument
from kdebug.tui.textview import TextView

SIZE = (160, 48)


@pytest.fixture(scope="module")
def pointer_trace(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("traces") / "grad_pointer.jsonl")
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", path, os.path.join(SAMPLES, "grad_pointer.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    return path


def test_derivative_jobs_in_the_tree_the_ir_diffs_and_the_strategy_tab(pointer_trace):
    async def go():
        app = KdebugApp(model=SessionModel().extend(read_trace(pointer_trace)), trace_path=pointer_trace)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            labels = tree_labels(app, indent=False)
            assert any(label.startswith("\u2713 grad(f) #3  derivative  grad") for label in labels), labels
            app.tree.select_job(3)
            await pilot.pause()
            app.detail.action_tab("ir")
            app.detail.set_phase("primal_resolved")
            await pilot.pause()
            assert app.detail.job_id == 3
            doc = app.query_one("#view-ir", TextView).document
            assert isinstance(doc, UnifiedDiffDocument)
            lines = [doc.plain(i) for i in range(len(doc))]
            assert lines[0].startswith("--- primal") and lines[1].startswith("+++ primal_resolved")
            assert any(line.startswith("-") and "kdebug.deferred.2" in line for line in lines)
            assert any(line.startswith("+") and "@g_j2" in line for line in lines)
            app.detail.action_tab("strategy")
            await pilot.pause()
            assert "needs the body" in str(app.query_one("#strategy-help").render())
    asyncio.run(go())
