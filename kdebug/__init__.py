"""kdebug: an interactive debugger and visualizer for a GPU kernel compiler driver."""
from __future__ import annotations

from kdebug.lang import seam

# ``kdebug.grad(fn, argnum)``, ``kdebug.gradient(fn, argnum=None)`` and ``kdebug.deferred(fn)`` in device
# code, ``kdebug.adjoint(kernel)[grid, block](x, dx, ...)`` on the host: their modules (and numpy, which
# kdebug.lang's host side needs) load on first use (``__getattr__`` below), so a process that imports only
# kdebug's passes and targets (the TUI's pass-replay process) does not import numpy.
_LAZY = {"grad": "kdebug.lang.derivative", "gradient": "kdebug.lang.derivative",
         "adjoint": "kdebug.lang.derivative", "deferred": "kdebug.lang.intrinsics", "cuda": "kdebug.cuda"}

__version__ = "0.1.0"


def set_options(**changes) -> None:
    """Options of the active session (``Session.set_options``, kdebug/session/live.py, the one signature),
    as the command line's: ``memcheck=False`` is ``--no-memcheck``
    (also ``KDEBUG_MEMCHECK=0`` in the environment); ``shuffle_threads=SEED`` is
    ``--shuffle-threads=SEED`` and ``shuffle_threads=None`` turns shuffling off; ``racecheck=True``
    and ``initcheck=True`` are ``--sanitize ...,racecheck,initcheck`` (CPU backend); ``lockstep=False``
    runs every loop thread by thread (CPU backend; also ``KDEBUG_LOCKSTEP=0``); ``regions=False`` runs
    kernels with barriers as coroutines instead of cut at their barriers (CPU backend; ``KDEBUG_REGIONS=0``);
    ``narrow=False`` runs every thread in each of their thread loops, not only those a region's guards let in
    (``KDEBUG_NARROW=0``)."""
    seam.current().set_options(**changes)


def _default_session():
    # NOTE: kept lazy for start-up time: every ``import kdebug.<module>`` runs this file first,
    # and the compiler (driver, targets, llvmlite) loads only when a script first needs a session.
    from kdebug.session.live import default_session
    return default_session()


seam.set_default_factory(_default_session)


def __getattr__(name):
    """The names in ``_LAZY`` (``kdebug.cuda`` without importing it first, as ``numba.cuda``)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kdebug' has no attribute {name!r}")
    import importlib
    value = importlib.import_module(module)
    if name != "cuda":
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
