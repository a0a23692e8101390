"""Reverse-mode jobs in the TUI (a replayed trace of sample_kernels/adjoint_stencil.py): the IR view shows
primal_resolved -> augmented_forward -> reverse as diffs of the stage before (d: the stage itself), the
tape stage by source line (d: the file as written), and the Strategy tab says why reverse mode needs the
body and nested orders the shared table. Sizes: 80x24 and 120x36. Waits are bounded."""
from __future__ import annotations

import os

import pytest

from conftest import SAMPLES, run_kdebug
from test_tui import run, view_lines, wait_for
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.documents import UnifiedDiffDocument
from kdebug.tui.tape_view import NO_LINE, TapeDocument, parse_tape, tape_document
from kdebug.tui.textview import TextView

SMALL, MEDIUM = (80, 24), (120, 36)
SIZES = pytest.mark.parametrize("size", [SMALL, MEDIUM], ids=["80x24", "120x36"])
LINE_20 = "out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]"


@pytest.fixture(scope="module")
def stencil_trace(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("traces") / "adjoint_stencil.jsonl")
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", path,
                   os.path.join(SAMPLES, "adjoint_stencil.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    return path


def replay_app(path: str) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(read_trace(path)), trace_path=path, cwd=os.path.dirname(path))


def adjoint_job(app: KdebugApp):
    job = next((j for j in app.model.jobs.values() if j.name == "adjoint(smooth)"), None)
    assert job is not None, [j.name for j in app.model.jobs.values()]
    assert job.kind == "derivative" and job.reason == "adjoint"
    return job


async def show_phase(pilot, app: KdebugApp, job_id: int, phase: str) -> None:
    app.tree.select_job(job_id)
    await wait_for(pilot, lambda: app.detail.job_id == job_id, f"job #{job_id} shown", limit=10)
    app.detail.action_tab("ir")
    app.detail.set_phase(phase)
    await wait_for(pilot, lambda: app.detail.active_tab == "ir" and app.detail.phase == phase,
                   f"the IR tab at {phase}", limit=10)
    await pilot.pause()


def ir_document(app: KdebugApp):
    return app.query_one("#view-ir", TextView).document


def group_of(lines: list[str], head: str) -> list[str]:
    """The entries under the group whose heading starts with ``head`` (up to the next blank line)."""
    at = next((k for k, line in enumerate(lines) if line.startswith(head)), None)
    assert at is not None, (head, lines)
    end = next((k for k in range(at + 1, len(lines)) if not lines[k].strip()), len(lines))
    return lines[at + 1:end]


@SIZES
def test_the_tape_view_groups_the_stencil_reads_under_line_20(stencil_trace, size):
    async def go():
        app = replay_app(stencil_trace)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            job = adjoint_job(app)
            await show_phase(pilot, app, job.id, "tape")
            await wait_for(pilot, lambda: isinstance(ir_document(app), TapeDocument), "the tape view", limit=10)
            lines = view_lines(app, "view-ir")
            head = next(line for line in lines if line.startswith("adjoint_stencil.py:20"))
            assert head.endswith(LINE_20), head  # the line's own source text, from the job's source
            entries = group_of(lines, "adjoint_stencil.py:20")
            for name in (".46", ".60", ".76"):  # x[i - 1], x[i], x[i + 1]: cached, and plain inside the block
                assert any(f"cached %{name} double: operand of a product" in e for e in entries), (name, entries)
                assert any(f"block-local: the read %{name} (own index -1..1) \u2192 a plain add inside the block's "
                           f"window, atomicrmw fadd at its edges" in e for e in entries), (name, entries)
            assert sum("block-local:" in e for e in entries) == 3 and not any("atomic:" in e for e in entries)
            assert any("3 read(s) plain inside the block's window" in line for line in lines), lines
            sizes = group_of(lines, "bytes per thread")
            assert "  adjoint_smooth__j2.primal: 64 for the blocks outside loops" in sizes
            assert any(line.startswith("    reverse sweep: static (no cycles") for line in sizes), sizes
            assert NO_LINE not in lines  # every entry of this tape has a source position
            tape = app.model.snapshot_text(job.id, "tape")
            await pilot.press("d")  # the tape file as written
            await wait_for(pilot, lambda: not isinstance(ir_document(app), TapeDocument), "the raw tape", limit=10)
            assert app.detail.active_tab == "ir"
            assert view_lines(app, "view-ir") == tape.splitlines()
            await pilot.press("d")  # and back
            await wait_for(pilot, lambda: isinstance(ir_document(app), TapeDocument), "the grouped tape", limit=10)
    run(go())


