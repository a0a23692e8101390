"""The registry of everything a kernel may call: how each callee is typed and how it is lowered.

One entry per callee, its typing and its lowering together (numba-cuda's typing and lowering
registries in one table), keyed by what type inference's ``classify`` resolves the callee to:

- the object itself: ``abs``, ``math.sqrt``, ``cmath.exp``, ``np.sin``, ``float32`` (``np.float32``
  resolves to it), ``cuda.float32x4``, ``operator.add``, ``print``, ``kdebug.grad`` (``CALLEES``);
- for callees of an open-ended kind, the kind: a device function (``Dispatcher``), a derivative,
  ``cuda.*``, a module (``KINDS``, looked up along the class's MRO);
- for callees that are no Python object but a value of the kernel, the type's class: a launch
  ``kernel[grid, block]``, a ``kdebug.deferred`` pointer, ``z.conjugate`` (``CALLEE_TYPES``);
- the cuda intrinsics by name (``grid``, ``atomic.add``...; ``REGISTRY``, ``VALUES``): one intrinsic
  has several objects (``cuda.atomic.add``, ``numba.cuda.atomic.add``); its kind entry reads them here.

A typing function gets the TypeInferer, the call node and the callee (the object, or the callee's
type for the kinds that are types: a launch, a pointer, ``z.conjugate``); a lowering function the
FunctionLowerer, the call node and the callee. Type inference and lowering look every call up here
(``callee``); the implementations register themselves when the ``kdebug.frontend`` package is
imported (``callees.py``, ``device_calls.py``, ``intrinsics*.py``), so this module imports neither side.
"""
from __future__ import annotations

from typing import Callable

from kdebug.lang import intrinsics as I
from kdebug.lang import types as T
from kdebug.lazy_dataclasses import dataclass


@dataclass(frozen=True)
class PyValue(T.Type):
    """A compile-time Python object: a module, an intrinsic, a function, a type."""

    value: object

    def __str__(self) -> str:
        return f"pyobject<{getattr(self.value, '__name__', None) or getattr(self.value, 'name', None) or type(self.value).__name__}>"

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, PyValue) and other.value is self.value


@dataclass(frozen=True)
class Callee:
    """One callee: ``type(inferer, node, fn) -> T.Type`` and ``lower(lw, node, fn) -> value`` (None
    for a refusal, whose typing always raises a located error)."""

    family: str
    name: str
    type: Callable
    lower: Callable | None
    keywords: bool = False  # takes keyword arguments (else typing refuses them first, for every callee)


# attribute hooks: ``hook(inferer, node, base_type) -> type or None``, asked first for every ``x.attr`` in a kernel
# (the extension API's overload_method / overload_attribute, kdebug/frontend/extensions.py)
ATTRIBUTE_HOOKS: list[Callable] = []
# data models of numba extension types (``register_model``, kdebug/frontend/extensions.py): type class -> a
# function of the type giving its model (``get_value_type()``: the LLVM type of a value of it)
DATA_MODELS: dict[type, Callable] = {}


def data_model(t) -> object | None:
    """The data model of an extension type ``t`` (an instance of a ``register_model``-ed class), or None."""
    if not DATA_MODELS:
        return None
    factory = next((DATA_MODELS[c] for c in type(t).__mro__ if c in DATA_MODELS), None)
    return factory(t) if factory is not None else None


CALLEES: dict[object, Callee] = {}  # by the object: abs, math.sqrt, np.sin, float32, print...
KINDS: dict[type, Callee] = {}  # by the callee's class: Dispatcher, Derivative, Intrinsic...
CALLEE_TYPES: dict[type, Callee] = {}  # by the class of the callee's type: LaunchTarget, FunctionPointer...


def register_callee(family: str, name: str, type: Callable, lower: Callable | None, *, keys=(), kind=None,
                    callee_type=None, keywords: bool = False) -> Callee:
    """Register one callee under ``keys`` (the objects classify resolves it to), under ``kind`` (the
    class of such objects) or under ``callee_type`` (the class of a callee that is a kernel value)."""
    entry = Callee(family, name, type, lower, keywords)
    for key in keys:
        CALLEES[key] = entry
    if kind is not None:
        KINDS[kind] = entry
    if callee_type is not None:
        CALLEE_TYPES[callee_type] = entry
    return entry


def _not_callable(inferer, node, func_t):
    raise inferer.error(node, f"{func_t} is not callable", "call device functions, math functions or cuda intrinsics")


def _cannot_be_called(inferer, node, fn):
    for a in node.args:
        inferer.expr(a)
    raise inferer.error(node, f"{getattr(fn, '__name__', fn)} cannot be called in a kernel",
                        "call device functions, math functions or cuda intrinsics")


NOT_CALLABLE = Callee("refused", "a value that is not callable", _not_callable, None)
CANNOT_BE_CALLED = Callee("refused", "any other Python object", _cannot_be_called, None)


