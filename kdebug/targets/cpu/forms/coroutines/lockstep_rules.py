"""Which loops of a coroutine kernel run in lockstep (lockstep.py), decided on the kernel's source.

A lockstep run interleaves the iterations of the threads that reached a loop, and it runs after
every one of them arrived. For the run to be invisible, the program must not be able to tell that
order from its own, where each thread runs from one suspend point to the next before the following
thread starts:

* the loop is a ``for`` over a range, a statement of the kernel's own body (not nested, not in a
  device function), without ``else``, ``return``, ``raise``, ``assert`` or complex arithmetic (which
  may raise), and it calls nothing but builtins, casts, ``math`` and the pure cuda intrinsics: no
  print, atomic, barrier, warp operation, array creation or device function. Its failed bounds
  checks are held back and reported in thread order (lockstep.py);
* the statements between the previous suspend point (a barrier or warp operation statement, an
  earlier lockstep loop, or the kernel's start) and the loop cannot fail or show anything either:
  assignments of pure expressions (no array element), ``if``s of them and early returns. Then every
  thread that arrives did nothing another thread could see before its loop ran.

Kernels compiled with ``debug=True`` (whose divisions may raise) and the racecheck/initcheck
instrumented code keep the per-thread loop.
"""
from __future__ import annotations

import ast
import math

from kdebug.frontend import grid_stride
from kdebug.frontend.typeinfer import PyValue
from kdebug.lang import intrinsics as I
from kdebug.lang import types as T

PURE_INTRINSICS = frozenset({"grid", "gridsize", "brev", "cbrt", "clz", "ffs", "fma", "popc", "selp"})
SUSPENDING = frozenset({"syncthreads", "syncthreads_and", "syncthreads_count", "syncthreads_or", "syncwarp",
                        "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync",
                        "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync", "activemask",
                        "cg.this_grid.sync"})
_PURE_BUILTINS = (min, max, abs, int, float, bool, round, len)
_NEVER = (ast.Return, ast.Raise, ast.Assert, ast.With, ast.Try, ast.Global, ast.Nonlocal, ast.Delete,
          ast.FunctionDef, ast.Lambda, ast.Yield, ast.While)


def _callee(tf, call):
    t = tf.types.get(call.func)
    return t.value if isinstance(t, PyValue) else None


def pure_call(tf, call) -> bool:
    """Builtins, casts, math functions and the cuda intrinsics that only compute."""
    if call in tf.callees:
        return False
    fn = _callee(tf, call)
    if isinstance(fn, I.Intrinsic):
        return fn.name in PURE_INTRINSICS or fn.name.startswith("libdevice.")
    if fn is None:
        return False
    return (fn in _PURE_BUILTINS or isinstance(fn, T.Scalar)
            or (callable(fn) and getattr(math, getattr(fn, "__name__", ""), None) is fn))


def _complex(tf, n) -> bool:
    t = tf.types.get(n)
    return isinstance(t, T.Scalar) and t.is_complex


def body_reason(tf, stmts) -> str | None:
    """Why a loop body cannot run in lockstep, or None."""
    for s in stmts:
        ranges = {id(n.iter) for n in ast.walk(s) if isinstance(n, ast.For)}  # a nested loop's range(...)
        for n in ast.walk(s):
            if isinstance(n, _NEVER):
                return f"{type(n).__name__.lower()} in the loop"
            if isinstance(n, ast.Call) and id(n) not in ranges and not pure_call(tf, n):
                return "a call that is not pure arithmetic"
            if isinstance(n, (ast.BinOp, ast.AugAssign)) and _complex(tf, n):
                return "complex arithmetic (it may raise)"
    return None


def _suspends(tf, s) -> bool:
    for n in ast.walk(s):
        if isinstance(n, ast.Call):
            if tf.intrinsic_called(n) in SUSPENDING:
                return True
            callee = tf.callees.get(n)
            if callee is not None and "barrier" in callee.features:
                return True
    return False


def _suspend_statement(tf, s) -> bool:
    """A barrier or warp operation whose result, if any, only goes into a variable."""
    if isinstance(s, ast.Expr):
        value = s.value
    elif isinstance(s, (ast.Assign, ast.AugAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            return False
        value = s.value
    else:
        return False
    return isinstance(value, ast.Call) and tf.intrinsic_called(value) in SUSPENDING


def _array_declaration(tf, s) -> bool:
    """``name = cuda.shared.array(shape, dtype)`` or ``cuda.local.array``: an array whose shape is known when
    compiled (typing refuses any other), which neither fails nor shows anything (numba's docs declare the
    shared array first, before a grid-stride loop that fills it)."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Call)):
        return False
    fn = _callee(tf, s.value)
    return isinstance(fn, I.Intrinsic) and fn.name in ("shared.array", "local.array")


def _pure_statement(tf, s) -> bool:
    for n in ast.walk(s):
        if isinstance(n, (ast.Raise, ast.Assert, ast.With, ast.Try, ast.While, ast.Delete, ast.FunctionDef)):
            return False
        if isinstance(n, ast.Call) and not pure_call(tf, n):
            return False
        if isinstance(n, ast.Subscript) and not isinstance(tf.types.get(n.value), T.Tuple):
            return False  # an array element may be out of bounds; a tuple's is checked when typed
        if isinstance(n, ast.Attribute) and isinstance(getattr(n, "ctx", None), ast.Store):
            return False
        if isinstance(n, (ast.BinOp, ast.AugAssign)) and _complex(tf, n):
            return False
    return True


def loop_reason(tf, node, memo: dict) -> str | None:
    """Why the kernel ``tf``'s loop ``node`` cannot run in lockstep, or None (``memo``: the kernel's
    answers so far, by node id)."""
    key = id(node)
    if key not in memo:
        memo[key] = _loop_reason(tf, node, memo)
    return memo[key]


def _loop_reason(tf, node, memo) -> str | None:
    body = tf.source.tree.body
    if not (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call)):
        return "not a for loop over a range"
    if node.orelse:
        return "for ... else"
    at = grid_stride.stands_for(node) or node  # a grid-stride while loop read as its range: the while's place
    if not any(s is at for s in body):
        return "not a statement of the kernel's own body"
    why = body_reason(tf, node.body)
    if why:
        return why
    if not all(_pure_statement(tf, ast.Expr(a)) for a in node.iter.args):
        return "the range's bounds may fail or show something"
    for s in reversed(body[:next(k for k, s in enumerate(body) if s is at)]):
        if _suspend_statement(tf, s):
            return None
        if isinstance(s, ast.For) and loop_reason(tf, s, memo) is None:
            return None  # an earlier lockstep loop: a suspend point
        if _suspends(tf, s):
            return "a barrier or warp operation nested in an earlier statement"
        if _array_declaration(tf, s):
            continue  # ``s = cuda.shared.array(...)``: the block's array, nothing a thread could see
        if not _pure_statement(tf, s):
            return f"line {s.lineno}, before the loop, may fail or show something"
    return None
