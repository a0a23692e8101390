"""The extension API a library written for numba uses to add functions to kernels (numba.extending and
numba.cuda.extending under ``--numba``: kdebug/numba/extending.py is this module), honoured by kdebug's
compiler.

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

- New types (numba's low-level API): a ``types.Type`` subclass with a data model (``register_model``:
  ``StructModel``, ``PrimitiveModel``, ``OpaqueModel``), ``make_attribute_wrapper`` for its members,
  ``type_callable`` + ``lower_builtin`` for functions and constructors (the implementation gets
  kdebug's llvmlite builder; ``numba.cuda.cgutils.create_struct_proxy`` builds struct values),
  ``numba.cuda.cudadecl.registry.register_attr`` + ``numba.cuda.cudaimpl.lower_attr`` for computed
  attributes, ``typeof_impl.register`` for the type of a Python object.

What kdebug does not honour says so at the user's line: ``lower_cast``, ``lower_constant``,
``lower_setattr``; extension-type values as kernel arguments (numba-cuda passes none either).
"""
from __future__ import annotations

import collections
import functools
import inspect
import uuid
import weakref

from kdebug.errors import LoweringError, SourceLocation, TypingError
from kdebug.frontend.device_calls import lower_device_function
from kdebug.frontend.lower import const, llvm_type
from kdebug.frontend.typeinfer import infer_function
from kdebug.frontend.registry import ATTRIBUTE_HOOKS, DATA_MODELS, PyValue, data_model, lookup, register_callee
from kdebug.lang import types as T
from kdebug.lang.dispatcher import Dispatcher, host_jit
from kdebug.lang.serialize import by_value
from kdebug.lang.missing import missing_name

_OVERLOADS: dict = {}  # func -> [(target, typing function, strict, prefer_literal)], in the order they were declared
_IMPLS: dict = {}  # (func, argtypes) -> the Dispatcher of the implementation chosen for those types
_TARGETS = ("cuda", "generic")  # what kernels take, best first


def _describe(argts) -> str:
    return ", ".join(map(str, argts))


def _overload_typer(func):
    name = getattr(func, "__name__", repr(func))

    def type_call(inferer, node, fn):
        argts = [inferer.expr(a) for a in node.args]
        kwts = {k.arg: inferer.expr(k.value) for k in node.keywords}
        literal = inferer.literal_arguments(node, argts)  # constant ints as numba's IntegerLiteral, or None
        kw_key = tuple(sorted(kwts.items(), key=lambda kv: kv[0]))
        key = (func, tuple(argts), tuple(literal or ()), kw_key)
        hit = _IMPLS.get(key)
        if hit is None:
            hit = _IMPLS[key] = _choose_overload(inferer, node, func, name, argts, literal, kwts)
        impl, types = hit
        return inferer.device_call(node, impl, types)

    def lower_call(lw, node, fn):  # the implementation, as any device function call (keywords, defaults)
        return lower_device_function(lw, node, None)

    return type_call, lower_call


def _ask(inferer, node, what: str, typer, argts, kwts):
    """What a typing function returns for these argument types: an implementation, or None. Its own
    TypingError goes to the caller; any other exception, or a result that is no function, is an error
    at the call."""
    try:
        found = typer(*argts, **kwts)
    except TypingError:
        raise
    except Exception as exc:  # noqa: BLE001 - the library's typing function failed
        raise inferer.error(node, f"the overload of {what} raised {type(exc).__name__}: {exc}",
                            "fix the typing function, or call it with the types it handles") from None
    if found is not None and not callable(found):
        raise inferer.error(node, f"the overload of {what} returned {found!r}, not an implementation",
                            "return a Python function implementing the call")
    return found


