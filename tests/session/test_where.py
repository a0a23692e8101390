"""Where the script is (``Debuggee.where``, what Ctrl-C's message and a kill name): the user's frames of
the child's stack, innermost first, without kdebug's, the standard library's or installed packages'."""
from __future__ import annotations

import contextlib
import os
import sysconfig
import time

import pytest

from kdebug.session.debuggee import Debuggee, user_frames
from kdebug.session.options import RunOptions

pytestmark = pytest.mark.timeout(120)

# most of each turn of the loop runs inside llvmlite's own Python (ir.Module's printing), called from line 8;
# the loop is that one line, so that a stack taken at its jump back (where the interpreter may hand the GIL to
# the thread that answers) names the same line, and it says "spinning" from inside the loop (said before it,
# a stack taken at once could name the print's line 7: a loaded CI pass did)
IN_A_LIBRARY = """\
from llvmlite import ir

module = ir.Module()
for k in range(400):
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name=f"f{k}")
    ir.IRBuilder(fn.append_basic_block()).ret_void()
first = True
while True: text = str(module); first = first and print("spinning", flush=True)
"""


@contextlib.contextmanager
def spinning_in_a_library(tmp_path):
    """A debuggee running IN_A_LIBRARY, once it is spinning: (the debuggee, the script's path); killed after."""
    script = tmp_path / "in_library.py"
    script.write_text(IN_A_LIBRARY)
    lines: list[str] = []
    dbg = Debuggee(RunOptions(script=str(script), backend="cpu", snapshots=False), lambda ev: None, lines.append)
    try:
        deadline = time.monotonic() + 60
        while not any("spinning" in ln for ln in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any("spinning" in ln for ln in lines), lines
        yield dbg, script
    finally:
        dbg.kill()
        dbg.close()


def test_a_script_stopped_inside_an_installed_package_is_placed_at_its_own_line(tmp_path):
    """Before, Ctrl-C there said "at .../site-packages/llvmlite/ir/...": a library's line, not the script's."""
    with spinning_in_a_library(tmp_path) as (dbg, script):
        packages = tuple(os.path.abspath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))
        for _ in range(3):  # three moments: each must name the script's line 9 first, and no library's
            where = dbg.where(wait=5.0)
            assert where and where[0] == f"{script}:8 in <module>", where
            assert not any(os.path.abspath(f.rsplit(":", 2)[0]).startswith(packages) for f in where), where


def test_asking_where_again_and_again_never_hurts_the_script(tmp_path):
    """Each answer names the script's line, and the script runs on. (The stacks came from faulthandler on
    SIGUSR1: on Python 3.13 its handler, run on the main thread in the middle of a call, read a frame being
    made, and the script died of a segmentation fault: CI's [] in its second pass.)"""
    with spinning_in_a_library(tmp_path) as (dbg, script):
        answers = [dbg.where(wait=5.0) for _ in range(60)]
        assert dbg.alive, (dbg.ended, dbg._fault_text()[-2000:])
        wrong = [(k, a) for k, a in enumerate(answers) if not (a and a[0] == f"{script}:8 in <module>")]
        assert not wrong, wrong


def test_the_scripts_own_frames_are_kept_wherever_it_lives(tmp_path):
    """A script inside an installed package's folder (a test run from its installed copy) is still the user's."""
    purelib = os.path.abspath(sysconfig.get_paths()["purelib"])
    script = os.path.join(purelib, "somepkg", "run_me.py")
    dump = ("Current thread 0x00007f0000000000 (most recent call first):\n"
            f'  File "{os.path.join(purelib, "llvmlite", "ir", "module.py")}", line 10 in __repr__\n'
            f'  File "{script}", line 3 in <module>\n'
            '  File "<frozen runpy>", line 88 in _run_code\n')
    assert user_frames(dump, script) == [f"{script}:3 in <module>"]
