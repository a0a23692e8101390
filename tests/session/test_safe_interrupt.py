"""Ctrl-C in the script raises KeyboardInterrupt where the script can see it (kdebug/session/safe_interrupt.py):
never inside a finalizer, where Python prints it as ignored and the script runs to its end, and never inside
llvmlite, where it freed a linked module twice (a segmentation fault)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SAMPLES
from kdebug import events as E
from kdebug.session.debuggee import Debuggee
from kdebug.session.options import RunOptions
from kdebug.session.safe_interrupt import unsafe

pytestmark = pytest.mark.timeout(300)


# run in a Python of its own: a SIGINT to the test's own process that went astray would end the whole run
SIGINTS = """
import os, signal, sys, time
from kdebug.session.safe_interrupt import SafeInterrupt

class SendsSigintWhenCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # bytecode after the signal: Python's handler runs in here
            pass

def frames(exc):
    tb = exc.__traceback__
    while tb is not None:
        yield tb.tb_frame.f_code.co_name
        tb = tb.tb_next

which = sys.argv[1]
with SafeInterrupt():
    try:
        if which == "finalizer":
            SendsSigintWhenCollected()  # collected at once: __del__ runs here
        else:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
            print("not raised where it came")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.001)
        print("lost")
    except KeyboardInterrupt as exc:
        print("raised in", " ".join(frames(exc)))
print("handler back:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


def _sigint_in(which: str) -> list[str]:
    res = subprocess.run([sys.executable, "-c", SIGINTS, which], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_a_sigint_inside_a_finalizer_is_raised_after_it():
    """Python raises it inside ``__del__``, where it is printed as ignored: the script ran on."""
    out = _sigint_in("finalizer")
    assert out[0].startswith("raised in <module>") and "__del__" not in out[0], out
    assert out[-1] == "handler back: True", out  # Python's own handler once the script is done


def test_a_sigint_elsewhere_is_raised_at_once_as_python_does():
    out = _sigint_in("elsewhere")
    assert out[0] == "raised in <module> _on_sigint", out  # from the handler, called where the script was


def test_a_frame_in_llvmlite_or_a_finalizer_is_unsafe_and_the_scripts_own_is_not():
    import sys
    import llvmlite
    assert not unsafe(sys._getframe())
    inside = {}
    code = compile("def call(f):\n    return f()\n", os.path.join(os.path.dirname(llvmlite.__file__), "ffi.py"), "exec")
    exec(code, inside)  # a function whose code is llvmlite's, calling back into ours (a pass callback)
    assert inside["call"](lambda: unsafe(sys._getframe()))

    class Finalized:
        def __del__(self):
            seen.append(unsafe(sys._getframe()))
    seen: list[bool] = []
    Finalized()
    assert seen == [True]

    import weakref
    gone = Finalized()
    weakref.finalize(gone, lambda: seen.append(unsafe(sys._getframe())))  # a weak reference's callback
    del gone
    assert seen == [True, True, True]


def _run_interrupted_at(script: str, at_event: int | None) -> tuple[list[E.Event], int]:
    """A debuggee's run of ``script``; SIGINT to it the moment its ``at_event``-th event arrives."""
    events: list[E.Event] = []
    holder: list[Debuggee] = []

    def on_event(ev):
        events.append(ev)
        if len(events) == at_event:
            holder[0].signal(signal.SIGINT)
    opts = RunOptions(script=script, backend="cpu", snapshots=False, passes_on_demand=True)
    holder.append(Debuggee(opts, on_event, lambda line: None))
    dbg = holder[0]
    deadline = time.monotonic() + 120
    while dbg.reading and time.monotonic() < deadline:
        time.sleep(0.01)
    dbg.close()
    return events, dbg.proc.returncode


@pytest.mark.slow
def test_sigint_at_any_moment_of_a_compile_stops_the_script_and_never_crashes():
    """SIGINT at moments spread over gradient_hvp.py's compiles (each run sends it as one of its events
    arrives): before, the script ran to its end in some (the KeyboardInterrupt raised in a finalizer of
    llvmlite's) and crashed with SIGSEGV in one (raised in llvmlite's link_in)."""
    script = os.path.join(SAMPLES, "gradient_hvp.py")
    events, code = _run_interrupted_at(script, None)
    assert code == 0 and events[-1].status == "ok"
    # up to a few events before the last launch: a SIGINT after the script's end may find the process gone
    last = max(i for i, ev in enumerate(events) if isinstance(ev, E.LaunchStarted)) - 4
    moments = sorted({1 + round(k * (last - 1) / 15) for k in range(16)})
    for at in moments:
        events, code = _run_interrupted_at(script, at)
        end = events[-1]
        assert isinstance(end, E.SessionEnded), (at, end)
        assert code is not None and code >= 0 or code == -signal.SIGINT, (at, code, end)  # no crash
        assert end.status != "ok" or code == -signal.SIGINT, (at, end)  # the script did not run to its end
        if end.status == "failed":  # the script's traceback: a KeyboardInterrupt
            assert any(isinstance(ev, E.Diagnostic) and ev.message.startswith("KeyboardInterrupt")
                       for ev in events), (at, events[-3:])
