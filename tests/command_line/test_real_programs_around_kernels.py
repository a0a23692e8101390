"""Reliability, second round (issue 32): programs that do what real programs do around their kernels."""
from __future__ import annotations

import textwrap

from conftest import run_kdebug

KERNEL = """
import numpy as np
from kdebug import cuda

@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1
"""


def _script(tmp_path, body: str, name: str = "s.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(KERNEL) + textwrap.dedent(body))
    return str(path)


def test_a_thread_that_outlives_the_main_module_keeps_its_launches(tmp_path):
    """Plain python waits for non-daemon threads when the main module returns; so does the session."""
    path = _script(tmp_path, """
        import threading, time
        def work():
            time.sleep(0.3)
            for _ in range(3):
                a = np.zeros(8)
                k[1, 8](a)
                print("thread:", int(a.sum()), flush=True)
        threading.Thread(target=work).start()
        print("main returns", flush=True)
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("thread: 8") == 3, r.stdout
    assert r.stdout.index("main returns") < r.stdout.index("thread: 8")
    launches = r.stdout[r.stdout.index("Launches"):r.stdout.index("Diagnostics")]
    assert launches.count(" ok") == 3, r.stdout


def test_a_failing_launch_in_a_late_thread_fails_the_session(tmp_path):
    path = _script(tmp_path, """
        import threading, time
        def work():
            time.sleep(0.2)
            a = np.zeros(4)
            @cuda.jit
            def bad(a):
                a[cuda.grid(1) + 100] = 1
            try:
                bad[1, 4](a)
            except Exception as exc:
                print("caught", type(exc).__name__, flush=True)
        threading.Thread(target=work).start()
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=120)
    assert "caught" in r.stdout and r.returncode == 1, r.stdout + r.stderr
    assert "out-of-bounds write" in r.stdout + r.stderr


def test_a_script_that_deletes_sys_argv_ends_well(tmp_path):
    """kdebug reads back no process state the script owns (runpy restored sys.argv[0] and failed)."""
    path = _script(tmp_path, """
        import sys
        a = np.zeros(4)
        k[1, 4](a)
        del sys.argv
        print("done", int(a.sum()))
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done 4" in r.stdout and "AttributeError" not in r.stdout + r.stderr


def test_a_script_that_replaces_sys_argv_and_main_still_reports(tmp_path):
    path = _script(tmp_path, """
        import sys
        sys.argv = None
        sys.modules["__main__"] = None
        a = np.zeros(4)
        k[1, 4](a)
        print("done", int(a.sum()), __name__)
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done 4 __main__" in r.stdout


def test_a_trace_on_a_full_disk_is_a_one_line_error_and_the_report_still_comes(tmp_path):
    path = _script(tmp_path, """
        a = np.zeros(4)
        k[1, 4](a)
        print("done", int(a.sum()))
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", "/dev/full", path, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "done 4" in r.stdout and "Launches" in r.stdout
    errors = [line for line in r.stderr.splitlines() if line.startswith("kdebug: error:")]
    assert len(errors) == 1 and "--trace /dev/full" in errors[0] and "No space left on device" in errors[0]


def test_two_runs_never_write_one_trace_at_once(tmp_path):
    """The second run is refused before it runs anything; the first one's trace is whole."""
    import json
    import subprocess
    import sys
    import time

    from conftest import ROOT
    trace = tmp_path / "t.jsonl"
    slow = _script(tmp_path, """
        import time
        for _ in range(4):
            a = np.zeros(4)
            k[1, 4](a)
            time.sleep(0.5)
    """, "slow.py")
    first = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "run", "--headless", "--backend", "cpu",
                              "--trace", str(trace), slow], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while (not trace.exists() or trace.stat().st_size == 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", str(trace), slow, timeout=120)
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
    assert second.returncode == 2, second.stdout + second.stderr
    assert "another kdebug run is writing this trace" in second.stderr and "Traceback" not in second.stderr
    assert first.returncode == 0, err
    lines = trace.read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]  # every line whole
    assert events[0] == "session_started" and events[-1] == "session_ended"
    assert events.count("launch_finished") == 4


def test_a_dump_that_cannot_be_written_keeps_the_report(tmp_path):
    """A folder that cannot be made (under /proc) fails after the run: the report, one located line, exit 1."""
    path = _script(tmp_path, """
        a = np.zeros(4)
        k[1, 4](a)
    """)
    r = run_kdebug("dump", "--out", "/proc/kdebug-dump-test", path, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "Launches" in r.stdout
    errors = [line for line in r.stderr.splitlines() if line.startswith("kdebug: error:")]
    assert len(errors) == 1 and "dump --out /proc/kdebug-dump-test" in errors[0]


def test_a_dump_into_a_read_only_folder_is_refused_before_the_run(tmp_path):
    import os

    import pytest
    if os.geteuid() == 0:
        pytest.skip("root writes into a folder without write permission: the check cannot be seen as root")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    path = _script(tmp_path, """
        print("the script ran")
    """)
    try:
        r = run_kdebug("dump", "--out", str(ro / "d"), path, timeout=120)
    finally:
        ro.chmod(0o755)
    assert r.returncode == 2 and "the script ran" not in r.stdout, r.stdout + r.stderr
    assert "permission denied" in r.stderr and "Traceback" not in r.stderr


def test_a_signal_handler_that_launches_while_events_are_written(tmp_path):
    """A SIGALRM handler's launch re-entered the debuggee's event writer (BufferedWriter's 'reentrant
    call'), reported as an internal compiler error. Its events are queued and written by the outer call."""
    path = _script(tmp_path, """
        import signal
        handled = []
        def on_alarm(signum, frame):
            b = np.zeros(4)
            k[1, 4](b)
            handled.append(int(b.sum()))
        a = np.zeros(4)
        k[1, 4](a)  # compiled before the alarms start: they interrupt launches and their events
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, 0.003, 0.003)
        for _ in range(399):
            k[1, 4](a)
        signal.setitimer(signal.ITIMER_REAL, 0)
        print("main", int(a.sum()), "handler", len(handled), set(handled))
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--trace", str(tmp_path / "t.jsonl"), path, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "main 1600 handler" in r.stdout and "reentrant" not in out and "internal" not in out
    handled = int(r.stdout.split("handler ")[1].split()[0])
    assert handled > 0
    import json
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    finished = [json.loads(line) for line in lines if '"launch_finished"' in line]
    assert len(finished) == 400 + handled  # every launch's events arrived, none torn


def test_arguments_matching_no_declared_signature_are_numbas_type_error():
    """numba-cuda 0.30.4's test_dispatcher (test_explicit_signatures): no conversion -> TypeError with
    "No matching definition"; kdebug's error is that TypeError, still a located launch error."""
    import numpy as np
    import pytest

    from kdebug import cuda
    from kdebug.errors import LaunchError

    @cuda.jit("void(int64[::1], int64, int64)")
    def f(r, x, y):
        r[0] = x + y

    r = np.zeros(1, dtype=np.int64)
    f[1, 1](r, 1, 2)
    assert r[0] == 3
    with pytest.raises(TypeError, match="No matching definition for argument type") as info:
        f[1, 1](np.zeros(1, dtype=np.complex128), 1j, 1j)
    assert isinstance(info.value, LaunchError) and info.value.loc is not None
    assert "array(complex128, 1d, C), complex128, complex128" in str(info.value)


def test_a_numba_script_catches_the_signature_mismatch_as_type_error(tmp_path):
    path = tmp_path / "n.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        from numba import cuda

        @cuda.jit("void(float64[:])")
        def k(a):
            a[0] = 1

        try:
            k[1, 1](np.zeros(3, np.float32))
        except TypeError as exc:
            print("caught TypeError:", str(exc).split(":")[0])
    """))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(path), timeout=120)
    assert "caught TypeError" in r.stdout, r.stdout + r.stderr


FORK_BODY = """
    import os, sys
    big = np.zeros(1 << 20)
    k[(big.size + 255) // 256, 256](big)  # the block pool starts here
    @cuda.jit
    def fresh(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = a[i] * 0.5 + 1.0
    fresh[1, 1](np.zeros(1))  # its optimised tier compiles in the background while the process forks
    {fork}
    print("parent", int(big.sum()), flush=True)
"""


def test_a_forked_child_compiles_and_launches_and_is_said_to_be_unrecorded(tmp_path):
    path = _script(tmp_path, FORK_BODY.format(fork="""
    pid = os.fork()
    if pid == 0:
        @cuda.jit
        def twice(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] = 2 * a[i] + 1
        b = np.ones(1 << 20)
        twice[(b.size + 255) // 256, 256](b)  # 2**20 threads wait for the optimised tier (tiers.WAIT_THREADS)
        k[(b.size + 255) // 256, 256](b)
        c = np.zeros(1 << 20)
        fresh[(c.size + 255) // 256, 256](c)
        print("child", int(b.sum()), int(c.sum()), flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child status", status, flush=True)
    """))
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--timeout=120", path, timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert f"child {4 << 20} {1 << 20}" in r.stdout and "child status 0" in r.stdout and "parent 1048576" in r.stdout
    assert "forked process" in r.stdout and "not in this session's report" in r.stdout


def test_a_fork_pool_of_launching_workers_ends(tmp_path):
    path = _script(tmp_path, FORK_BODY.format(fork="""
    import multiprocessing
    def work(n):
        a = np.zeros(n)
        k[(n + 255) // 256, 256](a)
        return int(a.sum())
    with multiprocessing.get_context("fork").Pool(2) as p:
        print("pool", p.map(work, [1000, 1 << 18, 5]), flush=True)
    """))
    r = run_kdebug("run", "--headless", "--backend", "cpu", "--timeout=120", path, timeout=200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "pool [1000, 262144, 5]" in r.stdout and "parent 1048576" in r.stdout


def test_the_compiler_does_not_depend_on_the_scripts_recursion_limit(tmp_path):
    path = _script(tmp_path, """
        import sys
        sys.setrecursionlimit(60)
        a = np.ones(4)
        k[1, 4](a)
        print("low", int(a.sum()), sys.getrecursionlimit())
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=120)
    assert r.returncode == 0 and "low 8 60" in r.stdout, r.stdout + r.stderr  # the script's limit is back


def test_a_2000_term_expression_that_cpython_compiles_compiles_here(tmp_path):
    terms = " + ".join(f"x * {i}.0" for i in range(2000))
    path = _script(tmp_path, f"""
        @cuda.jit
        def deep(a):
            i = cuda.grid(1)
            if i < a.size:
                x = a[i]
                a[i] = {terms}
        a = np.ones(4)
        deep[1, 4](a)
        print("deep", a[0])
    """)
    r = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    assert f"deep {float(sum(range(2000)))}" in r.stdout and "RecursionError" not in r.stdout + r.stderr


def test_the_kernels_of_one_execd_source_cost_one_parse_of_it(monkeypatch):
    """Finding the n kernels of one ``exec``'d text parsed the whole text once per kernel (n parses of an
    n-kernel text: compile time grew with the square of the file); the text's definitions are read once."""
    from kdebug.frontend import source_registry
    body = "\n".join(f"def k{i}(a):\n    a[0] = {i}\n" for i in range(60))
    namespace: dict = {}
    code = compile(body, "<one-exec>", "exec")
    exec(code, namespace)
    source_registry.remember("<one-exec>", body)
    parses = []
    real = source_registry.parse_text
    monkeypatch.setattr(source_registry, "parse_text", lambda text: parses.append(len(text)) or real(text))
    found = [source_registry.find_lines(namespace[f"k{i}"]) for i in range(60)]
    assert [first for _, first in found] == [1 + 3 * i for i in range(60)]
    assert found[7][0] == ["def k7(a):\n", "    a[0] = 7\n"]
    assert parses == [len(body)]


def test_the_tui_refuses_a_trace_another_run_holds_before_it_starts(tmp_path, capsys):
    """``kdebug --trace T script.py`` on a terminal while another run writes T: exit 2 with the one-line
    error kdebug run gives, before the screen or the script starts (it was a traceback inside the app)."""
    from kdebug.session.options import RunOptions
    from kdebug.session.trace import TraceWriter
    from kdebug.tui.entry import run_tui
    trace = str(tmp_path / "held.jsonl")
    script = _script(tmp_path, "a = np.zeros(4)\nk[1, 4](a)\n")
    holder = TraceWriter(trace)
    try:
        status = run_tui(RunOptions(script=script, backend="cpu", trace=trace))
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("kdebug: error: --trace ") and "another kdebug run is writing this trace" in err
