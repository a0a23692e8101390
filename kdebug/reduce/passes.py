"""Candidate rewrites of a script's syntax tree: every candidate parses, and each is smaller than the
tree it came from (fewer nodes, or the same nodes with smaller integer literals).

A node is named by its place in ``nodes(tree)`` (a fixed walk), so a rewrite is made on a copy of the
tree by index. The statement lists are what ``reducer.ddmin`` shrinks; the local passes below each
return, in source order, every candidate one small rewrite of the tree gives.
"""
from __future__ import annotations

import ast
import copy
from typing import Callable, Iterator

STMT_FIELDS = ("body", "orelse", "finalbody")
COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, in a walk that a deep copy of the tree repeats exactly."""
    return list(ast.walk(tree))


def unparse(tree: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def size(tree: ast.AST) -> tuple[int, int]:
    """What every accepted rewrite makes smaller: the node count, then the integer literals' sum."""
    all_nodes = nodes(tree)
    literals = sum(abs(n.value) for n in all_nodes
                   if isinstance(n, ast.Constant) and type(n.value) is int)
    return len(all_nodes), literals


def code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def edit(tree: ast.AST, index: int, change: Callable[[ast.AST, ast.AST], None]) -> str:
    """The source of a copy of ``tree`` whose node ``index`` ``change(node, copy)`` rewrote in place."""
    twin = copy.deepcopy(tree)
    change(nodes(twin)[index], twin)
    return unparse(twin)


# ---- statement lists (for ddmin) --------------------------------------------------------------------
def statement_lists(tree: ast.AST, host_only: bool = False) -> list[tuple[int, str]]:
    """(node index, field) of every non-empty statement list, outermost first, in source order;
    ``host_only``: not those inside a decorated function (a kernel or device function)."""
    out = []
    inside = set()
    if host_only:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                inside |= {id(n) for n in ast.walk(node)}
    for i, node in enumerate(nodes(tree)):
        if id(node) in inside:
            continue
        for name in STMT_FIELDS:
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out.append((i, name))
    return out


def keep_statements(tree: ast.AST, where: tuple[int, str], keep: list[int]) -> str:
    """The source with only the statements ``keep`` (indices) of the list at ``where``."""
    index, name = where

    def change(node, _root):
        body = getattr(node, name)
        kept = [body[k] for k in keep]
        if not kept and not isinstance(node, ast.Module) and name == "body":
            kept = [ast.Pass()]
        setattr(node, name, kept)
    return edit(tree, index, change)


def statement_count(tree: ast.AST, where: tuple[int, str]) -> int:
    index, name = where
    return len(getattr(nodes(tree)[index], name))


# ---- local passes ------------------------------------------------------------------------------------
def unwrap_blocks(tree: ast.AST) -> Iterator[str]:
    """A branch of an ``if`` (or a loop's, a ``with``'s, a ``try``'s body) in place of the statement."""
    for i, node in enumerate(nodes(tree)):
        if not isinstance(node, COMPOUND):
            continue
        for name in ("body", "orelse"):
            if getattr(node, name, None):
                yield edit(tree, i, _replace_statement(name))


def _replace_statement(name: str):
    def change(node, root):
        parent, field, at = _parent_slot(root, node)
        block = getattr(parent, field)
        block[at:at + 1] = getattr(node, name)
    return change


def _parent_slot(root: ast.AST, target: ast.AST) -> tuple[ast.AST, str, int]:
    for node in ast.walk(root):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is target:
                        return node, field, k
    raise LookupError("the statement has no parent list")


