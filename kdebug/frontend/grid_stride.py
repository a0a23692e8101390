"""A grid-stride ``while`` loop read as the range it walks.

CUDA's books and tutorials write the grid-stride loop as a ``while``::

    tid = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    while tid < x.size:
        temp += x[tid]
        tid += cuda.blockDim.x * cuda.gridDim.x

numba's docs write it as ``for i in range(start, x.size, stride)``. A target runs the ``for`` form faster (the
CPU target's region form runs it in rounds: iteration c of the block's threads together, so that
consecutive threads read consecutive elements and LLVM vectorises them); ``as_range`` gives the ``while`` the
same chance: where the loop is exactly ``for tid in range(tid, stop, step)``, it returns that ``for`` node,
built from the loop's own (typed) expressions, for the target to lower (``lower.stmt_While``). Exactly means:

- the test is ``v < stop``, ``v`` a 64-bit integer local, ``stop`` a value the body cannot change (a name it
  never assigns, a constant, an array's ``size`` or ``shape[k]``, ``len(a)``, or arithmetic of these);
- the body's last statement is ``v += step``, the only assignment to ``v`` in the loop, and ``step`` is
  positive by construction (``blockDim``, ``gridDim``, ``cuda.gridsize(n)``, positive constants, their sums
  and products, or a name assigned once from one of these): with a step of 0 or less the ``while`` never
  ends, where the range would end at once;
- no ``break`` or ``continue`` (``continue`` would skip the step: the ``while`` would never end) and no
  ``else``;
- the loop is a statement of the kernel's own body and ``v`` is not read after it (the range leaves ``v``
  at its last element; the ``while`` one step past ``stop``).

Anything else stays a ``while`` (its trip count may depend on what the body does).
"""
from __future__ import annotations

import ast

from kdebug.lang import types as T

_DIMS = ("blockDim", "gridDim")
# on a typed function: {while node: its range loop, or why there is none}. Per typed function, not on the
# syntax tree, which the function's typings for other argument types share (the loop variable's type may differ)
_ATTRIBUTE = "kdebug_grid_stride_ranges"


def _found(tf, node: ast.While):
    ranges = getattr(tf, _ATTRIBUTE, None)
    if ranges is None:
        ranges = {}
        setattr(tf, _ATTRIBUTE, ranges)
    if node not in ranges:
        ranges[node] = _as_range(tf, node)
    return ranges[node]


def as_range(tf, node: ast.While) -> ast.For | None:
    """The ``for v in range(v, stop, step)`` that the while loop ``node`` of the kernel ``tf`` is (see the
    module's text), its ``iter`` typed as ``v`` in ``tf``; None where it is not exactly that (``why_not``)."""
    loop = _found(tf, node)
    return loop if isinstance(loop, ast.For) else None


def why_not(tf, node: ast.While) -> str | None:
    """Why the while loop ``node`` is not read as a range (None where it is), in words for the regions snapshot."""
    why = _found(tf, node)
    return why if isinstance(why, str) else None


def stands_for(loop) -> ast.While | None:
    """The while loop a ``for`` node of ``as_range`` was made from (None for the source's own loops)."""
    return getattr(loop, "kdebug_while", None)


