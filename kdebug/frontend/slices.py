"""Array slices in kernels: views that share the array's memory, as numba's.

kdebug's arrays are C-contiguous (a data pointer and a shape, no strides), so a slice is a view when
it keeps the elements contiguous: integer indices first, then at most one slice with step 1, then
nothing (``a[lo:hi]``, ``a[i, lo:hi]``, ``a[lo:hi]`` of a 2-D array). Bounds follow Python's: missing
ones are 0 and the extent, negative ones count from the end, both are clamped to ``[0, extent]`` and
an empty range has length 0. Accesses through the view are bounds-checked against the view's own
shape (memcheck). ``a[:, j]`` and steps other than 1 are located compile errors.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.lang import types as T

i64 = ir.IntType(64)


def has_slice(node) -> bool:
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return any(isinstance(p, ast.Slice) for p in parts)


def slice_type(inferer, node, arr: T.Array, view: bool) -> T.Array:
    """The view type of ``arr[ints..., lo:hi]``; located errors for what is not a contiguous view."""
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if not view:
        raise inferer.error(node, "assigning into an array slice is not supported in kernels",
                            "assign element by element in a loop, e.g. for k in range(lo, hi): a[k] = v")
    where = next(k for k, p in enumerate(parts) if isinstance(p, ast.Slice))
    if where != len(parts) - 1:
        raise inferer.error(parts[where], "kdebug's arrays are contiguous: only the last index may be a slice "
                                          "(a[i, lo:hi], not a[:, j])", "index element by element in a loop")
    if len(parts) > arr.ndim:
        raise inferer.error(node.slice, f"a {arr.ndim}-D array takes at most {arr.ndim} indices",
                            "index every dimension once")
    for p in parts[:where]:
        t = inferer.expr(p)
        if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
            raise inferer.error(p, f"array index must be an integer, not {t}", "convert with int(...)")
    s = parts[where]
    if s.step is not None and not (isinstance(s.step, ast.Constant) and s.step.value == 1):
        raise inferer.error(s.step, "kdebug's array slices take step 1 (its arrays are contiguous)",
                            "loop with a step over the indices instead")
    for bound in (s.lower, s.upper):
        if bound is not None:
            t = inferer.expr(bound)
            if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
                raise inferer.error(bound, f"slice bounds must be integers, not {t}", "convert with int(...)")
    return T.Array(arr.dtype, arr.ndim - where, arr.layout, arr.readonly)


def _clamp(lw, v, extent):
    """Python's slice bound: negative counts from the end, then clamped to [0, extent]."""
    b = lw.builder
    zero = ir.Constant(i64, 0)
    v = b.select(b.icmp_signed("<", v, zero), b.add(v, extent), v)
    v = b.select(b.icmp_signed("<", v, zero), zero, v)
    return b.select(b.icmp_signed(">", v, extent), extent, v)


def lower_slice(lw, node):
    """The view ``arr[ints..., lo:hi]``: pointer moved to its first element, shape [hi - lo] + the rest."""
    b = lw.builder
    arr_t, view_t = lw.type_of(node.value), lw.type_of(node)
    arr = lw.expr(node.value)
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    lead_nodes, s = parts[:-1], parts[-1]
    extents = [b.extract_value(arr, [1, k]) for k in range(arr_t.ndim)]
    lead = []
    for p, extent in zip(lead_nodes, extents):
        k = lw.cast(lw.expr(p), lw.type_of(p), T.int64)
        lead.append(lw.wrap_negative(k, extent) if lw.type_of(p).signed else k)
    if lead:  # the integer indices must lie inside the array (the slice itself is clamped)
        one = ir.Constant(i64, 1)
        rest = [b.select(b.icmp_unsigned("==", e, ir.Constant(i64, 0)), one, e) for e in extents[len(lead):]]
        lw.target.check_bounds(lw, node, arr_t, lead + [ir.Constant(i64, 0)] * len(rest),
                               extents[:len(lead)] + rest)
    extent = extents[len(lead)]

    def bound(n, default):
        return _clamp(lw, lw.cast(lw.expr(n), lw.type_of(n), T.int64), extent) if n is not None else default
    lo = bound(s.lower, ir.Constant(i64, 0))
    hi = bound(s.upper, extent)
    length = b.select(b.icmp_signed("<", hi, lo), ir.Constant(i64, 0), b.sub(hi, lo))
    offset = ir.Constant(i64, 0)
    for k, e in zip(lead, extents):
        offset = b.add(b.mul(offset, e), k)
    offset = b.add(b.mul(offset, extent), lo)
    for e in extents[len(lead) + 1:]:
        offset = b.mul(offset, e)
    # the array struct of the view: the same element pointer, its own number of extents
    view = ir.Constant(ir.LiteralStructType([arr.type.elements[0], ir.ArrayType(i64, view_t.ndim)]), ir.Undefined)
    view = b.insert_value(view, b.gep(b.extract_value(arr, 0), [offset]), 0)
    view = b.insert_value(view, length, [1, 0])
    for k, e in enumerate(extents[len(lead) + 1:]):
        view = b.insert_value(view, e, [1, k + 1])
    return view
