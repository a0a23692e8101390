"""optimize and emit recorded pass by pass: only when something shows them, the compiled code the
same as an unrecorded run's, every pass snapshot a module LLVM parses, dump's per-pass files."""
from __future__ import annotations

import os
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from kdebug import cuda
from kdebug import events as E
from kdebug import passes
from kdebug.lang import types as T
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from kdebug.targets import pass_record


@cuda.jit
def _saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def _tiled_sum(x, out):
    s = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t] * 2
    cuda.syncthreads()
    if t == 0:
        acc = np.float32(0)
        for k in range(32):
            acc += s[k]
        out[0] = acc


def _args(*values):
    return tuple(T.typeof(v) for v in values)


CASES = {
    "saxpy": (_saxpy, lambda: _args(np.float32(1), *(np.zeros(4, np.float32),) * 3)),
    "barriers": (_tiled_sum, lambda: _args(np.zeros(32, np.float32), np.zeros(1, np.float32))),
}


def _compile(snapshots: bool, case: str):
    kernel, argtypes = CASES[case]
    session = Session(backend="cpu", snapshots=snapshots)
    events: list[E.Event] = []
    session.bus.subscribe(events.append)
    set_session(session)
    try:
        compiled = session.compile_kernel(kernel, argtypes())
    finally:
        set_session(None)
    return compiled, events


def _kinds(events, kind: str) -> list:
    return [e for e in events if e.kind == kind]


@pytest.fixture
def recorder_calls(monkeypatch):
    calls = []
    original = pass_record.run_recorded

    def counting(*a, **kw):
        calls.append(a)
        return original(*a, **kw)
    monkeypatch.setattr(pass_record, "run_recorded", counting)
    return calls


# ---- recorded only when something shows it ------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_pass_is_recorded_when_nobody_looks(recorder_calls, case):
    compiled, events = _compile(False, case)
    assert compiled.entry_address
    assert _kinds(events, "pass_snapshot") == [] and _kinds(events, "pass_list") == []
    assert _kinds(events, "snapshot") == []
    assert recorder_calls == []  # LLVM's printing never switched on


def test_a_plain_headless_run_records_no_pass(monkeypatch, recorder_calls):
    """``kdebug run --headless script`` as main() starts it: the run's own events, counted."""
    from kdebug import cli
    from kdebug.session import runner

    events: list[E.Event] = []
    seen = []

    def in_process(options, quiet=False):
        seen.append(options)
        return runner.run_in_process(options, [events.append]), None
    monkeypatch.setattr(cli, "cmd_run", in_process)
    assert cli.main(["run", "--headless", "--backend", "cpu", os.path.join(SAMPLES, "saxpy.py")]) == 0
    assert seen and seen[0].snapshots is False
    assert _kinds(events, "job_finished"), "the sample compiled nothing"
    assert len(_kinds(events, "pass_snapshot")) == len(_kinds(events, "pass_list")) == 0
    assert len(_kinds(events, "snapshot")) == 0 and recorder_calls == []


