"""The TUI, driven by the Pilot: live runs in a debuggee child, stepping, crashes, replay, back-references.

Each live test starts one debuggee; leaving ``run_test`` unmounts the app, which
kills the child. Waits are bounded (``wait_for``) and never assert on time.
"""
from __future__ import annotations

import asyncio
import json
import os
import textwrap

import pytest

from conftest import ROOT, SAMPLES, run_kdebug, tree_labels
from kdebug.cli import parse_args, run_options
from kdebug import events as E
from kdebug.session.debuggee import BREAKPOINTS, Stepper, breakpoint_of, parse_breakpoints
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.app import KdebugApp
from kdebug.tui.documents import SideBySideDocument, UnifiedDiffDocument
from kdebug.tui.synthetic import cycle_events, write_trace
from kdebug.tui.textview import TextView

SIZE = (160, 48)
SAXPY = os.path.join(SAMPLES, "saxpy.py")
RECURSIVE = os.path.join(SAMPLES, "recursive_launch.py")


async def wait_for(pilot, condition, what: str, limit: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds; fail (not hang) if it never does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await pilot.pause(0.05)


def live_app(*argv: str, cwd: str = ROOT) -> KdebugApp:
    return KdebugApp(opts=run_options(parse_args(["run", "--backend", "cpu", *argv])), cwd=cwd)


def view_lines(app: KdebugApp, view_id: str) -> list[str]:
    doc = app.query_one(f"#{view_id}", TextView).document
    return [doc.plain(i) for i in range(len(doc))]


def run(coro) -> None:
    asyncio.run(coro)


@pytest.fixture(scope="module")
def recursive_trace(tmp_path_factory) -> str:
    """A trace of the recursive sample (a -> b -> c -> a), recorded once for the replay tests."""
    path = str(tmp_path_factory.mktemp("traces") / "recursive.jsonl")
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", path, RECURSIVE)
    assert r.returncode == 0, r.stderr
    return path


# ---- live runs ------------------------------------------------------------------------------
def test_tree_after_running_saxpy(tmp_path):
    trace = tmp_path / "live.jsonl"

    async def go():
        app = live_app("--trace", str(trace), SAXPY)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            labels = tree_labels(app)
            assert len(labels) == 1
            assert "saxpy #1" in labels[0] and "done" in labels[0] and "float32[::1]" in labels[0]
            assert app.detail.job_id == 1
            assert "def saxpy(a, x, y, out):" in view_lines(app, "view-source")
            assert app.query_one("#launches").row_count == 1
            assert "session ok" in app.status_text().plain
            assert "backend cpu" in app.sub_title and "strategy worklist" in app.sub_title
            output = view_lines(app, "output")
            assert any("saxpy: 65536 elements match numpy" in line for line in output)
    run(go())
    recorded = [ev.kind for ev in read_trace(str(trace))]  # --trace records the live session
    assert recorded[0] == "session_started" and recorded[-1] == "session_ended" and "snapshot" in recorded


def test_the_status_line_never_runs_ahead_of_the_tree():
    """The tree redraws a changed label from its own queue (Textual's Tree.set_label), the status line
    at once: the line said "session ok" on frames where the tree still showed the job compiling (a live
    run in a real terminal, tests/tui/test_tui_terminal.py, under load). The line now changes only after the
    tree's redraws have run."""
    events = cycle_events()
    last = max(i for i, ev in enumerate(events) if isinstance(ev, E.JobFinished) and ev.job == 1)
    model = SessionModel()
    for ev in events[:last]:
        model.apply(ev)

    async def go():
        app = KdebugApp(model=model, trace_path="cycle.jsonl")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            status = app.query_one("#status")
            before = status._shown[0]
            assert "session ok" not in before and "compiling" in tree_labels(app)[0]
            rest = events[last:]
            for ev in rest:
                app.model.apply(ev)
            app._route(rest, live=False)  # what a drained inbox does, in one go
            assert status._shown[0] == before  # not yet: the tree's redraws are queued behind its own work
            await pilot.pause()
            assert "session ok" in status._shown[0]
            tree = app.tree
            shown = "\n".join(tree.render_line(y).text for y in range(tree.size.height))
            assert "compiling" not in shown and "done" in shown, shown
    run(go())


def test_stepping_through_breakpoints():
    async def go():
        app = live_app("--break", "finish", SAXPY)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.paused is not None, "the finish breakpoint")
            paused = app.model.paused
            assert paused.breakpoint == "finish" and paused.job == 1
            assert "before finish" in app.status_text().plain
            assert tree_labels(app)[0].startswith("\u23f8")  # the job it stopped at is marked
            assert app.detail.active_tab == "ir" and app.detail.phase == "before_finish"
            # the job has everything up to optimize, nothing after finish yet
            job = app.model.jobs[1]
            assert "before_finish" in job.snapshots and "after_finish" not in job.snapshots

            await pilot.press("s")  # step: stop at the next phase
            await wait_for(pilot, lambda: app.model.paused is not None and app.model.paused is not paused,
                           "the step")
            assert app.model.paused.breakpoint == "step"
            assert "before phase validate" in app.model.paused.message
            assert "after_finish" in app.model.jobs[1].snapshots

            # a breakpoint set in the UI, while paused: before a launch
            await pilot.press("b")
            await pilot.pause()
            await pilot.click("#bp-launch")
            await pilot.click("#bp-apply")
            await pilot.pause()
            assert app.breakpoints == {"finish", "launch"}
            await pilot.press("c")
            await wait_for(pilot, lambda: app.model.paused is not None and app.model.paused.breakpoint == "launch",
                           "the launch breakpoint")
            assert app.model.launches[1].state == "running"
            await pilot.press("c")
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            assert app.model.ended.status == "ok"
            assert not tree_labels(app)[0].startswith("\u23f8")
            kinds = [ev.kind for ev in app.model.events]
            assert kinds.count("paused") == 3 and kinds.count("resumed") == 3
    run(go())


