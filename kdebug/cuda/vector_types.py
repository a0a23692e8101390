"""numba.cuda.vector_types: CUDA's vector types (kdebug/lang/vector_types.py)."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.lang.vector_types import VectorType, vector_types  # noqa: F401


def __getattr__(name):
    return missing_name(__name__, name, 2)
