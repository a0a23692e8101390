"""numba.cuda.cudaimpl under ``--numba``: the CUDA target's lowering registry (``lower``, ``lower_attr``),
which kdebug's lowering consults beside the builtin one (kdebug/frontend/extensions.py)."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.numba.extending import cuda_registry as registry

lower = registry.lower
lower_attr = registry.lower_getattr
lower_getattr = registry.lower_getattr


def __getattr__(name):
    return missing_name(__name__, name, 2)