def _choose_overload(inferer, node, func, name, argts, literal, kwts):
    """The first overload (cuda ones, then generic ones, each in the order declared) whose typing function
    returns an implementation, and the argument types it was given. As numba's templates, a constant
    integer argument is offered both as its literal and as its type: literal first for an overload
    declared with ``prefer_literal=True``, last otherwise; a TypingError on one is answered by the other."""
    failure = None
    for target in _TARGETS:
        for declared, typer, strict, prefer_literal in _OVERLOADS.get(func, ()):
            if declared != target:
                continue
            tries = [argts] if literal is None else [literal, argts] if prefer_literal else [argts, literal]
            for types in tries:
                try:
                    found = _ask(inferer, node, name, typer, types, kwts)
                except TypingError as exc:
                    failure = failure or exc
                    continue
                if found is None:
                    continue
                if strict:  # numba's strict overloads: the implementation takes the typing function's parameters
                    problem = signature_mismatch(typer, found)
                    if problem:
                        raise inferer.error(node, problem, "give the implementation the same parameters as the "
                                                           "typing function")
                return Dispatcher(found, device=True), list(types)
    if failure is not None:
        raise failure
    raise inferer.error(node, f"No implementation of function {name} found for signature: "
                              f"{name}({_describe(argts)})",
                        "the overloads of this function return None for these types; for kernels "
                        "kdebug uses those declared with target='cuda' or 'generic'")


def overload(func, jit_options=None, strict=True, inline="never", prefer_literal=False, target="generic",
             **kwargs):
    """numba's ``@overload(func)``: ``func``'s implementation in kernels for the types the decorated
    typing function accepts."""
    def decorate(typer):
        first = func not in _OVERLOADS
        _OVERLOADS.setdefault(func, []).append((target, typer, strict, prefer_literal))
        if first and lookup(func) is None:
            type_call, lower_call = _overload_typer(func)
            register_callee("overloads", f"{getattr(func, '__name__', func)}()", type_call, lower_call,
                            keys=[func], keywords=True)
        return typer
    return decorate


def signature_mismatch(typing_func, impl_func) -> str | None:
    """How an overload's implementation's parameters differ from its typing function's, in numba's words
    (numba-cuda 0.30.4 ``_OverloadFunctionTemplate._validate_sigs``): None when they agree. Positional
    names must match (an implementation's ``*args`` may take the rest), keywords in name and default;
    ``**kwargs`` is refused on either side, ``*args`` in the typing function only with one in the
    implementation."""
    typing_sig, impl_sig = inspect.signature(typing_func), inspect.signature(impl_func)
    empty = inspect.Parameter.empty

    def split(sig):
        args, kws, pos = [], [], None
        for p in sig.parameters.values():
            if p.default is empty:
                args.append(p)
                if p.kind == p.VAR_POSITIONAL:
                    pos = p
                elif p.kind == p.VAR_KEYWORD:
                    raise ValueError("The use of VAR_KEYWORD (e.g. **kwargs) is unsupported. "
                                     f"(offending argument name is '{p}')")
            else:
                kws.append(p)
        return args, kws, pos

    try:
        ty_args, ty_kws, ty_pos = split(typing_sig)
        im_args, im_kws, im_pos = split(impl_sig)
    except ValueError as exc:
        return str(exc)
    sig_str = f"Typing signature:         {typing_sig}\nImplementation signature: {impl_sig}"
    prefix = "Typing and implementation arguments differ in "
    a, b = ty_args, im_args
    if ty_pos:
        if not im_pos:
            return (f"VAR_POSITIONAL (e.g. *args) argument kind (offending argument name is '{ty_pos}') found in "
                    f"the typing function signature, but is not in the implementing function signature.\n{sig_str}")
    elif im_pos:
        b = im_args[:im_args.index(im_pos)]
        if not b or b[-1] not in ty_args:
            first = b[-1] if b else im_pos
            return prefix + f"argument names.\n{sig_str}\nFirst difference: '{first}'"
        a = ty_args[:ty_args.index(b[-1]) + 1]

    def diff(typing, implementing):
        return f"Difference: {set(typing) ^ set(implementing)}"

    if a != b:
        return prefix + f"argument names.\n{sig_str}\n{diff(a, b)}"
    if [p.name for p in ty_kws] != [p.name for p in im_kws]:
        return prefix + f"keyword argument names.\n{sig_str}\n{diff(ty_kws, im_kws)}"
    if [p.default for p in ty_kws] != [p.default for p in im_kws]:
        return prefix + f"keyword argument default values.\n{sig_str}\n{diff(ty_kws, im_kws)}"
    return None