def decorator_options(tree: ast.AST) -> Iterator[str]:
    """A decorator's keyword and positional options dropped one by one, then its call parentheses
    (the decorator itself stays: a kernel without ``@cuda.jit`` is no kernel; statements go with ddmin)."""
    for i, node in enumerate(nodes(tree)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for d, deco in enumerate(node.decorator_list):
            if isinstance(deco, ast.Call):
                for k in range(len(deco.keywords)):
                    yield edit(tree, i, lambda n, _r, d=d, k=k: n.decorator_list[d].keywords.pop(k))
                for k in range(len(deco.args)):
                    yield edit(tree, i, lambda n, _r, d=d, k=k: n.decorator_list[d].args.pop(k))
                if not deco.keywords and not deco.args:
                    yield edit(tree, i, lambda n, _r, d=d: n.decorator_list.__setitem__(d, n.decorator_list[d].func))


def _called_name(call: ast.Call) -> str | None:
    """The function a call calls by name: ``f(...)``, a launch ``f[grid, block](...)``, a pointer
    ``kdebug.deferred(f)(...)``."""
    func = call.func
    if isinstance(func, ast.Subscript):
        func = func.value
    elif isinstance(func, ast.Call) and func.args and isinstance(func.args[0], ast.Name):
        inner = func.func
        if (isinstance(inner, ast.Attribute) and inner.attr == "deferred") or \
                (isinstance(inner, ast.Name) and inner.id == "deferred"):
            func = func.args[0]
    return func.id if isinstance(func, ast.Name) else None


def parameters(tree: ast.AST) -> Iterator[str]:
    """A function's parameter removed with the argument every call site passes for it."""
    for i, node in enumerate(nodes(tree)):
        if not isinstance(node, ast.FunctionDef):
            continue
        params = node.args.posonlyargs + node.args.args
        for k, param in enumerate(params):
            yield edit(tree, i, _drop_parameter(node.name, k, param.arg))


def _drop_parameter(fname: str, k: int, pname: str):
    def change(fn, root):
        a = fn.args
        n_pos = len(a.posonlyargs) + len(a.args)
        first_default = n_pos - len(a.defaults)
        if k >= first_default:
            a.defaults.pop(k - first_default)
        if k < len(a.posonlyargs):
            a.posonlyargs.pop(k)
        else:
            a.args.pop(k - len(a.posonlyargs))
        for call in ast.walk(root):
            if isinstance(call, ast.Call) and _called_name(call) == fname:
                if k < len(call.args) and not any(isinstance(x, ast.Starred) for x in call.args[:k + 1]):
                    call.args.pop(k)
                call.keywords = [kw for kw in call.keywords if kw.arg != pname]
    return change


def operands(tree: ast.AST) -> Iterator[str]:
    """An expression replaced by one of its operands (``a + b`` -> ``a``, ``x if c else y`` -> ``x``)."""
    for i, node in enumerate(nodes(tree)):
        if isinstance(node, ast.BinOp):
            parts = ("left", "right")
        elif isinstance(node, ast.IfExp):
            parts = ("body", "orelse")
        elif isinstance(node, ast.UnaryOp):
            parts = ("operand",)
        elif isinstance(node, ast.BoolOp):
            parts = tuple(range(len(node.values)))
        else:
            continue
        for part in parts:
            yield edit(tree, i, _replace_expression(part))


def _replace_expression(part):
    def change(node, root):
        _replace_node(root, node, node.values[part] if isinstance(part, int) else getattr(node, part))
    return change


def constants(tree: ast.AST) -> Iterator[str]:
    """An argument, a launch's grid or block, an index or a returned value that is not a constant
    replaced by ``1`` (what it computed rarely matters to the bug; its inputs then can go)."""
    def simple(expr) -> bool:
        return isinstance(expr, ast.Constant) or (isinstance(expr, ast.Tuple) and all(map(simple, expr.elts)))
    for i, node in enumerate(nodes(tree)):
        if isinstance(node, ast.Call):
            for k, arg in enumerate(node.args):
                if not simple(arg) and not isinstance(arg, ast.Starred):
                    yield edit(tree, i, lambda n, _r, k=k: n.args.__setitem__(k, ast.Constant(1)))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for k, dim in enumerate(dims):
                if not simple(dim) and not isinstance(dim, ast.Slice):
                    yield edit(tree, i, _one_dimension(k))
        elif isinstance(node, ast.Return) and node.value is not None and not simple(node.value):
            yield edit(tree, i, lambda n, _r: setattr(n, "value", ast.Constant(1)))


def _one_dimension(k: int):
    def change(node, _root):
        if isinstance(node.slice, ast.Tuple):
            node.slice.elts[k] = ast.Constant(1)
        else:
            node.slice = ast.Constant(1)
    return change


def literals(tree: ast.AST) -> Iterator[str]:
    """An integer literal (an array size, a grid or block dimension, a loop bound) shrunk towards 1:
    first to 1, then to half."""
    for i, node in enumerate(nodes(tree)):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 1:
            yield edit(tree, i, lambda n, _r: setattr(n, "value", 1))
            if node.value > 3:
                yield edit(tree, i, lambda n, _r: setattr(n, "value", n.value // 2))


def import_names(tree: ast.AST) -> Iterator[str]:
    """One name of an ``import a, b`` or ``from m import a, b`` dropped (a whole import statement goes
    with the statement lists)."""
    for i, node in enumerate(nodes(tree)):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and len(node.names) > 1:
            for k in range(len(node.names)):
                yield edit(tree, i, lambda n, _r, k=k: n.names.pop(k))


def inline_functions(tree: ast.AST) -> Iterator[str]:
    """A function whose body is one ``return EXPR``, called at one place by name with positional
    arguments only: the call replaced by EXPR (its parameters by the arguments), the function removed."""
    all_nodes = nodes(tree)
    for i, fn in enumerate(all_nodes):
        if not isinstance(fn, ast.FunctionDef) or len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return):
            continue
        a = fn.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or fn.body[0].value is None:
            continue
        uses = [n for n in all_nodes if isinstance(n, ast.Name) and n.id == fn.name]
        calls = [n for n in all_nodes if isinstance(n, ast.Call) and _called_name(n) == fn.name]
        if len(uses) != 1 or len(calls) != 1 or not isinstance(calls[0].func, ast.Name):
            continue
        call = calls[0]
        if call.keywords or len(call.args) != len(a.args) or any(isinstance(x, ast.Starred) for x in call.args):
            continue
        yield edit(tree, i, _inline(all_nodes.index(call)))


def inline_calls(tree: ast.AST) -> Iterator[str]:
    """A function without parameters or ``return``, called once as a statement (``main()``): its body
    in place of the call, the function removed."""
    all_nodes = nodes(tree)
    for i, fn in enumerate(all_nodes):
        if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or _has_parameters(fn):
            continue
        if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal))
               for n in ast.walk(fn)):
            continue
        uses = [n for n in all_nodes if isinstance(n, ast.Name) and n.id == fn.name]
        calls = [n for n in all_nodes if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                 and isinstance(n.value.func, ast.Name) and n.value.func.id == fn.name
                 and not n.value.args and not n.value.keywords]
        if len(uses) == 1 and len(calls) == 1:
            yield edit(tree, i, _inline_statement(all_nodes.index(calls[0])))


