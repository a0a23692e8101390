"""LLVM's remarks in the TUI: the Source view's marks beside the lines they name (the model's
``source_remarks``; kdebug/tui/documents.py's ``RemarkedDocument``), the list ``l`` opens and its jump to
a line, and the IR view's notes beside the instructions a remark names (kdebug/tui/remarks.py)."""
from __future__ import annotations

import asyncio

import pytest

from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from conftest import run_kdebug
from test_debug_info import CARRIED, PINNED
from test_tui import SIZE, view_lines, wait_for


@pytest.fixture(scope="module")
def carried_trace(tmp_path_factory) -> str:
    """A trace of a kernel whose inner loop carries a dependence through memory (LLVM says "loop not
    vectorized" at its for line), with the CPU model pinned."""
    folder = tmp_path_factory.mktemp("remarks")
    script = folder / "carried.py"
    script.write_text(CARRIED)
    trace = folder / "carried.jsonl"
    res = run_kdebug("run", "--headless", "--backend", "cpu", "--no-memcheck", "--trace", str(trace), str(script),
                     env={"KDEBUG_HOST_CPU": PINNED}, timeout=240)
    assert res.returncode == 0, res.stderr
    return str(trace)


def test_source_view_marks_a_missed_vectorisation_beside_its_for_line(carried_trace):
    trace = carried_trace
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


