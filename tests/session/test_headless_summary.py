"""The headless report for machines: a summary of a long launch list (counts per kernel, failures and
diagnostics in full), ``--report full|summary|auto`` and ``--json-summary`` (kdebug/session/headless.py)."""
from __future__ import annotations

import json
import textwrap

from conftest import run_kdebug
from kdebug import events as E
from kdebug.session.headless import render, summary_json
from kdebug.session.model import SessionModel

OOB = ("s.py:6:5: kernel error: out-of-bounds write of global array 'a' in kernel bad: index 4 is outside shape (4,)\n"
       "    a[cuda.grid(1) + 1] = 1\n    ^")


def many_launches() -> SessionModel:
    events = [E.SessionStarted(script="s.py", backend="cpu", strategy="worklist"),
              E.JobRequested(job=1, name="step", parent=None, key="k1"),
              E.JobFinished(job=1, name="step", parent=None, key="k1", duration=0.1)]
    lid = 0
    for _ in range(300):
        lid += 1
        events += [E.LaunchStarted(launch=lid, job=1, name="step", grid=[4, 1, 1], block=[32, 1, 1]),
                   E.LaunchFinished(launch=lid, name="step", duration=0.001)]
    for _ in range(2):
        lid += 1
        events += [E.LaunchStarted(launch=lid, job=None, name="bad", grid=[1, 1, 1], block=[4, 1, 1]),
                   E.LaunchFinished(launch=lid, name="bad", duration=0.001, error=OOB),
                   E.Diagnostic(severity="error", message=OOB.splitlines()[0], category="memcheck", text=OOB)]
    events.append(E.SessionEnded(status="failed", exit_code=1))
    return SessionModel().extend(events)


def test_the_summary_counts_launches_per_kernel_and_keeps_failures_and_diagnostics_whole():
    model = many_launches()
    full = render(model)
    summary = render(model, summary=True)
    assert full.count("  step  grid=(4,1,1)") == 300  # the full list: a line per launch
    launches = summary.split("\nLaunches\n", 1)[1].split("\nDiagnostics\n", 1)[0]
    assert "302 launches of 2 kernel(s)" in launches and "--report full" in launches
    assert "step  x300  300.00 ms" in launches
    assert "bad   x2" in launches and "2 failed" in launches
    assert launches.count("#301  bad") == 1 and launches.count("#302  bad") == 1  # failed launches in full
    assert "#1  step" not in launches
    diagnostics = summary.split("\nDiagnostics\n", 1)[1]
    assert "a[cuda.grid(1) + 1] = 1" in diagnostics and "(the same 1 more time)" in diagnostics
    assert len(summary.splitlines()) < 30


def test_json_summary():
    data = summary_json(many_launches())
    assert data["script"] == "s.py" and data["status"] == "failed" and data["exit_code"] == 1
    assert data["launches"]["total"] == 302 and data["launches"]["failed"] == 2
    assert data["launches"]["per_kernel"]["step"] == {"launches": 300, "failed": 0, "time_s": 0.3}
    assert data["jobs"]["total"] == 1 and data["jobs"]["kernels"] == 1
    [d] = data["diagnostics"]
    assert d["category"] == "memcheck" and d["count"] == 2 and d["text"] == OOB
    assert data["findings"] == 2
    json.dumps(data)


SCRIPT = """\
import numpy as np
from numba import cuda

@cuda.jit
def inc(a):
    a[cuda.grid(1)] += 1

a = np.zeros(32)
for _ in range(60):
    inc[1, 32](a)
assert a[0] == 60
"""


def test_off_a_terminal_a_long_launch_list_is_summarised_unless_asked(tmp_path):
    script = tmp_path / "many.py"
    script.write_text(textwrap.dedent(SCRIPT))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))  # stdout is a pipe here
    assert r.returncode == 0, r.stderr
    assert "60 launches of 1 kernel(s)" in r.stdout and "inc  x60" in r.stdout
    assert "#60  inc" not in r.stdout
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", "--report", "full", str(script))
    assert r.returncode == 0 and "#60  inc" in r.stdout and "launches of" not in r.stdout
    out = tmp_path / "summary.json"
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", "--json-summary", str(out), str(script))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["launches"]["per_kernel"]["inc"]["launches"] == 60 and data["status"] == "ok"
    assert data["findings"] == 0 and data["diagnostics"] == []


def test_a_short_launch_list_stays_whole(tmp_path):
    script = tmp_path / "few.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("range(60)", "range(3)").replace("== 60", "== 3"))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stderr
    assert "#3  inc" in r.stdout and "launches of" not in r.stdout