def register_jitable(*args, **kwargs):
    """numba's ``@register_jitable``: the function runs as Python on the host and compiles as a device
    function where a kernel calls it."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return host_jit(args[0])
    return lambda fn: host_jit(fn, **kwargs)


class _CodegenContext:
    """What a lowering implementation (an intrinsic's codegen, a ``lower_builtin`` or ``lower_getattr``
    function) gets as numba's target context: constants, LLVM types, casts, ``compile_internal``."""

    def __init__(self, lowerer, node=None) -> None:
        self._lw, self._node = lowerer, node

    def get_constant(self, ty, value):
        return const(ty, value)

    def get_value_type(self, ty):
        return llvm_type(ty)

    get_data_type = get_value_type

    def cast(self, builder, value, fromty, toty):
        return self._lw.cast(value, fromty, toty)

    def compile_internal(self, builder, impl, sig, args, locals=None):
        """numba's ``context.compile_internal``: ``impl`` compiled as a device function for ``sig``'s
        argument types and called with ``args``."""
        lw, node = self._lw, self._node
        callee = infer_function(impl, tuple(sig.argtypes), "device", (), at=(lw.src, node))
        result = lw.device_call(node, None, list(args), list(sig.argtypes), callee_tf=callee)
        if result is not None and sig.restype is not None and callee.restype != sig.restype:
            result = lw.cast(result, callee.restype, sig.restype)
        return result


class Intrinsic:
    """numba's ``@intrinsic`` function (its ``_Intrinsic``): typed by ``defn(typingctx, *argtypes)``,
    lowered by its codegen. Pickled by value, as numba does: an instance gets a UUID when first pickled,
    kept in ``_memo`` (weakly) and ``_recent`` (the last ones, strongly), and unpickling a UUID already in
    the memo gives that same object back."""

    _memo: "weakref.WeakValueDictionary[str, Intrinsic]" = weakref.WeakValueDictionary()
    _recent: collections.deque = collections.deque(maxlen=128)  # numba's config.FUNCTION_CACHE_SIZE
    _uuid_value: str | None = None

    def __init__(self, name, defn, prefer_literal=False, **kwargs) -> None:
        self._name = name
        self._defn = defn
        self._prefer_literal = prefer_literal
        self._ctor_kwargs = kwargs
        functools.update_wrapper(self, defn)  # its module, name, qualname, annotations and docstring, as numba
        self.__name__ = getattr(defn, "__name__", name)
        self._chosen: dict = {}

    def _register(self) -> None:
        """Nothing to do: kernels call any Intrinsic through the one entry of the callee registry for the
        class (numba registers a typing template per intrinsic)."""

    @property
    def _uuid(self) -> str:
        if self._uuid_value is None:
            self._set_uuid(str(uuid.uuid1()))
        return self._uuid_value

    def _set_uuid(self, u: str) -> None:
        self._uuid_value = u
        self._memo[u] = self
        self._recent.append(self)

    def __reduce__(self):
        return by_value(Intrinsic._rebuild, dict(uuid=self._uuid, name=self._name, defn=self._defn))

    @classmethod
    def _rebuild(cls, uuid, name, defn) -> "Intrinsic":
        try:
            return cls._memo[uuid]
        except KeyError:
            made = cls(name, defn)
            made._register()
            made._set_uuid(uuid)
            return made

    def __deepcopy__(self, memo):
        return self  # immutable, as numba's

    def __repr__(self) -> str:
        return f"<intrinsic {self._name}>"

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
        result = codegen(_CodegenContext(lw, node), lw.builder, sig, args)
        if result is None and sig.restype not in (None, T.void):  # numba's lowering says so too
            raise LoweringError("non-void function returns None from implementation", lw.loc(node),
                                f"return the {sig.restype} value from the codegen of @intrinsic {self.__name__}")
        return result


register_callee("intrinsics (extension)", "an @intrinsic function", lambda inferer, node, fn: fn._type_call(
    inferer, node, fn), lambda lw, node, fn: fn._lower_call(lw, node, fn), kind=Intrinsic)

_Intrinsic = Intrinsic  # numba's class name


def intrinsic(*args, **kwargs):
    """numba's ``@intrinsic`` (and ``@intrinsic(prefer_literal=True)``)."""
    def make(defn):
        made = Intrinsic(getattr(defn, "__name__", "intrinsic"), defn, **kwargs)
        made._register()
        return made
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return make(args[0])
    return make


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
        found = _ask(inferer, node, what, typer, argts, kwts)
        if found is not None:
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


