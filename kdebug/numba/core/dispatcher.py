"""numba.core.dispatcher under ``--numba``: what ``numba.jit`` / ``numba.njit`` return.

kdebug runs an ``njit`` function as Python on the host and compiles it as a device function when a kernel
calls it (``kdebug.lang.dispatcher.HostFunction``). Code that manages numba's CPU dispatchers reads and
writes their ``targetoptions`` (``func.targetoptions["fastmath"] = flag``) and calls ``enable_caching()``
and ``recompile()``: they are numba's here, with nothing compiled for the host to cache or redo."""
from __future__ import annotations

import warnings

from kdebug.lang import types as T
from kdebug.lang.dispatcher import HostFunction
from kdebug.lang.missing import missing_name
from kdebug.lang.serialize import by_value, source_of, with_source

# numba.jit's own parameters: the rest of its keywords are the dispatcher's targetoptions
_DISPATCHER_ARGS = ("locals", "cache", "pipeline_class", "boundscheck", "target", "_target")


class Dispatcher(HostFunction):
    """numba's CPU dispatcher as kdebug has it: ``py_func``, ``targetoptions`` (the decorator's options,
    as numba 0.68 keeps them: ``njit(fastmath=True)`` gives ``{'fastmath': True, 'nopython': True,
    'boundscheck': None}``), ``enable_caching()``, ``recompile()``, ``signatures``."""

    def __init__(self, py_func, signatures=(), targetoptions=None, cache: bool = False, **options) -> None:
        super().__init__(py_func, signatures, **options)
        self.targetoptions = dict(options if targetoptions is None else targetoptions)
        self._cache_enabled = bool(cache)
        self._recompiles = 0

    def enable_caching(self) -> None:
        """numba caches the function's machine code on disk; kdebug keeps none for the host (it runs the
        Python function), so this only records that caching was asked for."""
        self._cache_enabled = True

    def recompile(self) -> None:
        """numba compiles every signature again with the current ``targetoptions``; here the next kernel
        that calls the function compiles its device function afresh."""
        self._device = None
        self._recompiles += 1

    @property
    def nopython_signatures(self) -> list:
        return list(self.signatures)

    def __repr__(self) -> str:
        return f"CPUDispatcher({self.py_func!r})"

    def __reduce__(self):
        return by_value(Dispatcher._rebuild_dispatcher,
                        dict(py_func=self.py_func, source=source_of(self.py_func), signatures=self.signatures,
                             targetoptions=self.targetoptions, cache=self._cache_enabled))

    @classmethod
    def _rebuild_dispatcher(cls, py_func, source, signatures, targetoptions, cache) -> "Dispatcher":
        return cls(with_source(py_func, source), signatures, targetoptions=targetoptions, cache=cache)


CPUDispatcher = Dispatcher


def jit(signature_or_function=None, locals=None, cache=False, pipeline_class=None, boundscheck=None,
        **options):
    """numba.jit: ``@jit``, ``@jit(cache=True, fastmath=True)``, ``@jit("float64(float64)")``,
    ``@jit(["f8(f8)", "i8(i8)"])``. The keywords other than numba.jit's own parameters are the
    dispatcher's ``targetoptions``, with ``nopython`` and ``boundscheck`` set, as numba keeps them."""
    options.pop("_target", None)
    forceobj = options.get("forceobj", False)
    if options.get("nopython") is True and forceobj:
        raise ValueError("Only one of 'nopython' or 'forceobj' can be True.")
    options["nopython"] = not forceobj  # numba >= 0.59: nopython is the default, and a target option
    options["boundscheck"] = boundscheck
    if callable(signature_or_function) and not isinstance(signature_or_function, (str, T.Type)):
        return Dispatcher(signature_or_function, (), targetoptions=options, cache=cache)
    if signature_or_function is None:
        sigs = []
    elif isinstance(signature_or_function, (list, tuple)):
        sigs = list(signature_or_function)
    else:
        sigs = [signature_or_function]
    return lambda fn: Dispatcher(fn, sigs, targetoptions=dict(options), cache=cache)


def njit(*args, **kws):
    """numba.njit: numba.jit with ``nopython=True`` (``forceobj`` is ignored, with numba's warning)."""
    if "forceobj" in kws:
        warnings.warn("forceobj is set for njit and is ignored", RuntimeWarning)
        del kws["forceobj"]
    kws.update(nopython=True)
    return jit(*args, **kws)


def __getattr__(name):
    return missing_name(__name__, name, 2)
