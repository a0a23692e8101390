"""Loops over things other than ``range(...)``, rewritten into counted loops before type inference.

* ``for x in a`` (an array, a row view, a tuple, a device function's result): the iterable is
  evaluated once into a hidden variable, then ``for _i in range(len(it)): x = it[_i]`` (a 2-D array
  gives its rows, as in numba);
* ``for i, x in enumerate(a[, start])``: the counter is ``_i + start``;
* ``for x, y in zip(a, b, ...)``: ``range(min(len(a), len(b), ...))``, the elements ``a[_i], b[_i]``;
* ``for x in literal_unroll(t)``: as ``for x in t``, marked so that type inference gives a tuple of
  mixed types one copy of the body per element (``unroll.py``);
  enumerate and zip nest (``for i, (x, y) in enumerate(zip(a, b))``);
* ``r = range(...)`` assigned once and used only as loops' iterables (``for i in r``): each loop
  gets that ``range(...)`` itself, when no name in its arguments is assigned anywhere else in the
  function (else a located error asks for the ``range(...)`` in the loop).

``return None`` is a plain ``return`` (a kernel may end so, as in numba: ``cuda.jit(lambda: None)``).

The new nodes carry the locations of the code they stand for, so errors point at the user's loop;
the Source view shows the function as written. Hidden names start with ``_kd_``.
"""
from __future__ import annotations

import ast

from kdebug.errors import TypingError

LOOP_HELPERS = ("enumerate", "zip")


def desugar_loops(tree: ast.FunctionDef, src) -> None:
    """Rewrite every non-range ``for`` of ``tree`` in place (``src`` locates errors)."""
    assigned = _assignment_counts(tree)
    _Rewriter(src, assigned, _range_bindings(tree, assigned)).visit(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Constant) and n.value.value is None:
            n.value = None
    ast.fix_missing_locations(tree)


def _assignment_counts(tree) -> dict[str, int]:
    counts: dict[str, int] = {}
    for a in tree.args.args:
        counts[a.arg] = counts.get(a.arg, 0) + 1
    for n in ast.walk(tree):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [n.target]
        for t in targets:
            for name in ast.walk(t):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    counts[name.id] = counts.get(name.id, 0) + 1
    return counts


