"""Type inference: Python AST + argument types -> the type of every expression and variable.

Variables get one type for the whole function: the unification of everything
assigned to them (numba unifies across branches the same way); a variable given
values of types that do not unify is split into numba's SSA versions where they
never meet (variable_versions.py), and the copy is typed again. Inference runs
over the body until no variable's type changes, then once more strictly,
where anything still unknown is an error.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import math
from dataclasses import field

import numpy as np

from kdebug.errors import CompileError
from kdebug.frontend.source import FunctionSource, parse_function
from kdebug.frontend import complex_numbers as C, datetimes as D, enums as EN, records as R, registry
from kdebug.frontend import strings as S
from kdebug.frontend import vectors as V
from kdebug.frontend.exceptions import type_raise
from kdebug.frontend.registry import PyValue
from kdebug.frontend.slices import slice_type
from kdebug.lang.dispatcher import DeviceCallable, Dispatcher, HostFunction, kernel_value
from kdebug.lang.foreign_arrays import as_cuda_array, is_cuda_array
from kdebug.lang.host import DeviceNDArray
from kdebug.lang import types as T
from kdebug.lang import intrinsics as I
from kdebug.frontend.unroll import unrolled
from kdebug.frontend.variable_versions import VariableVersioned, versioned_source
from kdebug.lazy_dataclasses import dataclass

SUPPORTED = ("if/elif/else, for over range(), while, break, continue, return, assignment, "
             "augmented assignment and calls to math functions, cuda intrinsics and device functions")


@dataclass(frozen=True)
class LaunchTarget(T.Type):
    """``kernel[grid, block]`` inside a kernel: calling it launches a child grid."""

    kernel: object

    def __str__(self) -> str:
        return f"launch<{self.kernel.__name__}>"

    def __hash__(self) -> int:
        return id(self.kernel)

    def __eq__(self, other) -> bool:
        return isinstance(other, LaunchTarget) and other.kernel is self.kernel


@dataclass
class DeferredRequest:
    """Code in this function that needs another job compiled: a device launch or a pointer."""

    node: ast.AST
    function: object  # Dispatcher
    argtypes: tuple
    reason: str  # launch, pointer or grad
    job_kind: str  # kernel, device or derivative


@dataclass
class TypedFunction:
    source: FunctionSource
    name: str
    kind: str  # kernel or device
    argnames: list[str]
    argtypes: tuple
    restype: T.Type = T.void
    locals: dict[str, T.Type] = field(default_factory=dict)
    types: dict[ast.AST, T.Type] = field(default_factory=dict)
    consts: dict[ast.AST, object] = field(default_factory=dict)
    callees: dict[ast.AST, "TypedFunction"] = field(default_factory=dict)
    # device calls with keywords or defaults: per parameter, ("arg", node) or ("default", value)
    call_bindings: dict[ast.AST, list] = field(default_factory=dict)
    deferred: list[DeferredRequest] = field(default_factory=list)
    features: set[str] = field(default_factory=set)  # e.g. "barrier", "atomic", "shared", "launch"
    # cuda.shared.array / cuda.local.array calls: (intrinsic name, constant shape, bytes), typed once
    arrays: dict[ast.AST, tuple] = field(default_factory=dict)
    # raise statements: (exception class, constant arguments) (kdebug/frontend/exceptions.py)
    raises: dict[ast.AST, tuple] = field(default_factory=dict)
    # expressions of numba's Optional type used where their value is needed: node -> (Optional type,
    # checked); checked: TypeError("expected T, got None") when None, unchecked where ``is None`` narrowed it
    unwraps: dict[ast.AST, tuple] = field(default_factory=dict)

    def intrinsic_called(self, node) -> str | None:
        """The name of the intrinsic (``syncthreads``, ``shfl_sync``, ``local.array``...) a call of this
        function's code names; None for another call or a node that is no call."""
        if not isinstance(node, ast.Call):
            return None
        t = self.types.get(node.func)
        return t.value.name if isinstance(t, PyValue) and isinstance(t.value, I.Intrinsic) else None

    def listing(self) -> str:
        """A readable summary, kept as the typeinfer phase's snapshot."""
        sig = ", ".join(f"{n}: {t}" for n, t in zip(self.argnames, self.argtypes))
        out = [f"def {self.name}({sig}) -> {self.restype}   # {self.kind}"]
        for name, t in sorted(self.locals.items()):
            if name not in self.argnames:
                out.append(f"    {name}: {t}")
        for req in self.deferred:
            out.append(f"    deferred {req.reason}: {req.function.__name__}({', '.join(map(str, req.argtypes))})")
        for callee in {id(c): c for c in self.callees.values()}.values():
            out.append(f"    calls {callee.name}({', '.join(map(str, callee.argtypes))}) -> {callee.restype}")
        return "\n".join(out)


class _Pending(Exception):
    """A name whose type is not known yet in a non-strict pass."""


def call_stack_names(stack) -> str:
    return " -> ".join(f.__name__ for f in stack)


