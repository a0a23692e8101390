"""Headless runs survive whatever the script does: a report, a trace that ends, a telling exit status."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT, run_kdebug

SPIN = """\
import numpy as np
from kdebug import cuda

@cuda.jit
def spin(a):
    while a[0] == 0:
        a[1] += 1.0

a = np.ones(2)
spin[1, 1](a)  # compiled now, so that the stop below always lands in the endless launch
a[0] = 0
print("launching", flush=True)
spin[1, 1](a)
print("never printed")
"""

SLEEP = """\
import time
print("launching", flush=True)
while True:
    time.sleep(0.05)
"""

LAUNCH_THEN = """\
import numpy as np
from kdebug import cuda

@cuda.jit
def fill(a):
    a[cuda.grid(1)] = 1.0

a = np.zeros(4)
fill[1, 4](a)
print("launched", flush=True)
{}
"""


def script(tmp_path, text, name="s.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def trace_events(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def assert_report(r_stdout, status_line):
    """The whole report came: every section and the session's end; a traceback shows only the user's frames."""
    for section in ("Jobs", "Launches", "Diagnostics"):
        assert f"\n{section}\n" in r_stdout, r_stdout
    assert status_line in r_stdout, r_stdout
    frames = re.findall(r'File "([^"]+)"', r_stdout)
    assert all(os.path.basename(f) == "s.py" for f in frames), r_stdout


def assert_ended(trace, status, exit_code):
    events = trace_events(trace)
    assert events[0]["event"] == "session_started"
    assert [e["event"] for e in events].count("session_ended") == 1
    end = events[-1]
    assert end["event"] == "session_ended" and end["status"] == status and end["exit_code"] == exit_code, end
    return events, end


@pytest.mark.parametrize("tail,status,code,why", [
    ("import ctypes\nctypes.string_at(0)", "crashed", 139, "SIGSEGV"),
    ("import os\nos._exit(7)", "crashed", 7, "exited with status 7 before the session ended"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "crashed", 137, "SIGKILL"),
])
def test_a_child_that_dies_still_gets_its_report(tmp_path, tail, status, code, why):
    path = script(tmp_path, LAUNCH_THEN.format(tail))
    trace = tmp_path / "t.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), path, timeout=60)
    assert r.returncode == code, r.stdout + r.stderr
    assert "launched" in r.stdout  # what the script printed before
    assert_report(r.stdout, f"Session {status} (exit status {code})")
    assert why in r.stdout
    # everything received before the crash is in the report and the trace
    assert "#1  fill(float64[::1])  kernel  done" in r.stdout and "fill  grid=(1,1,1) block=(4,1,1)" in r.stdout
    events, end = assert_ended(trace, status, code)
    assert "launch_finished" in [e["event"] for e in events]
    assert why in end["error"]
    replay = run_kdebug("replay", "--headless", str(trace))
    assert replay.returncode == 0 and f"Session {status} (exit status {code})" in replay.stdout


def test_a_segfault_names_the_users_line(tmp_path):
    path = script(tmp_path, "import ctypes\n\ndef deep():\n    ctypes.string_at(0)\n\ndeep()\n")
    r = run_kdebug("--headless", path, timeout=60)
    assert r.returncode == 139
    assert "SIGSEGV (Segmentation fault)" in r.stdout
    assert f"at {path}:4 in deep" in r.stdout and f"at {path}:6 in <module>" in r.stdout


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_timeout_stops_an_endless_kernel_and_says_where(tmp_path, how):
    path = script(tmp_path, SPIN)
    trace = tmp_path / "t.jsonl"
    args, env = (["--timeout", "4"], None) if how == "option" else ([], {"KDEBUG_TIMEOUT": "4"})
    t0 = time.monotonic()
    r = run_kdebug("--headless", "--trace", str(trace), *args, path, timeout=60, env=env)
    assert time.monotonic() - t0 < 30
    assert r.returncode == 124, r.stdout + r.stderr
    assert "launching" in r.stdout and "never printed" not in r.stdout
    assert_report(r.stdout, "Session timeout (exit status 124)")
    where = f"timed out after 4 s: during launch #2 spin grid=(1, 1, 1) block=(1, 1, 1), at {path}:13 in <module>"
    kernel = f"spin: a thread of block (0, 0, 0) last entered the while loop at {path}:6"
    assert f"  {where}\n    {kernel}\n" in r.stdout + "\n", r.stdout  # the launch, the script's line, the kernel's
    _, end = assert_ended(trace, "timeout", 124)
    assert end["error"] == f"{where}\n  {kernel}"


BLOCKS = """\
import numpy as np
from kdebug import cuda

@cuda.jit(device=True)
def wait(a):
    while a[0] == 0:
        a[1] += 1.0

@cuda.jit
def stuck(a, out):
    i = cuda.grid(1)
    out[i] = i
    if i == 200:
        wait(a)

