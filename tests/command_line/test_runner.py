"""The one runner: options parsed once, handed to the debuggee child as data."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, run_kdebug
from kdebug.cli import UsageError, parse_args, run_options
from kdebug.session.options import RunOptions


def test_run_options_are_frozen_and_survive_json():
    opts = run_options(parse_args(["run", "--backend", "cpu", "--strategy", "toplevel", "--numba",
                                   "--no-memcheck", "--shuffle-threads=7", "--break", "finish,launch",
                                   "s.py", "a", "--two"]))
    assert opts == RunOptions(script="s.py", args=("a", "--two"), backend="cpu", strategy="toplevel", numba=True,
                              memcheck=False, shuffle_seed=7, breakpoints=frozenset({"finish", "launch"}))
    assert RunOptions.from_json(opts.to_json()) == opts
    with pytest.raises(AttributeError):
        opts.strategy = "recursive"  # frozen: a rerun makes new options
    assert opts.replace(strategy="recursive").strategy == "recursive" and opts.strategy == "toplevel"


def test_dump_options_carry_the_target():
    ns = parse_args(["dump", "s.py", "--out", "d", "--target", "ptx", "--arch", "80"])
    opts = run_options(ns)
    assert (opts.target, opts.arch, opts.script) == ("ptx", "sm_80", "s.py")


def test_an_unknown_breakpoint_is_a_usage_error():
    with pytest.raises(UsageError, match="finsh"):
        run_options(parse_args(["run", "--break", "finsh", "s.py"]))


@pytest.mark.parametrize("face", [["--headless"], ["dump", "--out", "d"]])
def test_an_unknown_breakpoint_exits_2_in_every_face(face, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    args = face + ["--break", "nope", str(script)] if face[0] != "dump" else ["dump", str(script), "--out",
                                                                              str(tmp_path / "d"), "--break", "nope"]
    r = run_kdebug(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "unknown breakpoint nope" in r.stderr and "ran" not in r.stdout


def test_the_session_layer_never_imports_the_cli():
    code = ("import sys, kdebug.session.debuggee, kdebug.session.runner; "
            "sys.exit('kdebug.cli' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr or "kdebug.session imported kdebug.cli"


def test_any_exception_inside_a_launch_is_a_failed_launch(tmp_path, monkeypatch):
    """Not only kdebug's own errors: a launch that raised anything is recorded as failed, never ok."""
    import numpy as np

    from kdebug import cuda, events as E
    from kdebug.session.runner import configure_session

    session = configure_session(RunOptions(script="s.py", backend="cpu"))
    seen = []
    session.bus.subscribe(seen.append)

    @cuda.jit
    def k(a):
        a[0] = 1

    def boom(*args, **kwargs):
        raise RuntimeError("the runtime broke")
    monkeypatch.setattr(session.runtime, "launch", boom)
    with pytest.raises(RuntimeError, match="the runtime broke"):
        k[1, 1](np.zeros(1))
    (finished,) = [e for e in seen if isinstance(e, E.LaunchFinished)]
    assert finished.error == "RuntimeError: the runtime broke"
    assert session.failed