class TypeInferer:
    def __init__(self, src: FunctionSource, argtypes: tuple, kind: str, stack: tuple = ()) -> None:
        self.src = src
        fn = src.function
        args = src.tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or (args.defaults and kind != "device"):
            raise src.error(src.tree, "kernels take plain positional parameters only",
                            "remove *args, **kwargs, keyword-only parameters and default values")
        argnames = [a.arg for a in args.args]
        if len(argnames) != len(argtypes):
            raise src.error(src.tree, f"{fn.__name__} takes {len(argnames)} arguments but "
                                      f"{len(argtypes)} were given", "pass one value per parameter")
        self.tf = TypedFunction(src, fn.__name__, kind, argnames, tuple(argtypes))
        self.tf.locals.update(zip(argnames, argtypes))
        self.stack = stack + (fn,)
        self.strict = False
        self.returns: list[T.Type] = []
        self.assigned = self._assigned_names(src.tree)
        self.unbound = _unbound_loads(src.tree, self.assigned - set(argnames))
        self.loop_depth = 0
        self.optional_ok: set = set()  # nodes whose Optional value is kept (is None, return, r = ...)
        self.narrowed: set = set()  # Optional variables known not to be None here (an ``is None`` test)

    # ---- driving -------------------------------------------------------------
    def run(self) -> TypedFunction:
        for _ in range(20):
            before = dict(self.tf.locals)
            self._pass()
            if self.tf.locals == before:
                break
        self.strict = True
        self._pass()
        rets = self.returns
        if rets:
            rt = rets[0]
            for r in rets[1:]:
                u = T.unify(rt, r)
                if u is None:
                    raise self.src.error(self.src.tree, f"{self.tf.name} returns both {rt} and {r}",
                                         "make every return statement return the same type")
                rt = u
            if rt != T.void and not _always_returns(self.src.tree.body):  # its end returns None
                opt = T.unify(rt, T.none)
                if opt is None:
                    last = self.src.tree.body[-1]
                    raise self.error(last, f"{self.tf.name} returns {rt}, but not on every path: it can reach its "
                                           f"end and return None", f"end {self.tf.name} with a return statement")
                rt = opt
            self.tf.restype = rt
        if self.tf.kind == "kernel" and self.tf.restype != T.void:
            raise self.src.error(self.src.tree, "a kernel cannot return a value",
                                 "write results into an array argument; use @cuda.jit(device=True) for functions that return")
        return self.tf

    def _pass(self) -> None:
        self.returns = []
        self.narrowed = set()
        self.tf.deferred = []
        self.tf.features = set()
        self.body(self.src.tree.body)

    @staticmethod
    def _assigned_names(tree) -> set[str]:
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        return names

    def error(self, node, message, hint=None) -> CompileError:
        return self.src.error(node, message, hint)

    # ---- statements -----------------------------------------------------------
    def body(self, stmts) -> None:
        k = 0
        while k < len(stmts):
            stmt = stmts[k]
            k += 1
            if getattr(stmt, "kdebug_unroll", None):  # literal_unroll over a mixed tuple: a copy per element
                copies = unrolled(self, stmt)
                if copies is not None:
                    stmts[k - 1:k] = copies
                    k -= 1
                    continue
            try:
                self.stmt(stmt)
            except _Pending:
                if self.strict:
                    raise

    def stmt(self, node) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{_describe(node)} is not supported in kernels",
                             f"kernels may use {SUPPORTED}")
        method(node)

    def stmt_Pass(self, node) -> None:
        pass

    def stmt_Raise(self, node) -> None:
        type_raise(self, node)

    def stmt_Expr(self, node) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.optional_ok.add(node.value)  # maybe(x) as a statement: its value is dropped, unchecked
        self.expr(node.value)

    def stmt_Assign(self, node) -> None:
        if all(isinstance(t, ast.Name) for t in node.targets):  # r = maybe(x): r holds the Optional
            self.optional_ok.add(node.value)
        value_t = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value_t, node.value)
        self.narrowed -= _stores(node.targets)

    def stmt_AnnAssign(self, node) -> None:
        raise self.error(node, "annotated assignments are not supported in kernels",
                         "drop the annotation; cast with a type instead, e.g. x = float32(0)")

    def assign(self, target, value_t, value_node) -> None:
        if isinstance(target, ast.Name):
            self.bind(target, target.id, value_t)
        elif isinstance(target, ast.Tuple):
            for elt in target.elts:
                if isinstance(elt, ast.Starred):
                    raise self.error(elt, "a starred assignment is not supported in kernels",
                                     "unpack into one name per element")
            if not isinstance(value_t, T.Tuple) or len(value_t.types) != len(target.elts):
                n = len(value_t.types) if isinstance(value_t, T.Tuple) else 1
                raise self.error(target, f"cannot unpack {value_t} into {len(target.elts)} names "
                                         f"(it holds {n})", "unpack a tuple of the same length")
            for elt, t in zip(target.elts, value_t.types):
                self.assign(elt, t, None)
        elif isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(self.expr(target.value), T.Record):
            R.store_type(self, target, value_t)  # a[i].x = v, a[i]['x'] = v
        elif isinstance(target, ast.Subscript):
            elem = self.subscript_store_type(target)
            if S.is_string(elem) or S.is_string(value_t):
                return S.check_store(self, target, value_t, elem)
            if isinstance(elem, T.Record) or isinstance(value_t, T.Record):
                if value_t != elem:
                    raise self.error(target, f"cannot store {value_t} into an array of {elem}",
                                     "copy a record of the same dtype (a[i] = a[j]) or assign its fields")
                return
            if not isinstance(value_t, T.Scalar):  # (a record was handled above)
                raise self.error(target, f"cannot store {value_t} into an array of {elem}",
                                 "store a scalar value")
            if (value_t.is_datetime or getattr(elem, "is_datetime", False)) and value_t != elem:
                raise self.error(target, f"cannot store {value_t} into an array of {elem}",
                                 "store a value of the array's datetime64/timedelta64 type and unit")
            if value_t.is_complex and not getattr(elem, "is_complex", False):
                raise self.error(target, f"cannot store {value_t} into an array of {elem}",
                                 "store z.real, z.imag or abs(z), or make the array complex")
        elif isinstance(target, ast.Attribute):
            raise self.error(target, "assigning to attributes is not supported in kernels",
                             "assign to a local variable or an array element")
        else:
            raise self.error(target, f"cannot assign to {_describe(target)}",
                             "assign to a name, a tuple of names or an array element")

    def bind(self, node, name: str, t: T.Type) -> None:
        if isinstance(t, (PyValue, LaunchTarget)):
            raise self.error(node, f"{name!r} would hold a Python object ({t}), not a value",
                             "call it directly instead of storing it in a variable")
        if isinstance(t, T.NoneType):
            raise self.error(node, f"{name!r} would hold None: kdebug does not give a variable numba's Optional type "
                                   f"by assigning None to it",
                             "device functions used as values must return something; for 'no value', return None "
                             "from a device function on one path (its result is Optional) or keep a separate flag")
        old = self.tf.locals.get(name)
        if old is None:
            self.tf.locals[name] = t
            return
        new = T.unify(old, t)
        if new is None:
            versioned = versioned_source(self.src, name, self.tf.argnames)  # numba's SSA versions of it
            if versioned is not None:
                raise VariableVersioned(versioned)
            raise self.error(node, f"variable {name!r} holds {old} in one place and {t} in another",
                             "a variable keeps one type where its values meet (after an if or around a "
                             "loop, as numba's); use a different name for each")
        self.tf.locals[name] = new

    def stmt_AugAssign(self, node) -> None:
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.name_type(target)
        elif isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(self.expr(target.value), T.Record):
            cur = R.store_type(self, target, T.int64)  # a[i].x += v
        elif isinstance(target, ast.Subscript):
            cur = self.subscript_store_type(target)
        else:
            raise self.error(target, f"cannot update {_describe(target)}",
                             "update a local variable or an array element")
        if isinstance(cur, T.Optional):
            raise self.error(target, f"cannot update {target.id!r} in place: it is {cur} (it may hold None)",
                             f"test '{target.id} is None' first, or write {target.id} = {target.id} "
                             f"{_OP_SYMBOL[type(node.op)]} ... (which raises TypeError when it is None, as numba)")
        rhs = self.expr(node.value)
        result = self.binop_type(node, node.op, cur, rhs)
        self.types_set(node, result)
        if isinstance(target, ast.Name):
            self.bind(target, target.id, result)

    def stmt_If(self, node) -> None:
        self.condition(node.test)
        saved = set(self.narrowed)
        name, in_body = self.none_test(node.test)
        self.narrowed = saved | {name} if name and in_body else set(saved)
        self.body(node.body)
        self.narrowed = saved | {name} if name and not in_body else set(saved)
        self.body(node.orelse)
        self.narrowed = saved - _stores(node.body) - _stores(node.orelse)
        if name:  # if r is None: return ...  -> r is not None after the if
            none_branch, value_branch = (node.orelse, node.body) if in_body else (node.body, node.orelse)
            if _no_fallthrough(none_branch) and name not in _stores(value_branch):
                self.narrowed.add(name)

    def none_test(self, test) -> tuple:
        """(name, True) for ``name is not None`` (``name`` is not None in the if's body), (name, False)
        for ``name is None`` (not None in its else), (None, False) for any other test."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
            return None, False
        a, b = test.left, test.comparators[0]
        if _is_none(a):
            a, b = b, a
        if not (isinstance(a, ast.Name) and _is_none(b)):
            return None, False
        return a.id, isinstance(test.ops[0], ast.IsNot)

    def stmt_While(self, node) -> None:
        if node.orelse:
            raise self.error(node, "while ... else is not supported in kernels", "move the else part after the loop, guarded by a flag")
        self.narrowed -= _stores(node.body)
        self.condition(node.test)
        self.loop_depth += 1
        self.body(node.body)
        self.loop_depth -= 1
        self.narrowed -= _stores(node.body)

    def stmt_For(self, node) -> None:
        if node.orelse:
            raise self.error(node, "for ... else is not supported in kernels", "move the else part after the loop, guarded by a flag")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and self.global_value(it.func.id, it.func) is range):
            raise self.error(it, "kernels can only loop over range(...)",
                             "write for i in range(n) and index arrays with i")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, "range() takes 1 to 3 positional arguments here", "write range(stop), range(start, stop) or range(start, stop, step)")
        argts = [self.expr(a) for a in it.args]
        loop_t = None
        for a, t in zip(it.args, argts):
            if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
                raise self.error(a, f"range() needs integer arguments, got {t}", "convert with int(...)")
            loop_t = T.unify(loop_t, t) if loop_t else t
            if not loop_t.is_int and not loop_t.is_bool:  # int64 with uint64 unifies to float64
                raise self.error(a, "range() arguments mix signed and unsigned 64-bit integers",
                                 "convert them to one type, e.g. int64(x)")
        loop_t = T.arith_result(loop_t, loop_t) if loop_t.bits < 64 or loop_t.is_bool else loop_t
        if len(it.args) == 3 and isinstance(it.args[2], ast.Constant) and it.args[2].value == 0:
            raise self.error(it.args[2], "range() step must not be zero", "use a positive or negative step")
        self.types_set(it, loop_t)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name", "write for i in range(...)")
        self.bind(node.target, node.target.id, loop_t)
        self.narrowed -= _stores(node.body) | {node.target.id}
        self.loop_depth += 1
        self.body(node.body)
        self.loop_depth -= 1
        self.narrowed -= _stores(node.body)

    def stmt_Break(self, node) -> None:
        if not self.loop_depth:
            raise self.error(node, "'break' outside a loop", "use break inside for or while")

    stmt_Continue = stmt_Break

    def stmt_Return(self, node) -> None:
        if node.value is None:
            self.returns.append(T.void)
            return
        self.optional_ok.add(node.value)  # return maybe(x): the Optional is returned as it is
        t = self.expr(node.value)
        if isinstance(t, T.NoneType):  # return None: numba's Optional with the other returns
            self.returns.append(T.none)
            return
        if self.tf.kind == "kernel":
            raise self.error(node, "a kernel cannot return a value",
                             "write results into an array argument; use @cuda.jit(device=True) for functions that return")
        if isinstance(t, (PyValue, LaunchTarget)):
            raise self.error(node.value, f"a device function cannot return {t}", "return a scalar, a tuple or an array")
        self.returns.append(t)

    # ---- expressions ------------------------------------------------------------
    def types_set(self, node, t) -> T.Type:
        self.tf.types[node] = t
        return t

    def expr(self, node) -> T.Type:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{_describe(node)} is not supported in kernels",
                             "kernels compute with scalars, tuples and array elements")
        t = method(node)
        if isinstance(t, T.Optional) and node not in self.optional_ok:
            # its value is needed: numba casts Optional(T) to T with a check (numba/core/optional.py,
            # optional_to_any): TypeError("expected T, got None"); none where an ``is None`` test narrowed it
            checked = not (isinstance(node, ast.Name) and node.id in self.narrowed)
            self.tf.unwraps[node] = (t, checked)
            if checked:
                self.tf.features.add("raise")
            t = t.type
        else:
            self.tf.unwraps.pop(node, None)
        return self.types_set(node, t)

    def condition(self, node) -> T.Type:
        t = self.expr(node)
        if not isinstance(t, T.Scalar):
            raise self.error(node, f"cannot use {t} as a condition", "compare values to get a boolean")
        return t

    def expr_Constant(self, node) -> T.Type:
        v = node.value
        if isinstance(v, bool):
            return T.boolean
        if isinstance(v, int):
            if not -2**63 <= v < 2**64:
                raise self.error(node, f"the integer {v} does not fit in 64 bits", "use a smaller number or a float")
            return T.int64 if v < 2**63 else T.uint64
        if isinstance(v, float):
            return T.float64
        if isinstance(v, complex):
            return T.complex128
        if v is None:
            return T.none
        if isinstance(v, (str, bytes)):  # numba's StringLiteral (kdebug/frontend/strings.py)
            return T.StringConstant(v)
        raise self.error(node, f"{type(v).__name__} constants are not supported in kernels",
                         "kernels work with numbers and booleans")

    def name_type(self, node) -> T.Type:
        name = node.id
        if node in self.unbound:
            raise self.error(node, f"variable {name!r} is used before it is assigned", "assign it first")
        if name in self.tf.locals:
            return self.tf.locals[name]
        if name in self.assigned:
            if self.strict:
                raise self.error(node, f"variable {name!r} is used before it is assigned", "assign it first")
            raise _Pending
        value = self.global_value(name, node)
        return self.classify(value, node)

    expr_Name = name_type

    def global_value(self, name, node):
        fn = self.src.function
        code = fn.__code__
        if name in code.co_freevars and fn.__closure__:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                return kernel_value(cell.cell_contents)
            except ValueError:
                raise self.error(node, f"closure variable {name!r} is not set yet", "define it before launching the kernel") from None
        if name in fn.__globals__:
            return kernel_value(fn.__globals__[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name {name!r} is not defined", "define it as a local, a parameter or a module global")

    def classify(self, value, node) -> T.Type:
        """The type of a Python object a kernel refers to (global, closure or attribute)."""
        value = kernel_value(value)  # a real numba's njit function or type (--numba=cuda-only): kdebug's
        if isinstance(value, HostFunction) and value.signatures or getattr(value, "_can_compile", True) is False:
            name = getattr(node, "id", getattr(node, "attr", "?"))  # numba's words (its CPU dispatcher's)
            raise self.error(node, f"Untyped global name {name!r}: using cpu function on device but its "
                                   "compilation is disabled (numba.jit with a signature compiles for the CPU only)",
                             f"drop the signature from @jit, or decorate {name} with @cuda.jit(device=True)")
        if isinstance(value, DeviceCallable):  # a @numba.jit function or a ufunc called from a kernel
            value = value.device_function

        if isinstance(value, I.Intrinsic):  # value intrinsics (cuda.laneid) are typed by the registry
            vt = registry.value_type(self, node, value)
            if vt is not None:
                self.tf.consts[node] = value
                return vt
        if isinstance(value, EN.enum.Enum):  # Color.red, Shape.circle: typed by their class
            self.tf.consts[node] = value
            return EN.member_type(self, node, value)
        if EN.is_enum_class(value):
            return PyValue(value)  # Color: its members are attributes and items
        if isinstance(value, (bool, int, float, complex, np.generic)) and not isinstance(value, np.ndarray):
            t = T.typeof(value)
            if t is None and isinstance(value, int):
                raise self.error(node, f"Int value is too large: {value}", "kernel integers are int64 or uint64")
            if t is None:
                raise self.error(node, f"constant of type {type(value).__name__} is not supported", "use a number")
            self.tf.consts[node] = value
            return t
        if isinstance(value, (str, bytes)):  # a global string: a constant, as numba freezes it
            return T.StringConstant(value)
        if isinstance(value, tuple):
            t = T.typeof(value)
            if not isinstance(t, T.Tuple) or not all(isinstance(x, T.Scalar) for x in t.types):
                raise self.error(node, "only tuples of numbers can be used as constants in kernels",
                                 "make every element an int, float or bool")
            self.tf.consts[node] = value
            return t
        if not isinstance(value, (np.ndarray, DeviceNDArray)) and is_cuda_array(value):
            value = as_cuda_array(value)  # as numba: the device array its __cuda_array_interface__ describes
        if isinstance(value, (np.ndarray, DeviceNDArray)):
            t = T.typeof(value)
            if t is None:
                raise self.error(node, f"array of dtype {value.dtype} is not supported in kernels",
                                 "use one of int8..int64, uint8..uint64, float32, float64, bool")
            self.tf.consts[node] = value
            if isinstance(value, np.ndarray):  # numba freezes a global numpy array into the kernel: a constant
                t = dataclasses.replace(t, readonly=True)
            return t
        if isinstance(value, type) and issubclass(value, np.generic) and T.from_dtype(value) is not None:
            value = T.from_dtype(value)  # np.float32(x) casts like numba's float32(x)
        if isinstance(value, (type(math), I.IntrinsicNamespace, I._CooperativeGroups, I._GridGroup)) \
                or registry.knows(value):
            return PyValue(value)  # a namespace (cuda, math, cuda.cg), or a callee the registry has
        if isinstance(value, np.ufunc):
            name = value.__name__
            raise self.error(node, f"numpy's {name} cannot be called in a kernel",
                             f"use math.{name} on one element at a time" if hasattr(math, name) else
                             "kernels call math functions on one element at a time")
        if callable(value) and (getattr(value, "__module__", None) or "").split(".")[0] == "numpy":
            name = getattr(value, "__name__", "this function")
            raise self.error(node, f"numpy's {name}() cannot be called in a kernel",
                             "kernels work one element at a time: loop over the elements, and allocate arrays on "
                             "the host (or with cuda.local.array / cuda.shared.array)")
        what = type(value).__name__
        if isinstance(value, type(_describe)):
            raise self.error(node, f"{value.__name__}() is a plain Python function, which kernels cannot call",
                             f"decorate {value.__name__} with @cuda.jit(device=True)")
        if isinstance(value, type(print)):
            raise self.error(node, f"{value.__name__}() cannot be called in a kernel",
                             "kernels can call abs, min, max, round, int, float, bool, len, range, "
                             "math functions, cuda intrinsics and device functions")
        raise self.error(node, f"{getattr(node, 'id', getattr(node, 'attr', '?'))!r} is a {what}, which kernels cannot use",
                         "kernels can use numbers, tuples and arrays defined at module level, math, cuda and device functions")

    def expr_Attribute(self, node) -> T.Type:
        base = node.value
        if node.attr == "data" and isinstance(base, ast.Attribute) and base.attr == "ctypes":
            if isinstance(self.expr(base.value), T.Array):  # numba's ArrayCTypes.data: the address, a uintp
                return T.uint64
        base_t = self.expr(base)
        attr = node.attr
        for hook in registry.ATTRIBUTE_HOOKS:  # the extension API's methods and attributes
            hooked = hook(self, node, base_t)
            if hooked is not None:
                return hooked
        if isinstance(base_t, T.Array):
            if attr in ("shape", "strides"):  # numba's strides are in bytes
                return T.Tuple((T.int64,) * base_t.ndim)
            if attr in ("size", "ndim"):
                return T.int64
            raise self.error(node, f"arrays have no attribute {attr!r} in kernels",
                             "use .shape, .strides, .size or .ndim")
        if isinstance(base_t, PyValue):
            obj = base_t.value
            if isinstance(obj, I.Dim3Intrinsic):
                if attr not in ("x", "y", "z"):
                    raise self.error(node, f"cuda.{obj.name} has no attribute {attr!r}", "use .x, .y or .z")
                return T.int32
            if not hasattr(obj, attr) and hasattr(obj, "_missing_attribute"):  # says what numba has instead
                raise self.error(node, *obj._missing_attribute(attr))
            if not hasattr(obj, attr):
                owner = getattr(obj, "__name__", None) or getattr(obj, "name", "this object")
                raise self.error(node, f"{owner} has no attribute {attr!r} that kdebug supports",
                                 "see docs/guide/kernel-language.md for the supported subset of math and cuda")
            return self.classify(getattr(obj, attr), node)
        if isinstance(base_t, T.Record):  # a[i].x
            return R.field_type(self, node, base_t)
        if EN.is_member(base_t):  # Color.red.value
            return EN.attribute_type(self, node, base_t)
        if isinstance(base_t, T.NamedTuple):  # p.x of a namedtuple
            if attr not in base_t.fields:
                raise self.error(node, f"{base_t} has no field {attr!r}", f"its fields: {', '.join(base_t.fields)}")
            return base_t.types[base_t.fields.index(attr)]
        if isinstance(base_t, V.VectorType):  # v.x
            return V.attribute_type(self, node, base_t)
        if isinstance(base_t, T.Scalar):  # z.real, z.imag, z.conjugate
            return C.attribute_type(self, node, base_t)
        hook = getattr(base_t, "attribute_type", None)  # types with attributes of their own (a grid group)
        if hook is not None:
            return hook(self, node)
        raise self.error(node, f"{base_t} has no attribute {attr!r}", "attributes exist on arrays (shape, size, ndim)")

    def expr_Subscript(self, node) -> T.Type:
        base_t = self.expr(node.value)
        if isinstance(base_t, PyValue):
            if isinstance(base_t.value, Dispatcher) and not base_t.value.device:
                return self.launch_config(node, base_t.value)
            if isinstance(base_t.value, Dispatcher):
                name = base_t.value.__name__
                raise self.error(node, f"{name} is a device function and cannot be launched",
                                 f"call it directly, {name}(...), or make it a kernel (@cuda.jit without device=True)")
            if EN.is_enum_class(base_t.value):  # Color["red"]
                return self.classify(EN.class_item(self, node, base_t.value), node)
            raise self.error(node, f"cannot index {base_t}", "index arrays and tuples")
        if isinstance(base_t, T.Record):  # a[i]['x']
            return R.field_type(self, node, base_t)
        if isinstance(base_t, T.Array):
            return self.array_index_type(node, base_t, view=True)
        if isinstance(base_t, T.CPointer):
            return self.pointer_index_type(node, base_t)
        if isinstance(base_t, T.Tuple):
            idx = node.slice
            it = self.expr(idx)
            k = constant_index(idx)
            if k is not None:
                n = len(base_t.types)
                if not -n <= k < n:
                    raise self.error(idx, f"tuple index {k} out of range for a tuple of {n}", f"use 0..{n - 1}")
                return base_t.types[k]
            if isinstance(it, T.Scalar) and it.is_int and len(set(base_t.types)) == 1:
                return base_t.types[0]
            if getattr(node, "kdebug_loop_iter", None) is not None:
                raise self.error(node.kdebug_loop_iter, f"a for loop cannot iterate over {base_t}, a tuple of mixed "
                                 "types (numba cannot either)", "write for x in numba.literal_unroll(t): numba's "
                                 "way to run the body once per element")
            raise self.error(idx, "tuples of mixed types must be indexed with a constant", "write t[0], t[1]...")
        raise self.error(node, f"cannot index a value of type {base_t}", "index arrays and tuples")

    def array_index_type(self, node, arr: T.Array, view: bool = False) -> T.Type:
        """The element type of ``arr[indices]``; with ``view``, fewer indices than dimensions give the
        sub-array (``a[i]`` of a 2-D array is row i, so ``a[i][j]`` works as in numba)."""
        idx = node.slice
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if any(isinstance(p, ast.Slice) for p in parts):
            return slice_type(self, node, arr, view)
        if len(parts) == 1 and arr.ndim > 1:
            t = self.expr(parts[0])
            if isinstance(t, T.Tuple) and len(t.types) == arr.ndim and all(isinstance(x, T.Scalar) and x.is_int for x in t.types):
                self.types_set(idx, t)
                return arr.dtype
        partial = view and len(parts) < arr.ndim
        if len(parts) != arr.ndim and not partial:
            raise self.error(idx, f"a {arr.ndim}-D array needs {arr.ndim} indices, got {len(parts)}",
                             "index every dimension, e.g. a[i, j] for a 2-D array")
        for p in parts:
            t = self.expr(p)
            if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
                raise self.error(p, f"array index must be an integer, not {t}", "convert with int(...)")
        if isinstance(idx, ast.Tuple):
            self.types_set(idx, T.Tuple(tuple(self.tf.types[p] for p in parts)))
        if not partial:
            return arr.dtype
        return T.Array(arr.dtype, arr.ndim - len(parts), arr.layout, arr.readonly, strided=arr.strided)

    def pointer_index_type(self, node, ptr: T.CPointer) -> T.Scalar:
        """``p[i]`` of a CPointer: one integer index, the pointee type (no bounds are known)."""
        it = self.expr(node.slice)
        if not (isinstance(it, T.Scalar) and it.is_int):
            raise self.error(node.slice, f"a pointer ({ptr}) is indexed with one integer, not {it}", "write p[i]")
        return self.types_set(node, ptr.dtype)

    def subscript_store_type(self, target) -> T.Scalar:
        base_t = self.expr(target.value)
        if isinstance(base_t, T.CPointer):
            return self.pointer_index_type(target, base_t)
        if isinstance(base_t, T.Tuple):
            raise self.error(target, "tuples cannot be changed", "use an array, e.g. cuda.local.array")
        if not isinstance(base_t, T.Array):
            raise self.error(target, f"cannot assign into {base_t}", "assign into an array element")
        if base_t.readonly:
            raise self.readonly_error(target, target.value, base_t)
        return self.types_set(target, self.array_index_type(target, base_t))

    def readonly_error(self, at, array_expr, arr: T.Array):
        """numba's "Cannot modify readonly array", saying why this one is read-only (error located at ``at``)."""
        root, target = array_expr, at
        while isinstance(root, ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name) and root.id not in self.tf.locals and root.id not in self.assigned:
            return self.error(target, f"module-global arrays are read-only in kernels ({root.id!r} is frozen "
                                      "into the kernel as a constant); pass the array as an argument",
                              f"add {root.id} as a kernel parameter and pass it at the launch")
        return self.error(target, f"Cannot modify readonly array of type: {arr}",
                          "pass a writable array (numpy: a.copy(), or set a.flags.writeable = True)")

    def launch_config(self, node, kernel) -> T.Type:
        idx = node.slice
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if not 2 <= len(parts) <= 4:
            raise self.error(idx, "a launch needs [grid, block]", "write kernel[blocks, threads](args)")
        for p in parts[:2]:
            t = self.expr(p)
            ok = isinstance(t, T.Scalar) and t.is_int or isinstance(t, T.Tuple) and 1 <= len(t.types) <= 3 \
                and all(isinstance(x, T.Scalar) and x.is_int for x in t.types)
            if not ok:
                raise self.error(p, f"grid and block must be integers or tuples of 1-3 integers, not {t}",
                                 "write kernel[blocks, threads](args)")
        for p in parts[2:]:
            self.expr(p)
        self.tf.features.add("launch")
        return LaunchTarget(kernel)

    def expr_Tuple(self, node) -> T.Type:
        ts = tuple(self.expr(e) for e in node.elts)
        for e, t in zip(node.elts, ts):
            if not isinstance(t, (T.Scalar, T.Tuple, T.Array, V.VectorType)):
                raise self.error(e, f"tuples cannot hold {t}", "build tuples of numbers")
        return T.Tuple(ts)

    def expr_BinOp(self, node) -> T.Type:
        return self.binop_type(node, node.op, self.expr(node.left), self.expr(node.right))

    def binop_type(self, node, op, a, b) -> T.Type:
        opname = _OP_SYMBOL.get(type(op))
        if opname is None:
            what = "the @ operator (matrix multiplication)" if isinstance(op, ast.MatMult) else f"operator {type(op).__name__}"
            raise self.error(node, f"{what} is not supported in kernels",
                             "use + - * / // % ** & | ^ << >>; multiply matrices with loops over their elements")
        for t in (a, b):
            if not isinstance(t, T.Scalar):
                hint = ("array expressions are not supported: index the elements, e.g. a[i] + b[i]"
                        if isinstance(t, T.Array) else "operators work on numbers")
                raise self.error(node, f"unsupported operand type for {opname}: {t}", hint)
        dt = D.binop_type(self, node, op, a, b)
        if dt is not None:
            return dt
        C.check_binop(self, node, op, a, b)
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)):
            self.tf.features.add("divide")  # debug=True checks the divisor (kdebug/frontend/exceptions.py)
        if a.is_complex or b.is_complex:
            r = T.arith_result(a, b)
            helper = C.helper_for(op)
            if helper is not None:  # complex / and **: device functions (kdebug/frontend/cmath_impl.py)
                callee = infer_function(helper.py_func, (r, r), "device", self.stack)
                self.tf.callees[node] = callee
                self.tf.features |= callee.features
            return r
        if isinstance(op, ast.Div):
            r = T.arith_result(a, b)
            return r if r.is_float else T.float64
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and a.is_bool and b.is_bool:
            return T.boolean
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
            if a.is_float or b.is_float:
                raise self.error(node, f"bitwise {opname} needs integers, got {a} and {b}", "convert with int(...)")
        if isinstance(op, ast.Pow):
            if a.is_float and (b.is_int or b.is_bool):  # numba's BinOpPower: float32 ** int stays float32
                return a
            if a.is_float or b.is_float or a.is_complex or b.is_complex:
                return T.arith_result(a, b)
            return T.int64
        return T.arith_result(a, b)

    def expr_UnaryOp(self, node) -> T.Type:
        t = self.expr(node.operand)
        if not isinstance(t, T.Scalar):
            raise self.error(node, f"unsupported operand type for unary operator: {t}", "operators work on numbers")
        if isinstance(node.op, ast.Not):
            return T.boolean
        if t.is_datetime:
            if t.kind == "timedelta" and isinstance(node.op, (ast.USub, ast.UAdd)):
                return t
            raise self.error(node, f"unsupported operand type for unary operator: {t}", "negate timedeltas only")
        if isinstance(node.op, ast.Invert):
            if t.is_float or t.is_complex:
                raise self.error(node, "~ needs an integer or boolean", "use -x for floats")
            return T.boolean if t.is_bool else T.arith_result(t, t)
        if t.is_float or t.is_complex:
            return t
        return T.arith_result(t, t)

    def expr_BoolOp(self, node) -> T.Type:
        ts = [self.expr(v) for v in node.values]
        r = ts[0]
        for v, t in zip(node.values[1:], ts[1:]):
            if not isinstance(t, T.Scalar) or not isinstance(r, T.Scalar):
                raise self.error(v, "'and'/'or' work on numbers and booleans", "compare values first")
            r = T.unify(r, t)
        return r

    def expr_Compare(self, node) -> T.Type:
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and (_is_none(node.left) or _is_none(node.comparators[0])):
            # x is None / x is not None (numba/core/typing/builtins.py, CmpOpIs: boolean for any operands;
            # numba/core/optional.py, optional_is_none: an Optional's valid bit; False for another type)
            self.optional_ok.update((node.left, node.comparators[0]))
            self.expr(node.left)
            self.expr(node.comparators[0])
            return T.boolean
        ts = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        by_enum = [EN.check_compare(self, node, op, a, b) for op, a, b in zip(node.ops, ts, ts[1:])]
        for op, c in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) and not any(by_enum):
                raise self.error(node, f"'{_CMP_SYMBOL[type(op)]}' is not supported in kernels", "compare numbers with == != < <= > >=")
        if any(S.is_string(t) for t in ts):  # strings (kdebug/frontend/strings.py)
            for op, a, b in zip(node.ops, ts, ts[1:]):
                S.check_compare(self, node, op, a, b)
            return T.boolean
        for t, n in zip(ts, [node.left] + node.comparators):
            if not isinstance(t, (T.Scalar, T.EnumMember)):
                raise self.error(n, f"cannot compare {t}", "compare numbers")
        for op, a, b, enum_cmp in zip(node.ops, ts, ts[1:], by_enum):
            if enum_cmp:
                continue
            C.check_compare(self, node, op, a, b)
            D.check_compare(self, node, a, b)
        return T.boolean

    def expr_IfExp(self, node) -> T.Type:
        self.condition(node.test)
        saved = set(self.narrowed)
        name, in_body = self.none_test(node.test)  # r if r is not None else 0.0
        self.narrowed = saved | {name} if name and in_body else set(saved)
        a = self.expr(node.body)
        self.narrowed = saved | {name} if name and not in_body else set(saved)
        b = self.expr(node.orelse)
        self.narrowed = saved
        u = T.unify(a, b)
        if u is None:
            raise self.error(node, f"the two branches give {a} and {b}", "make both branches the same type")
        return u

    def expr_Call(self, node) -> T.Type:
        """A call, typed by its callee's entry in the registry (kdebug/frontend/registry.py)."""
        callee, fn = registry.callee(self.expr(node.func))
        if node.keywords and not callee.keywords:
            raise self.error(node.keywords[0].value, "keyword arguments are not supported here", "pass arguments by position")
        return callee.type(self, node, fn)

    def device_call(self, node, fn, argts) -> T.Type:
        # a @cuda.jit function without device=True called from device code is compiled as a device
        # function for the call's types, as numba-cuda's CUDADispatcher.get_call_template does
        # (compile_device); a launch from device code is written k[grid, block](...)
        for a in list(node.args) + [k.value for k in node.keywords]:
            unwrap = self.tf.unwraps.get(a)
            if unwrap is not None and unwrap[1]:
                name = a.id if isinstance(a, ast.Name) else "the value"
                raise self.error(a, f"passing {unwrap[0]} (a value that may be None) to device function "
                                    f"{fn.__name__} is not supported in kdebug",
                                 f"test '{name} is None' first and pass it where it is not None "
                                 f"(if {name} is not None: {fn.__name__}(..., {name}, ...))")
        for a, t in zip(node.args, argts):
            if isinstance(t, PyValue) and not _first_class(t.value):
                raise self.error(a, f"cannot pass {t} to a device function",
                                 "pass numbers, tuples, arrays, device functions, intrinsics or types")
            if not (isinstance(t, (T.Scalar, T.Array, T.Tuple, T.Record, V.VectorType, T.EnumMember, PyValue))
                    or registry.data_model(t) is not None):
                raise self.error(a, f"cannot pass {t} to a device function", "pass numbers, tuples or arrays")
        nparams = fn.py_func.__code__.co_argcount
        if node.keywords or (len(argts) < nparams and fn.py_func.__defaults__):
            argts = self.bind_call_arguments(node, fn)
        if len(argts) != nparams:
            raise self.error(node, f"{fn.__name__} takes {nparams} argument(s) but {len(argts)} were given",
                             f"pass one value per parameter of {fn.__name__}")
        if isinstance(fn, Dispatcher) and fn.declared:  # numba: no new compilation, the arguments cast
            argts = self.declared_argtypes(node, fn, tuple(argts))
        if fn.py_func in self.stack:
            raise self.error(node, f"recursive call to {fn.__name__} ({call_stack_names(self.stack + (fn.py_func,))})",
                             "kernels cannot recurse through direct calls; use a loop, or kdebug.deferred for a pointer")
        try:
            callee = infer_function(fn.py_func, tuple(argts), "device", self.stack, at=(self.src, node))
        except CompileError as exc:  # a parameter used as an array's shape: numba types constants as literals
            literal = self.literal_arguments(node, argts)
            if literal is None or "must be compile-time constants" not in str(exc):
                raise
            callee = infer_function(fn.py_func, tuple(literal), "device", self.stack, at=(self.src, node))
        self.tf.callees[node] = callee
        self.tf.features |= callee.features
        self.tf.deferred.extend(callee.deferred)
        return callee.restype

    def declared_argtypes(self, node, fn, argts: tuple) -> tuple:
        """The argument types a call with ``argts`` compiles ``fn`` for where it was declared with signatures,
        as numba's dispatcher with compilation disabled resolves the call: a signature's number types where
        the call's numbers cast to them (``float32`` to a declared ``int32``, cast at the call; the exact
        match first), the call's own types for the rest (arrays, tuples...); no signature takes the numbers:
        ``argts`` as they are."""
        candidates = [tuple(s.argtypes) for s in fn.declared if len(s.argtypes) == len(argts)]
        candidates.sort(key=lambda want: want != argts)
        for want in candidates:
            if all(_converts(t, w) for t, w in zip(argts, want) if isinstance(t, T.Scalar)):
                return tuple(w if isinstance(t, T.Scalar) else t for t, w in zip(argts, want))
        return argts

    def literal_arguments(self, node, argts) -> list | None:
        """``argts`` with each integer argument whose value is a compile-time constant (a literal, a module
        global, a constant expression) typed as its literal, as numba's IntegerLiteral, and each tuple of
        such integers (``(4, 8)``) as a tuple of literals: the callee may use it as an array shape. None
        when no argument is one."""
        out, changed = list(argts), False
        for k, (arg, t) in enumerate(zip(node.args, argts)):
            if isinstance(t, T.Scalar) and t.is_int:
                literal = self._int_literal(arg, t)
            elif isinstance(t, T.Tuple) and type(t) is T.Tuple and t.types \
                    and all(isinstance(e, T.Scalar) and e.is_int for e in t.types):
                literal = self._tuple_literal(arg, t)
            else:
                continue
            if literal is not None:
                out[k], changed = literal, True
        return out if changed else None

    def _int_literal(self, arg, t: T.Scalar) -> T.IntLiteral | None:
        """``arg`` (of integer type ``t``) typed as its literal where its value is known when compiling."""
        if isinstance(arg, ast.Constant):
            value = arg.value
        elif isinstance(arg, ast.Name) and isinstance(self.tf.locals.get(arg.id), T.IntLiteral):
            value = self.tf.locals[arg.id].literal  # a literal parameter passed on
        else:
            value = self.tf.consts.get(arg)  # a module global or closure constant
        if isinstance(value, int) and not isinstance(value, bool):
            return T.IntLiteral(t.kind, t.bits, "", value)
        return None

    def _tuple_literal(self, arg, t: T.Tuple) -> T.Tuple | None:
        """A tuple of integers (``t``) whose values are all known when compiling, as a tuple of literals: a
        ``(4, 8)`` written in the call, a module-global tuple, or a literal tuple parameter passed on."""
        if isinstance(arg, ast.Name) and isinstance(self.tf.locals.get(arg.id), T.Tuple) \
                and all(isinstance(e, T.IntLiteral) for e in self.tf.locals[arg.id].types):
            return self.tf.locals[arg.id]
        if isinstance(arg, ast.Tuple) and len(arg.elts) == len(t.types):
            elements = [self._int_literal(e, et) for e, et in zip(arg.elts, t.types)]
            return T.Tuple(tuple(elements)) if all(e is not None for e in elements) else None
        value = self.tf.consts.get(arg)
        if isinstance(value, tuple) and len(value) == len(t.types) \
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return T.Tuple(tuple(T.IntLiteral(e.kind, e.bits, "", v) for e, v in zip(t.types, value)))
        return None

    def bind_call_arguments(self, node, fn) -> list:
        """Keyword arguments and defaults of a device-function call, folded as numba does; the
        bindings are kept for lowering (a default is a constant of the type numba gives its value)."""
        code = fn.py_func.__code__
        params = code.co_varnames[:code.co_argcount]
        defaults = fn.py_func.__defaults__ or ()
        first_default = len(params) - len(defaults)
        if len(node.args) > len(params):
            raise self.error(node, f"{fn.__name__} takes {len(params)} argument(s) but {len(node.args)} were given",
                             f"pass one value per parameter of {fn.__name__}")
        kw = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(k, "**kwargs is not supported in kernels", "pass each argument by name")
            if k.arg not in params:
                raise self.error(k, f"{fn.__name__}() got an unexpected keyword argument {k.arg!r}",
                                 f"its parameters are {', '.join(params)}")
            if params.index(k.arg) < len(node.args) or k.arg in kw:
                raise self.error(k, f"{fn.__name__}() got multiple values for argument {k.arg!r}",
                                 "pass it once")
            kw[k.arg] = k.value
        bound, argts = [], []
        for i, p in enumerate(params):
            arg = node.args[i] if i < len(node.args) else kw.get(p)
            if arg is not None:
                bound.append(("arg", arg))
                argts.append(self.expr(arg))
            elif i >= first_default:
                value = defaults[i - first_default]
                t = T.typeof(value)
                if not isinstance(t, (T.Scalar, T.Tuple)):
                    raise self.error(node, f"the default {value!r} of parameter {p!r} of {fn.__name__} cannot be "
                                           "used in a kernel", "give a number, a bool or a tuple of numbers")
                bound.append(("default", value))
                argts.append(t)
            else:
                raise self.error(node, f"{fn.__name__}() is missing argument {p!r}",
                                 f"pass one value per parameter of {fn.__name__} without a default")
        self.tf.call_bindings[node] = bound
        return argts


