"""Exceptions in the CPU target's IR: a raise stops the thread; with ``debug=True`` the first is recorded.

A raise in the kernel (or in a device function inlined into it) branches to the kernel's exit. In a
device function called out of line it sets the context's ``raised`` flag and returns; every call
that may raise checks the flag on return, and the kernel clears it as its thread ends, so the flag
is clear again for the next thread run in the same context.
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.ir_helpers import const, field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_RAISED, CTX_RUNTIME, I8P, RT_EXC_CTAID, RT_EXC_SITE,
                                       RT_EXC_TID, RUNTIME_P, VOID, i32)
from kdebug.targets.cpu.checks.memcheck import thread_position


def record_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.raise(ctx, site)``: the first raise of the launch claims the record's exception slot."""
    name = "kdebug.rt.raise"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i32]), name=name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "nounwind"):
        fn.attributes.add(a)
    ctx, site = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    rt_i8 = b.load(field(b, ctx, CTX_RUNTIME))
    with b.if_then(b.icmp_unsigned("!=", rt_i8, ir.Constant(I8P, None))):
        rt = b.bitcast(rt_i8, RUNTIME_P)
        pair = b.cmpxchg(field(b, rt, RT_EXC_SITE), const(0), site, "monotonic", "monotonic")
        with b.if_then(b.extract_value(pair, 1)):
            ctaid, tid = thread_position(b, ctx)
            for k in range(3):
                b.store(ctaid[k], field(b, rt, RT_EXC_CTAID, k))
                b.store(tid[k], field(b, rt, RT_EXC_TID, k))
    b.ret_void()
    return fn


def emit_raise(lc, node, exc_class, exc_args) -> None:
    """Record the exception (debug=True) and stop the thread."""
    if lc.thread_ctx is None:
        raise lc.src.error(node, "raise needs the thread context", "compile the kernel through cuda.jit")
    site = lc.state.check_sites.add(M.Site("raise", lc.tf.name, lc.src.loc(node), function_kind=lc.tf.kind,
                                  exc=exc_class, exc_args=tuple(exc_args)))
    if lc.debug:
        lc.builder.call(record_function(lc.module), [lc.thread_ctx, const(site)])
    stop_thread(lc)


def stop_thread(lc) -> None:
    """To the kernel's exit (clearing the flag), or out of this device function with the flag set."""
    b = lc.builder
    if lc.function_tf.kind == "kernel":
        b.store(const(0), field(b, lc.thread_ctx, CTX_RAISED))
        b.branch(lc.function_exit)
    else:
        b.store(const(1), field(b, lc.thread_ctx, CTX_RAISED))
        b.branch(lc.exit)


def after_raising_call(lc) -> None:
    """After a call that may raise: stop this thread too when the callee's raise set the flag."""
    b = lc.builder
    raised = b.icmp_unsigned("!=", b.load(field(b, lc.thread_ctx, CTX_RAISED)), const(0))
    stop, cont = lc.new_block("raised"), lc.new_block("not.raised")
    b.cbranch(raised, stop, cont).set_weights([1, 1 << 20])
    b.position_at_end(stop)
    stop_thread(lc)
    b.position_at_end(cont)
