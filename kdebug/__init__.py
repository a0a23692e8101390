"""kdebug: an interactive debugger and visualizer for a GPU kernel compiler driver."""
from __future__ import annotations

from kdebug.lang import seam
from kdebug.lang.derivative import grad  # noqa: F401 - kdebug.grad(fn, argnum) in device code
from kdebug.lang.derivative import gradient  # noqa: F401 - kdebug.gradient(fn, argnum=None) in device code
from kdebug.lang.derivative import adjoint  # noqa: F401 - kdebug.adjoint(kernel)[grid, block](x, dx, ...)
from kdebug.lang.intrinsics import deferred  # noqa: F401 - kdebug.deferred(fn) in device code

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
    if name == "cuda":  # ``kdebug.cuda`` without importing it first, as ``numba.cuda``
        import importlib
        return importlib.import_module("kdebug.cuda")
    raise AttributeError(name)
