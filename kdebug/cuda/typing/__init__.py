"""numba.cuda.typing: ``signature(return_type, *argtypes)`` and the ``Signature`` it returns."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.lang.signature import Signature, signature  # noqa: F401

__all__ = ["signature", "Signature"]


def __getattr__(name):
    return missing_name(__name__, name, 2)
