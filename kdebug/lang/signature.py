"""Signatures as numba writes them: ``"void(float32[:], int32)"`` strings, ``signature(restype, *args)``.

``Signature`` and ``parse_signature`` live with the types (``float32(int32)`` builds one); this module
is numba.cuda.typing's face of them.
"""
from __future__ import annotations

from kdebug.lang.types import Signature, parse_signature  # noqa: F401


def signature(return_type, *args) -> Signature:
    """numba's ``signature(return_type, *argtypes)`` (numba.cuda.typing.signature)."""
    return Signature(return_type, tuple(args))
