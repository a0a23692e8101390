"""Enum members in kernels, as numba (numba/cuda/types' EnumMember and IntEnumMember, numba/cuda's
enumimpl): a member of an ``enum.Enum`` class is its value, typed ``Enum<dtype>(Class)`` when all the
class's values have one type; a member of an ``enum.IntEnum`` class is an int64 typed
``IntEnum<int64>(Class)``, which is an int in arithmetic and comparisons with numbers.

Members come from globals and closures (``Color.red``, ``Color["red"]``), arguments and device
functions' results. ``==`` and ``!=`` compare two members of one class by value (members of two Enum
classes are never equal; IntEnum members compare as ints, as in Python); ``is`` and ``is not`` are
true for the same member of the same class (a member's value names it: aliases are one member);
``.value`` is the value.
"""
from __future__ import annotations

import ast
import enum

from llvmlite import ir

from kdebug.lang import types as T

_i1 = ir.IntType(1)


def is_member(t) -> bool:
    return isinstance(t, (T.EnumMember, T.IntEnumMember))


def member_class(t):
    return t.enum if is_member(t) else None


def is_enum_class(value) -> bool:
    return isinstance(value, enum.EnumMeta)


def member_type(inferer, node, value) -> T.Type:
    """The type of member ``value`` used in a kernel."""
    t = T.enum_member_type(type(value))
    if t is None:
        kinds = sorted({type(m.value).__name__ for m in type(value)})
        raise inferer.error(node, f"the members of {type(value).__name__} have values of several types "
                                  f"({', '.join(kinds)}): kernels take an Enum whose values have one type",
                            "give every member a value of one type (numbers, or tuples of numbers of one shape)")
    return t


def class_item(inferer, node, cls):
    """``Color["red"]``: the member named by a constant string."""
    key = node.slice
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        raise inferer.error(node, f"{cls.__name__}[...] takes a member's name as a constant string",
                            f"write {cls.__name__}['name'] or {cls.__name__}.name")
    try:
        return cls[key.value]
    except KeyError:
        raise inferer.error(node, f"{cls.__name__} has no member {key.value!r}",
                            f"its members: {', '.join(cls.__members__)}") from None


def attribute_type(inferer, node, base_t) -> T.Type:
    if node.attr == "value":
        return base_t.dtype if isinstance(base_t, T.EnumMember) else T.int64
    raise inferer.error(node, f"enum members have no attribute {node.attr!r} in kernels",
                        "use .value (or compare members with == and is)")


def check_compare(inferer, node, op, a, b) -> bool:
    """Whether enum typing takes this comparison (then it is valid), else False (numbers' rules apply)."""
    identity = isinstance(op, (ast.Is, ast.IsNot))
    if not (identity or isinstance(a, T.EnumMember) or isinstance(b, T.EnumMember)):
        return False
    if identity and not (is_member(a) and is_member(b)):
        return False  # 'is' on anything else: the kernel language's error says it is not supported
    if not identity and not isinstance(op, (ast.Eq, ast.NotEq)):
        raise inferer.error(node, f"enum members of {a} are not ordered", "compare them with == != is or is not")
    if not identity and not (is_member(a) and is_member(b)):
        raise inferer.error(node, f"cannot compare {a} with {b}", "compare an enum member with another member")
    return True


def takes_compare(op, at, ct) -> bool:
    return isinstance(op, (ast.Is, ast.IsNot)) or isinstance(at, T.EnumMember) or isinstance(ct, T.EnumMember)


def compare(lw, op, a, at, c, ct):
    """``==``/``!=``/``is``/``is not`` between two members (typeinfer checked the operands)."""
    negate = isinstance(op, (ast.NotEq, ast.IsNot))
    if member_class(at) is not member_class(ct):
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(at, T.IntEnumMember) and isinstance(ct, T.IntEnumMember):
            same = lw.builder.icmp_signed("==", a, c)  # IntEnums of two classes: as ints, as in Python
        else:
            same = ir.Constant(_i1, 0)
    else:
        same = _values_equal(lw, a, c, at.dtype if isinstance(at, T.EnumMember) else T.int64)
    return lw.builder.not_(same) if negate else same


def _values_equal(lw, a, c, t):
    b = lw.builder
    if isinstance(t, T.Tuple):
        out = ir.Constant(_i1, 1)
        for k, part in enumerate(t.types):
            out = b.and_(out, _values_equal(lw, b.extract_value(a, k), b.extract_value(c, k), part))
        return out
    return lw.compare(ast.Eq(), a, t, c, t)
