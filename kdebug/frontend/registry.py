"""The registry of cuda intrinsics: how each is typed and how it is lowered.

Each entry is registered under the intrinsic's name (``grid``, ``atomic.add``...);
typing functions get the TypeInferer and the call node, lowering functions the
FunctionLowerer and the call node. Type inference and lowering look intrinsics
up here; the implementations (``intrinsics.py``) register themselves when the
``kdebug.frontend`` package is imported, so this module imports neither side.
"""
from __future__ import annotations

from typing import Callable

from kdebug.lang import types as T
from kdebug.lazy_dataclasses import dataclass


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
                            "see the README for the intrinsics kdebug supports")
    return impl.typer(inferer, node)


def lower_call(lowerer, node, intrinsic):
    return REGISTRY[intrinsic.name].lowerer(lowerer, node)


def value_type(inferer, node, intrinsic) -> T.Type | None:
    """The type of a value intrinsic (``cuda.laneid``), or None for intrinsics that are called."""
    impl = VALUES.get(intrinsic.name)
    return impl.typer(inferer, node) if impl is not None else None


def lower_value(lw, node, intrinsic):
    return VALUES[intrinsic.name].lowerer(lw, node)
