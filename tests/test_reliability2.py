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
