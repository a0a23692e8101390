"""The built-in strategies' names and one-line summaries, and ``--strategy``'s choices, for the command line.

The strategies themselves (kdebug/driver/strategies.py) import the compiler, and numpy with it: 70-100 ms
of CPU in every ``kdebug`` process, whose own process mostly never compiles (``kdebug run --headless``'s
supervisor, ``dump``, ``export``). Each strategy class takes its ``summary`` from here, in this order
(``REGISTRY``'s, checked by tests/docs_and_structure/test_startup_imports.py).
"""
from __future__ import annotations

SUMMARIES = {
    "worklist": "one job table for the session; each nested job expands its own markers through it; "
                "finish runs once on every job",
    "toplevel": "GPUCompiler.jl's design: only the toplevel expands markers, nested ones in later rounds",
    "recursive": "the naive fix: each nested job expands its own markers with a fresh table",
    "gpucompiler2": "GPUCompiler.jl 2.x's rework: one table; markers resolved and entry points decided once, "
                    "after deferred codegen",
}


def names() -> tuple[str, ...]:
    return tuple(SUMMARIES)


class Choices(tuple):
    """The ``--strategy`` choices: the built-ins' names (listed in --help), and any ``FILE.py:Class`` or
    ``MODULE:Class`` (checked when loaded)."""

    def __contains__(self, value) -> bool:
        return tuple.__contains__(self, value) or (isinstance(value, str) and ":" in value)
