"""numba.extending and numba.cuda.extending under ``--numba``: the extension API a library written for
numba uses to add functions to kernels, honoured by kdebug's compiler.

- ``overload(func, target=...)``: a typing function called with the argument types of each call of
  ``func`` in a kernel; it returns the implementation (a Python function, compiled as a device function
  for those types) or None. Overloads for ``"cuda"`` are preferred to ``"generic"`` ones, as numba-cuda
  resolves them; ``"cpu"`` overloads are not for kernels.
- ``register_jitable``: a function callable from kernels (compiled where a kernel calls it) and from Python.
- ``intrinsic``: ``defn(typingctx, *argtypes) -> (signature, codegen)``; the call's lowering calls
  ``codegen(context, builder, signature, args)`` with kdebug's llvmlite builder, as numba does.

What kdebug does not honour says so at the user's line: ``overload_method`` and ``overload_attribute``
(methods and attributes of kdebug's types), ``types.Type`` subclasses with ``models.register_model``.
"""
from __future__ import annotations

import inspect

from kdebug.errors import SourceLocation, TypingError
from kdebug.frontend.device_calls import lower_device_function
from kdebug.frontend.lower import const, llvm_type
from kdebug.frontend.registry import lookup, register_callee
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


def _not_here(what: str, instead: str):
    def refuse(*args, **kwargs):
        frame = inspect.stack()[1]
        raise TypingError(f"{what}: kdebug does not honour it (kdebug's types are not numba's)",
                          SourceLocation(frame.filename, frame.lineno, 1), instead)
    return refuse


overload_method = _not_here("numba.extending.overload_method",
                            "write the method as a function and @overload that, or use @register_jitable")
overload_attribute = _not_here("numba.extending.overload_attribute",
                               "read the value with an @overload'ed function instead")
register_model = _not_here("numba.extending.register_model", "pass the data as arrays, records or tuples")
make_attribute_wrapper = _not_here("numba.extending.make_attribute_wrapper",
                                   "pass the data as arrays, records or tuples")


def __getattr__(name):
    return missing_name(__name__, name, 2)
