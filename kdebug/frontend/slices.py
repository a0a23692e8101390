"""Array views in kernels: ``a[i]``, ``a[lo:hi]``, ``a[:, j]``, ``a[::2]``... share the array's memory, as numba's.

Typing follows numba's basic indexing (``get_array_index_type``): integer indices drop a dimension, slices
keep one; a view of a C array stays C-contiguous when every index but the last given is an integer and the
last is an integer or a slice without a step (``a[i]``, ``a[lo:hi]``, ``a[i, lo:hi]``); anything else
(``a[:, j]``, ``a[::2]``, ``a[1:3, :]``), and every view of a strided array, is numba's layout 'A': a
*strided* array, whose struct carries a stride per dimension in elements. Bounds follow Python's
``slice.indices``: missing ones are the ends (reversed for a negative step), negative ones count from the
end, both are clamped. Accesses through a view are bounds-checked against the view's own shape (memcheck);
the integer indices that make it are checked against the array's.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.lang import types as T

i64 = ir.IntType(64)


def index_parts(node) -> list:
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def _int_typed(inferer, n, what: str) -> None:
    t = inferer.expr(n)
    if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
        raise inferer.error(n, f"{what} must be an integer, not {t}", "convert with int(...)")


def keeps_contiguity(parts) -> bool:
    """numba's check_contiguity: integers outside, at most a step-less slice as the last index given."""
    *outer, last = parts
    return (not any(isinstance(p, ast.Slice) for p in outer)
            and not (isinstance(last, ast.Slice) and last.step is not None))


def slice_type(inferer, node, arr: T.Array, view: bool) -> T.Array:
    """The view type of ``arr[indices]`` with at least one slice; located errors for what kernels cannot do."""
    parts = index_parts(node)
    if not view:
        raise inferer.error(node, "assigning into an array slice is not supported in kernels",
                            "assign element by element in a loop, e.g. for k in range(lo, hi): a[k] = v")
    if len(parts) > arr.ndim:
        raise inferer.error(node.slice, f"a {arr.ndim}-D array takes at most {arr.ndim} indices",
                            "index every dimension once")
    for p in parts:
        if not isinstance(p, ast.Slice):
            _int_typed(inferer, p, "array index")
            continue
        for bound in (p.lower, p.upper, p.step):
            if bound is not None:
                _int_typed(inferer, bound, "slice bounds and steps")
        if isinstance(p.step, ast.Constant) and p.step.value == 0:
            raise inferer.error(p.step, "slice step cannot be zero", "use a step of 1, -1, 2, ...")
    ndim = arr.ndim - sum(not isinstance(p, ast.Slice) for p in parts)
    strided = arr.strided or not keeps_contiguity(parts)
    return T.Array(arr.dtype, ndim, "A" if strided else arr.layout, arr.readonly, strided=strided)


def array_strides(lw, arr, arr_t, extents) -> list:
    """Each dimension's stride in elements: the struct's for a strided array, C order's otherwise."""
    b = lw.builder
    if arr_t.strided:
        return [b.extract_value(arr, [2, k]) for k in range(arr_t.ndim)]
    strides = [ir.Constant(i64, 1)]
    for e in reversed(extents[1:]):
        strides.insert(0, b.mul(strides[0], e))
    return strides


def strides_tuple(lw, arr, arr_t):
    """``a.strides``: numba's, in bytes."""
    b = lw.builder
    extents = [b.extract_value(arr, [1, k]) for k in range(arr_t.ndim)]
    itemsize = ir.Constant(i64, arr_t.dtype.np_dtype.itemsize)
    tup = ir.Constant(ir.LiteralStructType([i64] * arr_t.ndim), ir.Undefined)
    for k, s in enumerate(array_strides(lw, arr, arr_t, extents)):
        tup = b.insert_value(tup, b.mul(s, itemsize), k)
    return tup


def make_array(lw, t: T.Array, ptr, extents, strides):
    """The array struct of type ``t``; strides are stored only when ``t`` is strided."""
    b = lw.builder
    struct = ir.LiteralStructType([ptr.type] + [ir.ArrayType(i64, t.ndim)] * (2 if t.strided else 1))
    v = b.insert_value(ir.Constant(struct, ir.Undefined), ptr, 0)
    for k, e in enumerate(extents):
        v = b.insert_value(v, e, [1, k])
    if t.strided:
        for k, s in enumerate(strides):
            v = b.insert_value(v, s, [2, k])
    return v


