"""Signature strings as numba writes them: ``"void(float32[:], int32)"``."""
from __future__ import annotations

from dataclasses import dataclass

from kdebug.lang import types as T


@dataclass(frozen=True)
class Signature:
    restype: T.Type | None  # None: infer it
    argtypes: tuple

    def __str__(self) -> str:
        return f"{self.restype or ''}({', '.join(map(str, self.argtypes))})"

    # numba's names for the parts
    return_type = property(lambda self: self.restype)
    args = property(lambda self: self.argtypes)


def parse_signature(sig) -> Signature:
    """Parse a numba-style signature: a string, a Signature, or a tuple of types."""
    if isinstance(sig, Signature):
        return sig
    if isinstance(sig, (tuple, list)):
        return Signature(None, tuple(sig))
    if not isinstance(sig, str):
        raise TypeError(f"a signature is a string such as 'void(float32[:], int32)', not {sig!r}")
    text = sig.strip()
    namespace = dict(T.NUMBA_NAMES)
    try:
        if text.startswith("("):
            args = eval(f"({text[1:-1]},)" if text[1:-1].strip() else "()", {"__builtins__": {}}, namespace)
            return Signature(None, tuple(args))
        head, _, rest = text.partition("(")
        if not rest.endswith(")"):
            raise SyntaxError
        restype = eval(head, {"__builtins__": {}}, namespace) if head.strip() else None
        inner = rest[:-1].strip()
        args = eval(f"({inner},)", {"__builtins__": {}}, namespace) if inner else ()
    except Exception as exc:  # noqa: BLE001 - any failure is a bad signature
        raise TypeError(f"cannot read the signature {sig!r}: write it like 'void(float32[:], int32)' "
                        f"with numba's type names ({exc})") from None
    for t in args:
        if not isinstance(t, T.Type):
            raise TypeError(f"in signature {sig!r}: {t!r} is not a type")
    return Signature(restype if restype != T.void else T.void, tuple(args))


def signature(return_type, *args) -> Signature:
    """numba's ``signature(return_type, *argtypes)`` (numba.cuda.typing.signature)."""
    return Signature(return_type, tuple(args))
