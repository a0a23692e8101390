"""Replay as time travel in the session layer: the model after any prefix of a trace, cheaply backwards."""
from __future__ import annotations

import random

from kdebug import events as E
from kdebug.session import timeline as tl
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace
from kdebug.tui.synthetic import cycle_events


def view(m: SessionModel) -> dict:
    """What the tree, the launches and the alerts show of a model."""
    return {"jobs": {j.id: (j.state, j.phase, j.cache_hits, list(j.children), list(j.backrefs), dict(j.snapshots))
                     for j in m.jobs.values()},
            "roots": list(m.roots), "alerts": [(a.severity, a.title, a.job, list(a.detail)) for a in m.alerts],
            "job_alert": dict(m.job_alert), "launches": {k: v.state for k, v in m.launches.items()},
            "paused": m.paused, "ended": m.ended, "compilations": dict(m.compilations), "events": len(m.events),
            "requests": {k: len(v) for k, v in m.requests.items()}}


def test_model_at_any_position_is_the_fold_of_that_prefix(sample_trace):
    events = list(read_trace(sample_trace("recursive_launch.py", "--strategy", "recursive"))) + cycle_events()[1:]
    line = tl.Timeline(events, every=7)
    order = list(range(len(events) + 1))
    random.Random(15).shuffle(order)  # forwards, backwards, jumps: every position, in any order
    for k in order + order[::-3]:
        assert view(line.model_at(k)) == view(SessionModel().extend(events[:k])), k


def test_a_returned_model_is_a_copy_and_the_events_are_shared():
    events = cycle_events()
    line = tl.Timeline(events, every=4)
    m = line.model_at(20)
    assert all(a is b for a, b in zip(m.events, events))
    m.extend(events[20:])  # going on from a position does not change what the timeline keeps
    m.jobs[1].state = "scribbled"
    assert view(line.model_at(20)) == view(SessionModel().extend(events[:20]))
    assert line.model_at(len(events)).jobs[1].state == "done"


def test_stepping_back_folds_at_most_one_checkpoint_interval(monkeypatch):
    events = cycle_events() * 3
    line = tl.Timeline(events, every=8)
    line.model_at(len(events))  # the replay opens at the end: the checkpoints are made on the way
    applied = []
    real = SessionModel.apply
    monkeypatch.setattr(SessionModel, "apply", lambda self, ev: (applied.append(ev), real(self, ev)))
    for k in range(len(events), 0, -1):
        applied.clear()
        line.model_at(k - 1)
        assert len(applied) < 8, k


def test_jumps_stop_at_reentrant_requests_finish_misses_and_failures(sample_trace):
    events = list(read_trace(sample_trace("nested_deferred.py", "--strategy", "recursive")))
    line = tl.Timeline(events)
    kinds = [tl.notable(events[i]) for i in line.notable]
    assert "finish miss" in kinds
    stops, pos = [], 0
    while (pos := line.next_notable(pos)) is not None:
        stops.append(pos)
        assert tl.notable(events[pos - 1]) and "(" in line.describe(pos)
    assert stops == [i + 1 for i in line.notable]
    back, pos = [], len(events)
    while (pos := line.previous_notable(pos)) is not None:
        back.append(pos)
    # the end stands on the last event: when it is a stop (the failed session's end), back goes before it
    assert back == [s for s in stops[::-1] if s < len(events)]
    assert line.previous_notable(stops[0]) is None and line.next_notable(stops[-1]) is None

    events = list(read_trace(sample_trace("recursive_launch.py", "--strategy", "recursive")))
    line = tl.Timeline(events)
    first = line.next_notable(0)
    assert isinstance(events[first - 1], E.Reentrant) and events[first - 1].resolution == "stopped"
    assert line.model_at(first).reentrant[-1] is events[first - 1]
    assert "failure" in {tl.notable(events[i]) for i in line.notable}  # the stopped cycle fails the compile


def test_notable_kinds():
    job = {"job": 1, "name": "k", "parent": None, "key": "k"}
    assert tl.notable(E.Reentrant(**job)) == "re-entrant request"
    assert tl.notable(E.Diagnostic(category="finish", message="finish coverage")) == "finish miss"
    assert tl.notable(E.Diagnostic(category="memcheck", severity="error")) == "failure"
    assert tl.notable(E.Diagnostic(category="reentrant", severity="error")) is None  # the Reentrant says it
    assert tl.notable(E.Diagnostic(category="duplicate", severity="warning")) is None
    assert tl.notable(E.JobFailed(**job)) == "failure"
    assert tl.notable(E.LaunchFinished(error="boom")) == "failure" and tl.notable(E.LaunchFinished()) is None
    assert tl.notable(E.SessionEnded(status="crashed")) == "failure" and tl.notable(E.SessionEnded()) is None
    assert tl.notable(E.JobFinished(**job)) is None
