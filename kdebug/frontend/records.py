"""Structured (record) dtypes in kernels, as numba-cuda: arrays of records, ``a[i].x`` and ``a[i]['x']``.

``a[i]`` of a record array is a reference to the element (its address, an ``i8*``): reading a field
loads it, and ``a[i].x = v``, ``a[i]['x'] += v`` or ``r = a[i]; r.x = v`` store into the array, as numba's
record references do. A field is at its byte offset in the element; numpy's records need not be
aligned, so fields are loaded and stored with alignment 1.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.frontend import strings as S
from kdebug.lang import types as T


def field_name(inferer, node) -> str:
    """The field ``r.x`` or ``r['x']`` names (the latter with a constant string)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    key = node.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    raise inferer.error(key, "a record is indexed with a constant field name", "write r['x'] or r.x")


def field_type(inferer, node, rec: T.Record) -> T.Type:
    name = field_name(inferer, node)
    fields = rec.fields
    if name not in fields:
        raise inferer.error(node, f"{rec} has no field {name!r}",
                            f"its fields are {', '.join(fields)}")
    misaligned = rec.misaligned(name)
    if misaligned is not None:  # numba-cuda's strict alignment (core/base.py's check of record fields)
        raise inferer.error(node, f"{rec}.{name} of type {misaligned} is not aligned",
                            "make the dtype aligned: np.dtype([...], align=True)")
    return fields[name][0]


def store_type(inferer, target, value_t) -> T.Type:
    """``r.x = v`` / ``r['x'] = v``: the field's type (a scalar field, of a record in an array)."""
    t = field_type(inferer, target, inferer.expr(target.value))
    inferer.types_set(target, t)
    if S.is_string(t) or S.is_string(value_t):  # rec["y"] = "ABC"
        S.check_store(inferer, target, value_t, t)
        return t
    if not isinstance(t, T.Scalar) or not isinstance(value_t, T.Scalar):
        raise inferer.error(target, f"cannot store {value_t} into a record field of type {t}",
                            "assign a number to a scalar field")
    return t


def field_pointer(lw, node, rec: T.Record):
    """The address of the field ``node`` names in the record ``node.value`` refers to."""
    b = lw.builder
    name = node.attr if isinstance(node, ast.Attribute) else node.slice.value
    t, offset = rec.fields[name]
    base = lw.expr(node.value)
    ptr = b.gep(base, [ir.Constant(ir.IntType(64), offset)], inbounds=True)
    if isinstance(t, T.Record):
        return ptr, t
    if isinstance(t, T.Array):
        return b.bitcast(ptr, ir.PointerType(lw.mem_type(t.dtype))), t
    return b.bitcast(ptr, ir.PointerType(lw.mem_type(t))), t


def load_field(lw, node, rec: T.Record):
    ptr, t = field_pointer(lw, node, rec)
    if isinstance(t, T.Record):
        return ptr  # a nested record: a reference into the outer one
    if isinstance(t, T.Array):  # a subarray field: an array view of the record's bytes
        name = node.attr if isinstance(node, ast.Attribute) else node.slice.value
        v = lw.builder.insert_value(ir.Constant(lw.llvm_type(t), ir.Undefined), ptr, 0)
        for k, n in enumerate(rec.field_shape(name)):
            v = lw.builder.insert_value(v, ir.Constant(ir.IntType(64), n), [1, k])
        return v
    v = lw.builder.load(ptr, align=1)
    return lw.builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0)) if t.is_bool else v


def copy_record(lw, dst_ptr, src, rec: T.Record) -> None:
    """``a[i] = a[j]``: the element's bytes."""
    b = lw.builder
    ty = ir.ArrayType(ir.IntType(8), rec.size)
    data = b.load(b.bitcast(src, ir.PointerType(ty)), align=1)
    b.store(data, b.bitcast(dst_ptr, ir.PointerType(ty)), align=1)


def store_field(lw, node, rec: T.Record, value, value_t) -> None:
    ptr, t = field_pointer(lw, node, rec)
    if isinstance(t, T.CharSeq):
        lw.builder.store(S.charseq_value(lw, value, value_t, t), ptr, align=1)
        return
    v = lw.cast(value, value_t, t)
    if t.is_bool:
        v = lw.builder.zext(v, ir.IntType(8))
    lw.builder.store(v, ptr, align=1)


def is_record_target(lw_or_inferer, target) -> bool:
    """Whether an assignment target is a record field (its base has a record type)."""
    types = lw_or_inferer.tf.types
    return isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(types.get(target.value), T.Record)
