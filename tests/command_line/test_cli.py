"""The kdebug command: exit statuses, traces, dumps, replay, backends and --numba."""
from __future__ import annotations

import json
import os
import re
import textwrap

import pytest

from conftest import run_kdebug

OK_SCRIPT = """\
import numpy as np
from kdebug import cuda


@cuda.jit(device=True)
def twice(v):
    return 2 * v


@cuda.jit
def fill(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = twice(i)


a = np.zeros(10)
fill[1, 16](a)
assert a[9] == 18
print("script ran")
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def ok_script(tmp_path):
    return write(tmp_path, "ok_script.py", OK_SCRIPT)


# ---- exit statuses ----------------------------------------------------------------------------

def test_success_exits_0_and_prints_the_report(ok_script):
    r = run_kdebug("--headless", ok_script)
    assert r.returncode == 0, r.stderr
    assert "script ran" in r.stdout
    assert re.search(r"#1\s+fill\(float64\[::1\]\)\s+kernel\s+done", r.stdout), r.stdout


def test_run_subcommand_and_script_arguments(tmp_path):
    script = write(tmp_path, "args.py", """\
        import sys
        print("argv:", sys.argv[1:])
        """)
    r = run_kdebug("run", "--headless", script, "one", "--two")
    assert r.returncode == 0, r.stderr
    assert "argv: ['one', '--two']" in r.stdout


@pytest.mark.parametrize("body,where", [
    ("raise ValueError('user bug')\n", "ValueError: user bug"),
    ("import numpy as np\nfrom kdebug import cuda\n\n@cuda.jit\ndef k(a):\n    a[0] = [1]\n\nk[1, 1](np.zeros(1))\n",
     "compile error: a list is not supported"),
    ("import numpy as np\nfrom kdebug import cuda\n\n@cuda.jit\ndef k(a):\n    a[0] = 1\n\nk[1, 2048](np.zeros(1))\n",
     "launch error: a block of 2048x1x1"),
    ("import numpy as np\nfrom kdebug import cuda\n\n@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    a[i] = i\n\n"
     "k[1, 16](np.zeros(10))\n", "out-of-bounds write"),
    ("import sys\nsys.exit(1)\n", None),
])
def test_failures_exit_1(tmp_path, body, where):
    script = write(tmp_path, "fails.py", body)
    r = run_kdebug("--headless", script)
    assert r.returncode == 1, r.stdout + r.stderr
    if where is not None:
        assert where in r.stderr, r.stderr
        assert f"{script}:" in r.stderr or f'File "{script}"' in r.stderr, r.stderr
    # never a traceback from inside kdebug; a user exception shows only the user's frames
    assert os.sep + "kdebug" + os.sep not in r.stderr.replace(script, "")
    if "Traceback" in r.stderr:
        frames = re.findall(r'File "([^"]+)"', r.stderr)
        assert frames and all(f == script for f in frames), r.stderr


def test_script_exit_0_is_success(tmp_path):
    script = write(tmp_path, "exit0.py", "import sys\nprint('bye')\nsys.exit(0)\n")
    assert run_kdebug("--headless", script).returncode == 0


@pytest.mark.parametrize("args", [
    ["--headless", "does_not_exist.py"],
    ["run", "--headless", "does_not_exist.py"],
    ["--headless", "--no-such-option", "x.py"],
    ["run", "--backend", "tpu", "x.py"],
    ["run", "--strategy", "magic", "x.py"],
    ["dump", "x.py"],  # --out is required
    ["replay", "does_not_exist.jsonl"],
    [],
])
def test_bad_usage_exits_2(tmp_path, args):
    r = run_kdebug(*args, cwd=str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip(), "bad usage must say what is wrong"
    assert "Traceback" not in r.stderr


def test_help_works():
    r = run_kdebug("--help")
    assert r.returncode == 0
    assert "run" in r.stdout and "dump" in r.stdout and "replay" in r.stdout


# ---- traces ----------------------------------------------------------------------------------

def _snake(name):
    return re.fullmatch(r"[a-z]+(_[a-z]+)*", name) is not None


def test_trace_is_json_lines_with_the_schema(tmp_path, ok_script):
    trace = tmp_path / "run.jsonl"
    r = run_kdebug("run", "--headless", "--trace", str(trace), ok_script)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["event"] == "session_started" and events[-1]["event"] == "session_ended"
    last_t = 0.0
    for e in events:
        assert e["v"] == 1
        assert isinstance(e["t"], float) and e["t"] >= last_t
        last_t = e["t"]
        assert _snake(e["event"]), e["event"]
        for key in e:
            assert _snake(key), key
        if e["event"].startswith(("job_", "phase_")) or e["event"] in ("snapshot", "cache_hit"):
            for field in ("job", "name", "parent", "key"):
                assert field in e, (field, e)
            assert isinstance(e["job"], int) and isinstance(e["key"], str)
    kinds = {e["event"] for e in events}
    assert {"job_requested", "job_started", "phase_started", "phase_finished", "snapshot", "job_finished",
            "launch_started", "launch_finished"} <= kinds
    (req,) = [e for e in events if e["event"] == "job_requested"]
    assert req["name"] == "fill" and req["parent"] is None and req["reason"] == "host"
    assert events[-1]["exit_code"] == 0


def test_trace_records_a_failure(tmp_path):
    script = write(tmp_path, "bad.py", """\
        import numpy as np
        from kdebug import cuda

        @cuda.jit
        def k(a):
            a[0] = undefined_name

        k[1, 1](np.zeros(1))
        """)
    trace = tmp_path / "bad.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), script)
    assert r.returncode == 1
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    diags = [e for e in events if e["event"] == "diagnostic"]
    assert diags and diags[0]["severity"] == "error"
    assert "undefined_name" in diags[0]["message"]
    assert diags[0]["location"]["file"] == script and diags[0]["location"]["line"] == 6
    assert events[-1]["event"] == "session_ended" and events[-1]["exit_code"] == 1


def test_replay_shows_the_recorded_session(tmp_path, ok_script):
    trace = tmp_path / "run.jsonl"
    live = run_kdebug("--headless", "--trace", str(trace), ok_script)
    assert live.returncode == 0
    r = run_kdebug("replay", "--headless", str(trace))
    assert r.returncode == 0, r.stderr
    assert "script ran" not in r.stdout, "replay must not run the script"
    for line in ("#1  fill(float64[::1])  kernel  done", "fill  grid=(1,1,1) block=(16,1,1)"):
        assert line in r.stdout and line in live.stdout


def test_replay_of_another_schema_version_is_bad_usage(tmp_path):
    trace = tmp_path / "future.jsonl"
    trace.write_text('{"v": 999, "event": "session_started", "t": 0.0}\n')
    r = run_kdebug("replay", "--headless", str(trace))
    assert r.returncode == 2
    assert "schema version" in r.stderr and "Traceback" not in r.stderr


def test_replay_skips_a_torn_last_line(tmp_path, ok_script):
    trace = tmp_path / "torn.jsonl"
    assert run_kdebug("--headless", "--trace", str(trace), ok_script).returncode == 0
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    r = run_kdebug("replay", "--headless", str(trace))
    assert r.returncode == 0, r.stderr
    assert "#1  fill(float64[::1])  kernel  done" in r.stdout


# ---- dumps -----------------------------------------------------------------------------------

PASS_FILE = r"\d{3}_[A-Za-z0-9_]+_\d{2}-(optimize|emit)-(pass\d{4,}-[A-Za-z0-9_]+\.ll|passes\.txt)"


def test_dump_writes_one_file_per_job_and_phase(tmp_path, ok_script):
    out = tmp_path / "dump"
    r = run_kdebug("dump", ok_script, "--out", str(out))
    assert r.returncode == 0, r.stderr
    files = sorted(os.listdir(out))
    assert files, r.stdout
    per_pass = [n for n in files if re.fullmatch(PASS_FILE, n)]
    assert per_pass  # the pass-by-pass files (tests/driver/test_passes.py reads them)
    for name in set(files) - set(per_pass):  # a phase's file, or a job's LLVM remarks
        assert re.fullmatch(r"\d{3}_[A-Za-z0-9_]+_\d{2}-[a-z_]+\.(py|txt|ll|s|ptx)|\d{3}_[A-Za-z0-9_]+_remarks\.txt",
                            name), name
    files = [n for n in files if n.startswith("001_fill_") and n not in per_pass]
    phases = {re.sub(r"^001_fill_\d{2}-", "", n).rsplit(".", 1)[0] for n in files}
    assert {"source", "parse", "typeinfer", "lower", "optimize", "before_finish", "after_finish", "emit"} <= phases
    source = (out / next(n for n in files if n.endswith("-source.py"))).read_text()
    assert "def fill(a):" in source
    ir = (out / next(n for n in files if "-before_finish." in n)).read_text()
    assert "define" in ir


def test_dump_options_may_come_before_the_script(tmp_path, ok_script):
    out = tmp_path / "dump2"
    r = run_kdebug("dump", "--out", str(out), ok_script)
    assert r.returncode == 0, r.stderr
    assert any(n.startswith("001_fill_") for n in os.listdir(out))


def test_a_second_dump_into_the_same_folder_replaces_the_first(tmp_path, ok_script):
    """The README's commands dump two samples into one dump/ folder: the second dump's files must be all there is of a
    dump (another script's jobs left behind read as this one's); the user's own files stay."""
    out = tmp_path / "dump"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    other = write(tmp_path, "other.py", OK_SCRIPT.replace("def fill(a)", "def other_fill(a)")
                  .replace("fill[1, 16]", "other_fill[1, 16]"))
    assert run_kdebug("dump", other, "--out", str(out)).returncode == 0
    first = set(os.listdir(out))
    assert any(n.startswith("001_other_fill_") for n in first)
    r = run_kdebug("dump", ok_script, "--out", str(out))
    assert r.returncode == 0, r.stderr
    files = set(os.listdir(out))
    assert not any("other_fill" in n for n in files), sorted(files)
    assert any(n.startswith("001_fill_") for n in files)
    assert "notes.txt" in files
    written = int(re.search(r"wrote (\d+) files", r.stdout).group(1))
    assert len(files) == written + 1, r.stdout
    assert "files of an earlier dump there" in r.stdout


