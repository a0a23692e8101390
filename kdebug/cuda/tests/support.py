"""numba.cuda.tests.support: output capture helpers (numba-cuda's own, as written there)."""
from __future__ import annotations

import contextlib
import io

from kdebug.lang.missing import missing_name


def captured_stdout():
    """Capture sys.stdout: ``with captured_stdout() as out: print("x")`` then ``out.getvalue()``."""
    return contextlib.redirect_stdout(io.StringIO())


def captured_stderr():
    return contextlib.redirect_stderr(io.StringIO())


def __getattr__(name):
    return missing_name(__name__, name, 2)
