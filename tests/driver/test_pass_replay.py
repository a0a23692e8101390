"""Passes kept for a replay (``Recording.passes_on_demand``, the live TUI's default): the compile
records no pass, each pipeline keeps its input, machine, tuning and a digest of its result, and a
replay where someone looks gives exactly the passes, modules and remarks a recorded compile gives
(kdebug/passes.py, kdebug/targets/pass_record.py, the model's ``replayed_events``)."""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from kdebug import events as E
from kdebug.session.dump import write_dump
from kdebug.session import timeline
from kdebug.session.model import SessionModel
from kdebug.session.options import RunOptions
from kdebug.tui.app import KdebugApp
from test_tui import SIZE, wait_for

from conftest import ROOT
SAMPLES = os.path.join(ROOT, "sample_kernels")

# one process per run: memcheck's site numbers are process-wide, so two compiles of one script in
# one process number their sites differently
CHILD = """
import sys
from kdebug import events as E
from kdebug.session.options import RunOptions
from kdebug.session.runner import run_in_process
events = []
run_in_process(RunOptions(script=sys.argv[1], passes_on_demand=sys.argv[2] == "1"), [events.append])
with open(sys.argv[3], "w") as f:
    f.writelines(E.to_line(ev) for ev in events)
"""


def events_of(sample: str, on_demand: bool, tmp_path) -> list[E.Event]:
    out = tmp_path / f"{sample}-{int(on_demand)}.jsonl"
    res = subprocess.run([sys.executable, "-c", CHILD, os.path.join(SAMPLES, sample + ".py"), str(int(on_demand)), str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    with open(out) as f:
        return [E.event_from_json(json.loads(line)) for line in f]


@pytest.mark.parametrize("sample", ["saxpy", "matmul_tiled", "recursive_launch"])
def test_a_replay_gives_the_recorded_passes_modules_and_remarks(sample, tmp_path):
    recorded, kept = events_of(sample, False, tmp_path), events_of(sample, True, tmp_path)
    assert not [ev for ev in kept if isinstance(ev, (E.PassSnapshot, E.PassList, E.Remarks))]
    replays = [ev for ev in kept if isinstance(ev, E.PassReplay)]
    assert {(ev.job, ev.phase) for ev in replays} == {(ev.job, ev.phase) for ev in recorded if isinstance(ev, E.PassList)}
    # the compile is the same: every phase's own snapshot alike, but emit's host assembly, which the
    # replay makes (no second code generation during the compile)
    snaps = lambda evs: [(ev.job, ev.phase, ev.text if ev.phase != "emit" else "") for ev in evs  # noqa: E731
                         if isinstance(ev, E.Snapshot)]
    assert snaps(kept) == snaps(recorded)
    assert [ev.assembly is not None for ev in replays] == [ev.phase == "emit" for ev in replays]

    want, got = SessionModel().extend(recorded), SessionModel().extend(kept)
    for ev in replays:
        assert ev.phase in got.jobs[ev.job].passes_pending
    for job_id in {ev.job for ev in replays}:
        events, failed = got.replayed_events(job_id)
        assert failed == {}
        got.apply_replayed(job_id, events, failed)
        a, b = want.jobs[job_id], got.jobs[job_id]
        assert not b.passes_pending and set(b.passes) == set(a.passes)
        for phase in a.passes:
            rows = lambda job: [(p.name, p.unit, p.changed) for p in job.passes[phase]]  # noqa: E731
            assert rows(b) == rows(a) and any(p.changed for p in a.passes[phase])
            texts = lambda model, job: [model.pass_text(p.snapshot) for p in job.passes[phase] if p.changed]  # noqa: E731
            assert texts(got, b) == texts(want, a)
        # the same remarks, pass after pass; within a pass, an inliner's remarks on a function called from two
        # places (the region form's bound function, from the launcher body and its copy for small blocks:
        # block_limits.py) follow LLVM's use lists, which the bitcode a replay starts from does not keep
        assert sorted(map(repr, b.remarks)) == sorted(map(repr, a.remarks)) and a.remarks
        passes = lambda remarks: [k for k, _ in itertools.groupby((r[0], r[1][4]) for r in remarks)]  # noqa: E731
        assert passes(b.remarks) == passes(a.remarks)
        assert {p: got.snapshot_text(job_id, p) for p in b.snapshots} == \
            {p: want.snapshot_text(job_id, p) for p in a.snapshots}  # the host assembly too
        asm = got.snapshot_text(job_id, "emit")
        assert "@function" in asm and "ret" in asm and "made when the job's passes are replayed" not in asm


@pytest.fixture(scope="module")
def kept_saxpy(tmp_path_factory) -> list[E.Event]:
    return events_of("saxpy", True, tmp_path_factory.mktemp("kept"))


def test_a_replay_that_makes_another_module_says_so_and_shows_no_passes(kept_saxpy):
    events = []
    for ev in kept_saxpy:
        if isinstance(ev, E.PassReplay) and ev.phase == "optimize":
            ev = E.PassReplay(job=ev.job, name=ev.name, parent=ev.parent, key=ev.key, phase=ev.phase,
                              pipelines=[dict(p, digest="0" * 40) for p in ev.pipelines])
        events.append(ev)
    model = SessionModel().extend(events)
    job = model.jobs[1]
    replayed, failed = model.replayed_events(1)
    assert set(failed) == {"optimize"} and "another module than the compile did" in failed["optimize"]
    model.apply_replayed(1, replayed, failed)
    assert "optimize" not in job.passes and "emit" in job.passes  # the good phase is shown, the bad one not
    assert job.passes_failed["optimize"] == failed["optimize"] and not job.passes_pending


def test_dump_of_a_session_with_kept_passes_writes_every_pass(kept_saxpy, tmp_path):
    model = SessionModel().extend(kept_saxpy)
    written = write_dump(model, str(tmp_path / "dump"))
    names = [os.path.basename(p) for p in written]
    assert any(n.endswith("-optimize-passes.txt") for n in names)
    assert sum(1 for n in names if "-optimize-pass" in n and n.endswith(".ll")) == \
        sum(1 for p in model.jobs[1].passes["optimize"] if p.changed) > 0
    assert any(n.endswith("_remarks.txt") for n in names)


def test_the_live_tui_replays_the_shown_jobs_passes_into_the_pass_bar(tmp_path):
    opts = RunOptions(script=os.path.join(SAMPLES, "saxpy.py"), passes_on_demand=True, backend="cpu")

    async def go():
        app = KdebugApp(opts=opts)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
            job = app.model.jobs[1]
            assert any(isinstance(ev, E.PassReplay) for ev in app.model.events)
            await wait_for(pilot, lambda: app.detail.job_id == 1, "the kernel to show")
            await pilot.press("2")
            await wait_for(pilot, lambda: "optimize" in job.passes and "emit" in job.passes, "the replayed passes",
                           limit=120)
            await pilot.press("k")  # optimize's last pass
            await wait_for(pilot, lambda: app.detail.pass_index == len(job.passes["optimize"]), "the last pass")
            changed = sum(1 for p in job.passes["optimize"] if p.changed)
            bar = " ".join(str(app.query_one("#pass-bar").render()).split())
            assert f"{changed}/{len(job.passes['optimize'])} changed" in bar, bar
            assert job.remarks  # the Source view's marks come with them
    asyncio.run(go())


SLEEPS_AFTER_A_LAUNCH = """\
import time
import numpy as np
from kdebug import cuda

@cuda.jit
def bump(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1

x = np.zeros(256, dtype=np.float32)
bump[1, 256](x)
print("launched", flush=True)
time.sleep(120)
"""


def _spied(app) -> list:
    """The app's replays of kept passes, one entry each as it is asked for (then run as before)."""
    asked, real = [], app.pass_replayer.replay

    def replay(pipelines, assembly=False):
        asked.append(len(pipelines))
        return real(pipelines, assembly=assembly)
    app.pass_replayer.replay = replay
    return asked


def test_while_the_script_runs_passes_are_replayed_only_for_a_tab_that_shows_them(tmp_path):
    """A replay runs LLVM's pipelines again beside the debuggee (16 s for gradient_hvp.py's job): while the
    script runs, the Source tab shown asks for none, and no replay process is started (it would only compete
    with the debuggee's start); the IR tab asks for one."""
    script = tmp_path / "sleeps.py"
    script.write_text(SLEEPS_AFTER_A_LAUNCH)
    opts = RunOptions(script=str(script), passes_on_demand=True, backend="cpu")

    async def go():
        app = KdebugApp(opts=opts, cwd=str(tmp_path))
        asked = _spied(app)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any(isinstance(ev, E.LaunchFinished) for ev in app.model.events)
                           and app.detail.job_id == 1, "the launch", limit=120)
            await pilot.pause(0.5)
            assert app.model.ended is None and app.detail.active_tab == "source"
            assert app.model.jobs[1].passes_pending and asked == [], asked
            assert not app.pass_replayer.started
            await pilot.press("2")
            await wait_for(pilot, lambda: asked, "the IR tab to ask for the replay")
            assert app.pass_replayer.started
            await wait_for(pilot, lambda: not app.model.jobs[1].passes_pending, "the replayed passes", limit=120)
            assert app.model.ended is None
    asyncio.run(go())


def _saxpy_to_its_end(then) -> None:
    """saxpy in the live TUI, its passes kept for a replay, run to the session's end; then
    ``await then(app, pilot, asked)`` (``asked``: the replays asked for, ``_spied``)."""
    opts = RunOptions(script=os.path.join(SAMPLES, "saxpy.py"), passes_on_demand=True, backend="cpu")

    async def go():
        app = KdebugApp(opts=opts)
        asked = _spied(app)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
            await then(app, pilot, asked)
    asyncio.run(go())


def test_a_session_that_ended_replays_the_shown_jobs_passes_whatever_the_tab(tmp_path):
    """Once the session ended the shown job's passes are replayed (after ``LOOK_S``: a q right after the end
    asks for none); the replay process is started at the end, while the user looks."""
    async def then(app, pilot, asked):
        await wait_for(pilot, lambda: app.pass_replayer.started, "the replay process to start", limit=60)
        await wait_for(pilot, lambda: not app.model.jobs[1].passes_pending, "the replayed passes", limit=60)
        assert asked and app.detail.active_tab == "source"
    _saxpy_to_its_end(then)


def test_a_session_that_ended_replays_nothing_until_the_user_stayed_to_look(monkeypatch):
    """A q right after the end must not start the replay process for nothing: the end's replay waits
    ``LOOK_S`` (here made longer than the test), where a tab that shows passes asks at once."""
    from kdebug.tui.detail import pane
    monkeypatch.setattr(pane, "LOOK_S", 3600.0)

    async def then(app, pilot, asked):
        await pilot.pause(0.5)
        assert asked == [] and app.model.jobs[1].passes_pending, asked
        await pilot.press("2")
        await wait_for(pilot, lambda: not app.model.jobs[1].passes_pending, "the replayed passes", limit=60)
        assert asked
    _saxpy_to_its_end(then)


def test_the_pass_bar_says_a_phase_is_being_replayed_or_why_it_is_not_shown(kept_saxpy):
    model = SessionModel().extend(kept_saxpy)
    job = model.jobs[1]
    assert set(job.passes_pending) == {"optimize", "emit"}
    gate = threading.Event()
    why = "the replayed pipeline made another module than the compile did (target machine x)"

    def held_replay(job_id, replay=None):  # a replay that takes until the test lets it end, and fails
        gate.wait(60)
        return [], {phase: why for phase in model.jobs[job_id].passes_pending}
    model.replayed_events = held_replay

    async def go():
        app = KdebugApp(model=model, trace_path="kept.jsonl")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.detail.job_id == 1, "the kernel to show")
            await pilot.press("2")
            await pilot.pause()
            bar = " ".join(str(app.query_one("#pass-bar").render()).split())
            assert "being replayed" in bar, bar
            gate.set()
            await wait_for(pilot, lambda: not job.passes_pending, "the replay to end")
            await pilot.pause()
            bar = " ".join(str(app.query_one("#pass-bar").render()).split())
            assert "not shown" in bar and "another module" in bar, bar
    try:
        asyncio.run(go())
    finally:
        gate.set()


