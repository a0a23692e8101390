"""Races an adjoint cannot take, proved from the kernel's source before anything is lowered.

A kernel whose threads race on a float array has no adjoint worth computing: the primal's result
depends on the threads' order, and the reverse sweep would accumulate into a shadow element that
several threads own. ``--sanitize racecheck`` finds such races at run time, for the threads a
launch happens to run; this check finds, at compile time, the two shapes it can *prove* from the
source alone, and reports them as located compile errors of the adjoint job:

* **one element, many threads**: a write whose index is the same for every thread of a block
  (a constant, a scalar argument, ``cuda.blockIdx.x``...), under no condition that could leave a
  single thread to do it (``if i == 0:`` does; ``if i < n:`` does not);
* **a neighbour's element**: a write at ``a*t + c1`` and a read or write of the same array at
  ``a*t + c2`` (``t`` the thread's ``cuda.grid(1)`` or ``cuda.threadIdx.x``, ``c2 - c1`` a nonzero
  multiple of ``a``), with no barrier between them: thread ``t`` and thread ``t + (c1 - c2)/a``
  touch one element unordered (``x[i] = x[i - 1] + x[i + 1]`` in place).

The analysis is an abstract interpretation of index expressions over the values a thread can see
(:class:`Uniform`, :class:`BlockUniform`, :class:`Affine` in a thread index, or anything else),
flow-insensitive for names, with barriers counted in program order. Whatever it cannot decide it
lets through: a race it cannot prove is racecheck's to find, never a false compile error.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from itertools import count

from kdebug.lang import intrinsics as I
from kdebug.frontend.typeinfer import PyValue
from kdebug.lang import types as T


# ---- the abstract values of index expressions

@dataclass(frozen=True)
class Uniform:
    """The same for every thread of the launch; ``value`` where it is a known integer."""
    value: int | None = None


@dataclass(frozen=True)
class BlockUniform:
    """The same for every thread of one block (``cuda.blockIdx.x`` and what is computed from it)."""
    base: bool = False  # cuda.blockIdx.x * cuda.blockDim.x: adding cuda.threadIdx.x makes the grid index


@dataclass(frozen=True)
class Affine:
    """``a * t + c`` for ``t`` the thread's index ``sym`` (grid: ``cuda.grid(1)``; tid: ``threadIdx.x``),
    ``c`` None where it is uniform but not a known integer."""
    sym: str
    a: int
    c: int | None


class Varying:
    """Anything else: data read from memory, other dimensions, what the analysis does not follow."""


VARYING = Varying()
ARRAY = object()  # a name bound to an array


def join(x, y):
    if x is None or x == y:
        return y if x is None else x
    if y is None:
        return x
    if isinstance(x, Uniform) and isinstance(y, Uniform):
        return Uniform()
    if isinstance(x, (Uniform, BlockUniform)) and isinstance(y, (Uniform, BlockUniform)):
        return BlockUniform()
    return VARYING


def uniformish(v) -> bool:
    return isinstance(v, (Uniform, BlockUniform))


def add(x, y, sign: int = 1):
    if isinstance(x, Uniform) and isinstance(y, Uniform):
        return Uniform(None if x.value is None or y.value is None else x.value + sign * y.value)
    if isinstance(x, Affine) and isinstance(y, Uniform):
        return Affine(x.sym, x.a, None if x.c is None or y.value is None else x.c + sign * y.value)
    if isinstance(x, Uniform) and isinstance(y, Affine):
        return Affine(y.sym, sign * y.a, None if y.c is None or x.value is None else x.value + sign * y.c)
    if isinstance(x, BlockUniform) and x.base and sign == 1 and y == Affine("tid", 1, 0):
        return Affine("grid", 1, 0)
    if isinstance(y, BlockUniform) and y.base and x == Affine("tid", 1, 0):
        return Affine("grid", 1, 0) if sign == 1 else VARYING
    if uniformish(x) and uniformish(y):
        return BlockUniform()
    return VARYING


def mul(x, y):
    if isinstance(x, Uniform) and isinstance(y, Uniform):
        return Uniform(None if x.value is None or y.value is None else x.value * y.value)
    if isinstance(y, Affine):
        x, y = y, x
    if isinstance(x, Affine) and isinstance(y, Uniform):
        if y.value is None or y.value == 0:
            return VARYING if y.value is None else Uniform(0)
        return Affine(x.sym, x.a * y.value, None if x.c is None else x.c * y.value)
    if uniformish(x) and uniformish(y):
        return BlockUniform()
    return VARYING


# ---- what the walk records

@dataclass
class Access:
    array: str
    write: bool
    index: object
    node: ast.AST
    room: tuple  # the interval of threads its conditions surely leave to run it (EVERY: the launch's)
    epoch: int  # barriers counted in program order: equal epochs have no barrier between them
    arms: tuple  # (if, arm) of the block-uniform branches it is in: other arms of those never run with it


ALL = 1 << 62
EVERY, NOBODY = (0, ALL), (0, 0)  # intervals [lo, hi) of thread indices a condition surely leaves


def meet(rooms) -> tuple:
    return max(r[0] for r in rooms), min(r[1] for r in rooms)


def width(room) -> int:
    return max(0, room[1] - room[0])


class RaceCheck:
    """One function's walk: names' values first, then its accesses in program order."""

    def __init__(self, tf, kernel: bool = True) -> None:
        self.tf = tf
        self.names: dict[str, object] = {}
        self.arrays: set[str] = set()  # global (parameter) and shared float arrays
        self.accesses: list[Access] = []
        self.epoch = 0
        self.ifs = count()
        self._stored: set[str] | None = None
        self.divergent = 0  # how many thread-dependent conditions the walk is inside
        self.shared: set[str] = set()  # the float arrays of those that are shared
        self.shared_writes: list[ast.AST] = []  # in program order
        self.barriers: list[tuple[int, ast.AST]] = []  # (the epoch before it, the statement)
        self.early_returns: list[tuple[ast.AST, int, ast.AST]] = []  # divergent returns after a shared write
        for name, t in zip(tf.argnames, tf.argtypes):
            if isinstance(t, T.Array):
                self.names[name] = ARRAY
                if getattr(t.dtype, "is_float", False):
                    self.arrays.add(name)
            else:  # a kernel's scalars are the launch's; a device function's may be its caller's thread index
                self.names[name] = Uniform() if kernel else VARYING
        self.bind_names()

    # -- names
    def intrinsic(self, node) -> str | None:
        ft = self.tf.types.get(node)
        if isinstance(ft, PyValue) and isinstance(ft.value, I.Intrinsic):
            return ft.value.name
        return None

    def bind_names(self) -> None:
        """Every local name's value, joined over its assignments, to a fixed point."""
        assigns: list[tuple[str, object]] = []  # (name, a thunk giving the assigned value)
        body = self.tf.source.tree
        for node in ast.walk(body):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        if self.intrinsic(node.value.func if isinstance(node.value, ast.Call) else None) \
                                == "shared.array":
                            self.names[target.id] = ARRAY
                            t = self.tf.types.get(node.value)
                            if isinstance(t, T.Array) and getattr(t.dtype, "is_float", False):
                                self.arrays.add(target.id)
                                self.shared.add(target.id)
                        else:
                            assigns.append((target.id, lambda v=node.value: self.value(v)))
                    else:
                        for n in ast.walk(target):
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                                assigns.append((n.id, lambda: VARYING))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                assigns.append((node.target.id,
                                lambda n=node: self.binop(n.op, self.value(n.target), self.value(n.value))))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                assigns.append((node.target.id, lambda v=node.value: self.value(v)))
            elif isinstance(node, ast.For):
                it = node.iter
                if isinstance(node.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
                        and it.func.id == "range":
                    assigns.append((node.target.id, lambda it=it: self.loop_value(it)))
                else:
                    for n in ast.walk(node.target):
                        if isinstance(n, ast.Name):
                            assigns.append((n.id, lambda: VARYING))
            elif isinstance(node, (ast.NamedExpr, ast.With, ast.comprehension)):
                for n in ast.walk(node):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        assigns.append((n.id, lambda: VARYING))
        single = {}
        for name, _ in assigns:
            single[name] = single.get(name, 0) + 1
        for _ in range(8):
            new: dict[str, object] = {}
            for name, thunk in assigns:
                if self.names.get(name) is ARRAY:
                    continue
                v = thunk()
                if single[name] > 1 and isinstance(v, Affine):  # a thread index reassigned: not followed
                    v = VARYING
                new[name] = join(new.get(name), v)
            if all(self.names.get(k) == v for k, v in new.items()):
                break
            self.names.update(new)
        else:
            for name in {n for n, _ in assigns}:
                if self.names.get(name) is not ARRAY:
                    self.names[name] = VARYING

    def loop_value(self, it: ast.Call):
        values = [self.value(a) for a in it.args]
        if all(isinstance(v, Uniform) for v in values):
            return Uniform()
        return BlockUniform() if all(uniformish(v) for v in values) else VARYING

    # -- expressions
    def value(self, node):
        if isinstance(node, ast.Constant):
            return Uniform(node.value) if type(node.value) is int else Uniform()
        if isinstance(node, ast.Name):
            v = self.names.get(node.id)
            if v is ARRAY:
                return VARYING
            if v is None:  # not yet bound in the fixed point, or a global: module globals are constants
                return None if node.id in self.names or self.assigned(node.id) else Uniform()
            return v
        if isinstance(node, ast.Attribute):
            owner = self.intrinsic(node.value)
            if owner in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
                if owner == "threadIdx":
                    return Affine("tid", 1, 0) if node.attr == "x" else VARYING
                return BlockUniform() if owner == "blockIdx" else Uniform()
            if isinstance(node.value, ast.Name) and self.names.get(node.value.id) is ARRAY \
                    and node.attr in ("size", "shape", "ndim"):
                return Uniform()
            return VARYING
        if isinstance(node, ast.Subscript):  # x.shape[k]; any other element is data
            inner = node.value
            if isinstance(inner, ast.Attribute) and inner.attr == "shape" and isinstance(inner.value, ast.Name) \
                    and self.names.get(inner.value.id) is ARRAY:
                return Uniform()
            return VARYING
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return mul(self.value(node.operand), Uniform(-1))
        if isinstance(node, (ast.Compare, ast.BoolOp, ast.UnaryOp)):  # a test: uniform where its operands are
            parts = [self.value(n) for n in ([node.left] + node.comparators if isinstance(node, ast.Compare)
                                             else node.values if isinstance(node, ast.BoolOp) else [node.operand])]
            if all(isinstance(v, Uniform) for v in parts):
                return Uniform()
            return BlockUniform() if all(uniformish(v) for v in parts) else VARYING
        if isinstance(node, ast.Call):
            name = self.intrinsic(node.func)
            if name == "grid" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value == 1:
                return Affine("grid", 1, 0)
            if name in ("gridsize", "laneid", "warpsize"):
                return Uniform() if name != "laneid" else VARYING
            if isinstance(node.func, ast.Name) and node.func.id in ("len", "min", "max", "int", "abs") \
                    and not self.intrinsic(node.func):
                values = [self.value(a) for a in node.args]
                if node.func.id == "len":
                    return Uniform()
                if all(isinstance(v, Uniform) for v in values):
                    return Uniform(values[0].value) if node.func.id == "int" and len(values) == 1 else Uniform()
                if all(uniformish(v) for v in values):
                    return BlockUniform()
            return VARYING
        return VARYING

    def assigned(self, name: str) -> bool:
        if self._stored is None:  # the names the function binds, found once
            self._stored = {n.id for n in ast.walk(self.tf.source.tree)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        return name in self._stored

    def binop(self, op, x, y):
        if x is None or y is None:
            return None
        if isinstance(op, ast.Add):
            return add(x, y)
        if isinstance(op, ast.Sub):
            return add(x, y, -1)
        if isinstance(op, ast.Mult):
            if isinstance(x, BlockUniform) and isinstance(y, Uniform) or isinstance(y, BlockUniform) \
                    and isinstance(x, Uniform):
                return BlockUniform(base=True)
            return mul(x, y)
        if isinstance(x, Uniform) and isinstance(y, Uniform):
            return Uniform()
        return BlockUniform() if uniformish(x) and uniformish(y) else VARYING

    # -- conditions: which threads they leave to run what they guard
    def room(self, node, positive: bool = True) -> tuple:
        """An interval ``[lo, hi)`` of thread indices ``t`` that surely pass ``node`` (or fail it,
        ``positive`` False) where the launch has threads enough: EVERY for a uniform test or symbolic
        bounds (``i < n``), ``[0, 32)`` below a constant bound (``tid < 32``), NOBODY for ``==`` and
        data-dependent tests (they may leave one thread)."""
        v = self.value(node)
        if uniformish(v):
            return EVERY
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.room(node.operand, not positive)
        if isinstance(node, ast.BoolOp):
            parts = [self.room(p, positive) for p in node.values]
            both = isinstance(node.op, ast.And) == positive  # the threads all parts leave, or any part
            return meet(parts) if both else max(parts, key=width)
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            parts = [self.compare(op, self.value(lhs), self.value(rhs), positive)
                     for op, lhs, rhs in zip(node.ops, operands, operands[1:])]
            return meet(parts) if positive else max(parts, key=width)  # a chain is a conjunction
        return NOBODY

    def compare(self, op, lhs, rhs, positive: bool) -> tuple:
        if uniformish(lhs) and uniformish(rhs):
            return EVERY
        flip = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
        if isinstance(rhs, Affine) and uniformish(lhs):
            lhs, rhs, op = rhs, lhs, flip.get(type(op), type(op))()
        if not (isinstance(lhs, Affine) and uniformish(rhs)):
            return NOBODY  # data-dependent: anything at all
        if isinstance(op, (ast.Eq, ast.NotEq)):
            return NOBODY if isinstance(op, ast.Eq) == positive else EVERY  # == picks a thread out
        if type(op) not in flip:
            return NOBODY
        if not positive:
            op = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt}[type(op)]()
        bound = rhs.value if isinstance(rhs, Uniform) else None
        if lhs.a < 0:  # -a*t + c op b  is  a*t - c flip(op) -b
            lhs, op = Affine(lhs.sym, -lhs.a, None if lhs.c is None else -lhs.c), flip[type(op)]()
            bound = None if bound is None else -bound
        if bound is None:
            return EVERY  # a symbolic bound (i < n, i > n0): as many threads as the launch is sized for
        if lhs.c is None:
            return NOBODY
        if isinstance(op, (ast.Gt, ast.GtE)):  # a*t + c > b: t from the first above it
            first = (bound - lhs.c) // lhs.a + 1 if isinstance(op, ast.Gt) else -(-(bound - lhs.c) // lhs.a)
            return (max(0, first), ALL)
        top = bound - lhs.c + (1 if isinstance(op, ast.LtE) else 0)  # a*t + c < top
        return (0, max(0, -(-top // lhs.a)))

    # -- the walk
    def walk(self, stmts, room: tuple = EVERY, arms: tuple = ()) -> tuple:
        """Record ``stmts``' accesses; the room the statements after them run in (exits narrow it)."""
        for stmt in stmts:
            barrier = self.has_barrier(stmt)
            if barrier:
                self.barriers.append((self.epoch, stmt))
                self.epoch += 1
            room = self.statement(stmt, room, arms)
            if barrier:
                self.epoch += 1
        return room

    def has_barrier(self, stmt) -> bool:
        return any(isinstance(n, ast.Call) and (self.intrinsic(n.func) or "").startswith("syncthreads")
                   for n in ast.walk(stmt))

    def statement(self, stmt, room: tuple, arms: tuple) -> tuple:
        if isinstance(stmt, ast.If):
            self.reads(stmt.test, room, arms)
            divergent = not uniformish(self.value(stmt.test))
            ident = next(self.ifs)
            then_arms = arms if divergent else arms + ((ident, 0),)
            else_arms = arms if divergent else arms + ((ident, 1),)
            taken, not_taken = self.room(stmt.test), self.room(stmt.test, False)
            self.divergent += divergent
            after_then = self.walk(stmt.body, meet([room, taken]), then_arms)
            after_else = self.walk(stmt.orelse, meet([room, not_taken]), else_arms)
            self.divergent -= divergent
            exits_then, exits_else = self.exits(stmt.body), self.exits(stmt.orelse)
            if exits_then and exits_else:
                return NOBODY
            if exits_then:  # if <cond>: return ... what follows runs where the condition is false
                return meet([room, not_taken, after_else])
            if exits_else:
                return meet([room, taken, after_then])
            nested = self.exits_somewhere(stmt.body) or self.exits_somewhere(stmt.orelse)
            return NOBODY if nested and divergent else room  # an exit deeper inside: what follows is not followed
        if isinstance(stmt, (ast.For, ast.While)):
            if isinstance(stmt, ast.While):
                self.reads(stmt.test, room, arms)
                trips = EVERY if uniformish(self.value(stmt.test)) else NOBODY
            else:
                self.reads(stmt.iter, room, arms)
                loop = self.value(stmt.target) if isinstance(stmt.target, ast.Name) else VARYING
                trips = EVERY if uniformish(loop) else NOBODY
            self.divergent += trips != EVERY
            inner = self.walk(stmt.body, meet([room, trips]), arms)
            self.walk(stmt.orelse, meet([room, trips, inner]), arms)
            self.divergent -= trips != EVERY
            return NOBODY if self.exits_somewhere(stmt.body, loops=False) else room
        if isinstance(stmt, ast.Assign):
            self.reads(stmt.value, room, arms)
            for target in stmt.targets:
                self.store(target, room, arms)
            return room
        if isinstance(stmt, ast.AugAssign):
            self.reads(stmt.value, room, arms)
            if isinstance(stmt.target, ast.Subscript):
                self.reads(stmt.target, room, arms, as_load=True)
            self.store(stmt.target, room, arms)
            return room
        if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
            if isinstance(stmt, ast.Return) and self.divergent and self.shared_writes:
                self.early_returns.append((stmt, self.epoch, self.shared_writes[0]))
            return room
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.reads(child, room, arms)
        if isinstance(getattr(stmt, "body", None), list):  # with, try: their bodies in order
            return self.walk(stmt.body, room, arms)
        return room

    @staticmethod
    def exits(stmts) -> bool:
        return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Break, ast.Continue))

    @staticmethod
    def exits_somewhere(stmts, loops: bool = True) -> bool:
        kinds = (ast.Return, ast.Break, ast.Continue) if loops else (ast.Return,)
        return any(isinstance(n, kinds) for s in stmts for n in ast.walk(s))

    def reads(self, node, room: tuple, arms: tuple, as_load: bool = False) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Subscript) and (as_load or isinstance(n.ctx, ast.Load)):
                self.access(n, False, room, arms)

    def store(self, target, room: tuple, arms: tuple) -> None:
        if isinstance(target, ast.Subscript):
            self.reads(target.slice, room, arms)
            self.access(target, True, room, arms)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.store(t, room, arms)

    def access(self, node: ast.Subscript, write: bool, room: tuple, arms: tuple) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.arrays and not isinstance(node.slice, ast.Tuple):
            self.accesses.append(Access(node.value.id, write, self.value(node.slice), node, room, self.epoch, arms))
            if write and node.value.id in self.shared:
                self.shared_writes.append(node)

    # -- the races it proves
    def race(self) -> tuple[ast.AST, str] | None:
        for acc in self.accesses:
            if acc.write and width(acc.room) >= 2 and uniformish(acc.index):
                return acc.node, (f"every thread of a block writes {ast.unparse(acc.node)} (line "
                                  f"{self.line(acc.node)}): a write-after-write race on the differentiated "
                                  f"array {acc.array}")
        for w in self.accesses:
            if not w.write or not isinstance(w.index, Affine) or w.index.c is None:
                continue
            for other in self.accesses:
                o = other.index
                if other is w or other.array != w.array or other.epoch != w.epoch \
                        or not isinstance(o, Affine) or o.sym != w.index.sym or o.a != w.index.a or o.c is None \
                        or o.c == w.index.c or (w.index.c - o.c) % w.index.a or self.exclusive(w.arms, other.arms):
                    continue
                k = (w.index.c - o.c) // w.index.a
                if width(meet([w.room, other.room])) <= abs(k):  # both threads pass both accesses' conditions
                    continue
                index = "cuda.grid(1)" if w.index.sym == "grid" else "cuda.threadIdx.x"
                who = "the next thread" if k == 1 else "the thread before" if k == -1 else \
                    f"the thread {abs(k)} {'after' if k > 0 else 'before'}"
                kind = "write-after-write" if other.write else "read-write"
                return w.node, (f"{ast.unparse(w.node)} (line {self.line(w.node)}) written by one thread is "
                                f"{'written' if other.write else 'read'} as {ast.unparse(other.node)} (line "
                                f"{self.line(other.node)}) by {who} in {index}, with no barrier between: a {kind} "
                                f"race on the differentiated array {w.array}")
        return None

    def early_exit(self) -> tuple[ast.AST, str] | None:
        """A thread that may return after writing a shared array and before a barrier: its reverse
        sweep runs as it returns, before the threads past the barrier add into its shadow what they
        read of the array, so that part of the adjoint would be lost."""
        for ret, epoch, write in self.early_returns:
            later = [b for e, b in self.barriers if e >= epoch]
            if later:
                name = write.value.id
                return ret, (f"a thread may return here (line {self.line(ret)}) after writing the shared array "
                             f"{name} ({ast.unparse(write)}, line {self.line(write)}) and before the barrier at "
                             f"line {self.line(later[0])}: its reverse sweep would run before the other threads "
                             f"add what they read of {name} after the barrier into its shadow, losing that adjoint")
        return None

    @staticmethod
    def exclusive(a: tuple, b: tuple) -> bool:
        arms = dict(a)
        return any(ident in arms and arms[ident] != arm for ident, arm in b)

    def line(self, node) -> int:
        return self.tf.source.loc(node).line


def check_races(rec, tf) -> None:
    """The adjoint job ``rec``'s primal kernel ``tf``: a race proved is a located error.

    Only the kernel's own body: a device function's accesses depend on the conditions it is called
    under and on its arguments, which this walk does not carry into it (racecheck sees those)."""
    check = RaceCheck(tf)
    check.walk(tf.source.tree.body)
    found = check.race()
    exit_found = None if found else check.early_exit()
    if exit_found:
        node, what = exit_found
        raise tf.source.error(node, f"an early exit cannot be differentiated: {what}; job #{rec.id} {rec.name} takes "
                                    f"the adjoint of {tf.name}",
                              "let every thread reach the barriers and guard the work instead (`if i < n:` around "
                              "it), or return before the first write to shared memory")
    if found:
        node, what = found
        raise tf.source.error(node, f"a race cannot be differentiated: {what}; job #{rec.id} {rec.name} takes the "
                                    f"adjoint of {tf.name}",
                              "give each element one writer (index by cuda.grid(1), guard with `if i == 0:`), "
                              "write the result into another array than the one read, or use cuda.atomic.add; "
                              "--sanitize racecheck finds at run time the races this check cannot prove")
