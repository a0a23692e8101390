"""LLVM's remarks in the TUI's Source view, beside the lines they name (the model's
``source_remarks``; kdebug/tui/documents.py's ``RemarkedSourceDocument``)."""
from __future__ import annotations

import asyncio

from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from conftest import run_kdebug
from test_debug_info import CARRIED, PINNED
from test_tui import SIZE, view_lines, wait_for


def test_source_view_marks_a_missed_vectorisation_beside_its_for_line(tmp_path):
    script = tmp_path / "carried.py"
    script.write_text(CARRIED)
    trace = tmp_path / "carried.jsonl"
    res = run_kdebug("run", "--headless", "--backend", "cpu", "--no-memcheck", "--trace", str(trace), str(script),
                     env={"KDEBUG_HOST_CPU": PINNED}, timeout=240)
    assert res.returncode == 0, res.stderr
    model = SessionModel().extend(read_trace(str(trace)))
    job = next(j for j in model.jobs.values() if j.name == "prefix_rows")
    for_line = job.source_line + next(i for i, line in enumerate(job.source.splitlines())
                                      if line.strip().startswith("for j"))
    assert ["missed", "loop-vectorize", "loop not vectorized"] in model.source_remarks(job)[for_line]

    async def go():
        app = KdebugApp(model=model, trace_path=str(trace))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            await pilot.pause()
            doc = app.query_one("#view-source").document
            lines = view_lines(app, "view-source")
            i = next(n for n, line in enumerate(lines) if line.strip().startswith("for j"))
            rendered = doc.render(i)
            assert lines[i] in rendered.plain  # the code itself unchanged, its columns in place
            assert "\u2717 loop-vectorize: loop not vectorized" in rendered.plain, rendered.plain
            note = rendered.plain.index("\u2717")
            assert any(span.start <= note < span.end and "yellow" in str(span.style) for span in rendered.spans)
            # a mark only where a missed remark names the line (document line n is file line first + n)
            first = for_line - i
            marked = {n for n in range(len(lines)) if "\u2717" in doc.render(n).plain}
            missed = {line - first for line, rows in model.source_remarks(job).items()
                      if any(r[0] == "missed" for r in rows)}
            assert marked == missed and i in marked
    asyncio.run(go())
