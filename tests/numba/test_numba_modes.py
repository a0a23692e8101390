"""``--numba=cuda-only|all|auto`` (kdebug/lang/numba_compat.py): with a real numba installed only
``numba.cuda`` is kdebug's, numba's CPU JIT (``njit``, ``prange``, ``config``) stays numba's, and a kernel
calling an ``@njit`` function compiles it from its ``py_func``; without one, kdebug's stand-in for all of
numba. The project's environment has no numba: a minimal stand-in for "a real numba" (a package named
``numba`` on ``PYTHONPATH``) plays the installed one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, run_kdebug
from kdebug import cli

# a package that is not kdebug's and answers "import numba" as an installed numba would
FAKE_NUMBA = '''\
__version__ = "0.0+fake"


class CPUDispatcher:
    """numba's CPU dispatcher, as far as kdebug reads it: its Python function."""

    def __init__(self, py_func):
        self.py_func = py_func

    def __call__(self, *args):
        return self.py_func(*args)


def njit(fn=None, **options):
    return CPUDispatcher(fn) if fn is not None else CPUDispatcher


def prange(*args):
    return range(*args)


class _Config:
    DISABLE_JIT = 0
    WHOSE = "fake"


config = _Config()


class Float:
    """A numba scalar type: its name is numba's."""

    def __init__(self, name):
        self.name = name


float32 = Float("float32")
'''

SCRIPT = '''\
import numpy as np
import numba
from numba import cuda, njit, prange, float32


@njit
def add_one(x):
    return x + 1.0


@njit
def twice_plus_one(x):
    return add_one(x) * 2.0  # an @njit function calling another


@cuda.jit
def kernel(a):
    i = cuda.grid(1)
    tmp = cuda.local.array(1, float32)  # numba's type object, read as kdebug's float32
    if i < a.size:
        tmp[0] = float32(twice_plus_one(a[i]))
        a[i] = tmp[0]


assert njit.__module__ == "numba" and type(add_one).__name__ == "CPUDispatcher"
assert prange is not range and numba.config.WHOSE == "fake", "numba's own names stay numba's"
assert cuda.__name__ == "kdebug.cuda" and numba.cuda is cuda
import numba.cuda.random  # noqa: E402,F401 - numba.cuda's submodules are kdebug's too
assert numba.cuda.random.__name__ == "kdebug.cuda.random"
a = np.arange(4, dtype=np.float32)
kernel[1, 4](a)
print("result", a.tolist())
print("host", twice_plus_one(1.0))
'''


def fake_numba(tmp_path) -> dict:
    (tmp_path / "site" / "numba").mkdir(parents=True)
    (tmp_path / "site" / "numba" / "__init__.py").write_text(FAKE_NUMBA)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), ROOT]), "KDEBUG_BACKEND": "cpu"}


def test_the_command_line_takes_a_mode():
    assert cli.parse_args(["run", "--numba", "x.py"]).numba == "auto"  # the script is not the mode
    assert cli.parse_args(["run", "--numba=cuda-only", "x.py"]).numba == "cuda-only"
    assert cli.parse_args(["run", "--numba", "all", "x.py"]).numba == "all"
    assert cli.parse_args(["run", "x.py"]).numba is None
    opts = cli.run_options(cli.parse_args(["run", "--numba=all", "x.py"]))
    assert opts.numba and opts.numba_mode == "all"


def test_without_numba_the_stand_in_is_in_force(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import numba\nfrom numba import njit, prange\n"
                      "assert numba.__name__ == 'kdebug.numba' and prange is range\nprint('shim', njit)\n")
    summary = tmp_path / "summary.json"
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", "--json-summary", str(summary), str(script),
                   timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    first = next(line for line in r.stdout.splitlines() if line.startswith("kdebug: "))
    assert "numba=all (kdebug's stand-in for all of numba: no numba installed)" in first
    assert json.loads(summary.read_text())["numba"].startswith("all (kdebug's stand-in")


def test_cuda_only_without_numba_says_what_to_do(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    r = run_kdebug("run", "--numba=cuda-only", "--headless", "--backend", "cpu", str(script), timeout=120)
    assert r.returncode == 2 and "ran" not in r.stdout
    assert "--numba=cuda-only: no numba is installed" in r.stderr and "--numba=all" in r.stderr


def test_with_numba_only_numba_cuda_is_replaced(tmp_path):
    env = fake_numba(tmp_path)
    script = tmp_path / "mixed.py"
    script.write_text(SCRIPT)
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script), env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result [2.0, 4.0, 6.0, 8.0]" in r.stdout  # the @njit functions ran in the kernel
    assert "host 4.0" in r.stdout
    first = next(line for line in r.stdout.splitlines() if line.startswith("kdebug: "))
    # the stand-in has no installed distribution to name a version: "numba's"
    assert "numba=cuda-only (numba.cuda is kdebug's; njit, prange and config are numba's)" in first


def test_with_numba_all_replaces_it_when_asked(tmp_path):
    env = fake_numba(tmp_path)
    script = tmp_path / "s.py"
    script.write_text("import numba\nfrom numba import prange\nassert numba.__name__ == 'kdebug.numba'\n"
                      "assert prange is range\n")
    r = run_kdebug("run", "--numba=all", "--headless", "--backend", "cpu", str(script), env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "numba=all (kdebug's stand-in for all of numba: as asked)" in r.stdout


def test_the_pytest_plugin_keeps_numba(tmp_path):
    env = dict(os.environ, **fake_numba(tmp_path))
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    (tmp_path / "test_mixed.py").write_text(SCRIPT.replace("print(", "pass  # print(") + textwrap.dedent('''
        def test_njit_in_a_kernel():
            a = np.ones(2)
            kernel[1, 2](a)
            assert a.tolist() == [4.0, 4.0]
            assert numba.config.WHOSE == "fake"
        '''))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "kdebug.pytest_plugin",
                        "-q", "test_mixed.py"], capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert "numba=cuda-only (numba.cuda is kdebug's" in r.stdout


def test_a_numba_type_in_a_signature_is_read_as_kdebugs(tmp_path):
    """numba's type and signature objects (numba.void(numba.float32[:])) as kdebug's, by their parts."""
    from kdebug.lang import types as T

    def numba_class(cls_name, **fields):
        return type(cls_name, (), {"__module__": "numba.core.types", **fields})

    f32 = numba_class("Float", name="float32")()
    arr = numba_class("Array", dtype=f32, ndim=1, layout="C", mutable=True)()
    none = numba_class("NoneType", name="none")()
    sig = numba_class("Signature", return_type=none, args=(arr, f32))()
    assert T.parse_signature(sig) == T.Signature(T.void, (T.Array(T.float32, 1, "C"), T.float32))
    assert T.parse_signature((arr,)).argtypes == (T.Array(T.float32, 1, "C"),)
    odd = numba_class("Opaque", name="pyobject")()
    with pytest.raises(TypeError, match="numba's type pyobject: kdebug has no kernel type"):
        T.from_numba_type(odd)