def test_debuggee_segfault_leaves_the_tui_alive(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent("""\
        import ctypes
        print("about to crash", flush=True)
        ctypes.string_at(0)
    """))

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the crash to be reported")
            await pilot.pause()
            ended = app.model.ended
            assert ended.status == "crashed" and ended.exit_code == 139  # 128 + SIGSEGV, as headless says it
            assert "exit status 139" in app.status_text().plain
            assert "SIGSEGV" in ended.error and "crash.py" in ended.error
            assert app.model.started is not None  # what came before the crash is kept
            status = app.status_text().plain
            assert "session crashed" in status and "SIGSEGV" in status
            assert any("SIGSEGV" in line for line in view_lines(app, "diagnostics"))
            assert any("about to crash" in line for line in view_lines(app, "output"))
            await pilot.press("2", "t")  # still answering keys; the trace keeps the synthesized end
            saved = list(read_trace(str(tmp_path / "kdebug-trace.jsonl")))
            assert saved[-1].kind == "session_ended" and saved[-1].status == "crashed"
    run(go())


def test_a_key_kills_a_hung_debuggee(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\nprint('hanging', flush=True)\ntime.sleep(600)\n")

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        app.HANG_AFTER_S = 0.2
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("hanging" in s for s in view_lines(app, "output")), "the script")
            assert app.model.ended is None and app.debuggee.alive
            await wait_for(pilot, lambda: "hung?" in str(app.query_one("#status").render()), "the hang hint")
            await pilot.press("x")
            await wait_for(pilot, lambda: app.model.ended is not None, "the kill")
            assert app.model.ended.status == "killed"
            assert "killed" in app.status_text().plain
    run(go())