def test_a_dump_stopped_by_its_timeout_says_so(tmp_path):
    """dump wrote what it had and exited 124 without a word of why (the headless report says it)."""
    script = write(tmp_path, "hang.py", "import time\nprint('hanging', flush=True)\ntime.sleep(60)\n")
    r = run_kdebug("dump", script, "--out", str(tmp_path / "d"), "--timeout", "2", timeout=60)
    assert r.returncode == 124, r.stdout + r.stderr
    assert "kdebug: wrote" in r.stdout
    assert "Session timeout (exit status 124)" in r.stderr and "timed out after 2 s" in r.stderr, r.stderr
    assert "hang.py:3" in r.stderr, r.stderr


# ---- backends ---------------------------------------------------------------------------------

def test_gpu_backend_fails_clearly_without_a_gpu(ok_script):
    try:
        from kdebug.session.live import gpu_available
        ok, _ = gpu_available()
    except Exception:  # noqa: BLE001
        ok = False
    if ok:
        pytest.skip("a GPU is present here")
    r = run_kdebug("run", "--backend", "gpu", "--headless", ok_script)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gpu" in r.stderr and "hint:" in r.stderr
    assert "Traceback" not in r.stderr
    assert "script ran" not in r.stdout


def test_cpu_backend_is_explicit(ok_script):
    r = run_kdebug("run", "--backend", "cpu", "--headless", ok_script)
    assert r.returncode == 0
    assert "backend=cpu" in r.stdout