@SIZES
def test_the_reverse_stages_diff_against_the_stage_before(stencil_trace, size):
    async def go():
        app = replay_app(stencil_trace)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            job = adjoint_job(app)
            for phase, before in (("augmented_forward", "primal_resolved"), ("reverse", "augmented_forward")):
                await show_phase(pilot, app, job.id, phase)
                await wait_for(pilot, lambda: isinstance(ir_document(app), UnifiedDiffDocument),
                               f"{phase} diffed", limit=10)
                lines = view_lines(app, "view-ir")
                assert lines[0].startswith(f"--- {before}") and lines[1].startswith(f"+++ {phase}"), lines[:2]
                assert any(line.startswith("+") and not line.startswith("+++") for line in lines)
                help_box = app.query_one("#phase-help")
                assert f"a diff against {before}" in str(help_box.render())
            # the reverse sweep's accumulations into the shadows are what reverse adds to augmented_forward
            added = [line for line in view_lines(app, "view-ir") if line.startswith("+") and "atomicrmw fadd" in line]
            assert added, "no atomicrmw fadd added by the reverse stage"
            await pilot.press("d")  # reverse itself
            await wait_for(pilot, lambda: not isinstance(ir_document(app), UnifiedDiffDocument), "reverse's own IR",
                           limit=10)
            assert app.detail.active_tab == "ir"
            own = app.model.snapshot_text(job.id, "reverse").expandtabs(4).splitlines()
            assert view_lines(app, "view-ir") == own
            await pilot.press("d")
            await wait_for(pilot, lambda: isinstance(ir_document(app), UnifiedDiffDocument), "the diff again",
                           limit=10)
            # a phase that is not diffed: d is the Finish tab's toggle, as before
            await show_phase(pilot, app, job.id, "before_finish")
            await pilot.press("d")
            await wait_for(pilot, lambda: app.detail.active_tab == "finish", "the Finish tab", limit=10)
    run(go())


def test_the_strategy_tab_explains_reverse_mode_and_nested_orders(stencil_trace):
    async def go():
        app = replay_app(stencil_trace)
        async with app.run_test(size=MEDIUM) as pilot:
            await pilot.pause()
            app.detail.action_tab("strategy")
            await wait_for(pilot, lambda: app.detail.active_tab == "strategy", "the Strategy tab", limit=10)
            await pilot.pause()
            text = " ".join(str(app.query_one("#strategy-help").render()).split())
            assert "Reverse mode (kdebug.gradient, kdebug.adjoint) needs the primal's body" in text
            assert "Enzyme.jl#1707" in text and "GPUCompiler.jl#629" in text
            assert "kdebug.grad(kdebug.gradient(f, 0), 1)" in text and "one shared job table" in text
            assert "needs the body" in text  # the strategy's own sentence on forward mode stays
    run(go())


# ---- the parser, on the lines the tape file may hold -------------------------------------------
TAPE = """\
# the tape: what the augmented forward sweep keeps for the reverse sweep

function k__j2.primal
  bytes per thread: 48 for the blocks outside loops, plus per loop trip: body 24
  reverse sweep: a linked tape (a cycle: each record holds the one before it and its block's number, 12 bytes of header)
  block entry: one record, 16 bytes
  block body: a record per run (in a loop), 24 bytes
    cached %.7 (double) at k.py:5:13: operand of a product (overwritten in a loop: kept per trip)
    cached %.8 (i1): the condition of a select
recomputed: k__j2.primal block body: %.9 at k.py:6:2 (operand of a product) is read again from %x, which is stored only in the entry block
partial: k__j2.primal asks job g for its reverse-mode partial by argument 0
atomic: k__j2.primal block body: the read %.7 at k.py:5:13 of a global array becomes an atomic accumulation (atomicrmw fadd) into its shadow
exclusive: k__j2.primal block body: the read %.11 at k.py:6:9 is this thread's own element: kept as a plain add into its shadow
atomic: k__j2.primal block body: the read %.12 (no position) becomes an atomic accumulation
exclusive reads kept as plain adds: %.11
"""


