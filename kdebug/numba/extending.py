"""numba.extending and numba.cuda.extending under ``--numba``: the extension API a library written for
numba uses to add functions to kernels, honoured by kdebug's compiler.

- ``overload(func, target=...)``: a typing function called with the argument types of each call of
  ``func`` in a kernel; it returns the implementation (a Python function, compiled as a device function
  for those types) or None. Overloads for ``"cuda"`` are preferred to ``"generic"`` ones, as numba-cuda
  resolves them; ``"cpu"`` overloads are not for kernels.
- ``register_jitable``: a function callable from kernels (compiled where a kernel calls it) and from Python.
- ``intrinsic``: ``defn(typingctx, *argtypes) -> (signature, codegen)``; the call's lowering calls
  ``codegen(context, builder, signature, args)`` with kdebug's llvmlite builder, as numba does.

- ``overload_method(typ, "m")`` / ``overload_attribute(typ, "a")``: ``x.m(...)`` and ``x.a`` in kernels for a
  value whose kdebug type is an instance of ``typ`` (``types.Array``, ``types.Integer``, ``types.Record``...);
  the typing function gets the receiver's type first and returns the implementation, compiled as a
  device function with the receiver as its first argument.

What kdebug does not honour says so at the user's line: new types with a data model
(``register_model``, ``make_attribute_wrapper``, ``typeof_impl.register``, ``type_callable``,
``lower_builtin``): kdebug's compiler has no data-model or lowering registry for them.
"""
from __future__ import annotations

import inspect

from kdebug.errors import SourceLocation, TypingError
from kdebug.frontend.device_calls import lower_device_function
from kdebug.frontend.lower import const, llvm_type
from kdebug.frontend.registry import ATTRIBUTE_HOOKS, PyValue, lookup, register_callee
from kdebug.lang import types as T
from kdebug.lang.dispatcher import Dispatcher, host_jit
from kdebug.lang.missing import missing_name

_OVERLOADS: dict = {}  # func -> [(target, typing function)], in the order they were declared
_IMPLS: dict = {}  # (func, argtypes) -> the Dispatcher of the implementation chosen for those types
_TARGETS = ("cuda", "generic")  # what kernels take, best first


def _describe(argts) -> str:
    return ", ".join(map(str, argts))


def _overload_typer(func):
    name = getattr(func, "__name__", repr(func))

    def type_call(inferer, node, fn):
        argts = [inferer.expr(a) for a in node.args]
        kwts = {k.arg: inferer.expr(k.value) for k in node.keywords}
        key = (func, tuple(argts), tuple(sorted(kwts.items(), key=lambda kv: kv[0])))
        impl = _IMPLS.get(key)
        if impl is None:
            found = None
            for target in _TARGETS:
                for declared, typer in _OVERLOADS.get(func, ()):
                    if declared == target and found is None:
                        try:
                            found = typer(*argts, **kwts)
                        except TypingError:
                            raise
                        except Exception as exc:  # noqa: BLE001 - the library's typing function failed
                            raise inferer.error(node, f"the overload of {name} raised {type(exc).__name__}: {exc}",
                                                "fix the typing function, or call it with the types it handles") from None
            if found is None:
                raise inferer.error(node, f"No implementation of function {name} found for signature: "
                                          f"{name}({_describe(argts)})",
                                    "the overloads of this function return None for these types; for kernels "
                                    "kdebug uses those declared with target='cuda' or 'generic'")
            if not callable(found):
                raise inferer.error(node, f"the overload of {name} returned {found!r}, not an implementation",
                                    "return a Python function implementing the call")
            impl = _IMPLS[key] = Dispatcher(found, device=True)
        return inferer.device_call(node, impl, argts)

    def lower_call(lw, node, fn):  # the implementation, as any device function call (keywords, defaults)
        return lower_device_function(lw, node, None)

    return type_call, lower_call


def overload(func, jit_options=None, strict=True, inline="never", prefer_literal=False, target="generic",
             **kwargs):
    """numba's ``@overload(func)``: ``func``'s implementation in kernels for the types the decorated
    typing function accepts."""
    def decorate(typer):
        first = func not in _OVERLOADS
        _OVERLOADS.setdefault(func, []).append((target, typer))
        if first and lookup(func) is None:
            type_call, lower_call = _overload_typer(func)
            register_callee("overloads", f"{getattr(func, '__name__', func)}()", type_call, lower_call,
                            keys=[func], keywords=True)
        return typer
    return decorate


