"""``dataclass``: ``dataclasses.dataclass``, applied when the class is first used.

Making a dataclass costs its module 0.1-0.4 ms (``dataclasses`` compiles ``__init__``, ``__repr__``,
``__eq__``, a frozen class's ``__hash__`` ... from source text, one ``exec`` each), and kdebug defines
~70 of them, more than half of which a given run never instantiates (events it never sends, types of
kernels it never compiles): over half of kdebug's own import time. ``@dataclass`` here records the
class and its options and gives it stand-ins for the methods ``dataclasses`` would add; the first
instantiation, ``==``, ``repr``, ``hash`` or look at its fields (``dataclasses.fields``,
``is_dataclass``, ``replace``, ``asdict``) runs ``dataclasses.dataclass`` on it, its bases first, which
replaces them. From then on the class is exactly the dataclass it would have been.

A Python signal handler runs between any two bytecodes of the main thread, also inside ``realize``, so
once a script installs one (``signal.signal``) the runner makes every waiting class at once
(``realize_all``).

NOTE: before that first use, a field declared with ``field(...)`` reads as its ``Field`` on the class
(``Cls.name``; instances are unaffected), and ``Cls.__doc__`` of a class without a docstring is None.
"""
from __future__ import annotations

import dataclasses
import threading

_FIELDS = "__dataclass_fields__"
_pending: dict[type, dict] = {}  # class -> its dataclass options, until first use
_stand_ins: dict[type, tuple[str, ...]] = {}
_lock = threading.RLock()


def dataclass(cls=None, /, **options):
    """``dataclasses.dataclass`` (same options), deferred to the class's first use."""
    if cls is None:
        return lambda c: dataclass(c, **options)
    if options.get("slots") or options.get("weakref_slot") or options.get("order"):
        return dataclasses.dataclass(cls, **options)  # a new class, or comparisons: not deferred
    _pending[cls] = options
    _stand_ins[cls] = names = _methods_added(cls, options)
    for name in names:
        setattr(cls, name, _STAND_IN[name](cls))
    setattr(cls, _FIELDS, _FieldsOnFirstUse(cls))
    return cls


def realize(cls: type) -> None:
    """Make ``cls`` (and its deferred bases) the dataclass it was declared as, if not done yet."""
    with _lock:  # another thread may be realizing it: wait for the class to be whole
        if not any(base in _pending for base in cls.__mro__):
            return
        for base in reversed(cls.__mro__):
            options = _pending.get(base)
            if options is not None:
                _make(base, options)
                del _pending[base], _stand_ins[base]


def _make(cls: type, options: dict) -> None:
    """Run ``dataclasses.dataclass`` on a private copy of ``cls`` and move what it added onto ``cls``, one
    attribute at a time and ``__init__`` last: another thread never sees ``cls`` half made (a real
    ``__init__`` beside ``object``'s ``__eq__``); until its turn, each stand-in waits on the lock."""
    skip = set(_stand_ins[cls]) | {_FIELDS, "__dict__", "__weakref__"}
    namespace = {k: v for k, v in cls.__dict__.items() if k not in skip}
    namespace["__qualname__"] = cls.__qualname__
    copy = type(cls)(cls.__name__, cls.__bases__, namespace)
    made = dataclasses.dataclass(copy, **options)
    assert made is copy, "a deferred dataclass never makes a new class (slots are not deferred)"
    added = {k: v for k, v in copy.__dict__.items()
             if k not in ("__dict__", "__weakref__") and (k not in namespace or namespace[k] is not v)}
    for value in added.values():
        _rebind(value, copy, cls)
    init = added.pop("__init__", None)
    for name, value in added.items():
        setattr(cls, name, value)
    for name in namespace:
        if name != "__qualname__" and name not in copy.__dict__:
            delattr(cls, name)  # a field's ``field(...)`` without a default
    for name in _stand_ins[cls]:
        if name not in added and name != "__init__":
            delattr(cls, name)  # a stand-in ``dataclasses`` added nothing for
    if init is not None:
        setattr(cls, "__init__", init)
    elif "__init__" in _stand_ins[cls]:
        delattr(cls, "__init__")


def _rebind(value, copy: type, cls: type) -> None:
    """Point the closures of a method made for ``copy`` (a frozen class's ``__setattr__`` names its class)
    at ``cls``, through ``functools.wraps`` wrappers (``__repr__``'s recursion guard)."""
    seen = set()
    while callable(value) and id(value) not in seen:
        seen.add(id(value))
        for cell in getattr(value, "__closure__", None) or ():
            try:
                if cell.cell_contents is copy:
                    cell.cell_contents = cls
            except ValueError:  # an empty cell
                pass
        value = getattr(value, "__wrapped__", None)


def realize_all() -> None:
    """Make every class still waiting for its first use: for a process whose Python signal handlers could
    run between two bytecodes of ``realize`` (a handler that makes an instance of the class being made
    would find it half made). The runner calls it when a script installs a handler."""
    with _lock:
        for cls in list(_pending):
            realize(cls)


def _methods_added(cls: type, options: dict) -> tuple[str, ...]:
    """The methods ``dataclasses`` would add to ``cls`` that it does not define itself."""
    own = cls.__dict__
    names = []
    if options.get("init", True) and "__init__" not in own:
        names.append("__init__")
    if options.get("repr", True) and "__repr__" not in own:
        names.append("__repr__")
    eq = options.get("eq", True)
    if eq and "__eq__" not in own:
        names.append("__eq__")
    if (eq or options.get("unsafe_hash")) and "__hash__" not in own:  # a generated hash (frozen) or None (an unhashable mutable class)
        names.append("__hash__")
    return tuple(names)


class _FieldsOnFirstUse:
    """``__dataclass_fields__`` before first use: reading it realizes the class."""

    def __init__(self, owner: type) -> None:
        self.owner = owner

    def __get__(self, obj, objtype=None):
        realize(self.owner)
        return self.owner.__dict__[_FIELDS]


def _init(owner):
    def __init__(self, *args, **kwargs):
        realize(owner)
        owner.__init__(self, *args, **kwargs)
    return __init__


def _repr(owner):
    def __repr__(self):
        realize(owner)
        return owner.__repr__(self)
    return __repr__


def _eq(owner):
    def __eq__(self, other):
        realize(owner)
        return owner.__eq__(self, other)
    return __eq__


def _hash(owner):
    def __hash__(self):
        realize(owner)
        if owner.__hash__ is None:
            raise TypeError(f"unhashable type: {type(self).__name__!r}")
        return owner.__hash__(self)
    return __hash__


_STAND_IN = {"__init__": _init, "__repr__": _repr, "__eq__": _eq, "__hash__": _hash}
