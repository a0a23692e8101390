"""Index-set splitting of ``for k in range(...)`` loops that index arrays with ``k``.

numba wraps a negative index around (``a[-1]`` is the last element), so every ``a[k]`` with a signed
``k`` costs a select, and LLVM's vectoriser turns ``a[k]`` over a loop into gathers unless it can prove
``k >= 0``, which it cannot for ``range(i * chunk, stop)`` (int64 arithmetic may wrap, so the bound
may be negative). A loop with step 1 whose body is simple (no nested loop, no call but to builtins, casts
and math, ``k`` never reassigned) is lowered twice: over the iterations where ``k < 0`` (none, in
practice) with the wraparound, then over the rest with ``k`` known non-negative, where ``a[k]`` is a
plain contiguous access. The values and the order of the iterations are unchanged.
"""
from __future__ import annotations

import ast
import math

from kdebug.frontend.typeinfer import PyValue
from kdebug.lang import types as T

_PURE_BUILTINS = (min, max, abs, int, float, bool, round, len)


def splittable(lw, node) -> bool:
    """Whether the range loop ``node`` gets a non-negative part (see the module docstring)."""
    it = node.iter
    if len(it.args) == 3 and not (isinstance(it.args[2], ast.Constant) and it.args[2].value == 1):
        return False
    if not lw.tf.locals[node.target.id].signed:
        return False
    var, indexed = node.target.id, False
    for n in (x for s in node.body for x in ast.walk(s)):
        if isinstance(n, (ast.For, ast.While)):
            return False
        if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store):
            return False
        if isinstance(n, ast.Call) and not _pure_call(lw, n):
            return False
        if isinstance(n, ast.Subscript) and any(isinstance(p, ast.Name) and p.id == var for p in _indices(n)):
            indexed = True
    return indexed


def _indices(sub):
    return sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]


def _pure_call(lw, call) -> bool:
    t = lw.tf.types.get(call.func)
    if not isinstance(t, PyValue):
        return False
    v = t.value
    return (v in _PURE_BUILTINS or isinstance(v, T.Scalar)
            or (callable(v) and getattr(math, getattr(v, "__name__", ""), None) is v))
