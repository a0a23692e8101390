"""The headless report (``kdebug --headless``, ``kdebug replay`` into a pipe) from a model fed events."""
from __future__ import annotations

from kdebug import events as E
from kdebug.session.headless import render
from kdebug.session.model import SessionModel

OOB = ("s.py:6:5: kernel error: out-of-bounds write of global array 'a' in kernel k: index 4 is outside shape (4,)\n"
       "    a[cuda.grid(1)] = 1\n    ^")


def diagnostic(text: str, severity: str = "error") -> E.Diagnostic:
    return E.Diagnostic(severity=severity, message=text.splitlines()[0], category="memcheck", text=text)


def test_a_diagnostic_that_repeats_is_printed_once_with_its_count():
    """A script launching a failing kernel in a loop (300 times): each launch reports the same error, and the
    Diagnostics section repeated it with its source line and caret 300 times."""
    events = [E.SessionStarted(script="s.py", backend="cpu", strategy="worklist")]
    events += [diagnostic(OOB)] * 3 + [diagnostic("s.py:9:1: warning: careful", "warning"), diagnostic(OOB)]
    events.append(E.SessionEnded(status="failed", exit_code=1))
    report = render(SessionModel().extend(events))
    diagnostics = report.split("\nDiagnostics\n", 1)[1]
    assert diagnostics.count("out-of-bounds write") == 1, diagnostics
    assert diagnostics.count("a[cuda.grid(1)] = 1") == 1
    assert "    (the same 3 more times)" in diagnostics
    assert diagnostics.index("out-of-bounds") < diagnostics.index("careful")  # the order they first came
    warning = diagnostics[diagnostics.index("warning: s.py:9:1"):]
    assert "more time" not in warning.split("\n\n")[0]  # a diagnostic that came once has no count
    assert "Session failed (exit status 1)" in report


def test_one_repetition_is_said_in_the_singular():
    events = [E.SessionStarted(script="s.py", backend="cpu", strategy="worklist"), diagnostic(OOB), diagnostic(OOB)]
    assert "    (the same 1 more time)" in render(SessionModel().extend(events))
