"""``for x in literal_unroll(t)`` over a tuple of mixed types: one copy of the loop body per element.

numba versions such a loop's body per element type (its ``LiteralUnroll`` pass); here the loop that
``desugar`` made of it (``for _i in range(len(_it)): x = _it[_i]; body``) is replaced, once type
inference knows the tuple's type, by one copy of the body per element with ``_i`` a constant, so
``_it[k]`` has that element's type. Names that only the body uses get their own name per copy (numba's
SSA versions of them); names used outside the loop keep one type for the function, as in numba.
``continue`` ends a copy; ``break`` ends them all (each copy runs inside a one-trip loop, a flag skips
the rest). A ``literal_unroll`` of an array or a tuple of one type stays an ordinary loop, as numba's.
"""
from __future__ import annotations

import ast
import copy

from kdebug.lang import types as T


def _names(nodes) -> set[str]:
    return {n.id for root in nodes for n in ast.walk(root) if isinstance(n, ast.Name)}


def _top_level_jumps(body):
    """The break/continue statements of ``body`` that belong to this loop (not to a nested one)."""
    found = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, (ast.Break, ast.Continue)):
                found.append(s)
            elif isinstance(s, (ast.If, ast.With, ast.Try)):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    walk(getattr(s, field, []) or [])
    walk(body)
    return found


class _Version(ast.NodeTransformer):
    """One copy of the body: the index a constant, body-only names renamed, break sets the flag."""

    def __init__(self, index: str, k: int, rename: dict, flag: str | None) -> None:
        self.index, self.k, self.rename, self.flag = index, k, rename, flag

    def visit_Name(self, node):
        if node.id == self.index:
            return ast.copy_location(ast.Constant(self.k), node)
        if node.id in self.rename:
            node.id = self.rename[node.id]
        return node

    def visit_For(self, node):  # a nested loop's break is its own
        return self._nested(node)

    def visit_While(self, node):
        return self._nested(node)

    def _nested(self, node):
        flag, self.flag = self.flag, None
        self.generic_visit(node)
        self.flag = flag
        return node

    def visit_Break(self, node):
        if self.flag is None:
            return node
        set_flag = ast.Assign(targets=[ast.Name(id=self.flag, ctx=ast.Store())], value=ast.Constant(True))
        return [ast.copy_location(set_flag, node), node]


def unrolled(inferer, loop: ast.For) -> list[ast.stmt] | None:
    """The statements replacing ``loop`` (a desugared literal_unroll loop), or None to keep it as a loop."""
    hidden, index = loop.kdebug_unroll
    t = inferer.tf.locals.get(hidden)
    if not isinstance(t, T.Tuple) or len(set(t.types)) <= 1:
        return None  # an array or a tuple of one type: numba iterates it as usual
    tree = inferer.src.tree
    inside = set(map(id, (n for s in loop.body for n in ast.walk(s))))
    outside = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in inside}
    stored = {n.id for s in loop.body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    jumps = _top_level_jumps(loop.body)
    flag = f"{hidden}_break" if any(isinstance(j, ast.Break) for j in jumps) else None
    out: list[ast.stmt] = []
    if flag:
        out.append(ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())], value=ast.Constant(False)))
    for k in range(len(t.types)):
        rename = {name: f"{name}_{hidden}_{k}" for name in stored - outside - {index}}
        inferer.assigned.update(rename.values())
        body = [_Version(index, k, rename, flag).visit(copy.deepcopy(s)) for s in loop.body]
        body = [x for s in body for x in (s if isinstance(s, list) else [s])]
        if jumps:  # a one-trip loop, so that continue ends this copy and break leaves it
            once = f"{hidden}_once"
            inferer.assigned.add(once)
            trip = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[ast.Constant(1)], keywords=[])
            body = [ast.For(target=ast.Name(id=once, ctx=ast.Store()), iter=trip, body=body, orelse=[],
                            type_comment=None)]
        if flag and k:
            body = [ast.If(test=ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load())), body=body,
                           orelse=[])]
        out += body
    if flag:
        inferer.assigned.add(flag)
    for s in out:
        ast.copy_location(s, loop)
        ast.fix_missing_locations(s)
    return out