# ---- new types: data models, attribute wrappers, typing and lowering registries -------------------
def _caller_location(depth: int = 2) -> SourceLocation:
    frame = inspect.stack()[depth]
    return SourceLocation(frame.filename, frame.lineno, 1)


class _Models:
    """numba's ``models`` / ``core_models``: the data model of an extension type says how a value of it is
    held in LLVM (``get_value_type()``); ``register_model(TypeClass)(Model)`` gives a type class one."""

    class DataModel:
        def __init__(self, dmm=None, fe_type=None, *args, **kwargs) -> None:
            self._dmm, self._fe_type = dmm, fe_type

        @property
        def fe_type(self):
            return self._fe_type

        def get_value_type(self):
            raise NotImplementedError(f"{type(self).__name__} gives no LLVM type: define get_value_type()")

        def get_data_type(self):
            return self.get_value_type()

    class PrimitiveModel(DataModel):
        """A value held as one LLVM value of ``be_type`` (an llvmlite type)."""

        def __init__(self, dmm=None, fe_type=None, be_type=None) -> None:
            super().__init__(dmm, fe_type)
            self._be_type = be_type

        def get_value_type(self):
            return self._be_type

    class OpaqueModel(PrimitiveModel):
        """An opaque pointer (numba's ``i8*``)."""

        def __init__(self, dmm=None, fe_type=None) -> None:
            from llvmlite import ir
            super().__init__(dmm, fe_type, ir.IntType(8).as_pointer())

    class StructModel(DataModel):
        """A struct of named members, each a kernel-language type (``[("lo", types.float64), ...]``)."""

        def __init__(self, dmm=None, fe_type=None, members=()) -> None:
            super().__init__(dmm, fe_type)
            self._members = list(members)
            self._fields = [name for name, _ in self._members]

        def get_value_type(self):
            from llvmlite import ir
            return ir.LiteralStructType([llvm_type(t) for _, t in self._members])

        def get_field_position(self, name: str) -> int:
            return self._fields.index(name)

        def get_member_fe_type(self, name: str):
            return self._members[self.get_field_position(name)][1]

        get_type = get_member_fe_type

    class ArgModel(StructModel):  # numba's name for a model used only as an argument's
        pass


models = core_models = _Models
_MODEL_CACHE: dict = {}


def register_model(typ):
    """numba's ``@register_model(TypeClass)``: values of instances of ``TypeClass`` are held as the model
    class's ``get_value_type()``; the decorated model class is returned unchanged."""
    _check_type_class(typ, "register_model")

    def decorate(model_cls):
        def model_of(t):
            try:
                return _MODEL_CACHE.setdefault((model_cls, t), model_cls(None, t))
            except TypeError:  # an unhashable type instance: a model each time
                return model_cls(None, t)
        DATA_MODELS[typ] = model_of
        return model_cls
    return decorate


_WRAPPED: list = []  # (type class, struct member, attribute name)


def make_attribute_wrapper(typ, struct_attr: str, python_attr: str) -> None:
    """numba's ``make_attribute_wrapper``: ``x.python_attr`` in kernels reads member ``struct_attr`` of the
    struct model of x's type."""
    _check_type_class(typ, "make_attribute_wrapper")
    _WRAPPED.append((typ, struct_attr, python_attr))


def _struct_member(model, struct_attr: str, where, node):
    fields = getattr(model, "_fields", None)
    if fields is None or struct_attr not in fields:
        raise where.error(node, f"the data model {type(model).__name__} has no member {struct_attr!r}",
                          "name a member of the StructModel in make_attribute_wrapper")
    return model.get_field_position(struct_attr), model.get_member_fe_type(struct_attr)


def _lower_wrapped(position: int):
    def lower(lw, node, base_t):
        return lw.builder.extract_value(lw.expr(node.value), position)
    return lower


def _matches(key, t) -> bool:
    """numba's registry key matching: a type class matches its instances, a type instance itself."""
    return isinstance(t, key) if isinstance(key, type) else key == t