def test_kdebug_on_a_terminal_keeps_passes_for_a_replay_unless_it_writes_a_trace(monkeypatch, tmp_path):
    from kdebug import cli
    from kdebug.tui import entry
    seen = []
    monkeypatch.setattr(entry, "run_tui", lambda opts: seen.append(opts) or 0)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    script = os.path.join(SAMPLES, "saxpy.py")
    assert cli.main([script]) == 0
    assert cli.main(["--trace", str(tmp_path / "t.jsonl"), script]) == 0
    assert [o.passes_on_demand for o in seen] == [True, False]


def _objects_reachable(root):
    """Every object the model's deep copy walks: attributes, containers, their items."""
    seen, todo, out = set(), [root], []
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None))):
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, dict):
            todo += list(obj.keys()) + list(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo += list(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            todo += list(vars(obj).values())
        elif hasattr(obj, "__slots__"):
            todo += [getattr(obj, s) for s in obj.__slots__ if hasattr(obj, s)]
    return out


def test_the_model_copies_as_the_timeline_copies_it_on_every_python(kept_saxpy):
    """Time travel deep-copies the model every CHECKPOINT_EVERY events. Python 3.14 removed the copying of
    itertools' iterators (3.12 and 3.13 warn), so the model keeps nothing that copies on one Python only."""
    import types
    import warnings
    model = SessionModel().extend(kept_saxpy)
    model.replay_all()  # the replayed passes take ids from the model's own counter
    assert any(ev.id < 0 for ev in model.events if isinstance(ev, E.PassSnapshot))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # what 3.12 and 3.13 say before 3.14 removes it
        twin = timeline._clone(model)
    kept = [type(o).__name__ for o in _objects_reachable(model)
            if type(o).__module__ == "itertools" or isinstance(o, (types.GeneratorType, types.MappingProxyType))]
    assert kept == []
    assert twin._next_replay_id() == model._next_replay_id() < min(
        ev.id for ev in model.events if isinstance(ev, E.PassSnapshot))


KILLED_OWNER = """
import os, signal, sys
from kdebug.targets.replay_worker import ReplayWorker
worker = ReplayWorker()
worker.warm()
print(worker._dumps, worker._proc.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # a served app whose browser went: no close(), no on_unmount
"""


def test_a_replay_worker_whose_owner_was_killed_removes_its_dumps_folder():
    """The dumps go in /dev/shm, memory until the next boot: a worker whose TUI was killed (no close())
    sees its requests' pipe close, and removes the folder as it ends."""
    res = subprocess.run([sys.executable, "-c", KILLED_OWNER], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == -9, res.stderr
    folder, pid = res.stdout.split()
    def alive() -> bool:  # a zombie nobody reaped (a container's init may not) has ended
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    deadline = time.monotonic() + 60
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(), "the worker outlived its owner"
    assert os.path.basename(folder).startswith("kdebug-replays-") and not os.path.exists(folder)
