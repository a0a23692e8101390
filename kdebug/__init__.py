"""kdebug: an interactive debugger and visualizer for a GPU kernel compiler driver."""
from __future__ import annotations

__version__ = "0.1.0"


def deferred(fn):
    """In device code: the address of ``fn`` compiled as its own (deferred) job; call it like ``fn``."""
    raise RuntimeError("kdebug.deferred() can only be used inside a @cuda.jit kernel or device function")


def set_options(memcheck=None, shuffle_threads=False) -> None:
    """Options of the active session, as the command line's: ``memcheck=False`` is ``--no-memcheck``
    (also ``KDEBUG_MEMCHECK=0`` in the environment); ``shuffle_threads=SEED`` is
    ``--shuffle-threads=SEED`` and ``shuffle_threads=None`` turns shuffling off."""
    from kdebug.driver.active import get_session
    get_session().set_options(memcheck=memcheck, shuffle_threads=shuffle_threads)


def __getattr__(name):
    if name == "cuda":
        import importlib
        return importlib.import_module("kdebug.cuda")
    raise AttributeError(name)