def _extension_attribute(inferer, node, base_t):
    """``x.attr`` of an extension-type value: a wrapped struct member, or an AttributeTemplate's
    ``resolve_attr`` lowered by a ``lower_getattr`` implementation; None if neither declares it."""
    model = data_model(base_t)
    for typ, struct_attr, python_attr in _WRAPPED:
        if python_attr == node.attr and isinstance(base_t, typ) and model is not None:
            position, member_t = _struct_member(model, struct_attr, inferer, node)
            node.kdebug_attribute_lower = _lower_wrapped(position)
            return member_t
    for template in cuda_typing_registry.attribute_templates:
        if not _matches(template.key, base_t):
            continue
        resolve = getattr(template(None), f"resolve_{node.attr}", None)
        if resolve is None:
            continue
        result = resolve(base_t)
        if result is None:
            continue
        impl = _lowering_of_attribute(base_t, node.attr)
        if impl is None:
            raise inferer.error(node, f"{base_t}.{node.attr} is typed ({result}) but has no lowering",
                                f"declare its lowering with @lower_getattr({type(base_t).__name__}, "
                                f"{node.attr!r})")
        node.kdebug_attribute_lower = _lower_getattr_call(impl)
        return result
    return None


class _TypingRegistry:
    """numba.cuda.cudadecl's typing registry: ``register_attr`` takes an ``AttributeTemplate`` subclass whose
    ``resolve_<attr>(self, ty)`` types ``x.<attr>`` for values whose type matches its ``key``."""

    def __init__(self) -> None:
        self.attribute_templates: list = []

    def register_attr(self, template):
        self.attribute_templates.append(template)
        return template

    def _refused(what):
        def register(self, *args, **kwargs):
            raise TypingError(f"numba.cuda.cudadecl.registry.{what}: kdebug does not honour function templates",
                              _caller_location(), "type the function with @type_callable, or write it with @overload")
        return register

    register = _refused("register")
    register_global = _refused("register_global")
    del _refused


cuda_typing_registry = _TypingRegistry()


def _lower_getattr_call(impl):
    def lower(lw, node, base_t):
        return impl(_CodegenContext(lw, node), lw.builder, base_t, lw.expr(node.value))
    return lower


ATTRIBUTE_HOOKS.append(_extension_attribute)


class Registry:
    """numba's ``numba.cuda.core.imputils.Registry``: a table of lowering implementations. kdebug's
    lowering consults the builtin registry (``lower_builtin``) and the CUDA one (``numba.cuda.cudaimpl``),
    as numba's CUDA target installs them; another Registry is kept but not installed, as in numba."""

    def __init__(self, name: str = "unspecified") -> None:
        self.name = name
        self.functions: list = []  # (func, argument patterns, implementation)
        self.getattrs: list = []  # (type key, attribute, implementation)
        self.casts: list = []
        self.constants: list = []

    def lower(self, func, *argtys):
        def decorate(impl):
            self.functions.append((func, argtys, impl))
            return impl
        return decorate

    def lower_getattr(self, ty, attr):
        def decorate(impl):
            self.getattrs.append((ty, attr, impl))
            return impl
        return decorate

    def lower_getattr_generic(self, ty):
        return self.lower_getattr(ty, None)

    def _refused(what):
        def register(self, *args, **kwargs):
            raise TypingError(f"numba's Registry.{what}: kdebug does not honour it (it has no {what} hooks "
                              "for extension types)", _caller_location(), "write the conversion with @overload")
        return register

    lower_cast = _refused("lower_cast")
    lower_constant = _refused("lower_constant")
    lower_setattr = _refused("lower_setattr")
    del _refused


builtin_registry = Registry("builtin")
lower_builtin = builtin_registry.lower
lower_getattr = builtin_registry.lower_getattr
lower_getattr_generic = builtin_registry.lower_getattr_generic


cuda_registry = Registry("cudaimpl")  # numba.cuda.cudaimpl's registry


def _installed():
    return (builtin_registry, cuda_registry)


def _pattern_matches(pattern, argts) -> bool:
    if len(pattern) != len(argts):
        return False
    any_t = getattr(T, "Any", None)
    return all(p is any_t or _matches(p, t) for p, t in zip(pattern, argts))


def _lowering_of_attribute(base_t, attr):
    for registry in _installed():
        for ty, name, impl in reversed(registry.getattrs):
            if name in (attr, None) and _matches(ty, base_t):
                return impl
    return None