@pytest.mark.parametrize("strategy", ["worklist", "toplevel", "recursive"])
def test_every_strategy_runs_a_plain_script(ok_script, strategy):
    r = run_kdebug("run", "--strategy", strategy, "--headless", ok_script)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"strategy={strategy}" in r.stdout


def test_no_memcheck_option(ok_script):
    assert run_kdebug("run", "--no-memcheck", "--headless", ok_script).returncode == 0


# ---- --numba ------------------------------------------------------------------------------------

NUMBA_SCRIPT = """\
import math

import numpy as np
import numba
from numba import cuda
from numba import float32, int32, njit
from numba import types


@njit
def host_reference(x):
    return x * x + 3


@numba.jit(nopython=True, cache=True)
def host_scale(x, f):
    return x * f


@cuda.jit("void(float32[:], float32[:], float32)")
def scale(x, out, f):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * f


@numba.cuda.jit(device=True)
def square(v):
    return v * v


@cuda.jit
def kernel(x, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = square(x[i]) + float32(1) + math.sqrt(float32(4))


x = np.arange(8, dtype=np.float32)
out = np.zeros_like(x)
scale[1, 8](x, out, np.float32(3))
assert (out == host_scale(x, 3)).all()
d_x = cuda.to_device(x)
d_out = cuda.device_array_like(x)
kernel[1, 8](d_x, d_out, int32(8))
assert (d_out.copy_to_host() == host_reference(x)).all()
assert types.float32 is float32
print("numba script ran")
"""


def test_numba_mode_runs_an_unmodified_numba_script(tmp_path):
    script = write(tmp_path, "numba_script.py", NUMBA_SCRIPT)
    r = run_kdebug("run", "--numba", "--headless", script)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "numba script ran" in r.stdout
    assert "scale(float32[:], float32[:], float32)" in r.stdout
    assert re.search(r"kernel\(float32\[::1\], float32\[::1\], int32\)\s+kernel\s+done", r.stdout), r.stdout


def test_without_numba_mode_the_script_needs_real_numba(tmp_path):
    from importlib import metadata
    try:  # the installed distribution, not ``import numba``: the suite's tests/numba folder is on sys.path here
        metadata.version("numba")
        pytest.skip("numba is installed here")
    except metadata.PackageNotFoundError:
        pass
    script = write(tmp_path, "numba_script.py", NUMBA_SCRIPT)
    r = run_kdebug("run", "--headless", script)
    assert r.returncode == 1
    assert "No module named 'numba'" in r.stderr


def test_replay_of_a_file_that_is_not_a_trace_is_bad_usage():
    r = run_kdebug("replay", "--headless", "sample_kernels/saxpy.py")
    assert r.returncode == 2
    assert "not a JSON event" in r.stderr and "sample_kernels/saxpy.py:1" in r.stderr