def test_killing_a_spinning_kernel_says_where_the_kernel_was(tmp_path):
    """x during an endless kernel: as a headless --timeout does, the end names the kernel's block and the
    while loop (it named only the script's launch line)."""
    script = tmp_path / "spin.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        from kdebug import cuda

        @cuda.jit
        def spin(a):
            while a[0] == 0:
                a[1] += 1

        spin[2, 32](np.zeros(2))
    """))

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any(ln.state == "running" for ln in app.model.launches.values()),
                           "the launch")
            await pilot.press("x")
            await wait_for(pilot, lambda: app.model.ended is not None, "the kill")
            assert app.model.ended.status == "killed" and app.model.ended.exit_code == 137
            error = app.model.ended.error
            assert "spin.py:9" in error, error  # the script's line
            assert "spin: a thread of block (" in error and "last entered the while loop at" in error, error
            assert "spin.py:6" in error, error
    run(go())


def test_rerun_with_another_strategy_stops_the_cycle():
    async def go():
        app = live_app(RECURSIVE)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the worklist run")
            assert app.model.ended.status == "ok"
            assert [ev.resolution for ev in app.model.reentrant] == ["reference"]
            await pilot.press("r", "r")  # worklist -> toplevel -> recursive
            await wait_for(pilot, lambda: app.model.ended is not None and app.model.started is not None,
                           "the recursive run")
            assert app.opts.strategy == "recursive" and "strategy recursive" in app.sub_title
            assert [ev.resolution for ev in app.model.reentrant] == ["stopped"]
            labels = tree_labels(app)
            backref = next(label for label in labels if "\u21bb" in label)
            assert "kernel_a \u2192 kernel_b \u2192 kernel_c \u2192 kernel_a" in backref and "stopped" in backref
    run(go())


# ---- replay ---------------------------------------------------------------------------------
def replay_app(path: str, cwd: str | None = None) -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(read_trace(path)), trace_path=path, cwd=cwd)


def test_replay_of_a_recorded_trace(recursive_trace):
    async def go():
        app = replay_app(recursive_trace)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            labels = tree_labels(app)
            assert [label.split("#")[0].split()[-1] for label in labels if "\u21bb" not in label] == \
                ["kernel_a", "kernel_b", "kernel_c"]
            assert app.query_one("#launches").row_count == 6
            assert "replay of recursive.jsonl" in app.sub_title
            await pilot.press("s")  # nothing runs in a replay: stepping only says so
            assert app.debuggee is None
            launches = app.query_one("#launches")
            launches.focus()
            await pilot.press("down", "down", "enter")  # launch #3 is kernel_c's: the detail follows
            assert app.detail.job_id == 3 and app.tree.selected() == ("job", 3)
    run(go())


def test_real_recursive_sample_shows_a_backref_with_its_cycle(recursive_trace):
    async def go():
        app = replay_app(recursive_trace)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("down", "down", "down")  # a, b, c, then c's ↻
            assert app.tree.selected() == ("backref", 0)
            banner = str(app.query_one("#banner").render())
            assert "kernel_a \u2192 kernel_b \u2192 kernel_c \u2192 kernel_a" in banner
            assert "reference" in banner
            await pilot.press("g")
            assert app.detail.job_id == 1 and app.tree.selected() == ("job", 1)
    run(go())


def test_finish_diff_of_a_job(recursive_trace):
    async def go():
        app = replay_app(recursive_trace)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("down", "3")  # kernel_b, Finish tab
            assert app.detail.job_id == 2
            view = app.query_one("#view-finish", TextView)
            assert isinstance(view.document, UnifiedDiffDocument)
            lines = view_lines(app, "view-finish")
            assert lines[0].startswith("--- before_finish") and lines[1].startswith("+++ after_finish")
            added = [line for line in lines if line.startswith("+") and not line.startswith("+++")]
            assert any("define" in line and "kernel_b" in line for line in added)
            await pilot.press("d")
            assert isinstance(view.document, SideBySideDocument)
            assert any(tag != "equal" for _, _, tag in view.document.rows)
    run(go())


def test_backref_and_cycle_path_in_a_synthetic_trace(tmp_path):
    path = write_trace(cycle_events(), str(tmp_path / "cycle.jsonl"))

    async def go():
        app = replay_app(path)
        async with app.run_test(size=SIZE) as pilot:
            labels = tree_labels(app)
            assert labels[3].strip().startswith("\u21bb #1") and "a \u2192 b \u2192 c \u2192 a" in labels[3]
            assert labels[2].strip().startswith("\u26a0")  # the job that raised it is marked
            await pilot.press("down", "down", "down")
            assert "cycle a \u2192 b \u2192 c \u2192 a" in str(app.query_one("#banner").render())
            assert app.model.cycle == {1, 2, 3}  # the path is highlighted in the tree
            names = [app.tree.job_nodes[j].label for j in (1, 2, 3)]
            assert all(any("reverse" in str(span.style) for span in label.spans) for label in names)
            await pilot.press("up")
            assert app.model.cycle == set()
            assert any("re-entrant request #3" in line for line in view_lines(app, "diagnostics"))
    run(go())


def test_search_jump_copy_and_save(tmp_path):
    path = write_trace(cycle_events(), str(tmp_path / "cycle.jsonl"))

    async def go():
        app = replay_app(path, cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")  # IR, optimize of job a
            assert app.detail.phase == "optimize"
            await pilot.press("slash", *"call", "enter")
            view = app.query_one("#view-ir", TextView)
            assert len(view.matches) == 1 and "call void @b" in view.document.plain(view.matches[0])
            await pilot.press("n")
            assert view.current_match == 0  # one match: n wraps to it
            await pilot.press("N")
            assert view.current_match == 0
            await pilot.press("y")
            assert "call void @b" in app.clipboard
            await pilot.press("slash", *"add nsw", "enter")
            many = len(view.matches)
            assert many > 10 and view.current_match == 0
            await pilot.press("n", "n", "N")
            assert view.current_match == 1
            await pilot.press("N", "N")
            assert view.current_match == many - 1  # wraps backwards
            await pilot.press("comma")
            assert app.detail.phase == "lower"
            await pilot.press("right_square_bracket")
            assert app.detail.job_id == 2 and app.detail.active_tab == "ir"
            await pilot.press("w", "t")
            saved = (tmp_path / "b-j2-lower.ll").read_text()
            assert "define void @b(" in saved
            events = [json.loads(line) for line in (tmp_path / "kdebug-trace.jsonl").read_text().splitlines()]
            assert len(events) == len(app.model.events) and events[-1]["event"] == "session_ended"
    run(go())


def test_command_palette_has_an_entry_per_action():
    async def go():
        app = KdebugApp(model=SessionModel().extend(cycle_events()))
        async with app.run_test(size=SIZE) as pilot:
            titles = {cmd.title for cmd in app.get_system_commands(app.screen)}
            for title in ("Step", "Continue", "Breakpoints", "Kill the debuggee", "Rerun with strategy recursive",
                          "Search", "Next match", "Next job", "Next IR phase", "Go to the re-entrant target",
                          "Toggle diff layout", "Copy this stage", "Save this stage", "Save the trace"):
                assert title in titles
            await pilot.press("ctrl+p", *"Finish diff tab")  # palette: run one of them

            def first_match() -> str:
                from textual.command import CommandList
                commands = app.screen.query(CommandList)
                if not commands or commands.first().highlighted is None:
                    return ""
                cl = commands.first()
                return str(cl.get_option_at_index(cl.highlighted).prompt)
            await wait_for(pilot, lambda: "Finish diff tab" in first_match(), "the palette's search")
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.detail.active_tab == "finish", "the palette command")
    run(go())


# ---- the debuggee's breakpoints, without a UI ---------------------------------------------------
def test_breakpoints_match_the_events_emitted_before_each_action():
    job = {"job": 2, "name": "child", "parent": 1, "key": "k"}
    assert breakpoint_of(E.JobRequested(**job, reason="launch")) == "deferred"
    assert breakpoint_of(E.JobRequested(**{**job, "parent": None}, reason="host")) is None
    assert breakpoint_of(E.Reentrant(**job, target_job=1)) == "reentrant"
    assert breakpoint_of(E.PhaseStarted(**job, phase="finish")) == "finish"
    assert breakpoint_of(E.PhaseStarted(**job, phase="optimize")) is None
    assert breakpoint_of(E.LaunchStarted(launch=1)) == "launch"
    assert parse_breakpoints("reentrant, finish") == {"reentrant", "finish"}
    assert parse_breakpoints("all") == set(BREAKPOINTS)
    with pytest.raises(ValueError, match="unknown breakpoint"):
        parse_breakpoints("finsh")


def test_stepper_pauses_and_resumes_on_commands():
    bus = E.EventBus()
    seen = []
    bus.subscribe(seen.append)
    stepper = Stepper(bus, None, {"finish"})
    bus.subscribe(stepper)
    stepper.commands.put("step")
    bus.emit(E.PhaseStarted(job=1, name="k", parent=None, key="k", phase="finish"))
    stepper.commands.put("continue")
    bus.emit(E.PhaseStarted(job=1, name="k", parent=None, key="k", phase="validate"))
    bus.emit(E.PhaseStarted(job=1, name="k", parent=None, key="k", phase="emit"))
    kinds = [(ev.kind, getattr(ev, "breakpoint", getattr(ev, "phase", ""))) for ev in seen]
    assert kinds == [("phase_started", "finish"), ("paused", "finish"), ("resumed", ""),
                     ("phase_started", "validate"), ("paused", "step"), ("resumed", ""),
                     ("phase_started", "emit")]


def test_memcheck_error_alerts_and_marks_the_job(tmp_path):
    script = tmp_path / "oob.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        from kdebug import cuda

        @cuda.jit
        def oob(a):
            i = cuda.grid(1)
            a[i + 1] = 1.0

        oob[1, 32](np.zeros(32, np.float32))
    """))

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            assert any(d.category == "memcheck" and d.job == 1 for d in app.model.diagnostics)
            assert tree_labels(app)[0].startswith("\u2716")  # the job's node is marked
            assert any("memcheck [job #1]" in line for line in view_lines(app, "diagnostics"))
            assert any(n.severity == "error" for n in app._notifications)  # popped up when it happened
            assert app.query_one("#launches").row_count == 1
    run(go())