def _always_returns(stmts) -> bool:
    """Whether control can never fall off the end of ``stmts`` (every path returns or loops forever)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):  # a raise stops the thread: nothing is returned
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value:
        return not any(isinstance(n, ast.Break) for n in _loop_level(last.body))
    return False


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _stores(nodes) -> set:
    """The names ``nodes`` (statements or targets) assign anywhere inside."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _no_fallthrough(stmts) -> bool:
    """Whether ``stmts`` never go on to the statement after them (they return, raise, break or continue)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Break, ast.Continue)):
        return True
    if isinstance(last, ast.If):
        return _no_fallthrough(last.body) and _no_fallthrough(last.orelse)
    return _always_returns(stmts)


def _loop_level(stmts):
    """The statements of a loop body, not descending into nested loops (whose break is their own)."""
    for s in stmts:
        yield s
        if isinstance(s, ast.If):
            yield from _loop_level(s.body)
            yield from _loop_level(s.orelse)


def constant_index(node) -> int | None:
    """The value of a literal integer index such as ``2`` or ``-1`` (a unary minus in the AST), else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return sign * node.value
    return None


def _unbound_loads(tree, local: set) -> set:
    """Reads of local variables that no assignment can reach (Python's UnboundLocalError).

    A may-be-assigned analysis over the structured body: after an if, a name is
    assigned if either branch assigns it; inside a loop, anything the body
    assigns may already hold a value from an earlier iteration.
    """
    bad = set()

    def stores(nodes) -> set:
        return {n.id for node in nodes for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def loads(node, defined) -> None:
        if node is None:
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in local and n.id not in defined:
                bad.add(n)

    def block(stmts, defined) -> set:
        for s in stmts:
            defined = stmt(s, defined)
        return defined

    def stmt(s, defined) -> set:
        if isinstance(s, ast.Assign):
            loads(s.value, defined)
            for t in s.targets:
                loads(t, defined)  # indices of subscripted targets
            return defined | stores(s.targets)
        if isinstance(s, ast.AugAssign):
            loads(s.value, defined)
            if isinstance(s.target, ast.Name) and s.target.id in local and s.target.id not in defined:
                bad.add(s.target)
            loads(s.target, defined)
            return defined | stores([s.target])
        if isinstance(s, ast.If):
            loads(s.test, defined)
            return block(s.body, set(defined)) | block(s.orelse, set(defined))
        if isinstance(s, (ast.For, ast.While)):
            head = defined | stores(s.body) | (stores([s.target]) if isinstance(s, ast.For) else set())
            loads(s.iter if isinstance(s, ast.For) else s.test, defined if isinstance(s, ast.For) else head)
            block(s.body, set(head))
            return block(s.orelse, set(head))
        if isinstance(s, (ast.Expr, ast.Return)):
            loads(s.value, defined)
            return defined
        return defined | stores([s])  # anything else is reported as unsupported by the inferer

    block(tree.body, set())
    return bad


def _describe(node) -> str:
    names = {"ListComp": "a list comprehension", "DictComp": "a dict comprehension", "SetComp": "a set comprehension",
             "GeneratorExp": "a generator expression", "Lambda": "a lambda", "With": "a with statement",
             "Try": "a try statement", "Raise": "a raise statement", "FunctionDef": "a nested function",
             "ClassDef": "a class definition", "Import": "an import", "ImportFrom": "an import",
             "Global": "a global statement", "Nonlocal": "a nonlocal statement", "List": "a list",
             "Dict": "a dict", "Set": "a set", "JoinedStr": "an f-string", "Yield": "yield",
             "Await": "await", "Delete": "del", "Assert": "assert", "Starred": "a starred expression",
             "NamedExpr": "the walrus operator", "Match": "a match statement", "AsyncFunctionDef": "an async function"}
    return names.get(type(node).__name__, type(node).__name__)


_OP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
              ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_CMP_SYMBOL = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}

