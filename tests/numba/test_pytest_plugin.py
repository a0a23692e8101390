"""A numba.cuda test suite run unchanged: ``pytest -p kdebug.pytest_plugin`` and ``kdebug run --numba -m
pytest`` (kdebug/pytest_plugin.py, ``-m`` in kdebug/cli.py and kdebug/session/runner.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, run_kdebug
from kdebug import cli

SUITE = '''\
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError


@cuda.jit
def fill(a, v):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = v


@cuda.jit
def past_the_end(a):
    a[cuda.grid(1) + 1] = 1.0


def test_fills():
    a = np.zeros(8)
    fill[1, 8](a, 2.0)
    assert (a == 2.0).all()


def test_swallows_an_out_of_bounds_write():
    try:
        past_the_end[1, 4](np.zeros(4))
    except Exception:
        pass  # the test hides the launch's error: the finding still fails it


def test_expects_a_typing_error():
    @cuda.jit
    def bad(a):
        a[0] = a

    with pytest.raises(TypingError):
        bad[1, 1](np.zeros(3))
'''


def write_suite(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    # a conftest importing numba at its top: the plugin must have installed kdebug's numba before it
    (tmp_path / "conftest.py").write_text("import numba.cuda\nassert numba.__version__.endswith('kdebug')\n")


def pytest_in(tmp_path, *args, timeout=240):
    env = dict(os.environ, KDEBUG_BACKEND="cpu", PYTHONPATH=ROOT)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=tmp_path, env=env)


def check_outcome(out: str) -> None:
    assert "test_suite.py::test_swallows_an_out_of_bounds_write" in out and "1 failed, 2 passed" in out, out
    assert "a kernel this test launched has a sanitizer finding" in out
    assert "out-of-bounds write of global array 'a' in kernel past_the_end" in out
    assert "test_suite.py:16:5: kernel error" in out  # located: the kernel's line
    assert "launches: 1" in out  # the failing test's kdebug section
    # the summary at the end
    assert "==== kdebug ====" in out.replace("=====", "====")
    assert "2 kernel(s) and 0 device function(s) compiled, 2 launch(es) in 2 test(s), 1 finding(s)" in out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_plugin_in_pytests_own_process(tmp_path, workers):
    """With pytest-xdist the workers load the plugin too, and the summary (in the controller) adds up
    what their reports carry."""
    write_suite(tmp_path)
    r = pytest_in(tmp_path, "-p", "kdebug.pytest_plugin", *workers, "test_suite.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    check_outcome(out)


def test_kdebug_run_m_pytest_loads_the_plugin_and_its_status_is_pytests(tmp_path):
    write_suite(tmp_path)
    env = {"PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": ""}
    r = run_kdebug("run", "--numba", "--backend", "cpu", "-m", "pytest", "-p", "no:cacheprovider", "test_suite.py",
                   cwd=tmp_path, env=env, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    check_outcome(out)
    # only the finding's test failed: without it, the expected TypingError does not fail the run
    r = run_kdebug("run", "--numba", "--backend", "cpu", "-m", "pytest", "-p", "no:cacheprovider", "test_suite.py",
                   "-k", "not swallows", cwd=tmp_path, env=env, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout


def test_run_m_parses_as_python_m():
    opts = cli.parse_args(["run", "--numba", "--backend", "cpu", "-m", "pytest", "-x", "--numba", "tests/"])
    assert opts.module == "pytest" and opts.numba and opts.backend == "cpu"
    assert opts.script.endswith(os.path.join("pytest", "__main__.py"))
    assert opts.args == ["-x", "--numba", "tests/"]  # after MODULE, everything is the module's
    opts = cli.parse_args(["run", "s.py", "-m", "pytest"])  # after the script, -m is the script's
    assert opts.script == "s.py" and opts.args == ["-m", "pytest"] and opts.module is None
    opts = cli.parse_args(["--headless", "--timeout", "5", "-m", "json.tool", "--help"])
    assert opts.module == "json.tool" and opts.script.endswith(os.path.join("json", "tool.py"))


def test_run_m_of_a_missing_module_is_a_usage_error(capsys):
    assert cli.main(["run", "-m", "no_such_module_here_x"]) == 2
    assert "no module named 'no_such_module_here_x'" in capsys.readouterr().err


def test_run_m_runs_a_module_of_the_current_folder_as_main(tmp_path):
    pkg = tmp_path / "tool"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(textwrap.dedent("""\
        import os, sys
        from numba import cuda
        import numpy as np

        @cuda.jit
        def one(a):
            a[0] = 1

        a = np.zeros(1)
        one[1, 1](a)
        print("main", __name__, os.path.basename(sys.argv[0]), sys.argv[1:], a[0], sys.path[0] == os.getcwd())
        """))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", "-m", "tool", "a", "-b", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "main __main__ __main__.py ['a', '-b'] 1.0 True" in r.stdout
    assert "#1  one" in r.stdout  # the report lists the module's launch