a, out = np.ones(2), np.zeros(512)
stuck[8, 64](a, out)
a[0] = 0
print("launching", flush=True)
stuck[8, 64](a, out)
"""


def test_a_timeout_names_the_block_and_the_device_functions_loop(tmp_path):
    path = script(tmp_path, BLOCKS)
    trace = tmp_path / "t.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), "--timeout", "4", path, timeout=60)
    assert r.returncode == 124, r.stdout + r.stderr
    kernel = f"stuck: a thread of block (3, 0, 0) last entered the while loop of device function wait at {path}:6"
    assert "during launch #2 stuck grid=(8, 1, 1) block=(64, 1, 1)" in r.stdout and kernel in r.stdout, r.stdout
    _, end = assert_ended(trace, "timeout", 124)
    assert end["error"].endswith("\n  " + kernel)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_bad_timeout_is_bad_usage(tmp_path, value):
    path = script(tmp_path, "print('ran')\n")
    for args, env in ((["--timeout", value], None), ([], {"KDEBUG_TIMEOUT": value})):
        r = run_kdebug("--headless", *args, path, env=env)
        assert r.returncode == 2 and "timeout" in r.stderr.lower() and "ran" not in r.stdout, r.stderr


def _start(tmp_path, text, trace):
    path = script(tmp_path, text)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "--headless", "--trace", str(trace), path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                            start_new_session=True)  # the signals the tests send reach it alone, never the suite
    assert proc.stdout.readline() == "launching\n"  # the script is in its loop now
    if "spin[" in text:  # wait for the endless launch itself (#2; #1 ran before "launching"): a busy machine is slow
        deadline = time.monotonic() + 60
        while (trace.read_text() if trace.exists() else "").count('"launch_started"') < 2 \
                and time.monotonic() < deadline:
            time.sleep(0.02)
    time.sleep(0.3)
    return path, proc


@pytest.mark.parametrize("body,line", [(SPIN, 13), (SLEEP, 4)], ids=["kernel", "python"])
def test_ctrl_c_stops_the_script_and_prints_the_report(tmp_path, body, line):
    trace = tmp_path / "t.jsonl"
    path, proc = _start(tmp_path, body, trace)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert_report(out, "Session interrupted (exit status 130)")
    assert "interrupted (Ctrl-C): " in out and f"at {path}:{line} in <module>" in out
    kernel = f"spin: a thread of block (0, 0, 0) last entered the while loop at {path}:6"
    if body is SPIN:
        assert "during launch #2 spin" in out and kernel in out, out
    else:
        assert "last entered" not in out  # no launch ran: no kernel position
    _, end = assert_ended(trace, "interrupted", 130)
    assert (kernel in end["error"]) == (body is SPIN), end


def test_a_second_ctrl_c_ends_at_once(tmp_path):
    trace = tmp_path / "t.jsonl"
    _, proc = _start(tmp_path, SPIN, trace)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 1.5  # not the grace period the first one allows
    assert proc.returncode == 130, out + err
    assert_report(out, "Session interrupted (exit status 130)")
    assert_ended(trace, "interrupted", 130)


def test_sigterm_prints_the_report(tmp_path):
    trace = tmp_path / "t.jsonl"
    _, proc = _start(tmp_path, SPIN, trace)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, out + err
    assert_report(out, "Session interrupted (exit status 143)")
    assert "stopped by SIGTERM: during launch #2 spin" in out
    _, end = assert_ended(trace, "interrupted", 143)
    assert "spin: a thread of block (0, 0, 0) last entered the while loop at " in end["error"], end


def test_no_child_outlives_a_killed_kdebug(tmp_path):
    """SIGKILL of kdebug itself: the debuggee notices its parent is gone and exits (no orphan spinning)."""
    trace = tmp_path / "t.jsonl"
    path, proc = _start(tmp_path, SPIN, trace)
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _debuggees_of(path):
        time.sleep(0.1)
    assert not _debuggees_of(path)


def _debuggees_of(path):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if "kdebug.session.debuggee" in cmd and path in cmd:
            found.append(pid)
    return found


def test_a_closed_stdout_keeps_the_report_and_status(tmp_path):
    path = script(tmp_path, LAUNCH_THEN.format("import sys\nsys.stdout.close()\nprint('more', file=sys.stderr)"))
    trace = tmp_path / "t.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), path)
    assert r.returncode == 0, r.stderr
    assert "launched" in r.stdout and "more" in r.stderr
    assert "#1  fill(float64[::1])  kernel  done" in r.stdout
    assert_ended(trace, "ok", 0)


@pytest.mark.parametrize("args", [["run", "--headless"], ["dump", "--out", "DUMP"]])
def test_a_closed_pipe_is_no_traceback(tmp_path, args):
    path = script(tmp_path, "for i in range(200000):\n    print(i)\n")
    args = [a.replace("DUMP", str(tmp_path / "d")) for a in args]
    cmd = [sys.executable, "-m", "kdebug.cli", *args, path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 141


def test_replay_into_a_closed_pipe_is_no_traceback(tmp_path):
    trace = tmp_path / "t.jsonl"
    assert run_kdebug("--headless", "--trace", str(trace), os.path.join(ROOT, "sample_kernels", "saxpy.py")).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "replay", "--headless", str(trace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
