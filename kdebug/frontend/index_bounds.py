"""Range loop variables that index an array inside its extent, where memcheck's check could never fail.

In ``for k in range(start, stop, step)`` with ``stop`` an array's extent (``a.shape[d]``, ``len(a)`` for
``d = 0``, a one-dimensional ``a.size``, or a name the kernel assigns once from one of these) and ``step``
positive by construction (a positive constant, ``cuda.gridsize(1)``, ``cuda.blockDim``/``gridDim``'s
``x``, ``y``, ``z``, their sums and products, or a name assigned once from these), every value of ``k`` is
below ``stop``: the trip count is computed once from the bounds at the loop's start (lower.py's
``_range_trip_count``), and ``k = start + c * step`` for ``c`` below it. Where the body sees only ``k >= 0``
(lower.py's ``nonneg_names``: the part of an index-split loop after its negative iterations, and the
iterations of a loop run in rounds or in lockstep after its lead ones), the body never assigns ``k``, ``k``
has the range's own type, and the kernel never rebinds ``a`` (an argument: its shape is fixed for the
launch), ``a[k]`` along ``d`` is inside ``a``'s extent. The lowering then emits no bounds check for an
access whose every index is such a variable of its own dimension: none could fail.

LLVM removes such checks itself where it sees the trip count and the access side by side; in a loop the CPU
target runs in rounds (forms/regions/cut.py ``emit_rounds``) the round counts its iterations against a trip
count kept in a slot, and the check of every iteration stayed (memcheck doubled the time of Harris's
grid-stride reduction: benchmarks/README.md).

Recognised by the typed names (``kdebug.lang.intrinsics``' objects), not by spelling: a user's function
called ``gridsize`` proves nothing.
"""
from __future__ import annotations

import ast

from kdebug.frontend.grid_stride import only_assignment
from kdebug.frontend.typeinfer import PyValue
from kdebug.lang import intrinsics as I
from kdebug.lang import types as T

_DEPTH = 8  # names followed to their only assignment, at most


def bound(tf, node: ast.For) -> tuple[str, int] | None:
    """(array name, dimension) whose extent bounds every value of the range loop ``node``'s variable, where the
    body runs with that variable known >= 0 (see the module's text); None where that cannot be shown."""
    it = node.iter
    if not isinstance(node.target, ast.Name) or not isinstance(it, ast.Call) or it.keywords \
            or not 1 <= len(it.args) <= 3:
        return None
    var = node.target.id
    ty = tf.types.get(it)
    if not (isinstance(ty, T.Scalar) and ty.kind in ("int", "uint")) or tf.locals.get(var) != ty:
        return None
    if any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, (ast.Store, ast.Del))
           for s in node.body for n in ast.walk(s)):
        return None
    if len(it.args) == 3 and not _positive(tf, it.args[2], 0):
        return None
    stop = it.args[0] if len(it.args) == 1 else it.args[1]
    return _extent(tf, stop, 0)


def _stored(tf, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast.walk(tf.source.tree))


def _array(tf, expr) -> tuple[str, T.Array] | None:
    """An argument array the kernel never rebinds, by name."""
    if not isinstance(expr, ast.Name) or expr.id not in tf.argnames or _stored(tf, expr.id):
        return None
    t = tf.locals.get(expr.id)
    return (expr.id, t) if isinstance(t, T.Array) else None


def _extent(tf, expr, depth: int) -> tuple[str, int] | None:
    if isinstance(expr, ast.Name) and depth < _DEPTH:
        value = only_assignment(tf, expr.id)
        return _extent(tf, value, depth + 1) if value is not None else None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape" \
            and isinstance(expr.slice, ast.Constant) and type(expr.slice.value) is int:
        arr = _array(tf, expr.value.value)
        d = expr.slice.value
        return (arr[0], d) if arr is not None and 0 <= d < arr[1].ndim else None
    if isinstance(expr, ast.Attribute) and expr.attr == "size":
        arr = _array(tf, expr.value)
        return (arr[0], 0) if arr is not None and arr[1].ndim == 1 else None
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords and _is(tf, expr.func, len):
        arr = _array(tf, expr.args[0])
        return (arr[0], 0) if arr is not None and arr[1].ndim >= 1 else None
    return None


def _is(tf, expr, value) -> bool:
    t = tf.types.get(expr)
    return isinstance(t, PyValue) and t.value is value


def _positive(tf, expr, depth: int) -> bool:
    """Positive by construction, and of a 64-bit type where it is arithmetic (no product wraps around)."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int and expr.value > 0
    if isinstance(expr, ast.Attribute):  # cuda.blockDim.x, cuda.gridDim.y ...
        return expr.attr in ("x", "y", "z") and (_is(tf, expr.value, I.blockDim) or _is(tf, expr.value, I.gridDim))
    if isinstance(expr, ast.Call):  # cuda.gridsize(1): the grid's threads along x
        return _is(tf, expr.func, I.gridsize) and len(expr.args) == 1 and not expr.keywords \
            and isinstance(expr.args[0], ast.Constant) and expr.args[0].value == 1
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mult)):
        t = tf.types.get(expr)
        return t == T.int64 and _positive(tf, expr.left, depth + 1) \
            and _positive(tf, expr.right, depth + 1)
    if isinstance(expr, ast.Name):
        value = only_assignment(tf, expr.id)
        return value is not None and _positive(tf, value, depth + 1)
    return False