def test_rerun_emitting_ptx_fills_the_ptx_tab():
    async def go():
        app = live_app(SAXPY)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the first run")
            app.action_rerun(ptx=True)
            await wait_for(pilot, lambda: app.model.ended is not None, "the PTX run")
            assert app.opts.target == "ptx" and app.opts.strategy == "worklist"
            await pilot.press("4")
            lines = view_lines(app, "view-ptx")
            assert any(".entry" in line for line in lines)
    run(go())


@pytest.mark.parametrize("language", ["llvm", "python", "ptx", "asm"])
def test_every_language_has_a_highlighter(language):
    from kdebug.tui.documents import highlight_line
    text = highlight_line("  %v1 = add i64 %n, 1 ; ret", language)
    assert text.plain == "  %v1 = add i64 %n, 1 ; ret" and text.spans


def test_events_arriving_under_a_dialog_reach_the_main_screen(tmp_path):
    path = write_trace(cycle_events(), str(tmp_path / "cycle.jsonl"))
    events = list(read_trace(path))

    async def go():
        app = live_app(SAXPY)  # a live app whose debuggee we replace by a feed of events
        app._start = lambda: None
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("b")  # the breakpoints dialog is on top
            await pilot.pause()
            for ev in events:
                app._post(app.generation, "event", ev)
            await wait_for(pilot, lambda: app.model.ended is not None, "the events")
            await pilot.press("escape")
            assert len(tree_labels(app)) == 4 and app.query_one("#launches").row_count == 2
    run(go())


