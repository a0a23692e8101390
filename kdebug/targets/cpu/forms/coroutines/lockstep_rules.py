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
* the statements between the previous suspend point (a barrier or warp operation statement, or the
  kernel's start) and the loop cannot fail or show anything either: assignments of pure expressions
  (no array element), ``if``s of them and early returns. Then every thread that arrives did nothing
  another thread could see before its loop ran. (An earlier lockstep loop is no suspend point: its
  threads would all run it, and what follows it, before any thread's later loop.)
* no thread can see another's iterations out of order (``memory_reason``): where the loop writes an
  array (shared or global; a local array is the thread's own), it reads and writes that array only at
  ``a[k]``, ``k`` the loop variable, which the body never assigns, so that a thread touches only
  elements of its own range (lockstep.py runs only threads whose ranges cannot meet: consecutive
  starts, a step no smaller than their number); all global arrays count as one, since two parameters
  may be one array. And the statements after the loop, up to the next barrier or warp operation,
  neither touch an array the loop writes nor write one it reads: in lockstep every thread's loop runs
  before the first thread's next statement.

Kernels compiled with ``debug=True`` (whose divisions may raise) and the racecheck/initcheck
instrumented code keep the per-thread loop.
"""
from __future__ import annotations

import ast
import math

from kdebug.frontend import grid_stride
from kdebug.frontend.grid_stride import only_assignment
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
    place = next(k for k, s in enumerate(body) if s is at)
    why = memory_reason(tf, node, body[place + 1:])
    if why:
        return why
    for s in reversed(body[:place]):
        if _suspend_statement(tf, s):
            return None
        if _suspends(tf, s):
            return "a barrier or warp operation nested in an earlier statement"
        if _array_declaration(tf, s):
            continue  # ``s = cuda.shared.array(...)``: the block's array, nothing a thread could see
        if not _pure_statement(tf, s):
            return f"line {s.lineno}, before the loop, may fail or show something"
    return None


# ---- what a loop's threads could see of each other's iterations (memory_reason) -------------------------
_GLOBAL = "a global array"  # every array that is no shared or local declaration: parameters may alias
_ANY = "an array"  # a device function's or an unknown array: may be any of them


def _declared_arrays(tf) -> dict[str, str]:
    """The kernel's names whose only assignment declares an array: name -> "shared" or "local"."""
    stores: dict[str, int] = {}
    for n in ast.walk(tf.source.tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    out = {}
    for s in tf.source.tree.body:
        if _array_declaration(tf, s) and stores.get(s.targets[0].id) == 1:
            out[s.targets[0].id] = "shared" if _callee(tf, s.value).name == "shared.array" else "local"
    return out


def _array_of(tf, value, declared, stored) -> str | None:
    """Which memory ``value[...]`` touches: None for a local array or a tuple (the thread's own)."""
    if isinstance(tf.types.get(value), T.Tuple):
        return None
    if isinstance(value, ast.Name):
        kind = declared.get(value.id)
        if kind == "local":
            return None
        if kind == "shared":
            return f"the shared array {value.id}"
        if value.id in tf.argnames and value.id not in stored:
            return _GLOBAL
    return _ANY


def _accesses(tf, stmts, declared) -> list[tuple[str, ast.AST, bool]]:
    """(memory, node, whether it writes) for every array element the statements read or write, an atomic's
    array, and a call that may touch any (a device function's)."""
    stored = {n.id for n in ast.walk(tf.source.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    out = []
    for s in stmts:
        ranges = {id(n.iter) for n in ast.walk(s) if isinstance(n, ast.For)}  # a nested loop's range(...)
        for n in ast.walk(s):
            if isinstance(n, ast.Subscript):
                where = _array_of(tf, n.value, declared, stored)
                if where is not None:
                    out.append((where, n, isinstance(n.ctx, ast.Store)))
            elif isinstance(n, ast.Call) and id(n) not in ranges and not pure_call(tf, n):
                name = tf.intrinsic_called(n)
                if name in SUSPENDING or _callee(tf, n) is print:
                    continue
                if name is not None and name.startswith("atomic.") and n.args:
                    where = _array_of(tf, n.args[0], declared, stored)
                    if where is not None:
                        out.append((where, n, True))
                elif name is None or name not in ("shared.array", "local.array"):
                    out.append((_ANY, n, True))
    return out


def _meet(a: str, b: str) -> bool:
    return a == b or _ANY in (a, b)


def _until_suspend(tf, after) -> list:
    """The statements of ``after`` up to the next barrier or warp operation statement (a statement with one
    nested in it is the last)."""
    out = []
    for s in after:
        if _suspend_statement(tf, s):
            break
        out.append(s)
        if _suspends(tf, s):
            break
    return out


def memory_reason(tf, node, after) -> str | None:
    """Why the threads of the loop ``node`` could see each other's iterations if they ran them together, or
    None (see the module's text). ``after``: the kernel's statements after the loop."""
    declared = _declared_arrays(tf)
    inside = _accesses(tf, node.body, declared)
    k = node.target.id
    written = {where for where, _, w in inside if w}
    if written and any(isinstance(n, ast.Name) and n.id == k and isinstance(n.ctx, ast.Store)
                       for s in node.body for n in ast.walk(s)):
        return f"it writes {min(written)} and assigns its variable {k}"
    for where, n, _ in inside:
        if any(_meet(where, w) for w in written) and not (
                isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Name) and n.slice.id == k):
            return (f"line {n.lineno} touches {where} at another element than [{k}] in a loop that writes it: "
                    f"another thread's iteration may touch the same element")
    read = {where for where, _, w in inside}
    for where, n, w in _accesses(tf, _until_suspend(tf, after), declared):
        if any(_meet(where, x) for x in written):
            return (f"line {n.lineno}, after the loop and before the next barrier, touches {where}, which the "
                    f"loop writes")
        if w and any(_meet(where, x) for x in read):
            return (f"line {n.lineno}, after the loop and before the next barrier, writes {where}, which the "
                    f"loop reads")
    return None


def writes_arrays(tf, node) -> bool:
    """Whether the loop ``node`` writes an element of a shared or global array."""
    return any(w for _, _, w in _accesses(tf, node.body, _declared_arrays(tf)))


def _dim(expr, what: str, axis: str = "x") -> bool:
    """``cuda.threadIdx.x`` (``what`` "threadIdx"), ``cuda.blockDim.x``...: by the attribute's names, as
    grid_stride.py reads them."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == axis):
        return False
    inner = expr.value
    return (inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", None)) == what


def _grid_call(expr, name: str) -> bool:
    """``cuda.grid(1)`` or ``cuda.gridsize(1)``."""
    if not (isinstance(expr, ast.Call) and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant)
            and expr.args[0].value == 1 and not expr.keywords):
        return False
    f = expr.func
    return (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) == name


def _product(expr, a: str, b: str) -> bool:
    return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult) and (
        (_dim(expr.left, a) and _dim(expr.right, b)) or (_dim(expr.left, b) and _dim(expr.right, a)))


def _resolved(tf, expr, depth: int = 0):
    """A name's value where the kernel assigns it once (``i = cuda.grid(1)``), else the expression."""
    while isinstance(expr, ast.Name) and depth < 8:
        value = only_assignment(tf, expr.id)
        if value is None:
            break
        expr, depth = value, depth + 1
    return expr


def own_ranges(tf, node) -> bool:
    """Whether the threads of a block walk ranges that never share an element at different iterations: the
    start is the thread's index along x (``cuda.grid(1)``, ``cuda.threadIdx.x``, ``threadIdx.x + blockIdx.x *
    blockDim.x``), the step the block's or the grid's threads along x (``cuda.blockDim.x``,
    ``cuda.gridsize(1)``, ``blockDim.x * gridDim.x``). Threads whose starts differ then have different
    starts modulo the step; threads of one start (a 2-D block's rows) walk the same elements, iteration
    for iteration, as loops run in rounds keep them in thread order."""
    args = node.iter.args
    if len(args) != 3:
        return False
    start, step = _resolved(tf, args[0]), _resolved(tf, args[2])
    if not (_grid_call(start, "grid") or _dim(start, "threadIdx") or (
            isinstance(start, ast.BinOp) and isinstance(start.op, ast.Add) and any(
                _dim(x, "threadIdx") and _product(y, "blockIdx", "blockDim")
                for x, y in ((start.left, start.right), (start.right, start.left))))):
        return False
    return _grid_call(step, "gridsize") or _dim(step, "blockDim") or _product(step, "blockDim", "gridDim")
