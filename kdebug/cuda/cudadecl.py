"""numba.cuda.cudadecl under ``--numba``: the CUDA target's typing registry, where an extension declares
the typing of its types' attributes (``@registry.register_attr`` on an ``AttributeTemplate``)."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.numba.extending import cuda_typing_registry as registry

register_attr = registry.register_attr


def __getattr__(name):
    return missing_name(__name__, name, 2)