def _lowering_of_call(func, argts):
    for registry in _installed():
        for fn, pattern, impl in reversed(registry.functions):  # the latest registration wins, as numba
            if fn is func and _pattern_matches(pattern, argts):
                return impl
    return None


_TYPERS: dict = {}  # func -> [typer factory], from type_callable
_CALL_SIGS: dict = {}  # (func, argument types, keyword types) -> Signature


def type_callable(func):
    """numba's ``@type_callable(func)``: the decorated function gets the typing context and returns a typer;
    the typer gets the argument types of a call of ``func`` in a kernel and returns its result type (or
    a Signature), or None. The call lowers through the ``lower_builtin`` implementation registered for
    those types. Returns the decorated function itself."""
    def decorate(typer_factory):
        first = func not in _TYPERS
        _TYPERS.setdefault(func, []).append(typer_factory)
        if first:
            register_callee("extension types", f"{getattr(func, '__name__', func)}()", _type_builtin_call,
                            _lower_builtin_call, keys=[func], keywords=True)
        return typer_factory
    return decorate


def _call_signature(func, argts, kwts, where, node):
    key = (func, tuple(argts), tuple(sorted(kwts.items(), key=lambda kv: kv[0])))
    sig = _CALL_SIGS.get(key)
    if sig is not None:
        return sig
    name = getattr(func, "__name__", repr(func))
    for factory in _TYPERS.get(func, ()):
        try:
            result = factory(None)(*argts, **kwts)
        except TypingError:
            raise
        except Exception as exc:  # noqa: BLE001 - the library's typer failed
            raise where.error(node, f"the typer of {name} raised {type(exc).__name__}: {exc}",
                              "fix the @type_callable typer, or call it with the types it handles") from None
        if result is None:
            continue
        if isinstance(result, T.Signature):
            sig = T.Signature(result.restype, tuple(result.argtypes))
        elif isinstance(result, T.Type):
            sig = T.Signature(result, tuple(argts) + tuple(t for _, t in key[2]))
        else:
            raise where.error(node, f"the typer of {name} returned {result!r}, not a type",
                              "return a numba type (or a signature) from the typer")
        _CALL_SIGS[key] = sig
        return sig
    raise where.error(node, f"No implementation of function {name} found for signature: "
                            f"{name}({_describe(argts)})", "the @type_callable typers return None for these types")


def _type_builtin_call(inferer, node, func):
    argts = [inferer.expr(a) for a in node.args]
    kwts = {k.arg: inferer.expr(k.value) for k in node.keywords}
    sig = _call_signature(func, argts, kwts, inferer, node)
    if _lowering_of_call(func, sig.argtypes) is None:
        name = getattr(func, "__name__", repr(func))
        raise inferer.error(node, f"No definition for lowering {name}({_describe(sig.argtypes)}) -> {sig.restype}",
                            f"register one with @lower_builtin({name}, <argument types>)")
    return sig.restype if sig.restype is not None else T.void


def _lower_builtin_call(lw, node, func):
    argts = [lw.type_of(a) for a in node.args]
    kwts = {k.arg: lw.type_of(k.value) for k in node.keywords}
    sig = _call_signature(func, argts, kwts, lw.src, node)
    values = [lw.expr(a) for a in node.args] + [lw.expr(k.value) for k in node.keywords]
    args = [lw.cast(v, t, want) for v, t, want in zip(values, argts + list(kwts.values()), sig.argtypes)]
    result = _lowering_of_call(func, sig.argtypes)(_CodegenContext(lw, node), lw.builder, sig, args)
    return None if sig.restype in (None, T.void) else result


class _TypeofRegistry:
    """numba's ``typeof_impl`` (a singledispatch function): ``typeof_impl.register(cls)`` gives the type of a
    Python object of ``cls``. numba-cuda passes no extension type to a kernel (its ``_prepare_args`` raises
    NotImplementedError), and neither does kdebug: a launch with one says so."""

    def __init__(self) -> None:
        self.registry: dict = {}

    def register(self, cls):
        def decorate(fn):
            self.registry[cls] = fn
            return fn
        return decorate

    def __call__(self, value, context=None):
        for cls in type(value).__mro__:
            if cls in self.registry:
                return self.registry[cls](value, context)
        return T.typeof(value)


typeof_impl = _TypeofRegistry()


def __getattr__(name):
    return missing_name(__name__, name, 2)
