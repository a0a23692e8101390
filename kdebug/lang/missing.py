"""The error for a numba name kdebug does not provide: it names the name, never a bare ModuleNotFoundError."""
from __future__ import annotations

import dis
import importlib
import importlib.util
import sys

_IMPORT_FROM = dis.opmap["IMPORT_FROM"]
README_SECTION = "docs/guide/numba.md lists what kdebug covers"


def public_name(module: str) -> str:
    """The name a user wrote: kdebug.numba.core is numba.core, kdebug.cuda.types is (numba.)cuda.types."""
    if module == "kdebug.numba" or module.startswith("kdebug.numba."):
        return "numba" + module[len("kdebug.numba"):]
    numba_mode = sys.modules.get("numba") is not None and sys.modules.get("numba") is sys.modules.get("kdebug.numba") \
        or sys.modules.get("numba.cuda") is not None and sys.modules.get("numba.cuda") is sys.modules.get("kdebug.cuda")
    if numba_mode and module.startswith("kdebug.cuda"):  # the script imported it as numba.cuda
        return "numba" + module[len("kdebug"):]
    return module


def missing_name(module: str, name: str, depth: int = 1):
    """A module's ``__getattr__``: import a submodule of that name if there is one; otherwise raise.

    ``from numba.cuda import X`` gets an ImportError, attribute access an AttributeError (so that
    ``hasattr`` and ``getattr(m, X, default)`` still work); both name ``X`` and say kdebug lacks it."""
    if name.startswith("__"):
        raise AttributeError(f"module {public_name(module)!r} has no attribute {name!r}")
    if hasattr(sys.modules[module], "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None:
        return importlib.import_module(f"{module}.{name}")
    message = (f"{public_name(module)}.{name}: kdebug does not provide {name!r} "
               f"({README_SECTION}; the names it has: dir({public_name(module)}))")
    frame = sys._getframe(depth)
    if frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM:
        raise ImportError(message, name=public_name(module))
    raise AttributeError(message)
