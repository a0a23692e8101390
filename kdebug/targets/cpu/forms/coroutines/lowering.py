"""Barriers inside a kernel: the kernel lowered as an LLVM switched-resume coroutine.

A kernel with ``syncthreads`` (``syncthreads_count/and/or``, ``syncwarp``, or a
grid barrier) becomes one ``llvm.coro.*`` coroutine per emulated thread. A
barrier stores its site id in the thread's context and suspends; the block
scheduler (block_scheduler.py) resumes the threads when all of them arrived.
"""
from __future__ import annotations

import platform

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines.barrier_lines import in_branch, reach_line
from kdebug.targets.cpu.ir_helpers import TOKEN, TOKEN_NONE, const, declare, field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_BAR_LINE, CTX_BARRIER, CTX_CORO, CTX_EXIT_LINE, CTX_FRAME,
                                       CTX_FRAME_CAP, CTX_VOTE, END_OF_KERNEL, I8P, IN_BRANCH, VOID, i1, i8, i32,
                                       i64)


class CoroState:
    """What a coroutine kernel's suspend points need: its id and handle, the cleanup and return blocks."""

    def __init__(self) -> None:
        self.id = None
        self.hdl = None
        self.cleanup = None  # block: free the frame
        self.ret = None  # block: coro.end, then the function's return


def begin_coroutine(lc) -> CoroState:
    """Make the kernel being lowered a coroutine (once): coro.id/begin at the top of its entry block.
    An inlined device function lowers into its kernel's coroutine (``lc.fn`` is the kernel)."""
    st = lc.state.coroutines.get(lc.fn.name)
    if st is not None:
        return st
    pb = ir.IRBuilder(lc.entry)
    first = next((ins for ins in lc.entry.instructions if not isinstance(ins, ir.instructions.AllocaInstr)), None)
    if first is not None:
        pb.position_before(first)
    else:
        pb.position_at_end(lc.entry)
    st = lc.state.coroutines[lc.fn.name] = open_coroutine(pb, lc.fn, lc.thread_ctx)
    if lc.builder.block is lc.entry:  # llvmlite's insertion point is an index: move it past the prologue
        lc.builder.position_at_end(lc.entry)
    return st


def open_coroutine(pb: ir.IRBuilder, fn: ir.Function, ctx) -> CoroState:
    """``fn`` made a switched-resume coroutine: coro.id, the frame from the thread's context and
    coro.begin at ``pb`` (the top of its entry block), the handle kept in the context; its cleanup and
    return blocks appended (the return block's coro.end and return are the caller's)."""
    st = CoroState()
    m = fn.module
    set.add(fn.attributes, "presplitcoroutine")
    null = ir.Constant(I8P, None)
    coro_id = declare(m, "llvm.coro.id", TOKEN, [i32, I8P, I8P, I8P])
    coro_size = declare(m, "llvm.coro.size.i64", i64, [])
    coro_begin = declare(m, "llvm.coro.begin", I8P, [TOKEN, I8P])
    st.id = pb.call(coro_id, [const(0), null, null, null], name="coro.id")
    size = pb.call(coro_size, [], name="coro.size")
    mem = pb.call(frame_function(m), [ctx, size], name="coro.mem")
    st.hdl = pb.call(coro_begin, [st.id, mem], name="coro.hdl")
    pb.store(st.hdl, context_field(pb, ctx, CTX_CORO))
    st.cleanup = fn.append_basic_block("coro.cleanup")
    st.ret = fn.append_basic_block("coro.ret")
    cb = ir.IRBuilder(st.cleanup)  # the frame's memory stays with the thread's context (the launcher frees it)
    coro_free = declare(m, "llvm.coro.free", I8P, [TOKEN, I8P])
    cb.call(coro_free, [st.id, st.hdl])
    cb.branch(st.ret)
    return st


def context_field(b: ir.IRBuilder, ctx, index: int):
    """A pointer to field ``index`` of the thread's context, also where ``ctx`` is an opaque pointer
    (a function the reverse transform wrote from parsed IR)."""
    etype = CONTEXT_P.pointee if getattr(ctx.type, "is_opaque", False) else None
    return b.gep(ctx, [const(0), const(index)], inbounds=True, source_etype=etype)


