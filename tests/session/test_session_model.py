"""The session model fed plain lists of events: the view state every face renders (no UI, no driver)."""
from __future__ import annotations

from kdebug import events as E
from kdebug.session.model import SessionModel
from kdebug.tui.synthetic import cycle_events


def _job(jid, name, parent=None, key=None, reason="launch"):
    return dict(job=jid, name=name, parent=parent, key=key or f"m.{name}(int64)/kernel/cpu")


def requested(jid, name, parent=None, key=None, t=0.0):
    return E.JobRequested(**_job(jid, name, parent, key), reason="host" if parent is None else "launch", t=t)


def test_one_reentrant_request_is_one_alert_with_its_location():
    model = SessionModel().extend(cycle_events())
    assert len(model.alerts) == 1  # the reentrant event and the driver's diagnostic about it
    alert = model.alerts[0]
    assert alert.severity == "warning" and alert.job == 3
    assert alert.title == "re-entrant request #3 \u2192 #1: a \u2192 b \u2192 c \u2192 a (reference)"
    assert model.job_alert == {3: "warning"}


def test_errors_outrank_warnings_and_each_diagnostic_is_an_alert():
    model = SessionModel().extend([
        requested(1, "k"),
        E.Diagnostic(severity="warning", category="duplicate", job=1, message="duplicate codegen"),
        E.Diagnostic(severity="error", category="memcheck", job=1, message="out of bounds\nkernel k, block (0,0,0)",
                     text="out of bounds\nkernel k, block (0,0,0)"),
        E.Diagnostic(severity="warning", category="finish", job=1, message="late"),
    ])
    assert [a.severity for a in model.alerts] == ["warning", "error", "warning"]
    assert model.alerts[1].title == "memcheck [job #1]: out of bounds"
    assert model.alerts[1].detail == ["kernel k, block (0,0,0)"]
    assert model.job_alert == {1: "error"}  # a later warning does not hide the error


def test_paused_job_follows_paused_and_resumed_and_marks_change():
    model = SessionModel().extend([requested(1, "k"), requested(2, "c", parent=1)])
    model.take_changed()
    model.apply(E.Paused(breakpoint="finish", job=1, t=1.0))
    assert model.paused_job == 1 and model.take_changed() == {1}
    model.apply(E.Resumed(t=2.0))
    model.apply(E.Paused(breakpoint="step", job=2, t=2.5))
    assert model.paused_job == 2 and model.take_changed() == {1, 2}
    model.apply(E.SessionEnded(status="ok", t=3.0))
    assert model.paused_job is None and model.held == [(1.0, 2.0), (2.5, 3.0)]


def test_select_cycle_says_which_marks_change():
    model = SessionModel().extend(cycle_events())
    assert model.select_cycle(0) == {1, 2, 3} and model.cycle == {1, 2, 3}
    assert model.select_cycle(0) == set()
    assert model.select_cycle(None) == {1, 2, 3} and model.cycle == set()


def test_launch_time_leaves_out_time_held_at_a_breakpoint_inside_it():
    # a parent launch held for 10 s while its device-side child waits at a launch breakpoint
    model = SessionModel().extend([
        requested(1, "k"),
        E.LaunchStarted(launch=1, job=1, name="k", grid=[1, 1, 1], block=[1, 1, 1], t=1.0),
        E.Paused(breakpoint="launch", launch=2, t=1.001),
        E.Resumed(t=11.001),
        E.LaunchStarted(launch=2, job=1, name="k", grid=[1, 1, 1], block=[1, 1, 1], parent_launch=1, t=11.0015),
        E.LaunchFinished(launch=2, name="k", duration=0.001, t=11.0025),
        E.LaunchFinished(launch=1, name="k", duration=10.003, t=11.003),
    ])
    assert abs(model.launches[1].duration - 0.003) < 1e-9 and abs(model.launches[1].held_time - 10.0) < 1e-9
    assert abs(model.launches[2].duration - 0.001) < 1e-9
    assert model.launch_depth(2) == 1 and model.launch_depth(1) == 0


