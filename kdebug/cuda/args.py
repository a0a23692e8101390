"""numba.cuda.args: the argument hints In, Out, InOut and wrap_arg (kdebug/lang/args.py)."""
from __future__ import annotations

from kdebug.lang.args import ArgHint, In, InOut, Out, wrap_arg  # noqa: F401
from kdebug.lang.missing import missing_name


def __getattr__(name):
    return missing_name(__name__, name, 2)
