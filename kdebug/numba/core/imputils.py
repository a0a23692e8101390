"""numba.core.imputils (also numba.cuda.core.imputils) under ``--numba``: lowering registries."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.numba.extending import (Registry, builtin_registry, lower_builtin, lower_getattr,  # noqa: F401
                                    lower_getattr_generic)


def __getattr__(name):
    return missing_name(__name__, name, 2)