def _as_range(tf, node: ast.While) -> ast.For | str:
    """The range loop, or why there is none."""
    body = tf.source.tree.body
    test = node.test
    if node.orelse:
        return "it has an else"
    if len(node.body) < 2:
        return "its body is only the step"
    if not any(s is node for s in body):
        return "it is not a statement of the kernel's own body"
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Lt)
            and isinstance(test.left, ast.Name)):
        return "its test is not `k < stop`"
    var, stop = test.left.id, test.comparators[0]
    if tf.locals.get(var) != T.int64:
        return f"{var} is not a 64-bit integer"
    last = node.body[-1]
    if not (isinstance(last, ast.AugAssign) and isinstance(last.op, ast.Add) and isinstance(last.target, ast.Name)
            and last.target.id == var):
        return f"its last statement is not `{var} += step`"
    assigned = _assigned(node.body[:-1])
    if var in assigned:
        return f"its body assigns {var} before the step"
    if any(isinstance(n, (ast.Break, ast.Continue)) for s in node.body for n in ast.walk(s)):
        return "a break or continue in it"
    if not _invariant(stop, assigned | {var}):
        return "its stop may change in the loop"
    if not _positive(tf, last.value, assigned | {var}):
        return "its step is not positive by construction (blockDim, gridDim, gridsize(1), positive constants)"
    after = body[next(k for k, s in enumerate(body) if s is node) + 1:]
    if any(isinstance(n, ast.Name) and n.id == var for s in after for n in ast.walk(s)):
        return f"{var} is read after the loop"
    it = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[test.left, stop, last.value], keywords=[])
    loop = ast.For(target=ast.Name(id=var, ctx=ast.Store()), iter=it, body=node.body[:-1], orelse=[])
    for made in (loop, it, it.func, loop.target):
        ast.copy_location(made, node)
    loop.kdebug_while = node
    tf.types[it] = tf.locals[var]
    return loop


def _assigned(stmts) -> set[str]:
    """The names the statements assign (targets of assignments, loops, ``with``, walrus)."""
    out: set[str] = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
    return out


def _invariant(expr, assigned: set[str]) -> bool:
    """A value the loop's body cannot change: constants, names it never assigns, an array's size or shape."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int)
    if isinstance(expr, ast.Name):
        return expr.id not in assigned
    if isinstance(expr, ast.Attribute):
        return expr.attr == "size" and isinstance(expr.value, ast.Name) and expr.value.id not in assigned
    if isinstance(expr, ast.Subscript):  # a.shape[k]
        shape = expr.value
        return isinstance(shape, ast.Attribute) and shape.attr == "shape" and isinstance(shape.value, ast.Name) \
            and shape.value.id not in assigned and isinstance(expr.slice, ast.Constant) \
            and isinstance(expr.slice.value, int)
    if isinstance(expr, ast.Call):
        return isinstance(expr.func, ast.Name) and expr.func.id == "len" and len(expr.args) == 1 \
            and not expr.keywords and isinstance(expr.args[0], ast.Name) and expr.args[0].id not in assigned
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) \
            and _invariant(expr.left, assigned) and _invariant(expr.right, assigned)
    return False


def _positive(tf, expr, assigned: set[str], depth: int = 0) -> bool:
    """Positive by construction (see the module's text)."""
    if depth > 8:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool) and expr.value > 0
    if isinstance(expr, ast.Attribute):  # cuda.blockDim.x, gridDim.y...
        inner = expr.value
        dim = inner.attr if isinstance(inner, ast.Attribute) else inner.id if isinstance(inner, ast.Name) else None
        return dim in _DIMS and expr.attr in ("x", "y", "z")
    if isinstance(expr, ast.Call):  # cuda.gridsize(1): the grid's threads along x (a tuple for 2 or 3: no)
        f = expr.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        return name == "gridsize" and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant) \
            and expr.args[0].value == 1
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.Add, ast.Mult)) and _positive(tf, expr.left, assigned, depth + 1) \
            and _positive(tf, expr.right, assigned, depth + 1)
    if isinstance(expr, ast.Name) and expr.id not in assigned:
        value = only_assignment(tf, expr.id)
        return value is not None and _positive(tf, value, assigned, depth + 1)
    return False


def only_assignment(tf, name: str):
    """The value of the kernel's only assignment to ``name`` (a plain ``name = value``), or None."""
    found = []
    for n in ast.walk(tf.source.tree):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            found.append(n)
    if len(found) != 1:
        return None
    for n in ast.walk(tf.source.tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and n.targets[0] is found[0]:
            return n.value
    return None

