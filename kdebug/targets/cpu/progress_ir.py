"""Where a running launch is, in the runtime record, for a report while it runs (a timeout, Ctrl-C).

Two cheap marks, none inside the launcher body's loops:

* the grid wrapper notes the first block of its range (``at_block``), before it calls the body;
* a thread entering a ``while`` loop stores the loop's site with its block's linear number (one
  8-byte store); leaving a nested while loop stores the enclosing one's site again; leaving one at
  the top stores nothing, so the record names the while loop a thread entered last. Only ``while``
  loops can run forever (a ``for`` over a range has a counted trip count, a barrier that cannot
  complete is an error); a kernel without while loops gets no code at all.

Measured (bench_cpu.py, one core, AMD EPYC), and what the design keeps out because of it:
* a store per block in the body's block loop moved saxpy's thread loop by 16 bytes, off a
  32-byte boundary, and that alone made saxpy 25% slower: the body is left as it was;
* the thread's own threadIdx at loop entry (loads and a second store), or a store at every
  loop's exit, cost the block reduction 10-20% (its ``while`` runs once per thread, around its
  barriers): the thread is named by its block only.

The stores are monotonic atomics, so that LLVM keeps them even before a loop that never ends;
kdebug/runtime/progress.py reads them from another host thread.
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.ir_helpers import const, field
from kdebug.targets.cpu.layout import (CTX_CTAID, CTX_NCTAID, CTX_RUNTIME, I8P, RT_AT_BLOCK,
                                       RT_AT_SITE, RUNTIME_P, i32, i64)


def note_block(b: ir.IRBuilder, runtime, blk) -> None:
    """``at_block = blk`` (the runtime record may be null)."""
    with b.if_then(b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None))):
        b.store_atomic(blk, field(b, b.bitcast(runtime, RUNTIME_P), RT_AT_BLOCK), "monotonic", 8)


def loop_site(lc, node) -> int:
    """The site id of a while loop (its ``while`` line), registered with the memcheck sites."""
    return lc.state.check_sites.add(M.Site("loop", lc.tf.name, lc.src.loc(node), what="while loop",
                                  function_kind=lc.tf.kind))


def _linear(b: ir.IRBuilder, ctx, pos_field: int, dim_field: int):
    """x + nx * (y + ny * z) of a context's (threadIdx, blockDim) or (blockIdx, gridDim), as i64."""
    x, y, z = (b.zext(b.load(field(b, ctx, pos_field, k)), i64) for k in range(3))
    nx, ny = (b.zext(b.load(field(b, ctx, dim_field, k)), i64) for k in range(2))
    return b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))


def _with_record(lc, emit) -> None:
    """``emit(rt)`` where the thread's runtime record is there (it may be null)."""
    b = lc.builder
    runtime = b.load(field(b, lc.thread_ctx, CTX_RUNTIME))
    with b.if_then(b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None))):
        emit(b.bitcast(runtime, RUNTIME_P))


def enter_loop(lc, node) -> int:
    """Entering: the loop's site and the thread's block, in one 8-byte store."""
    b = lc.builder
    site = loop_site(lc, node)

    def note(rt):  # at_site_block follows at_site (little-endian: the site is the low half)
        blk = b.zext(b.trunc(_linear(b, lc.thread_ctx, CTX_CTAID, CTX_NCTAID), i32), i64)
        packed = b.or_(const(site, i64), b.shl(blk, const(32, i64)))
        b.store_atomic(packed, b.bitcast(field(b, rt, RT_AT_SITE), ir.PointerType(i64)), "monotonic", 8)
    _with_record(lc, note)
    return site


def leave_loop(lc, outer: int | None) -> None:
    """Leaving a nested loop: the enclosing while loop's site again (its block is the same). Leaving a
    loop at the top stores nothing: the record says the loop a thread entered last."""
    if outer is None:
        return
    b = lc.builder
    _with_record(lc, lambda rt: b.store_atomic(const(outer), field(b, rt, RT_AT_SITE), "monotonic", 4))
