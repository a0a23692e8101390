"""Which exited threads skipped a barrier: the line a barrier's skippers exit below.

The block scheduler (block_scheduler.py) warns when a barrier completes only because threads that
skipped it exited. A thread records the kernel line of the ``return`` it left by (or the end of the
kernel); it skipped the barrier when that line lies below the barrier's *reach line*, computed here
when the barrier is lowered. Lines of the kernel, never of a device function: a thread exits only
from the kernel.

- A barrier the kernel reaches unconditionally from a statement list (``cuda.syncthreads()`` as a
  statement of a loop body) is passed by every thread that runs through that list: a ``return`` later
  in the list comes after the barrier in the same pass (in a loop, an early exit of the next pass),
  so the reach line is the list's last line.
- Otherwise (the barrier inside a conditional expression) it is the barrier's own line.
- A barrier in an inlined device function stands at the kernel's call: the call's reach line when
  the device functions on the way run the barrier (and the inner calls) on every call, else the
  call's own line.
"""
from __future__ import annotations

import ast

_CONDITIONAL = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.comprehension, ast.ListComp, ast.SetComp, ast.DictComp,
                ast.GeneratorExp)
_BODIES = ("body", "orelse", "finalbody")


def reach_line(lc, node: ast.AST) -> int:
    """The kernel line below which an exited thread ran past the barrier call ``node`` of ``lc.tf``."""
    chain = [(call, caller) for call, caller in lc.call_path] + [(node, lc.tf)]
    kernel_call, kernel_tf = chain[0]
    inner = chain[1:]
    src = kernel_tf.source
    if all(_runs_on_every_call(tf, call) for call, tf in inner):
        end = _list_end(kernel_tf.source.tree, kernel_call)
        if end is not None:
            return src.first_line + end - 1
    return src.loc(kernel_call).line


def _statement_list(tree: ast.AST, node: ast.AST):
    """(the statement list holding the statement that contains ``node``, that statement's index), with
    ``node`` reached from the statement without a conditional expression on the way; else None."""
    for parent in ast.walk(tree):
        for name in _BODIES:
            stmts = getattr(parent, name, None)
            if not isinstance(stmts, list):
                continue
            for k, stmt in enumerate(stmts):
                path = _path(stmt, node)
                if path is None:
                    continue
                if any(isinstance(p, ast.stmt) for p in path[1:]):
                    break  # nested deeper: a list further down holds it
                if any(isinstance(p, _CONDITIONAL) for p in path):
                    return None
                return stmts, k
    return None


def _path(root: ast.AST, node: ast.AST):
    """The nodes from ``root`` down to ``node`` (root first), or None when ``node`` is not inside."""
    if root is node:
        return [root]
    for child in ast.iter_child_nodes(root):
        sub = _path(child, node)
        if sub is not None:
            return [root] + sub
    return None


def _list_end(tree: ast.AST, node: ast.AST) -> int | None:
    """The last source line of the statement list that runs ``node`` unconditionally (tree lines)."""
    found = _statement_list(tree, node)
    if found is None:
        return None
    stmts, _ = found
    return stmts[-1].end_lineno


def _runs_on_every_call(tf, node: ast.AST) -> bool:
    """Whether every call of device function ``tf`` reaches ``node``: a statement of its body, with no
    ``return`` before it."""
    tree = tf.source.tree
    found = _statement_list(tree, node)
    if found is None or found[0] is not tree.body:
        return False
    stmts, k = found
    return not any(isinstance(n, ast.Return) for s in stmts[:k] for n in ast.walk(s))