_cache: dict = {}


def _converts(t, want) -> bool:
    """A call's argument of type ``t`` casts to a declared parameter of type ``want``: numbers to numbers
    (not a complex to a real, as numba)."""
    if not (isinstance(t, T.Scalar) and isinstance(want, T.Scalar)):
        return False
    return t == want or not (t.is_complex and not want.is_complex)


def _first_class(value) -> bool:
    """Whether ``value`` may be passed to a device function as a compile-time argument, as numba's
    first-class functions and type arguments: a device function, an intrinsic (cuda.atomic.add, math.sin...),
    a kernel-language type (uint32, float64[::1]), a callee the registry knows; the callee is compiled
    for that value."""
    return (isinstance(value, (Dispatcher, DeviceCallable, I.Intrinsic, T.Type)) or registry.knows(value)) \
        and not isinstance(value, type(math))


def infer_function(py_func, argtypes: tuple, kind: str, stack: tuple = (), at=None,
                   src: FunctionSource | None = None) -> TypedFunction:
    """Type a Python function for the given argument types (memoised per process); ``src``: its source,
    when the caller has parsed it already."""
    key = (py_func, argtypes, kind)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    if src is None:
        src = parse_function(py_func)
    while True:
        try:
            tf = TypeInferer(src, argtypes, kind, stack).run()
            break
        except VariableVersioned as again:  # a variable reassigned with another type: its versions renamed
            src = again.source
    _cache[key] = tf
    return tf