def test_the_remarks_list_and_enter_goes_to_the_line_in_source(carried_trace):
    model = SessionModel().extend(read_trace(carried_trace))
    job = next(j for j in model.jobs.values() if j.name == "prefix_rows")
    for_line = job.source_line + next(i for i, line in enumerate(job.source.splitlines())
                                      if line.strip().startswith("for j"))

    async def go():
        from textual.widgets import OptionList
        from kdebug.tui.remarks import RemarksScreen
        app = KdebugApp(model=model, trace_path=carried_trace)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            await pilot.press("l")  # the key (also the palette's "List the job's LLVM remarks")
            await wait_for(pilot, lambda: isinstance(app.screen, RemarksScreen) and app.screen.query(OptionList),
                           "the remarks list")
            rows = app.screen.rows
            assert rows == sorted(rows, key=lambda r: (r[1] == 0, r[0], r[1], r[2], {"missed": 0, "analysis": 1,
                                                                                      "passed": 2}[r[3]], r[4], r[5]))
            # every remark of the job's pipelines is a row, once
            assert len(rows) == len({(r[0], r[1], r[2], r[3], r[4], r[5]) for _p, r in job.remarks})
            k = next(n for n, r in enumerate(rows) if r[1] == for_line and r[3] == "missed"
                     and r[4] == "loop-vectorize")
            assert rows[k][5] == "loop not vectorized"
            options = app.screen.query_one(OptionList)
            options.highlighted = k
            await pilot.press("enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, RemarksScreen), "the list to close")
            await wait_for(pilot, lambda: app.detail.active_tab == "source", "the Source tab")
            view = app.query_one("#view-source")
            await wait_for(pilot, lambda: view_lines(app, "view-source")[view.cursor].strip().startswith("for j"),
                           "the cursor on the for line")
    asyncio.run(go())


def test_the_ir_view_writes_a_remark_beside_the_instruction_it_names(carried_trace):
    """The optimised IR: the missed vectorisation beside the first instruction whose debug location is
    the for line's (line and column), as an LLVM comment; only where a remark of the phase names it."""
    from kdebug.tui.remarks import instruction_positions
    model = SessionModel().extend(read_trace(carried_trace))
    job = next(j for j in model.jobs.values() if j.name == "prefix_rows")
    for_line = job.source_line + next(i for i, line in enumerate(job.source.splitlines())
                                      if line.strip().startswith("for j"))
    missed = next(r for phase, r in job.remarks if phase == "optimize" and r[3] == "missed" and r[1] == for_line)

    async def go():
        app = KdebugApp(model=model, trace_path=carried_trace)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            app.detail.set_phase("optimize")
            await pilot.pause()
            doc = app.query_one("#view-ir").document
            lines = [doc.plain(i) for i in range(len(doc))]
            positions = instruction_positions(lines)
            first = min(i for i, (f, line, col) in positions.items()
                        if (f, line, col) == ("carried.py", missed[1], missed[2]))
            rendered = doc.render(first).plain
            assert rendered.startswith(lines[first]) and "; \u2717 loop-vectorize: loop not vectorized" in rendered
            noted = {i for i in range(len(lines)) if doc.render(i).plain != lines[i]}
            assert first in noted and noted <= set(positions)  # notes only beside instructions
    asyncio.run(go())


@pytest.mark.timeout(300)
def test_B_bisects_the_selected_kernel_and_the_pass_bar_stands_at_the_pass(tmp_path, monkeypatch):
    """B on a job: kdebug bisect from the TUI (kdebug/tui/bisecting.py), the builds listed as they are
    judged, the report's first line naming LoopVectorizePass, and enter leaving the IR tab's pass bar at
    that pass of the job's own recorded pipeline."""
    from test_bisect import INNER_LOOP, PINNED as BISECT_PINNED
    from test_tui import live_app
    from kdebug.tui.bisecting import BisectScreen
    for k, v in BISECT_PINNED.items():
        monkeypatch.setenv(k, v)
    script = tmp_path / "rows.py"
    script.write_text(INNER_LOOP)

    async def go():
        app = live_app("--no-memcheck", str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
            job = next(j for j in app.model.jobs.values() if j.name == "scale_rows")
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            await pilot.press("B")
            await wait_for(pilot, lambda: isinstance(app.screen, BisectScreen), "the bisect dialog")
            screen = app.screen
            assert screen.kernel == "scale_rows" and screen.query_one("#bisect-until").value == "ir:"
            await pilot.pause()
            await pilot.press(*r"<\d+ x float>")  # typed after the filled-in ir: (it was selected, and replaced)
            assert screen.query_one("#bisect-until").value == r"ir:<\d+ x float>"  # a float vector, any width
            await pilot.press("enter")
            await wait_for(pilot, lambda: screen.result is not None or screen.failure is not None,
                           "the bisection to end", limit=240)
            assert screen.failure is None, screen.failure
            assert screen.steps and screen.steps[0].startswith("build ")
            first = screen.result.first
            assert first is not None, (screen.result.report(), screen.steps, screen.result.optimised.outcome)
            assert (first[5] or first[1]) == "LoopVectorizePass" and first[4] == "optimize"
            head = str(screen.query_one("#bisect-head").render())
            view = screen.query_one("#bisect-view").document
            assert not any("first pass" in view.plain(i) for i in range(len(view))), "said once, in the head"
            await pilot.press("enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, BisectScreen), "the dialog to close")
            await wait_for(pilot, lambda: app.detail.pass_index is not None, "the pass bar to move")
            stage = app.detail.stages()[app.detail.current_stage_index()]
            assert stage.name == "LoopVectorizePass" and stage.phase == "optimize" and stage.unit == first[2]
            # the head numbers the pass as the pass bar does (LLVM's opt-bisect number is another)
            assert f"first pass: {stage.index} LoopVectorizePass" in head, head
    asyncio.run(go())


@pytest.fixture(scope="module")
def saxpy_trace(tmp_path_factory) -> str:
    """saxpy recorded with its passes and remarks, on the host's CPU model (which remarks come depends on
    it; the order the views agree on must hold on any)."""
    trace = tmp_path_factory.mktemp("saxpy-remarks") / "saxpy.jsonl"
    res = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", str(trace), "sample_kernels/saxpy.py",
                     timeout=240)
    assert res.returncode == 0, res.stderr
    return str(trace)


@pytest.mark.parametrize("which", ["carried", "saxpy", "two missed on a line"])
def test_the_source_note_beside_a_line_is_the_first_remark_the_l_list_gives_for_it(which, carried_trace, saxpy_trace):
    """The Source view's note beside a line and the l list agree on a line's first remark (they did not:
    a line showed slp-vectorizer, the first found, while l listed loop-vectorize, at an earlier column, first)."""
    from kdebug.tui.documents import RemarkedDocument
    from kdebug.tui.remarks import job_remark_rows
    model = SessionModel().extend(read_trace(carried_trace if which == "carried" else saxpy_trace))
    if which == "two missed on a line":  # as LLVM reports them: SLP's remark found before the loop vectoriser's
        job = next(j for j in model.jobs.values() if j.name == "saxpy")
        line = job.source_line + 3
        job.remarks[:] = [("optimize", [job.source_file, line, 12, "missed", "slp-vectorizer", "List vectorization"]),
                          ("optimize", [job.source_file, line, 5, "missed", "loop-vectorize", "loop not vectorized"]),
                          ("optimize", [job.source_file, line + 1, 9, "passed", "inline", "inlined"])]
    checked = 0
    for job in model.jobs.values():
        by_line = model.source_remarks(job)
        rows = job_remark_rows(model, job)
        for line, remarks in by_line.items():
            first_in_list = next(r for r in rows if r[1] == line)
            doc = RemarkedDocument("\n" * (line + 1), {line: remarks})
            assert doc._first(remarks) == [first_in_list[3], first_in_list[4], first_in_list[5]], (line, remarks, rows)
            checked += 1
    assert checked >= 2, "remarks on at least two lines"