def test_a_launch_still_running_when_the_session_is_killed_says_so():
    model = SessionModel().extend([
        requested(1, "k"),
        E.LaunchStarted(launch=1, job=1, name="k", grid=[1, 1, 1], block=[1, 1, 1]),
    ])
    assert model.launches[1].state == "running"
    model.apply(E.SessionEnded(status="killed", exit_code=-9, error="killed by the user\n  File x.py, line 3"))
    assert model.launches[1].state == "killed"
    assert model.alerts[-1].title == "session killed: killed by the user"


def test_a_diamond_keeps_both_edges_and_recursive_duplicates_are_marked():
    top, left, right, leaf = (_job(1, "top"), _job(2, "left", 1), _job(3, "right", 1), _job(4, "leaf", 2))
    model = SessionModel().extend([
        requested(1, "top"), requested(2, "left", 1), requested(3, "right", 1), requested(4, "leaf", 2),
        E.DeferredResolved(**left, target_job=4), E.DeferredResolved(**right, target_job=4),
        E.DeferredResolved(**top, target_job=2), E.DeferredResolved(**top, target_job=3),
    ])
    assert model.jobs[3].shared == [4] and model.jobs[1].shared == [] and model.jobs[2].shared == []
    # under recursive, right compiles its own leaf: same key, a second job
    model.apply(requested(5, "leaf", 3, key=model.jobs[4].key))
    assert model.jobs[5].duplicate_of == 4 and model.jobs[4].duplicate_of is None


def test_toplevel_rounds_are_kept_on_the_resolved_job():
    top = _job(1, "top")
    model = SessionModel().extend([requested(1, "top"), requested(2, "b", 1), requested(3, "c", 2),
                                   E.DeferredResolved(**top, target_job=2, round=1),
                                   E.DeferredResolved(**top, target_job=3, round=2)])
    assert (model.jobs[2].resolved_round, model.jobs[3].resolved_round) == (1, 2)
    assert model.jobs[1].shared == []  # the toplevel resolving c's marker is no second request for c


def test_a_nested_job_between_its_phases_is_compiling_in_its_toplevel():
    top, child = _job(1, "top"), _job(2, "child", 1)
    model = SessionModel().extend([
        requested(1, "top"), requested(2, "child", 1),
        E.JobStarted(**top), E.JobStarted(**child),
        E.PhaseStarted(**child, phase="expand_deferred"), E.PhaseFinished(**child, phase="expand_deferred"),
        E.PhaseStarted(**top, phase="finish"),
    ])
    assert model.job_state(2) == ("compiling", "finish (in #1)")
    assert model.job_state(1) == ("compiling", "finish")


def test_a_stopped_reentrant_request_and_the_compile_error_it_raises_are_one_alert():
    job = dict(job=3, name="c", parent=2, key="m.c(int64)/kernel/cpu")
    model = SessionModel().extend([
        requested(1, "a"), requested(2, "b", 1), requested(3, "c", 2),
        E.Reentrant(**job, target_job=1, cycle=[1, 2, 3, 1], cycle_names=["a", "b", "c", "a"], resolution="stopped"),
        E.Diagnostic(severity="error", category="reentrant", job=3, message="re-entrant request: a \u2192 b (stopped)"),
        E.Diagnostic(severity="error", category="compile", job=3, message="re-entrant codegen loop: a \u2192 b",
                     text="x.py:3:9: re-entrant codegen loop: a \u2192 b\n    a[1, 1](out)\n    ^"),
        E.Diagnostic(severity="error", category="compile", job=3, message="another error"),
    ])
    assert [a.title.split(":")[0] for a in model.alerts] == ["re-entrant request #3 \u2192 #1", "compile [job #3]"]
    assert model.alerts[0].detail == ["x.py:3:9: re-entrant codegen loop: a \u2192 b", "    a[1, 1](out)", "    ^"]
