"""kdebug: an interactive debugger and visualizer for a GPU kernel compiler driver."""
from __future__ import annotations

__version__ = "0.1.0"


def deferred(fn):
    """In device code: the address of ``fn`` compiled as its own (deferred) job; call it like ``fn``."""
    raise RuntimeError("kdebug.deferred() can only be used inside a @cuda.jit kernel or device function")


def __getattr__(name):
    if name == "cuda":
        import importlib
        return importlib.import_module("kdebug.cuda")
    raise AttributeError(name)