# ---- what is recorded -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_optimize_and_emit_are_recorded_pass_by_pass(recorder_calls, case):
    compiled, events = _compile(True, case)
    model = SessionModel().extend(E.event_from_json(e.to_json()) for e in events)  # through JSON, as a trace
    job = model.jobs[compiled.record.id]
    assert set(job.passes) == {"optimize", "emit"} and len(recorder_calls) == 2
    for phase, runs in job.passes.items():
        assert len(runs) >= 30, (phase, len(runs))
        assert [p.index for p in runs] == list(range(1, len(runs) + 1))
        changed = [p for p in runs if p.changed]
        assert changed and len(changed) < len(runs)  # the -O2 pipeline has passes that change nothing
        assert all((p.snapshot is not None) == p.changed for p in runs)
        assert {e.index for e in _kinds(events, "pass_snapshot") if e.phase == phase} == {p.index for p in changed}
    assert any(e.base is not None for e in _kinds(events, "pass_snapshot"))  # most travel as edits
    last = [p for p in job.passes["optimize"] if p.changed][-1]
    assert model.pass_text(last.snapshot) == model.snapshot_text(job.id, "optimize")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_pass_snapshot_parses_as_llvm_ir(case):
    compiled, events = _compile(True, case)
    model = SessionModel().extend(events)
    count = 0
    for runs in model.jobs[compiled.record.id].passes.values():
        previous = None
        for p in (p for p in runs if p.snapshot):
            text = model.pass_text(p.snapshot)
            llvm.parse_assembly(text).verify()  # raises on anything LLVM would not take
            assert text != previous  # each changed the module it was given
            previous, count = text, count + 1
    assert count == len(_kinds(events, "pass_snapshot"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_recording_compiles_the_same_code(monkeypatch, case):
    """The recorded pipeline is the unrecorded one: the same IR after optimize and finish, the same
    assembly and the same object code."""
    # memcheck's source sites, device-side launch sites and print formats are numbered into the code by
    # each session's own target: the second compile (a new session) numbers them as the first did
    recorded, _ = _compile(True, case)
    monkeypatch.setattr(passes, "open_log", lambda: None)  # snapshots, but the pipelines unrecorded
    plain, events = _compile(True, case)
    assert _kinds(events, "pass_snapshot") == []
    for phase in ("optimize", "after_finish", "emit"):
        assert recorded.record.snapshots[phase] == plain.record.snapshots[phase], phase
    assert recorded.artifact.object == plain.artifact.object


def test_an_unrecorded_pipeline_waits_for_a_recording_one():
    """LLVM's print options are process-wide: every pipeline holds one lock (a recording thread's
    options never leak into another's run)."""
    mod = llvm.parse_assembly("define i32 @f(i32 %a) {\n  %x = add i32 %a, 0\n  ret i32 %x\n}\n")
    from kdebug.targets.base import run_pipeline
    from kdebug.targets.cpu.target import host_target_machine
    with passes.recording() as log:
        run_pipeline(host_target_machine(), mod, 2)
    assert [r.name for r in log.runs if r.changed] and "add i32" not in str(mod)
    assert pass_record.PIPELINE_LOCK.acquire(blocking=False)  # released after the run
    pass_record.PIPELINE_LOCK.release()
    mod2 = llvm.parse_assembly("define i32 @g(i32 %a) {\n  ret i32 %a\n}\n")
    run_pipeline(host_target_machine(), mod2, 2)  # unrecorded afterwards: LLVM prints nothing more
    assert "define" in str(mod2)


# ---- the edits a pass snapshot travels as ----------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=30),
       st.lists(st.sampled_from(["a", "b", "c", "e", ""]), max_size=30))
def test_edits_rebuild_the_module(before, after):
    assert passes.apply_edits(before, passes.edits(before, after)) == after
    fine = passes.FINE_DIFF
    try:
        passes.FINE_DIFF = 4  # a long middle: one replacement
        assert passes.apply_edits(before, passes.edits(before, after)) == after
    finally:
        passes.FINE_DIFF = fine


# ---- kdebug dump ------------------------------------------------------------------------------------
def test_dump_writes_a_file_per_pass_that_changed_the_module(tmp_path):
    from kdebug.session.dump import write_dump
    compiled, events = _compile(True, "saxpy")
    model = SessionModel().extend(events)
    written = write_dump(model, str(tmp_path))
    job = model.jobs[compiled.record.id]
    pattern = re.compile(r"001_\w+?_(\d{2})-(optimize|emit)-pass(\d{4,})-(\w+)\.ll")
    files = {os.path.basename(p): p for p in written if pattern.fullmatch(os.path.basename(p))}
    expected = {(phase, p.index, p.name) for phase, runs in job.passes.items() for p in runs if p.changed}
    got = {(m.group(2), int(m.group(3)), m.group(4)) for m in map(pattern.fullmatch, files)}
    assert got == expected
    for name, path in files.items():
        text = open(path, encoding="utf-8").read()
        llvm.parse_assembly(text)
        phase = pattern.fullmatch(name).group(2)
        number = pattern.fullmatch(name).group(1)  # the phase's own file has the same number
        assert os.path.exists(tmp_path / f"001_{job.name}_{number}-{phase}.{'ll' if phase == 'optimize' else 's'}")
    listing = (tmp_path / next(n for n in os.listdir(tmp_path) if n.endswith("-optimize-passes.txt"))).read_text()
    assert "unchanged" in listing and f"{len(job.passes['optimize'])} passes" in listing


def test_dump_without_passes_writes_the_same_stages_and_no_pass(tmp_path):
    """``kdebug dump --no-passes``: every stage file a full dump writes, with the same text (the source,
    the stages, the job file's key and digests), and none of the pass-by-pass files or listings."""
    from conftest import ROOT, run_kdebug
    sample = os.path.join(ROOT, "sample_kernels", "grad_taylor.py")
    for where, extra in (("full", ()), ("stages", ("--no-passes",))):
        r = run_kdebug("dump", sample, "--out", str(tmp_path / where), *extra)
        assert r.returncode == 0, r.stdout + r.stderr
    full, stages = (set(os.listdir(tmp_path / w)) for w in ("full", "stages"))
    per_pass = re.compile(r".*-(pass\d{4,}-\w+\.ll|passes\.txt)$")
    assert any(per_pass.match(n) for n in full)
    assert not any(per_pass.match(n) for n in stages)
    assert stages == {n for n in full if not per_pass.match(n) and not n.endswith("_remarks.txt")}
    for name in stages:
        assert (tmp_path / "stages" / name).read_text() == (tmp_path / "full" / name).read_text(), name