def _by_class(table: dict, obj) -> Callee | None:
    return next((table[c] for c in type(obj).__mro__ if c in table), None)


def lookup(value) -> Callee | None:
    """The entry for a Python object a kernel calls (what classify resolved it to), or None."""
    try:
        entry = CALLEES.get(value)
    except TypeError:  # unhashable: only a kind can match
        entry = None
    return entry if entry is not None else _by_class(KINDS, value)


def knows(value) -> bool:
    """Whether a kernel may call ``value`` (or is told here, precisely, why not)."""
    return lookup(value) is not None


def callee(func_t: T.Type) -> tuple[Callee, object]:
    """The entry for a call of a callee of type ``func_t`` and what its functions get as the callee."""
    if isinstance(func_t, PyValue):
        return lookup(func_t.value) or CANNOT_BE_CALLED, func_t.value
    return _by_class(CALLEE_TYPES, func_t) or NOT_CALLABLE, func_t


def entries() -> list[Callee]:
    """Every entry once (an entry registered under several objects, e.g. an alias, counts once)."""
    seen = {}
    for entry in [*CALLEES.values(), *KINDS.values(), *CALLEE_TYPES.values()]:
        seen.setdefault(id(entry), entry)
    return list(seen.values()) + [NOT_CALLABLE, CANNOT_BE_CALLED]


def families() -> dict[str, int]:
    """The registry's size: entries per family (the intrinsics counted by name; a refused intrinsic,
    such as ``cuda.laneid()``, counted with the refusals)."""
    out: dict[str, int] = {}
    for family, _ in _names(lambda e: True, lambda impl: True):
        out[family] = out.get(family, 0) + 1
    return dict(sorted(out.items()))


def _names(entry_ok, impl_ok) -> list[tuple[str, str]]:
    names = [(e.family, e.name) for e in entries() if e.family != "intrinsics" and entry_ok(e)]
    for family, table in (("intrinsics", REGISTRY), ("intrinsic values", VALUES)):
        names += [(family if impl.lowerer is not None else "refused", f"cuda.{n}") for n, impl in table.items()
                  if impl_ok(impl)]
    return names


def typed_names() -> set[tuple[str, str]]:
    """(family, name) of everything typing accepts (a refusal, whose typing only raises, is not here)."""
    return {n for n in _names(lambda e: e.type is not None, lambda impl: impl.typer is not None) if n[0] != "refused"}


def lowered_names() -> set[tuple[str, str]]:
    """(family, name) of everything lowering has code for."""
    return {n for n in _names(lambda e: e.lower is not None, lambda impl: impl.lowerer is not None)}


# ---- the cuda intrinsics, by name ------------------------------------------------------------
@dataclass
class IntrinsicImpl:
    typer: Callable
    lowerer: Callable


REGISTRY: dict[str, IntrinsicImpl] = {}  # intrinsics that are called: cuda.grid(1)
VALUES: dict[str, IntrinsicImpl] = {}  # intrinsics read as values, without a call: cuda.laneid


def register(name: str):
    """Class decorator: ``type(inferer, node)`` and ``lower(lw, node)`` of a called intrinsic."""
    def wrap(cls):
        REGISTRY[name] = IntrinsicImpl(cls.type, cls.lower)
        return cls
    return wrap


def register_value(name: str):
    """Class decorator: ``type(inferer, node)`` and ``lower(lw, node)`` of a value intrinsic."""
    def wrap(cls):
        VALUES[name] = IntrinsicImpl(cls.type, cls.lower)
        return cls
    return wrap


def type_call(inferer, node, intrinsic) -> T.Type:
    impl = REGISTRY.get(intrinsic.name)
    if impl is None:
        raise inferer.error(node, f"cuda.{intrinsic.name} is not supported by kdebug yet",
                            "see docs/guide/kernel-language.md for the intrinsics kdebug supports")
    return impl.typer(inferer, node)


def lower_call(lowerer, node, intrinsic):
    return REGISTRY[intrinsic.name].lowerer(lowerer, node)


def value_type(inferer, node, intrinsic) -> T.Type | None:
    """The type of a value intrinsic (``cuda.laneid``), or None for intrinsics that are called."""
    impl = VALUES.get(intrinsic.name)
    return impl.typer(inferer, node) if impl is not None else None


def lower_value(lw, node, intrinsic):
    return VALUES[intrinsic.name].lowerer(lw, node)


# cuda.grid(1), cuda.atomic.add(...): the intrinsic's entry by name (only intrinsics take keywords);
# calling a namespace (cuda.atomic(...)) is refused by name too
register_callee("intrinsics", "cuda.* (by name)", type_call, lower_call, kind=I.Intrinsic, keywords=True)
register_callee("intrinsics", "cuda.* namespaces (by name)", type_call, lower_call, kind=I.IntrinsicNamespace)