def frame_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.frame(ctx, size)``: the memory for a thread's coroutine frame, kept in its context
    and reused by the next block that runs in the same context slot (no malloc per thread and block)."""
    name = "kdebug.rt.frame"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I8P, [CONTEXT_P, i64]), name=name)
    fn.linkage = "internal"
    ctx, size = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    cap = b.load(field(b, ctx, CTX_FRAME_CAP))
    with b.if_then(b.icmp_unsigned("<", cap, size), likely=False):
        free = declare(module, "free", VOID, [I8P])
        malloc = declare(module, "malloc", I8P, [i64])
        b.call(free, [b.load(field(b, ctx, CTX_FRAME))])
        b.store(b.call(malloc, [size]), field(b, ctx, CTX_FRAME))
        b.store(size, field(b, ctx, CTX_FRAME_CAP))
    b.ret(b.load(field(b, ctx, CTX_FRAME)))
    return fn


def suspend(lc, st: CoroState, final: bool) -> None:
    suspend_at(lc.builder, st, final, lc.new_block("coro.final" if final else "barrier.resume"))


def suspend_at(b: ir.IRBuilder, st: CoroState, final: bool, cont: ir.Block) -> None:
    """A suspend point at ``b``: resumed, the thread goes on at ``cont`` (unreachable after the final one)."""
    coro_suspend = declare(b.module, "llvm.coro.suspend", i8, [TOKEN, i1])
    s = b.call(coro_suspend, [TOKEN_NONE, const(int(final), i1)])
    sw = b.switch(s, st.ret)
    sw.add_case(const(0, i8), cont)
    sw.add_case(const(1, i8), st.cleanup)
    b.position_at_end(cont)
    if final:
        b.unreachable()


def pin_locals(lc) -> None:
    """``x = opaque(x)`` for the scalar locals before a suspend point (x86-64 only, an empty inline asm).
    LLVM's coroutine split recomputes cheap arithmetic after a suspend instead of keeping its result
    (``acc += a[k] * b[k]`` over a tile: all the loaded operands go into the frame instead of one
    sum); a value that comes out of an asm statement is kept as it is."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    b = lc.builder
    seen = set()
    for slots in lc.slots:  # the inlined device function's variables, then the kernel's
        for slot in slots.values():
            ty = slot.type.pointee
            if id(slot) in seen or not isinstance(ty, (ir.IntType, ir.FloatType, ir.DoubleType)) or ty == i1:
                continue
            seen.add(id(slot))
            constraint = "=r,0" if isinstance(ty, ir.IntType) else "=x,0"
            asm = ir.InlineAsm(ir.FunctionType(ty, [ty]), "", constraint, side_effect=False)
            b.store(b.call(asm, [b.load(slot)]), slot)


def emit_barrier(lc, node, what: str, vote=None, grid: bool = False):
    """A block (or grid) barrier in the kernel being lowered; returns the vote count after it
    (syncthreads_count) when ``vote`` (an i32) is given."""
    if lc.function_tf.kind != "kernel":
        raise lc.src.error(node, f"{what} in a device function that is not inlined into a kernel",
                           "call the device function directly from a kernel (not through kdebug.deferred)")
    st = begin_coroutine(lc)
    b = lc.builder
    kind = "grid barrier" if grid else "barrier"
    site = lc.state.check_sites.add(M.Site(kind, lc.tf.name, lc.src.loc(node), what=what, function_kind=lc.tf.kind))
    pin_locals(lc)
    value = site | IN_BRANCH if in_branch(lc, node) else site
    b.store(const(-value if grid else value), field(b, lc.thread_ctx, CTX_BARRIER))
    # the scheduler compares it with exited threads' exit lines: those below it skipped the barrier
    b.store(const(reach_line(lc, node)), field(b, lc.thread_ctx, CTX_BAR_LINE))
    b.store(vote if vote is not None else const(0), field(b, lc.thread_ctx, CTX_VOTE))
    suspend(lc, st, final=False)
    return b.load(field(b, lc.thread_ctx, CTX_VOTE))


def _targets(term) -> list:
    return [op for op in term.operands if isinstance(op, ir.Block)]


def function_epilogue(lc) -> None:
    """In the kernel's exit block: a coroutine kernel ends at its final suspend point."""
    st = lc.state.coroutines.get(lc.fn.name)
    if st is None:
        return
    b = lc.builder
    preds = [blk for blk in lc.fn.blocks if blk.is_terminated and lc.exit in _targets(blk.terminator)]
    if preds:  # which return the thread left by (block_scheduler.py: did it skip a barrier?)
        line = b.phi(i32, name="exit.line")
        for blk in preds:
            line.add_incoming(const(lc.exit_lines.get(blk, END_OF_KERNEL)), blk)
        b.store(line, field(b, lc.thread_ctx, CTX_EXIT_LINE))
    b.store(const(0), field(b, lc.thread_ctx, CTX_BARRIER))
    suspend(lc, st, final=True)
    b.position_at_end(st.ret)
    coro_end = declare(lc.module, "llvm.coro.end", VOID, [I8P, i1, TOKEN])
    b.call(coro_end, [st.hdl, const(0, i1), TOKEN_NONE])