def register_jitable(*args, **kwargs):
    """numba's ``@register_jitable``: the function runs as Python on the host and compiles as a device
    function where a kernel calls it."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return host_jit(args[0])
    return lambda fn: host_jit(fn, **kwargs)


class _CodegenContext:
    """What an intrinsic's codegen gets as numba's target context: constants, LLVM types and casts."""

    def __init__(self, lowerer) -> None:
        self._lw = lowerer

    def get_constant(self, ty, value):
        return const(ty, value)

    def get_value_type(self, ty):
        return llvm_type(ty)

    get_data_type = get_value_type

    def cast(self, builder, value, fromty, toty):
        return self._lw.cast(value, fromty, toty)


class Intrinsic:
    """numba's ``@intrinsic`` function: typed by ``defn(typingctx, *argtypes)``, lowered by its codegen."""

    def __init__(self, defn, prefer_literal=False) -> None:
        self._defn = defn
        self.__name__ = getattr(defn, "__name__", "intrinsic")
        self.__wrapped__ = defn
        self._chosen: dict = {}
        register_callee("intrinsics (extension)", f"{self.__name__}()", self._type_call, self._lower_call,
                        keys=[self])

    def __call__(self, *args, **kwargs):
        raise TypingError(f"{self.__name__} is an @intrinsic: it can be called from kernels and device "
                          "functions, not from Python", None, "call it inside a @cuda.jit function")

    def _type_call(self, inferer, node, fn):
        argts = tuple(inferer.expr(a) for a in node.args)
        if argts not in self._chosen:
            try:
                result = self._defn(None, *argts)
            except Exception as exc:  # noqa: BLE001 - the library's typing failed
                raise inferer.error(node, f"the @intrinsic {self.__name__} raised {type(exc).__name__}: {exc}",
                                    "fix its typing, or call it with the types it handles") from None
            if result is None:
                raise inferer.error(node, f"No implementation of function {self.__name__} found for signature: "
                                          f"{self.__name__}({_describe(argts)})", "call it with the types it handles")
            sig, codegen = result
            if not isinstance(sig, T.Signature):
                raise inferer.error(node, f"the @intrinsic {self.__name__} returned {sig!r} as its signature",
                                    "return (restype(argtypes...), codegen)")
            self._chosen[argts] = (sig, codegen)
        sig, _ = self._chosen[argts]
        return sig.restype if sig.restype is not None else T.void

    def _lower_call(self, lw, node, fn):
        argts = tuple(lw.type_of(a) for a in node.args)
        sig, codegen = self._chosen[argts]
        args = [lw.cast(lw.expr(a), t, want) for a, t, want in zip(node.args, argts, sig.argtypes)]
        return codegen(_CodegenContext(lw), lw.builder, sig, args)


def intrinsic(*args, **kwargs):
    """numba's ``@intrinsic`` (and ``@intrinsic(prefer_literal=True)``)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return Intrinsic(args[0])
    return lambda defn: Intrinsic(defn, **kwargs)


# ---- overload_method / overload_attribute -------------------------------------------------------
_METHODS: list = []  # (type class, method name, target, typing function), in the order declared
_ATTRIBUTES: list = []  # (type class, attribute name, target, typing function)


def _declared(table, base_t, attr):
    """The typing functions for ``attr`` of a value of type ``base_t``, cuda ones before generic ones."""
    found = [(target, typer) for cls, name, target, typer in table
             if name == attr and target in _TARGETS and isinstance(cls, type) and isinstance(base_t, cls)]
    return [typer for target in _TARGETS for t, typer in found if t == target]


def _implementation(inferer, node, typers, what: str, argts, kwts):
    """The first implementation a typing function returns for these types, as a device-function Dispatcher."""
    for typer in typers:
        try:
            found = typer(*argts, **kwts)
        except TypingError:
            raise
        except Exception as exc:  # noqa: BLE001 - the library's typing function failed
            raise inferer.error(node, f"the overload of {what} raised {type(exc).__name__}: {exc}",
                                "fix the typing function, or call it with the types it handles") from None
        if found is None:
            continue
        if not callable(found):
            raise inferer.error(node, f"the overload of {what} returned {found!r}, not an implementation",
                                "return a Python function implementing it")
        return Dispatcher(found, device=True)
    raise inferer.error(node, f"No implementation of function {what} found for signature: "
                              f"{what}({_describe(argts)})",
                        "the overloads return None for these types; for kernels kdebug uses those declared with "
                        "target='cuda' or 'generic'")


class BoundOverloadMethod:
    """``x.method`` where an ``overload_method`` declares ``method`` for x's type: called, it is the
    implementation the typing function returns, with ``x`` as its first argument (as numba)."""

    def __init__(self, receiver, receiver_type, attr: str, typers) -> None:
        self.receiver, self.receiver_type, self.attr, self.typers = receiver, receiver_type, attr, typers
        self.__name__ = f"{receiver_type}.{attr}"


def _method_call_node(node):
    """``x.m(a, k=b)`` as the call ``impl(x, a, k=b)``: the node typing and lowering see (made once)."""
    call = getattr(node, "kdebug_method_call", None)
    if call is None:
        import ast
        call = ast.Call(func=node.func, args=[node.func.value, *node.args], keywords=list(node.keywords))
        ast.copy_location(call, node)
        node.kdebug_method_call = call
    return call


def _type_method_call(inferer, node, bound):
    call = _method_call_node(node)
    argts = [inferer.expr(a) for a in call.args]
    kwts = {k.arg: inferer.expr(k.value) for k in call.keywords}
    key = ("method", tuple(bound.typers), tuple(argts), tuple(sorted(kwts.items(), key=lambda kv: kv[0])))
    impl = _IMPLS.get(key)
    if impl is None:
        impl = _IMPLS[key] = _implementation(inferer, node, bound.typers, bound.__name__, argts, kwts)
    return inferer.device_call(call, impl, argts)


def _lower_method_call(lw, node, fn):
    return lower_device_function(lw, node.kdebug_method_call, None)


register_callee("overloads", "overload_method methods", _type_method_call, _lower_method_call,
                kind=BoundOverloadMethod, keywords=True)


def _attribute_hook(inferer, node, base_t):
    """``x.attr`` in a kernel: an overload_attribute's implementation called with ``x``, or an
    overload_method's bound method; None where none is declared for x's type."""
    if isinstance(base_t, PyValue) or not (_METHODS or _ATTRIBUTES):
        return None
    typers = _declared(_ATTRIBUTES, base_t, node.attr)
    if typers:
        import ast
        call = getattr(node, "kdebug_attribute_call", None)
        if call is None:
            call = ast.copy_location(ast.Call(func=node, args=[node.value], keywords=[]), node)
            node.kdebug_attribute_call = call
        key = ("attribute", tuple(typers), base_t)
        impl = _IMPLS.get(key)
        if impl is None:
            impl = _IMPLS[key] = _implementation(inferer, node, typers, f"{base_t}.{node.attr}", [base_t], {})
        return inferer.device_call(call, impl, [base_t])
    typers = _declared(_METHODS, base_t, node.attr)
    if typers:
        return PyValue(BoundOverloadMethod(node.value, base_t, node.attr, tuple(typers)))
    return None


ATTRIBUTE_HOOKS.append(_attribute_hook)


def overload_method(typ, attr, **kwargs):
    """numba's ``@overload_method(types.Array, "name")``: ``x.name(...)`` for a value whose type is an
    instance of ``typ``; the typing function gets the receiver's type first, as in numba."""
    target = kwargs.get("target", "generic")
    _check_type_class(typ, "overload_method")

    def decorate(typer):
        _METHODS.append((typ, attr, target, typer))
        return typer
    return decorate