def test_the_tape_parser_places_cached_values_atomics_and_plain_adds():
    tape = parse_tape(TAPE)
    assert tape.functions == [("k__j2.primal", "48 for the blocks outside loops, plus per loop trip: body 24")]
    assert tape.sweeps == {"k__j2.primal": "a linked tape (a cycle: each record holds the one before it and its "
                                           "block's number, 12 bytes of header)"}
    by_kind = {}
    for e in tape.entries:
        by_kind.setdefault(e.kind, []).append(e)
    assert [(e.text, e.block, e.line, e.col) for e in by_kind["cached"]] == [
        ("%.7 double: operand of a product (overwritten in a loop: kept per trip)", "body", 5, 13),
        ("%.8 i1: the condition of a select", "body", None, None)]
    assert [(e.text, e.line) for e in by_kind["atomic"]] == [
        ("the read %.7 \u2192 atomicrmw fadd into the shadow", 5),
        ("the read %.12 (no position) becomes an atomic accumulation", None)]
    (plain,) = by_kind["exclusive"]
    assert (plain.line, plain.col, plain.function) == (6, 9, "k__j2.primal") and "%.11" in plain.text
    assert by_kind["recomputed"][0].text == "%.9: operand of a product, read again from %x"
    assert by_kind["partial"][0].text.startswith("asks job g") and by_kind["partial"][0].line is None
    assert tape.notes == ["exclusive reads kept as plain adds: %.11"]

    doc = tape_document(TAPE)  # no model: the source lines are not known, the groups still are
    lines = [doc.plain(i) for i in range(len(doc))]
    assert [line.split()[2:4] for line in group_of(lines, "k.py:5")] == [["cached", "%.7"], ["atomic:", "the"]]
    assert any("exclusive: the read %.11" in line for line in group_of(lines, "k.py:6"))
    assert "    reverse sweep: a linked tape (a cycle: each record holds the one before it and its block's number, " \
           "12 bytes of header)" in group_of(lines, "bytes per thread")
    unplaced = group_of(lines, NO_LINE)
    assert any("cached %.8 i1" in line for line in unplaced) and any("partial:" in line for line in unplaced)
    assert any("%.12" in line for line in unplaced)


BARRIER_TAPE = """# the tape
function k__j2.primal
  bytes per thread: 408 for the blocks outside loops
shared: k__j2.primal: the shared array %.7 at r.py:23:9 (512 bytes a block) has a shadow of its size in shared memory, \
zeroed by the block's threads where the adjoint starts; its reads add into the shadow
barrier: k__j2.primal: the barrier %.80 at r.py:27:5 runs in the forward sweep and again in the reverse sweep, where \
the reverse reaches it: values computed before it that the reverse needs are on the tape
"""


def test_the_tape_view_places_shared_shadows_and_barriers_at_their_lines():
    tape = parse_tape(BARRIER_TAPE)
    got = [(e.kind, e.function, e.file, e.line, e.col, e.text) for e in tape.entries]
    assert got == [
        ("shared", "k__j2.primal", "r.py", 23, 9,
         "%.7 (512 bytes a block) \u2192 a shadow in shared memory, zeroed where the adjoint starts"),
        ("barrier", "k__j2.primal", "r.py", 27, 5,
         "%.80 \u2192 in the forward sweep, and again where the reverse sweep reaches it")]
    lines = [tape_document(BARRIER_TAPE).plain(i) for i in range(len(tape_document(BARRIER_TAPE)))]
    assert any("1 shared array(s) with a shadow" in line and "1 barrier(s) run forwards and backwards" in line
               for line in lines), lines
    assert any("barrier:" in line for line in group_of(lines, "r.py:27")), lines