def _has_parameters(fn: ast.FunctionDef) -> bool:
    a = fn.args
    return bool(a.posonlyargs or a.args or a.vararg or a.kwonlyargs or a.kwarg)


def _inline_statement(call_index: int):
    def change(fn, root):
        call = nodes(root)[call_index]
        parent, field, at = _parent_slot(root, call)
        getattr(parent, field)[at:at + 1] = fn.body
        parent, field, at = _parent_slot(root, fn)
        getattr(parent, field).pop(at)
        if not getattr(parent, field) and not isinstance(parent, ast.Module):
            getattr(parent, field).append(ast.Pass())
    return change


def _inline(call_index: int):
    def change(fn, root):
        call = nodes(root)[call_index]
        bound = {p.arg: arg for p, arg in zip(fn.args.args, call.args)}

        class Substitute(ast.NodeTransformer):
            def visit_Name(self, name):
                return copy.deepcopy(bound[name.id]) if name.id in bound and isinstance(name.ctx, ast.Load) else name
        expr = Substitute().visit(copy.deepcopy(fn.body[0].value))
        _replace_node(root, call, expr)
        parent, field, at = _parent_slot(root, fn)
        getattr(parent, field).pop(at)
        if not getattr(parent, field) and not isinstance(parent, ast.Module):
            getattr(parent, field).append(ast.Pass())
    return change


def _replace_node(root: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return


# the local passes, in the order each round tries them: the big cuts first
LOCAL_PASSES: tuple[tuple[str, Callable[[ast.AST], Iterator[str]]], ...] = (
    ("unwrap blocks", unwrap_blocks),
    ("inline functions", inline_functions),
    ("inline calls", inline_calls),
    ("parameters", parameters),
    ("decorator options", decorator_options),
    ("import names", import_names),
    ("operands", operands),
    ("constants", constants),
    ("literals", literals),
)


# ---- names a candidate leaves undefined ------------------------------------------------------------
_BUILTINS = frozenset(dir(__import__("builtins"))) | {"__file__", "__name__", "__doc__", "__builtins__",
                                                       "__spec__", "__loader__", "__package__"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def dangling_names(tree: ast.AST) -> set[tuple[str, str]]:
    """(scope, name) of every name read where no enclosing scope (nor the builtins) binds it: a
    candidate that adds one would stop with a NameError there, so it is not worth a trial."""
    out: set[tuple[str, str]] = set()

    def bound(scope: ast.AST) -> set[str]:
        names: set[str] = set()
        if isinstance(scope, _SCOPES):
            a = scope.args
            names |= {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p}
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                stack.extend(node.decorator_list)
                if isinstance(node, ast.ClassDef):
                    stack.extend(node.body)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(al.asname or al.name).split(".")[0] for al in node.names}
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names |= set(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
            elif isinstance(node, ast.MatchAs) and node.name:
                names.add(node.name)
            stack.extend(ast.iter_child_nodes(node))
        return names

    def visit(scope: ast.AST, label: str, visible: set[str]) -> None:
        visible = visible | bound(scope)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, _SCOPES):
                stack.extend(node.decorator_list if not isinstance(node, ast.Lambda) else [])
                stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
                visit(node, f"{label}.{getattr(node, 'name', 'lambda')}", visible)
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in visible:
                out.add((label, node.id))
            stack.extend(ast.iter_child_nodes(node))

    visit(tree, "", set(_BUILTINS))
    return out