def overload_attribute(typ, attr, **kwargs):
    """numba's ``@overload_attribute(types.Array, "name")``: ``x.name`` computed by the implementation the
    typing function returns for the receiver's type."""
    target = kwargs.get("target", "generic")
    _check_type_class(typ, "overload_attribute")

    def decorate(typer):
        _ATTRIBUTES.append((typ, attr, target, typer))
        return typer
    return decorate


def _check_type_class(typ, what):
    if not isinstance(typ, type):
        frame = inspect.stack()[2]
        raise TypingError(f"numba.extending.{what}({typ!r}, ...) takes a type class (types.Array, "
                          f"types.Integer...)", SourceLocation(frame.filename, frame.lineno, 1),
                          f"write @{what}(types.Array, 'name')")


def _not_here(what: str, instead: str, depth: int = 1):
    def refuse(*args, **kwargs):
        frame = inspect.stack()[depth]
        raise TypingError(f"{what}: kdebug does not honour it (kdebug's types are not numba's: it has no data "
                          f"models or lowering registry for new types)",
                          SourceLocation(frame.filename, frame.lineno, 1), instead)
    return refuse


register_model = _not_here("numba.extending.register_model", "pass the data as arrays, records or tuples, "
                           "and give it methods with @overload_method or functions with @overload")
make_attribute_wrapper = _not_here("numba.extending.make_attribute_wrapper",
                                   "use a record dtype (its fields are attributes in kernels) or @overload_attribute")
type_callable = _not_here("numba.extending.type_callable", "write the function's typing with @overload")
lower_builtin = _not_here("numba.extending.lower_builtin", "write the implementation with @overload or @intrinsic")


class _Models:
    """numba's ``models`` / ``core_models`` namespace: the model classes an extension derives from exist, so
    its module imports; ``register_model`` then says at its line that kdebug does not honour them."""

    class DataModel:
        def __init__(self, dmm=None, fe_type=None, *args, **kwargs) -> None:
            self._fe_type = fe_type

    class StructModel(DataModel):
        def __init__(self, dmm=None, fe_type=None, members=()) -> None:
            super().__init__(dmm, fe_type)
            self._members = list(members)

    class PrimitiveModel(DataModel):
        pass

    class OpaqueModel(DataModel):
        pass


models = core_models = _Models


class _TypeofRegistry:
    """numba's ``typeof_impl`` (a singledispatch function): ``typeof_impl.register(cls)`` is accepted only as
    the start of a new type (with a data model kdebug does not have), so it says so there."""

    def register(self, cls):
        _not_here("numba.extending.typeof_impl.register",
                  "pass the object's data as arrays, records or tuples", depth=2)()

    def __call__(self, value, context=None):
        return T.typeof(value)


typeof_impl = _TypeofRegistry()


def __getattr__(name):
    return missing_name(__name__, name, 2)
