"""numba.cuda.launchconfig: the launch configuration of the launch being compiled, as numba-cuda 0.30.4
exposes it (``current_launch_config``, ``ensure_current_launch_config``, ``capture_compile_config``).

The configuration is the ``kernel[grid, block, stream, shared]`` object (``griddim``, ``blockdim``,
``stream``, ``sharedmem``, ``dispatcher``); it is set while a launch runs on this thread, so that what
runs at compile time (an ``@overload`` typing function, an ``@intrinsic``) sees it. kdebug compiles one
kernel per argument types: a compilation that depends on the configuration is not redone for another
one (numba's ``mark_launch_config_sensitive`` is not provided)."""
from __future__ import annotations

import contextlib

from kdebug.lang.dispatcher import current_launch_config
from kdebug.lang.missing import missing_name

__all__ = ["current_launch_config", "ensure_current_launch_config", "capture_compile_config"]


def ensure_current_launch_config():
    """The current launch configuration; numba's RuntimeError outside a launch's compilation."""
    config = current_launch_config()
    if config is None:
        raise RuntimeError("No launch config set for this thread")
    return config


@contextlib.contextmanager
def capture_compile_config(dispatcher):
    """``with capture_compile_config(kernel) as record:``: ``record["config"]`` is the configuration of a
    launch of ``kernel`` inside the block that compiled it (None when it was compiled already)."""
    if dispatcher is None:
        raise TypeError("dispatcher is required")
    record = {"config": None}
    captures = dispatcher.__dict__.setdefault("_launch_config_captures", [])
    captures.append(record)
    try:
        yield record
    finally:
        captures.remove(record)
        if not captures:
            del dispatcher.__dict__["_launch_config_captures"]


def __getattr__(name):
    return missing_name(__name__, name, 2)