def _adjust(lw, s, extent):
    """Python's ``slice(lo, hi, step).indices(extent)`` and the length: (start, length, step) as i64."""
    b = lw.builder
    zero, one = ir.Constant(i64, 0), ir.Constant(i64, 1)

    def value(n):
        return lw.cast(lw.expr(n), lw.type_of(n), T.int64)
    step = value(s.step) if s.step is not None else one
    neg = b.icmp_signed("<", step, zero)
    minus1 = ir.Constant(i64, -1)

    def bound(n, default_pos, default_neg):
        if n is None:
            return b.select(neg, default_neg, default_pos)
        v = value(n)
        v = b.select(b.icmp_signed("<", v, zero), b.add(v, extent), v)
        low = b.select(neg, minus1, zero)
        high = b.select(neg, b.sub(extent, one), extent)
        v = b.select(b.icmp_signed("<", v, zero), low, v)
        return b.select(b.icmp_signed(">=", v, extent), high, v)
    start = bound(s.lower, zero, b.sub(extent, one))
    stop = bound(s.upper, extent, minus1)
    # length: ceil((stop - start) / step) when the range is non-empty in the step's direction
    span = b.select(neg, b.sub(start, stop), b.sub(stop, start))
    mag = b.select(neg, b.neg(step), step)
    safe = b.select(b.icmp_signed("==", mag, zero), one, mag)  # a run-time zero step gives an empty view
    length = b.add(b.sdiv(b.sub(span, one), safe), one)
    empty = b.or_(b.icmp_signed("<=", span, zero), b.icmp_signed("==", mag, zero))
    return start, b.select(empty, zero, length), step


def lower_view(lw, node):
    """The view ``arr[indices]`` (integers and slices, fewer indices than dimensions allowed)."""
    b = lw.builder
    arr_t, view_t = lw.type_of(node.value), lw.type_of(node)
    arr = lw.expr(node.value)
    parts = index_parts(node)
    extents = [b.extract_value(arr, [1, k]) for k in range(arr_t.ndim)]
    strides = array_strides(lw, arr, arr_t, extents)
    ints = {}
    for k, p in enumerate(parts):
        if not isinstance(p, ast.Slice):
            v = lw.cast(lw.expr(p), lw.type_of(p), T.int64)
            ints[k] = lw.wrap_negative(v, extents[k]) if lw.type_of(p).signed else v
    if ints:  # the integer indices must lie inside the array (slices are clamped): checked as an element
        one, zero = ir.Constant(i64, 1), ir.Constant(i64, 0)
        check = [ints.get(k, zero) for k in range(arr_t.ndim)]
        ext = [e if k in ints else b.select(b.icmp_unsigned("==", e, zero), one, e) for k, e in enumerate(extents)]
        lw.target.check_bounds(lw.hook_context, node, arr_t, check, ext, "read")  # making a view reads
    offset = ir.Constant(i64, 0)
    out_ext, out_str = [], []
    for k, p in enumerate(parts):
        if k in ints:
            offset = b.add(offset, b.mul(ints[k], strides[k]))
            continue
        start, length, step = _adjust(lw, p, extents[k])
        offset = b.add(offset, b.mul(start, strides[k]))
        out_ext.append(length)
        out_str.append(b.mul(strides[k], step))
    out_ext += extents[len(parts):]
    out_str += strides[len(parts):]
    # not inbounds: an empty reversed view starts one element before the array
    return make_array(lw, view_t, b.gep(b.extract_value(arr, 0), [offset]), out_ext, out_str)


def to_strided(lw, v, src: T.Array, dst: T.Array):
    """A C array as a strided one (a variable holding both, numba's C-to-A cast)."""
    b = lw.builder
    extents = [b.extract_value(v, [1, k]) for k in range(src.ndim)]
    return make_array(lw, dst, b.extract_value(v, 0), extents, array_strides(lw, v, src, extents))
