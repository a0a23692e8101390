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
    if all(_runs_on_every_call(lc, tf, call) for call, tf in inner):
        end = _list_end(lc, kernel_tf.source.tree, kernel_call)
        if end is not None:
            return src.first_line + end - 1
    return src.loc(kernel_call).line


def _statement_list(lc, tree: ast.AST, node: ast.AST):
    """(the statement list holding the statement that contains ``node``, that statement's index), with
    ``node`` reached from the statement without a conditional expression on the way; else None."""
    holders = _holders(lc, tree)
    path = [node]  # from node up to the innermost statement that contains it
    while not isinstance(path[-1], ast.stmt):
        held = holders.get(id(path[-1]))
        if held is None:
            return None
        path.append(held[0])
    if any(isinstance(p, _CONDITIONAL) for p in path):
        return None
    held = holders.get(id(path[-1]))
    if held is None or held[1] not in _BODIES:
        return None
    parent, name, k = held
    return getattr(parent, name), k


def _holders(lc, tree: ast.AST) -> dict:
    """id(node) -> (its parent, the parent's field that holds it, its index there or None), for ``tree``
    below its root: one walk per tree in a module's lowering (kept in its state; the tree is kept with it,
    so that its id stays its own), where a search from every statement list took one per barrier."""
    kept = lc.state.syntax_holders
    if id(tree) in kept:
        return kept[id(tree)][1]
    holders = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        holders[id(item)] = (parent, name, k)
            elif isinstance(value, ast.AST):
                holders[id(value)] = (parent, name, None)
    kept[id(tree)] = (tree, holders)
    return holders


def in_branch(lc, node) -> bool:
    """Whether ``node`` lies inside an if/else of the function being lowered (control flow that may differ
    between threads; loops are taken as uniform, as an early return before a barrier is)."""
    holders = _holders(lc, lc.tf.source.tree)
    held = holders.get(id(node))
    while held is not None:
        parent, name, _ = held
        if isinstance(parent, ast.If) and name in ("body", "orelse"):
            return True
        held = holders.get(id(parent))
    return False


def _list_end(lc, tree: ast.AST, node: ast.AST) -> int | None:
    """The last source line of the statement list that runs ``node`` unconditionally (tree lines)."""
    found = _statement_list(lc, tree, node)
    if found is None:
        return None
    stmts, _ = found
    return stmts[-1].end_lineno


def _runs_on_every_call(lc, tf, node: ast.AST) -> bool:
    """Whether every call of device function ``tf`` reaches ``node``: a statement of its body, with no
    ``return`` before it."""
    tree = tf.source.tree
    found = _statement_list(lc, tree, node)
    if found is None or found[0] is not tree.body:
        return False
    stmts, k = found
    return not any(isinstance(n, ast.Return) for s in stmts[:k] for n in ast.walk(s))
