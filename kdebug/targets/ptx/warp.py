"""Warp intrinsics on the PTX target: LLVM's ``llvm.nvvm`` shuffle, vote, match and warp-barrier
intrinsics (the instructions numba-cuda emits through NVVM: ``shfl.sync``, ``vote.sync``,
``match.sync``, ``activemask``, ``bar.warp.sync``)."""
from __future__ import annotations

from llvmlite import ir

i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


def _fn(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn


def emit_warp_op(lc, node, op):
    b = lc.builder
    m = lc.module
    kind = op.kind
    if kind.startswith("shfl."):
        name = f"llvm.nvvm.shfl.sync.{kind[5:]}.i32"
        shfl = _fn(m, name, i32, [i32, i32, i32, i32])
        v = op.value
        if v.type.width == 32:
            return b.call(shfl, [op.mask, v, op.b, op.c])
        # 64-bit values move as two 32-bit halves, as numba does
        lo = b.call(shfl, [op.mask, b.trunc(v, i32), op.b, op.c])
        hi = b.call(shfl, [op.mask, b.trunc(b.lshr(v, ir.Constant(i64, 32)), i32), op.b, op.c])
        return b.or_(b.shl(b.zext(hi, i64), ir.Constant(i64, 32)), b.zext(lo, i64))
    if kind == "vote.ballot":
        return b.call(_fn(m, "llvm.nvvm.vote.ballot.sync", i32, [i32, i1]), [op.mask, op.value])
    if kind.startswith("vote."):
        return b.call(_fn(m, f"llvm.nvvm.vote.{kind[5:]}.sync", i1, [i32, i1]), [op.mask, op.value])
    if kind == "match.any":
        w = op.value.type.width
        return b.call(_fn(m, f"llvm.nvvm.match.any.sync.i{w}", i32, [i32, op.value.type]), [op.mask, op.value])
    if kind == "match.all":
        w = op.value.type.width
        pair = ir.LiteralStructType([i32, i1])
        return b.call(_fn(m, f"llvm.nvvm.match.all.sync.i{w}p", pair, [i32, op.value.type]), [op.mask, op.value])
    if kind == "activemask":
        return b.call(_fn(m, "llvm.nvvm.activemask", i32, []), [])
    if kind == "syncwarp":
        b.call(_fn(m, "llvm.nvvm.bar.warp.sync", ir.VoidType(), [i32]), [op.mask])
        return None
    raise AssertionError(kind)