def _is_call(node, name) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _is_literal_unroll(node) -> bool:
    """``literal_unroll(x)``, ``numba.literal_unroll(x)`` or ``cuda.literal_unroll(x)``."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "literal_unroll") or (
        isinstance(f, ast.Attribute) and f.attr == "literal_unroll")


def _range_bindings(tree, assigned) -> dict[str, ast.Call]:
    """``r = range(...)`` statements whose range a loop over ``r`` may stand for."""
    found = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and _is_call(n.value, "range"):
            found[n.targets[0].id] = n.value
    loads: dict[str, int] = {}
    loop_uses: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Name):
            loop_uses[n.iter.id] = loop_uses.get(n.iter.id, 0) + 1
    # only ranges used as loop iterables and nothing else: their assignment is dropped
    return {name: call for name, call in found.items()
            if assigned.get(name) == 1 and loads.get(name, 0) == loop_uses.get(name, 0)}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, src, assigned, ranges) -> None:
        self.src, self.assigned, self.ranges = src, assigned, ranges
        self.counter = 0

    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                self.ranges.get(node.targets[0].id) is node.value:
            return None  # r = range(...): each loop over r gets the range itself
        return self.generic_visit(node)

    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        it = node.iter
        if _is_call(it, "range"):
            return node
        if isinstance(it, ast.Name) and it.id in self.ranges:
            return self._range_variable(node, it)
        k = self.counter
        self.counter += 1
        index = f"_kd_i{k}"
        setup: list[ast.stmt] = []
        unroll = _is_literal_unroll(it)
        if unroll:
            it = it.args[0]
        length, element = self._source(it, index, k, setup)
        loop_range = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[length], keywords=[])
        ast.copy_location(loop_range, it)
        loop_range.kdebug_loop_iter = it  # typeinfer: a bad iterable is reported as such
        body = self._assign(node.target, element) + node.body
        loop = ast.For(target=ast.Name(id=index, ctx=ast.Store()), iter=loop_range, body=body,
                       orelse=node.orelse, type_comment=None)
        ast.copy_location(loop, node)
        if unroll and setup:  # typeinfer versions the body per element of a mixed tuple (unroll.py)
            loop.kdebug_unroll = (setup[-1].targets[0].id, index)
        for s in setup:
            ast.copy_location(s, it)
        return setup + [loop]

    def _range_variable(self, node, name):
        call = self.ranges[name.id]
        for n in ast.walk(call):
            if isinstance(n, ast.Name) and n.id != "range" and self.assigned.get(n.id, 0) > 1:
                raise self.src.error(name, f"the range object {name.id!r} depends on {n.id!r}, which changes "
                                           f"in the kernel", "write the range(...) in the for statement")
        node.iter = ast.copy_location(ast.Call(func=call.func, args=list(call.args), keywords=[]), name)
        return node

    def _source(self, it, index, k, setup):
        """(length expression, element expression) of an iterable; may add setup statements."""
        if _is_call(it, "enumerate") and it.args and not it.keywords and len(it.args) <= 2:
            n, elem = self._source(it.args[0], index, f"{k}e", setup)
            i = ast.Name(id=index, ctx=ast.Load())
            counter = ast.BinOp(left=i, op=ast.Add(), right=it.args[1]) if len(it.args) == 2 else i
            return n, ("tuple", [ast.copy_location(counter, it), elem])
        if _is_call(it, "zip") and it.args and not it.keywords:
            parts = [self._source(a, index, f"{k}z{j}", setup) for j, a in enumerate(it.args)]
            lengths = [p[0] for p in parts]
            n = lengths[0] if len(lengths) == 1 else ast.copy_location(
                ast.Call(func=ast.Name(id="min", ctx=ast.Load()), args=lengths, keywords=[]), it)
            return n, ("tuple", [p[1] for p in parts])
        hidden = f"_kd_it{k}"
        setup.append(ast.Assign(targets=[ast.Name(id=hidden, ctx=ast.Store())], value=it, lineno=it.lineno))
        length = ast.Call(func=ast.Name(id="len", ctx=ast.Load()), args=[ast.Name(id=hidden, ctx=ast.Load())],
                          keywords=[])
        length.kdebug_loop_iter = it
        element = ast.Subscript(value=ast.Name(id=hidden, ctx=ast.Load()), slice=ast.Name(id=index, ctx=ast.Load()),
                                ctx=ast.Load())
        element.kdebug_loop_iter = it  # a tuple of mixed types needs literal_unroll: typeinfer says so
        return ast.copy_location(length, it), ast.copy_location(element, it)

    def _assign(self, target, element) -> list[ast.stmt]:
        if isinstance(element, tuple):  # an enumerate/zip element: (part, part...)
            _, parts = element
            if isinstance(target, ast.Tuple) and len(target.elts) == len(parts):
                out = []
                for t, p in zip(target.elts, parts):
                    out += self._assign(t, p)
                return out
            if isinstance(target, ast.Tuple):
                raise self.src.error(target, f"the loop unpacks {len(target.elts)} values from {len(parts)}",
                                     f"write {len(parts)} names, e.g. for i, x in enumerate(a)")
            value = ast.Tuple(elts=[self._expr(p) for p in parts], ctx=ast.Load())
            return [ast.copy_location(ast.Assign(targets=[target], value=ast.copy_location(value, target)), target)]
        return [ast.copy_location(ast.Assign(targets=[target], value=element), target)]

    def _expr(self, element):
        if isinstance(element, tuple):
            return ast.Tuple(elts=[self._expr(p) for p in element[1]], ctx=ast.Load())
        return element


def loop_iter_error(inferer, call_node, got) -> TypingError:
    """The error for a desugared loop whose iterable has no length (typeinfer calls this)."""
    return inferer.error(call_node.kdebug_loop_iter, f"a for loop cannot iterate over {got}",
                         "loop over range(...), an array, a tuple, enumerate(...) or zip(...)")
