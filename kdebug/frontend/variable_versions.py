"""A variable reassigned with a value of another type: one name per independent use of it, as numba's SSA.

numba versions every variable (``v``, ``v.1``, ``v.2``, its ReconstructSSA pass) and unifies types only
where versions meet (a phi node: a branch or a loop joining). So ``for v in (a2, b2): ...`` followed by
``for v in (a3, b3): ...`` compiles, each loop's ``v`` of its own vector type, while ``x = 1`` then
``if c: x = (1, 2)`` then a use of ``x`` is a type error. kdebug gives each variable one type; when two
assignments to a name disagree, type inference asks ``split_variable`` to give each group of assignments
whose values reach a common use (numba's versions joined by phis) a name of its own, ``v.1``, ``v.2``...
(names no Python code can write), and infers the function again. Functions whose variables keep one type
are left as written.

Reaching definitions are computed over the kernel's statements (if, for over range, while, break,
continue, return, raise; ``desugar`` has made every loop a ``for ... in range``).
"""
from __future__ import annotations

import ast
import copy
import dataclasses


class _Flow:
    """Which assignments of one name may reach each of its uses."""

    def __init__(self, name: str, is_parameter: bool) -> None:
        self.name = name
        self.entry = ("parameter",) if is_parameter else None
        self.uses: dict[int, tuple[ast.Name, set]] = {}  # id(Name node) -> (node, definitions reaching it)
        self.definitions: list = []  # Name nodes that store the name, in order of appearance
        self.loops: list[tuple[set, set]] = []  # (break states, continue states) of the enclosing loops

    def start(self) -> frozenset:
        return frozenset([self.entry]) if self.entry else frozenset()

    # ---- expressions: each load of the name is a use of what reaches it --------------------------------
    def loads(self, node, state) -> None:
        if node is None:
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id == self.name and not isinstance(n.ctx, ast.Store):
                self.use(n, state)

    def use(self, node, state) -> None:
        _, reaching = self.uses.setdefault(id(node), (node, set()))
        reaching |= state

    def store(self, target, state) -> frozenset:
        """``target`` assigned: a name of ours is a new definition; elements, fields and indexes load."""
        if isinstance(target, ast.Name):
            if target.id != self.name:
                return state
            if target not in self.definitions:
                self.definitions.append(target)
            return frozenset([target])
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                state = self.store(elt.value if isinstance(elt, ast.Starred) else elt, state)
            return state
        self.loads(target, state)  # a[i] = ..., a.x = ...: ``a`` and ``i`` are read
        return state

    # ---- statements ---------------------------------------------------------------------------------
    def body(self, stmts, state) -> frozenset:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def stmt(self, s, state) -> frozenset:
        if isinstance(s, ast.Assign):
            self.loads(s.value, state)
            for target in s.targets:
                state = self.store(target, state)
            return state
        if isinstance(s, ast.AugAssign):  # x += v reads x, then defines it
            self.loads(s.value, state)
            if isinstance(s.target, ast.Name) and s.target.id == self.name:
                self.use(s.target, state)
            return self.store(s.target, state)
        if isinstance(s, ast.If):
            self.loads(s.test, state)
            return self.body(s.body, state) | self.body(s.orelse, state)
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, state)
        if isinstance(s, ast.Break):
            self.loops[-1][0].add(state)
            return frozenset()
        if isinstance(s, ast.Continue):
            self.loops[-1][1].add(state)
            return frozenset()
        if isinstance(s, (ast.Return, ast.Raise)):
            self.loads(s, state)
            return frozenset()
        self.loads(s, state)  # an expression statement, pass, ...
        return state

    def loop(self, s, state) -> frozenset:
        """A loop: its head joins the state before it and at the end of every trip (continue included),
        until that stops growing; it is left from its head (the test fails) or by a break."""
        if isinstance(s, ast.For):
            self.loads(s.iter, state)
        head = state
        while True:
            breaks, continues = set(), set()
            self.loops.append((breaks, continues))
            trip = head
            if isinstance(s, ast.While):
                self.loads(s.test, trip)
            else:
                trip = self.store(s.target, trip)
            end = self.body(s.body, trip)
            self.loops.pop()
            grown = head.union(end, *continues)
            if grown == head:
                break
            head = grown
        return head.union(*breaks)  # (kernels have no for/while ... else)


def split_variable(tree: ast.FunctionDef, name: str, parameters) -> bool:
    """Give each group of ``name``'s assignments whose values never meet a name of its own (``name.1``,
    ``name.2``...; the group holding a parameter's value, else the first, keeps ``name``). False when
    they all meet: numba too would need one type for them."""
    flow = _Flow(name, name in parameters)
    flow.body(tree.body, flow.start())
    group = {id(d): id(d) for d in flow.definitions}
    group[("parameter",)] = ("parameter",)

    def find(key):
        while group[key] != key:
            group[key] = group[group[key]]
            key = group[key]
        return key

    def key(d):
        return d if d == ("parameter",) else id(d)

    for _, reaching in flow.uses.values():
        keys = [key(d) for d in reaching]
        for k in keys[1:]:
            group[find(k)] = find(keys[0])
    order = []  # groups in order of their first definition, the parameter's first
    for k in [("parameter",)] * (name in parameters) + [id(d) for d in flow.definitions]:
        if find(k) not in order:
            order.append(find(k))
    if len(order) < 2:
        return False
    version = {g: name if i == 0 else f"{name}.{i}" for i, g in enumerate(order)}
    for d in flow.definitions:
        d.id = version[find(id(d))]
    for node, reaching in flow.uses.values():
        if reaching:
            node.id = version[find(key(next(iter(reaching))))]
    return True


class VariableVersioned(Exception):
    """Type inference must start again on ``source``: a copy of the function with a variable split into
    versions (not an error; ``infer_function`` catches it)."""

    def __init__(self, source) -> None:
        super().__init__(source.function)
        self.source = source


def versioned_source(src, name: str, parameters):
    """A copy of ``src`` whose tree gives ``name``'s independent groups of assignments names of their own,
    or None when they all meet. The copy leaves the parsed tree, which other compilations share, as it is."""
    tree = copy.deepcopy(src.tree)
    if not split_variable(tree, name, parameters):
        return None
    return dataclasses.replace(src, tree=tree)
