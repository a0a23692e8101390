"""Warp intrinsics: shuffles, votes, matches, ``activemask``, ``lanemask_lt`` and ``syncwarp(mask)``.

Signatures are numba-cuda 0.30.4's (``intrinsics.py`` and ``cudadecl.py``):

* ``shfl_sync(mask, value, src_lane)``, ``shfl_up_sync(mask, value, delta)``,
  ``shfl_down_sync(mask, value, delta)``, ``shfl_xor_sync(mask, value, lane_mask)``: int32, int64,
  float32, float64 values (kdebug also takes uint32/uint64), the value's type back. kdebug adds
  CUDA C's optional ``width`` (a power of two up to 32; numba always uses 32): lanes shuffle within
  segments of that many lanes.
* ``all_sync/any_sync/eq_sync(mask, predicate)`` -> boolean; ``ballot_sync(mask, predicate)`` -> int32.
* ``match_any_sync(mask, value)`` -> int32; ``match_all_sync(mask, value)`` -> (int32, boolean).
* ``activemask()``, ``lanemask_lt()`` -> uint32.

Each lowers to one target hook, ``warp_op(lw, node, WarpOp)``, with the operands as integer bits; the
PTX target emits the ``llvm.nvvm`` intrinsics, the CPU target a warp-level suspend point of the
kernel's coroutine (``kdebug/targets/cpu/warp.py``).
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.frontend.intrinsics import REGISTRY, IntrinsicImpl, _linear_tid, _target_hook
from kdebug.lang import types as T
from kdebug.lazy_dataclasses import dataclass

i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
FULL_MASK = 0xFFFFFFFF
SHFL_TYPES = (T.int32, T.int64, T.float32, T.float64, T.uint32, T.uint64)
MATCH_TYPES = (T.int32, T.int64, T.float32, T.float64, T.uint32, T.uint64)


@dataclass
class WarpOp:
    """What a warp intrinsic asks of the target: ``kind`` is one of shfl.idx/up/down/bfly,
    vote.all/any/uni/ballot, match.any/all, activemask, syncwarp."""

    kind: str
    what: str  # the source form, for messages: cuda.shfl_down_sync(...)
    mask: ir.Value | None = None  # i32
    value: ir.Value | None = None  # i32/i64 bits (shuffles, matches) or i1 (votes)
    b: ir.Value | None = None  # i32: the shuffle's lane, delta or lane mask
    c: ir.Value | None = None  # i32: the shuffle's packed clamp and segment mask, as PTX's shfl.sync


def _int(t) -> bool:
    return isinstance(t, T.Scalar) and (t.is_int or t.is_bool)


def _check_mask(inferer, node, t, name):
    if not _int(t):
        raise inferer.error(node, f"the mask of cuda.{name} must be an integer, not {t}", "write 0xffffffff")


def _mark(inferer):
    # a warp operation waits for the other lanes: on the CPU the kernel becomes a coroutine
    inferer.tf.features.update(("barrier", "warp"))


# ---- shuffles --------------------------------------------------------------------------------------------
_SHFL = {"shfl_sync": "idx", "shfl_up_sync": "up", "shfl_down_sync": "down", "shfl_xor_sync": "bfly"}


def _shfl_args(node):
    args = list(node.args)
    width = next((k.value for k in node.keywords if k.arg == "width"), None)
    if width is None and len(args) == 4:
        width = args.pop()
    return args, width


def _shfl_typer(name):
    third = {"shfl_sync": "src_lane", "shfl_xor_sync": "lane_mask"}.get(name, "delta")

    def type_(inferer, node):
        args, width = _shfl_args(node)
        usage = f"cuda.{name}(mask, value, {third})"
        if len(args) != 3 or any(k.arg != "width" for k in node.keywords):
            raise inferer.error(node, f"cuda.{name} takes (mask, value, {third}) and optionally width",
                                f"write {usage}")
        mt, vt, bt = (inferer.expr(a) for a in args)
        _check_mask(inferer, args[0], mt, name)
        if vt not in SHFL_TYPES:
            raise inferer.error(args[1], f"cuda.{name} shuffles 32- and 64-bit integers and floats, not {vt}",
                                "convert the value, e.g. int32(x) or float32(x)")
        if not _int(bt):
            raise inferer.error(args[2], f"the {third} of cuda.{name} must be an integer, not {bt}",
                                f"write {usage}")
        if width is not None:
            wt = inferer.expr(width)
            if not _int(wt):
                raise inferer.error(width, f"the width of cuda.{name} must be an integer, not {wt}",
                                    "pass a power of two from 1 to 32")
            value = getattr(width, "value", None)
            if isinstance(value, int) and value not in (1, 2, 4, 8, 16, 32):
                raise inferer.error(width, f"the width of cuda.{name} must be a power of two from 1 to 32, "
                                           f"not {value}", "use 32 (the whole warp), 16, 8, 4, 2 or 1")
        _mark(inferer)
        return vt
    return type_


def _bits(lw, v, t):
    """A value as its integer bits (floats bitcast)."""
    if t.is_float:
        return lw.builder.bitcast(v, ir.IntType(t.bits))
    return v


def _from_bits(lw, v, t):
    if t.is_float:
        return lw.builder.bitcast(v, ir.FloatType() if t.bits == 32 else ir.DoubleType())
    return v


def _i32(lw, node_arg):
    return lw.cast(lw.expr(node_arg), lw.type_of(node_arg), T.uint32)


def _shfl_lowerer(name):
    mode = _SHFL[name]

    def lower(lw, node):
        b = lw.builder
        args, width = _shfl_args(node)
        vt = lw.type_of(args[1])
        mask = _i32(lw, args[0])
        value = _bits(lw, lw.expr(args[1]), vt)
        lane = _i32(lw, args[2])
        clamp = ir.Constant(i32, 0 if mode == "up" else 0x1F)
        if width is None:
            c = clamp
        else:  # CUDA C: c = ((32 - width) << 8) | clamp
            seg = b.shl(b.sub(ir.Constant(i32, 32), _i32(lw, width)), ir.Constant(i32, 8))
            c = b.or_(seg, clamp)
        op = WarpOp(f"shfl.{mode}", f"cuda.{name}()", mask, value, lane, c)
        out = _target_hook(lw, node, "warp_op", f"cuda.{name}()")(node, op)
        return _from_bits(lw, out, vt)
    return lower


for _name in _SHFL:
    REGISTRY[_name] = IntrinsicImpl(_shfl_typer(_name), _shfl_lowerer(_name))


# ---- votes ---------------------------------------------------------------------------------------------
_VOTE = {"all_sync": "all", "any_sync": "any", "eq_sync": "uni", "ballot_sync": "ballot"}


def _two_args(inferer, node, name, second):
    if len(node.args) != 2 or node.keywords:
        raise inferer.error(node, f"cuda.{name} takes (mask, {second})", f"write cuda.{name}(0xffffffff, {second})")
    mt, vt = (inferer.expr(a) for a in node.args)
    _check_mask(inferer, node.args[0], mt, name)
    return vt


def _vote_typer(name):
    def type_(inferer, node):
        vt = _two_args(inferer, node, name, "predicate")
        if not _int(vt):  # numba: an integer or boolean predicate
            raise inferer.error(node.args[1], f"the predicate of cuda.{name} must be an integer or boolean, "
                                              f"not {vt}", "pass a comparison such as x > 0")
        _mark(inferer)
        return T.int32 if name == "ballot_sync" else T.boolean
    return type_


def _vote_lowerer(name):
    def lower(lw, node):
        mask = _i32(lw, node.args[0])
        pred = lw.truth(lw.expr(node.args[1]), lw.type_of(node.args[1]))
        op = WarpOp(f"vote.{_VOTE[name]}", f"cuda.{name}()", mask, pred)
        return _target_hook(lw, node, "warp_op", f"cuda.{name}()")(node, op)
    return lower


for _name in _VOTE:
    REGISTRY[_name] = IntrinsicImpl(_vote_typer(_name), _vote_lowerer(_name))


# ---- matches ------------------------------------------------------------------------------------------------
def _match_typer(name):
    def type_(inferer, node):
        vt = _two_args(inferer, node, name, "value")
        if vt not in MATCH_TYPES:
            raise inferer.error(node.args[1], f"cuda.{name} compares 32- and 64-bit integers and floats, not {vt}",
                                "convert the value, e.g. int32(x)")
        _mark(inferer)
        return T.int32 if name == "match_any_sync" else T.Tuple((T.int32, T.boolean))
    return type_


def _match_lowerer(name):
    def lower(lw, node):
        vt = lw.type_of(node.args[1])
        mask = _i32(lw, node.args[0])
        value = _bits(lw, lw.expr(node.args[1]), vt)
        op = WarpOp("match.any" if name == "match_any_sync" else "match.all", f"cuda.{name}()", mask, value)
        return _target_hook(lw, node, "warp_op", f"cuda.{name}()")(node, op)
    return lower


for _name in ("match_any_sync", "match_all_sync"):
    REGISTRY[_name] = IntrinsicImpl(_match_typer(_name), _match_lowerer(_name))


# ---- activemask, lanemask_lt, syncwarp -------------------------------------------------------------------
def _no_args(name):
    def check(inferer, node):
        if node.args or node.keywords:
            raise inferer.error(node, f"cuda.{name}() takes no arguments", f"write cuda.{name}()")
    return check


def _activemask_type(inferer, node):
    _no_args("activemask")(inferer, node)
    _mark(inferer)
    return T.uint32


def _activemask_lower(lw, node):
    return _target_hook(lw, node, "warp_op", "cuda.activemask()")(node, WarpOp("activemask", "cuda.activemask()"))


def _lanemask_lt_type(inferer, node):
    _no_args("lanemask_lt")(inferer, node)
    return T.uint32


def _lanemask_lt_lower(lw, node):
    """The lanes below this one: (1 << laneid) - 1."""
    b = lw.builder
    lane = b.urem(_linear_tid(lw), ir.Constant(i32, 32))
    return b.sub(b.shl(ir.Constant(i32, 1), lane), ir.Constant(i32, 1))


REGISTRY["activemask"] = IntrinsicImpl(_activemask_type, _activemask_lower)
REGISTRY["lanemask_lt"] = IntrinsicImpl(_lanemask_lt_type, _lanemask_lt_lower)


def _syncwarp_type(inferer, node):
    if len(node.args) + len(node.keywords) > 1 or any(k.arg != "mask" for k in node.keywords):
        raise inferer.error(node, "cuda.syncwarp() takes at most one argument, the mask",
                            "write cuda.syncwarp() or cuda.syncwarp(0xffffffff)")
    for a in list(node.args) + [k.value for k in node.keywords]:
        t = inferer.expr(a)
        if not _int(t):
            raise inferer.error(a, f"the mask of cuda.syncwarp must be an integer, not {t}", "write 0xffffffff")
    _mark(inferer)
    return T.void


def _syncwarp_lower(lw, node):
    arg = node.args[0] if node.args else (node.keywords[0].value if node.keywords else None)
    mask = _i32(lw, arg) if arg is not None else ir.Constant(i32, FULL_MASK)
    _target_hook(lw, node, "warp_op", "cuda.syncwarp()")(node, WarpOp("syncwarp", "cuda.syncwarp()", mask))


REGISTRY["syncwarp"] = IntrinsicImpl(_syncwarp_type, _syncwarp_lower)
