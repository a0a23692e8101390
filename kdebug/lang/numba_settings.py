"""The numba config settings that the kernel API's numba behaviour reads: ``cuda.jit``'s ``debug`` and ``opt``
defaults (``CUDA_DEBUGINFO_DEFAULT``, ``OPT``) and the CUDA Array Interface's ``CUDA_ARRAY_INTERFACE_SYNC``.

``lang`` lies below ``kdebug.numba``, so it never imports numba's config: the config module registers itself
here when it is imported (``register``); until then nobody can have changed it, and its defaults hold."""
from __future__ import annotations

DEFAULTS = {"CUDA_DEBUGINFO_DEFAULT": 0, "OPT": 3, "CUDA_ARRAY_INTERFACE_SYNC": 1}

_config = None


def register(config) -> None:
    """Read the settings from ``config`` (``kdebug.numba.core.config``, numba.config under ``--numba``)."""
    global _config
    _config = config


def setting(name: str):
    """The value of numba's config setting ``name`` (one of DEFAULTS)."""
    return getattr(_config, name) if _config is not None else DEFAULTS[name]
