"""The registry of cuda intrinsics: how each is typed and how it is lowered.

Each entry is registered under the intrinsic's name (``grid``,
``atomic.add``...). Typing functions get the TypeInferer and the call node;
lowering functions get the FunctionLowerer and the call node.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from kdebug.lang import types as T


@dataclass
class IntrinsicImpl:
    typer: Callable
    lowerer: Callable


REGISTRY: dict[str, IntrinsicImpl] = {}


def register(name: str):
    def wrap(cls):
        REGISTRY[name] = IntrinsicImpl(cls.type, cls.lower)
        return cls
    return wrap


# Intrinsics that a later part of kdebug implements; until then, a clear error.
NOT_YET = {}


def type_call(inferer, node, intrinsic) -> T.Type:
    impl = REGISTRY.get(intrinsic.name)
    if impl is None:
        hint = NOT_YET.get(intrinsic.name, "see the README for the intrinsics kdebug supports")
        raise inferer.error(node, f"cuda.{intrinsic.name} is not supported by kdebug yet", hint)
    return impl.typer(inferer, node)


def lower_call(lowerer, node, intrinsic):
    return REGISTRY[intrinsic.name].lowerer(lowerer, node)


def _ndim_arg(inferer, node, name) -> int:
    if len(node.args) != 1 or not (hasattr(node.args[0], "value") and node.args[0].value in (1, 2, 3)):
        raise inferer.error(node, f"cuda.{name}(n) takes a constant 1, 2 or 3", f"write cuda.{name}(1)")
    return node.args[0].value


@register("grid")
class Grid:
    """cuda.grid(n): the absolute thread position, blockIdx * blockDim + threadIdx, as int64."""

    @staticmethod
    def type(inferer, node):
        n = _ndim_arg(inferer, node, "grid")
        return T.int64 if n == 1 else T.Tuple((T.int64,) * n)

    @staticmethod
    def lower(lw, node):
        n = node.args[0].value
        b = lw.builder
        parts = []
        # Special registers are never negative and their products fit in 64 bits: zext and
        # nuw/nsw let LLVM prove the index >= 0, drop numba's negative-index wraparound and
        # vectorise x[i] as contiguous loads instead of gathers (benchmarks/README.md).
        for dim in "xyz"[:n]:
            tid = b.zext(lw.target.special_register(lw, "threadIdx", dim), ir.IntType(64))
            ctaid = b.zext(lw.target.special_register(lw, "blockIdx", dim), ir.IntType(64))
            ntid = b.zext(lw.target.special_register(lw, "blockDim", dim), ir.IntType(64))
            parts.append(b.add(b.mul(ctaid, ntid, flags=["nuw", "nsw"]), tid, flags=["nuw", "nsw"]))
        return _tuple(b, parts)


@register("gridsize")
class GridSize:
    """cuda.gridsize(n): the number of threads in the grid along each dimension, as int64."""

    @staticmethod
    def type(inferer, node):
        n = _ndim_arg(inferer, node, "gridsize")
        return T.int64 if n == 1 else T.Tuple((T.int64,) * n)

    @staticmethod
    def lower(lw, node):
        n = node.args[0].value
        b = lw.builder
        parts = []
        for dim in "xyz"[:n]:
            nctaid = b.zext(lw.target.special_register(lw, "gridDim", dim), ir.IntType(64))
            ntid = b.zext(lw.target.special_register(lw, "blockDim", dim), ir.IntType(64))
            parts.append(b.mul(nctaid, ntid, flags=["nuw", "nsw"]))
        return _tuple(b, parts)


@register("laneid")
class LaneId:
    """cuda.laneid: the thread's lane in its warp (linear thread index modulo 32)."""

    @staticmethod
    def type(inferer, node):
        raise inferer.error(node, "cuda.laneid is a value, not a function", "write cuda.laneid without ()")

    lower = None


def _tuple(b, parts):
    if len(parts) == 1:
        return parts[0]
    ty = ir.LiteralStructType([p.type for p in parts])
    tup = ir.Constant(ty, ir.Undefined)
    for k, p in enumerate(parts):
        tup = b.insert_value(tup, p, k)
    return tup
