"""memcheck in the CPU target's IR: bounds checks, and the runtime record's error path.

A failed check calls the cold ``kdebug.rt.oob``: the first failing thread claims
the runtime record (kdebug/runtime/memcheck.py reads it), and the launcher is
left with ``longjmp``.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.ir_helpers import cond_value, const, declare, field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_CTAID, CTX_JMPBUF, CTX_RUNTIME, CTX_TID, I8P, RT_AUX,
                                       RT_CTAID, RT_ERROR, RT_EXTENT, RT_INDEX, RT_SITE, RT_TID, RUNTIME_P,
                                       VOID, i1, i32, i64)


def emit_record_error(b: ir.IRBuilder, rt_i8, kind, site, ctaid, tid, index=(), extent=(), aux=()):
    """First error wins: cmpxchg error 0 -> kind; the winner writes the details."""
    rt = b.bitcast(rt_i8, RUNTIME_P)
    kind = kind if isinstance(kind, ir.Value) else const(kind)
    pair = b.cmpxchg(field(b, rt, RT_ERROR), const(0), kind, "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1)):
        b.store(site, field(b, rt, RT_SITE))
        for k in range(3):
            b.store(ctaid[k], field(b, rt, RT_CTAID, k))
            b.store(tid[k], field(b, rt, RT_TID, k))
        for k, v in enumerate(index):
            b.store(v, field(b, rt, RT_INDEX, k))
        for k, v in enumerate(extent):
            b.store(v, field(b, rt, RT_EXTENT, k))
        for k, v in enumerate(aux):
            b.store(v, field(b, rt, RT_AUX, k))


def error_flag(b: ir.IRBuilder, rt_i8):
    """True when the launch has failed (rt may be null)."""
    rt = b.bitcast(rt_i8, RUNTIME_P)
    has = b.icmp_unsigned("!=", rt_i8, ir.Constant(I8P, None))
    return cond_value(b, has, lambda: b.icmp_unsigned(
        "!=", b.load_atomic(field(b, rt, RT_ERROR), "monotonic", 4), const(0)), const(0, i1))


def thread_position(b: ir.IRBuilder, ctx):
    """(blockIdx, threadIdx) of a thread context, three i32 each."""
    ctaid = [b.load(field(b, ctx, CTX_CTAID, k)) for k in range(3)]
    tid = [b.load(field(b, ctx, CTX_TID, k)) for k in range(3)]
    return ctaid, tid


def oob_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.oob(ctx, site, i0, i1, i2, e0, e1, e2)``: record an out-of-bounds access, stop the launcher."""
    name = "kdebug.rt.oob"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i32] + [i64] * 6), name=name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "noreturn", "nounwind"):
        fn.attributes.add(a)
    ctx, site = fn.args[0], fn.args[1]
    idx, ext = fn.args[2:5], fn.args[5:8]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    rt = b.load(field(b, ctx, CTX_RUNTIME))
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        ctaid, tid = thread_position(b, ctx)
        emit_record_error(b, rt, M.OUT_OF_BOUNDS, site, ctaid, tid, idx, ext)
    jb = b.load(field(b, ctx, CTX_JMPBUF))
    with b.if_then(b.icmp_unsigned("!=", jb, ir.Constant(I8P, None))):
        longjmp = declare(module, "longjmp", VOID, [I8P, i32], ("noreturn", "nounwind"))
        b.call(longjmp, [jb, const(1)])
        b.unreachable()
    b.call(declare(module, "llvm.trap", VOID, [], ("noreturn", "nounwind")), [])
    b.unreachable()
    return fn


def emit_bounds_check(lc, node, arr_t, indices, extents, access: str) -> None:
    """``idx <u extent`` for every dimension; the cold path reports and stops the launcher."""
    b = lc.builder
    if lc.thread_ctx is None:
        return
    ok = None
    for k, e in zip(indices, extents):
        c = b.icmp_unsigned("<", k, e)
        ok = c if ok is None else b.and_(ok, c)
    base = node.value
    array = base.id if isinstance(base, ast.Name) else ast.unparse(base)
    access = "write" if access == "update" else access  # an out-of-bounds update is reported as the write
    site = M.register_site(M.Site("access", lc.tf.name, lc.src.loc(node), array, lc.memory_space(node),
                                  access, arr_t.ndim, function_kind=lc.tf.kind, debug=lc.debug))
    fail = lc.new_block("oob")
    cont = lc.new_block("inbounds")
    br = b.cbranch(ok, cont, fail)
    br.set_weights([1 << 20, 1])
    b.position_at_end(fail)
    idx = list(indices) + [const(0, i64)] * (3 - len(indices))
    ext = list(extents) + [const(1, i64)] * (3 - len(extents))
    b.call(oob_function(lc.module), [lc.thread_ctx, const(site)] + idx + ext)
    b.unreachable()
    b.position_at_end(cont)