def test_clicking_a_phase_shows_its_ir(tmp_path):
    path = write_trace(cycle_events(), str(tmp_path / "cycle.jsonl"))

    async def go():
        app = replay_app(path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")
            bar = app.query_one("#phase-bar")
            text = str(bar.render())
            x = text.index(" lower ") + 2  # a cell inside "lower"
            await pilot.click(bar, offset=(x + bar.styles.padding.left, 0))
            assert app.detail.phase == "lower"
            assert view_lines(app, "view-ir")[0] == "; ModuleID = 'a'"
    run(go())


@pytest.mark.parametrize("body, status, why", [
    ("raise ValueError('boom')", "failed", "ValueError: boom"),
    ("import os\nos._exit(3)", "crashed", "exited with status 3 before the session ended"),
])
def test_script_errors_and_exits_become_the_session_state(tmp_path, body, status, why):
    script = tmp_path / "bad.py"
    script.write_text("print('started', flush=True)\n" + body + "\n")

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            assert app.model.ended.status == status
            assert any(why in line for line in view_lines(app, "diagnostics") + view_lines(app, "output"))
            assert f"session {status}" in app.status_text().plain
    run(go())


def test_footer_keys_are_links_to_their_actions(tmp_path):
    path = write_trace(cycle_events(), str(tmp_path / "cycle.jsonl"))

    async def go():
        app = replay_app(path, cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            keys = app.query_one("#keys")
            x = str(keys.render()).index("Trace") + keys.styles.padding.left
            await pilot.click(keys, offset=(x, 0))
            await wait_for(pilot, lambda: (tmp_path / "kdebug-trace.jsonl").exists(), "the trace")
    run(go())


def test_pause_stops_a_running_script_at_the_next_step(tmp_path):
    script = tmp_path / "later.py"
    script.write_text(textwrap.dedent("""\
        import os, runpy, sys, time
        print("waiting", flush=True)
        for _ in range(1000):  # until the test says go (10 s at most)
            if os.path.exists("go"):
                break
            time.sleep(0.01)
        runpy.run_path(sys.argv[1], run_name="__main__")
    """))

    async def go():
        app = live_app(str(script), SAXPY, cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("waiting" in s for s in view_lines(app, "output")), "the script")
            await pilot.press("p")  # while it waits: stop at whatever the driver does next
            await pilot.pause(0.3)  # the command is a pipe write away; then let the script go on
            (tmp_path / "go").write_text("")
            await wait_for(pilot, lambda: app.model.paused is not None, "the pause")
            assert app.model.paused.breakpoint == "step" and "saxpy" in app.model.paused.message
            assert app.model.paused.job == 1 and not app.model.launches
            await pilot.press("c")
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            assert app.model.ended.status == "ok"
    run(go())


def test_a_thousand_job_trace_opens_with_every_node(tmp_path):
    from kdebug.tui.synthetic import big_events
    path = write_trace(big_events(1000, 200_000), str(tmp_path / "big.jsonl"))

    async def go():
        app = replay_app(path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("down", "2", "right_square_bracket", "3")
            nodes = list(app.tree.job_nodes.values())
            assert len(nodes) == 1000 and len(app.model.roots) == 20
            backrefs = [c for n in nodes for c in n.children if c.data[0] == "backref"]
            assert len(backrefs) == len(app.model.reentrant) == 10
            assert app.detail.job_id == 101 and app.detail.active_tab == "finish"  # #1 -> #21 -> #101
            assert view_lines(app, "view-finish")[0].startswith("--- before_finish")
            await pilot.press("a")  # the next job with an alert: the first re-entrant request after #101
            job = app.model.jobs[app.detail.job_id]
            assert job.backrefs and app.model.job_alert[job.id] == "warning"
    run(go())


def test_side_by_side_diff_splits_the_view_width(recursive_trace):
    async def go():
        app = replay_app(recursive_trace)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3", "d")
            view = app.query_one("#view-finish", TextView)

            def halves() -> bool:  # the IR has lines longer than half the view: both columns in sight
                doc = view.document
                return isinstance(doc, SideBySideDocument) and view.size.width > 0 and \
                    doc.column == (view.size.width - 3) // 2
            await wait_for(pilot, halves, "the side-by-side diff")
            narrow = view.document.column
            await pilot.resize_terminal(220, 48)
            await wait_for(pilot, lambda: halves() and view.document.column > narrow, "the re-split")
    run(go())


def test_racecheck_run_shows_its_sanitizers_and_hazards():
    async def go():
        app = live_app("--sanitize", "memcheck,racecheck", os.path.join(SAMPLES, "sanitizers", "histogram_race.py"))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            assert "sanitize memcheck,synccheck,racecheck" in app.sub_title
            hazards = [a for a in app.model.alerts if a.title.startswith("racecheck")]
            assert len(hazards) == 1 and "write-after-write hazard on global array 'bins'" in hazards[0].title
            job = hazards[0].job
            assert app.model.jobs[job].name == "histogram_racy" and app.model.job_alert[job] == "error"
            app.tree.action_next_alert()  # jumps to the racy kernel's job
            await pilot.pause()
            assert app.detail.job_id == job
            diag = [line for line in view_lines(app, "diagnostics") if "racecheck" in line]
            assert diag and "bins" in diag[0]
    run(go())


def test_a_hazard_in_diagnostics_jumps_to_its_job_on_click_and_on_enter():
    async def go():
        app = live_app("--sanitize", "memcheck,racecheck", os.path.join(SAMPLES, "sanitizers", "histogram_race.py"))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await pilot.pause()
            (hazard,) = [a for a in app.model.alerts if a.title.startswith("racecheck")]
            others = [j for j in app.model.jobs if j != hazard.job]
            app.query_one("#bottom").active = "tab-diagnostics"
            panel = app.query_one("#diagnostics")
            line = next(i for i, text in enumerate(panel.document.lines) if text.startswith("error: racecheck"))
            assert panel.job_at_line(line) == hazard.job
            for how in ("click", "enter"):
                app.tree.select_job(others[0])
                await wait_for(pilot, lambda: app.detail.job_id == others[0], "another job shown")
                panel.scroll_to(y=line, animate=False)
                await wait_for(pilot, lambda: int(panel.scroll_y) == line, "the hazard at the top")
                if how == "click":
                    await pilot.click("#diagnostics", offset=(3, 0))
                else:
                    panel.focus()
                    await pilot.press("enter")
                await wait_for(pilot, lambda: app.detail.job_id == hazard.job, f"the hazard's job after {how}")
    run(go())


def test_the_output_panel_opens_at_its_last_lines(tmp_path):
    """The Output panel follows the script's output; written while another bottom tab showed, it opened at
    the first lines of a long output instead of the last."""
    script = tmp_path / "talk.py"
    script.write_text("for i in range(400):\n    print('line', i)\nprint('the last line', flush=True)\n")

    async def go():
        app = live_app(str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None
                           and any("the last line" in s for s in view_lines(app, "output")), "the output")
            await pilot.click("#bottom #--content-tab-tab-output")  # as a user opens it
            await pilot.pause()
            await pilot.pause()
            panel = app.query_one("#output", TextView)
            assert app.query_one("#bottom").active == "tab-output" and panel.size.height > 0
            assert panel.scroll_y == panel.max_scroll_y > 0, (panel.scroll_y, panel.max_scroll_y)
            assert "the last line" in panel.document.plain(int(panel.scroll_y) + panel.size.height - 1)
    run(go())
