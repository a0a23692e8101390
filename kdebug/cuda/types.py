"""numba.cuda.types (also numba.types and numba.core.types under ``--numba``): numba's type objects.

Scalar types are casts in kernels and numpy scalars on the host; ``float32[:]`` is an array type and
``void(float32[:], int32)`` a signature, as in numba."""
from __future__ import annotations

from kdebug.lang import types as _T
from kdebug.lang.missing import missing_name
from kdebug.lang.types import Array, Scalar, Tuple, Type  # noqa: F401

globals().update(_T.NUMBA_NAMES)
UniTuple = Tuple

class _Kind(type):
    """numba's abstract type classes as kdebug sees them: ``isinstance(t, types.Integer)`` for a scalar
    type of those kinds (what an ``@overload`` typing function asks of its arguments)."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _T.Scalar) and obj.kind in cls._kinds


class Number(metaclass=_Kind):
    _kinds = ("int", "uint", "float", "complex")


class Integer(Number):
    _kinds = ("int", "uint")


class Float(Number):
    _kinds = ("float",)


class Complex(Number):
    _kinds = ("complex",)


class Boolean(metaclass=_Kind):
    _kinds = ("bool",)


BaseTuple = Tuple
IntegerLiteral = _T.IntLiteral
CharSeq = _T.CharSeq  # [char x n]: an element of a bytes (S<n>) array; UnicodeCharSeq tells them apart
Record = _T.Record


class _LiteralKind(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls._classes) and cls._holds(obj)


class Literal(metaclass=_LiteralKind):
    """numba's ``types.Literal``: an integer argument typed as its value, or a string constant."""
    _classes = (_T.IntLiteral, _T.StringConstant)
    _holds = staticmethod(lambda obj: True)


class StringLiteral(Literal):
    _classes = (_T.StringConstant,)
    _holds = staticmethod(lambda obj: obj.unicode)


class UnicodeCharSeq(metaclass=_LiteralKind):
    """numba's ``[unichr x n]``: an element of a str (U<n>) array."""
    _classes = (_T.CharSeq,)
    _holds = staticmethod(lambda obj: obj.unicode)


# numba's type domains (numba/cuda/types/__init__.py): frozensets of the scalar types
signed_domain = frozenset([_T.int8, _T.int16, _T.int32, _T.int64])
unsigned_domain = frozenset([_T.uint8, _T.uint16, _T.uint32, _T.uint64])
integer_domain = signed_domain | unsigned_domain
real_domain = frozenset([_T.float32, _T.float64])
complex_domain = frozenset([_T.complex64, _T.complex128])
number_domain = real_domain | integer_domain | complex_domain
py_signed_domain = np_signed_domain = signed_domain
np_unsigned_domain = unsigned_domain
py_integer_domain = np_integer_domain = integer_domain
py_real_domain = np_real_domain = real_domain
py_complex_domain = np_complex_domain = complex_domain
py_number_domain = np_number_domain = number_domain


def __getattr__(name):
    return missing_name(__name__, name, 2)
