"""Strategies from the user: ``--strategy path/to/file.py:ClassName`` or ``--strategy module:ClassName``.

The class is loaded once per spec, checked against the interface (``kdebug/driver/strategies.py``'s
``Strategy``: ``request``, ``expand``, ``resolve_primal`` and a ``description``), and then treated as
the built-ins are: the driver, reruns, dumps, traces and the TUI's Strategy tab find it through
``strategies.get(spec)``. Anything wrong with it is a ``StrategyError`` located in the user's file
(``file:line`` of the class, or of the method), never a traceback from kdebug's files.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback

from kdebug.driver import invariants

# what the driver passes each method (after self), positionally: the interface's signatures
INTERFACE: dict[str, tuple[str, ...]] = {
    "request": ("cx", "comp", "requester", "job", "reason", "loc", "needs"),
    "expand": ("cx", "comp", "irmod"),
    "resolve_primal": ("cx", "comp", "job", "text"),
}



class StrategyError(ValueError):
    """A user strategy that cannot be used: the message starts with where (``file:line``)."""


def is_spec(value: str) -> bool:
    """``file.py:Class`` or ``module:Class`` (a built-in's name has no colon)."""
    head, sep, tail = value.rpartition(":")
    return bool(sep and head and tail.isidentifier() and not (len(head) == 1 and head.isalpha()))


def normalized(spec: str) -> str:
    """The spec with its file's path made absolute (a rerun or a child process finds the same file)."""
    head, _, cls = spec.rpartition(":")
    if head.endswith(".py") or os.sep in head or "/" in head:
        return f"{os.path.abspath(head)}:{cls}"
    return spec


def load(spec: str, base: type, loaded: dict):
    """The strategy object ``spec`` names, loaded and checked once (``loaded``: spec -> object, the
    strategies' ``USER``; ``base``: their ``Strategy``, whose methods a class must override)."""
    spec = normalized(spec)
    got = loaded.get(spec)
    if got is not None:
        return got
    head, _, cls_name = spec.rpartition(":")
    module = _import(head)
    where = getattr(module, "__file__", None) or head
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise StrategyError(f"{where}: no class {cls_name!r} in it (the strategy to load is {spec})")
    if not inspect.isclass(cls):
        raise StrategyError(f"{where}:{_line(cls, 1)}: {cls_name} is a {type(cls).__name__}, not a strategy class")
    check(cls, base)
    try:
        obj = cls()
    except Exception as exc:
        raise StrategyError(f"{_where(cls)}: {cls_name}() failed: {_user_error(exc, where)}") from None
    loaded[spec] = obj
    return obj


def check(cls, base: type) -> None:
    """``cls`` against the interface; a StrategyError located at the class (or the method) if it does not fit."""
    name = cls.__name__
    for method, params in INTERFACE.items():
        fn = inspect.getattr_static(cls, method, None)
        inherited = getattr(base, method)
        if fn is None or fn is inherited:
            raise StrategyError(f"{_where(cls)}: strategy class {name} has no method {method!r}; the interface "
                                f"is {method}(self, {', '.join(params)}) (see docs/internals/strategies.md)")
        if isinstance(fn, (staticmethod, classmethod)) or not callable(fn):
            raise StrategyError(f"{_where(fn, cls)}: {name}.{method} must be a plain method "
                                f"{method}(self, {', '.join(params)})")
        try:
            sig = inspect.signature(fn)
            sig.bind(None, *params)
        except (TypeError, ValueError):
            raise StrategyError(f"{_where(fn, cls)}: {name}.{method}{_sig(fn)} does not take what the driver "
                                f"passes: {method}(self, {', '.join(params)})") from None
    for attr in ("description",):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            raise StrategyError(f"{_where(cls)}: strategy class {name} needs a {attr} (a string: the TUI's "
                                f"Strategy tab shows it)")
    claims = getattr(cls, "invariants", invariants.NAMES)
    unknown = [c for c in claims if c not in invariants.NAMES] if not isinstance(claims, str) else [claims]
    if unknown:
        raise StrategyError(f"{_where(cls)}: {name}.invariants names {', '.join(map(repr, unknown))}: the "
                            f"invariants are {', '.join(invariants.NAMES)}")


def _import(head: str):
    """The module of a spec's file (by path) or name; a failure is located in the user's code."""
    if head.endswith(".py") or os.path.isfile(head):
        if not os.path.isfile(head):
            raise StrategyError(f"{head}: no such file (--strategy FILE.py:Class)")
        mod_name = "kdebug_user_strategy_" + str(abs(hash(head)))
        spec = importlib.util.spec_from_file_location(mod_name, head)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(mod_name, None)
            raise StrategyError(_user_error(exc, head)) from None
        return module
    try:
        return importlib.import_module(head)
    except ModuleNotFoundError as exc:
        if exc.name and head.startswith(exc.name):
            raise StrategyError(f"{head}: no module named {head!r} (--strategy MODULE:Class, or FILE.py:Class)") \
                from None
        raise StrategyError(_user_error(exc, head)) from None
    except Exception as exc:
        raise StrategyError(_user_error(exc, head)) from None


def _user_error(exc: BaseException, where: str) -> str:
    """``exc`` located in the user's code: its innermost frame outside kdebug, or the syntax error's line."""
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: {exc.msg}"
    kdebug_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(kdebug_dir + os.sep) and "importlib" not in f.filename]
    at = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else where
    return f"{at}: {type(exc).__name__}: {exc}"


def _line(obj, default: int = 0) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return default


def _where(obj, cls=None) -> str:
    """``file:line`` of ``obj`` (a method of ``cls``, or the class)."""
    target = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
    except TypeError:
        target, file = cls, inspect.getsourcefile(cls) if cls is not None else "?"
    return f"{file}:{_line(target, 1)}"


def _sig(fn) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"
