"""Warp operations on the CPU target: shuffles, votes, matches, ``activemask`` and ``syncwarp(mask)``
over the 32 lanes of an emulated warp.

A warp operation is a suspend point of the kernel's coroutine (as a barrier): the thread checks that
its lane is in the mask, leaves its operand in its context (``xin``), its mask and the operation's kind,
and waits with ``site | WARP_FLAG``. The block scheduler's warp pass (``warp_pass_function``) looks at
the warp's first waiting lane, the *leader*, and decides for the lanes named in its mask:

* every lane of the mask that exists waits at the same site with the same mask: the group is released;
* a lane of the mask has exited: fine for shuffles, votes and matches (CUDA: "all non-exited threads
  named in mask must execute the same intrinsic"), an error for ``syncwarp`` (it would wait forever);
* a lane of the mask waits somewhere else (another warp operation, a block barrier) or with another
  mask: a located divergent-warp error, as that would hang or be undefined on a GPU.

``activemask()`` does not synchronise: its group is the lanes that wait at that same call, which is
what a GPU reports for the lanes executing it together. Lanes beyond a block's last thread do not exist.

Before resuming the group the pass copies each member's ``xin`` to ``xout`` and the group's lanes to
``wgroup``; every member then computes its result from its peers' ``xout`` (the contexts of a block
lie one after the other, so lane l's is ``ctx + (l - lane)``). Only the pass writes ``xout``, so a lane
that resumes first and reaches its next warp operation cannot change what the others read. A shuffle
that reads a lane outside the group (not in the mask, or exited) is an error: on a GPU its result is
undefined.
"""
from __future__ import annotations

import contextlib

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines import lowering as CO
from kdebug.targets.cpu.ir_helpers import Loop, declare
from kdebug.targets.cpu.ir_helpers import const as _c
from kdebug.targets.cpu.ir_helpers import field as ctx_field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_BARRIER, CTX_CORO, CTX_JMPBUF, CTX_NTID, CTX_RUNTIME,
                                       CTX_TID, CTX_WGROUP, CTX_WKIND, CTX_WMASK, CTX_XIN, CTX_XOUT, I8P, VOID,
                                       WARP_FLAG, i1, i32, i64)
from kdebug.targets.cpu.checks.memcheck import emit_record_error, thread_position

KIND_SYNC, KIND_COLLECTIVE, KIND_ACTIVEMASK = 0, 1, 2


@contextlib.contextmanager
def _lanes(b: ir.IRBuilder, n, name: str):
    """``for (l = 0; l < n; l++)`` over i32 lanes."""
    with Loop(b, _c(0), n, name) as lane:
        yield lane


def _bit(b, mask, lane):
    return b.trunc(b.lshr(mask, lane), i1)


def linear_tid(b, ctx):
    t = [b.load(ctx_field(b, ctx, CTX_TID, k)) for k in range(3)]
    n = [b.load(ctx_field(b, ctx, CTX_NTID, k)) for k in range(2)]
    return b.add(b.mul(b.add(b.mul(t[2], n[1]), t[1]), n[0]), t[0])


def _record(b, ctx, kind, site, aux):
    rt = b.load(ctx_field(b, ctx, CTX_RUNTIME))
    ctaid, tid = thread_position(b, ctx)
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        emit_record_error(b, rt, kind, site, ctaid, tid, aux=aux)


# ---- the thread's side ----------------------------------------------------------------------------------
def fail_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.warp_fail(ctx, kind, site, a0..a3)``: record a warp error for this thread and stop the
    launcher (as a failed bounds check does)."""
    name = "kdebug.rt.warp_fail"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i32, i32, i32, i32, i32, i32]), name=name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "noreturn", "nounwind"):
        fn.attributes.add(a)
    ctx, kind, site = fn.args[:3]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    _record(b, ctx, kind, site, list(fn.args[3:]))
    jb = b.load(ctx_field(b, ctx, CTX_JMPBUF))
    with b.if_then(b.icmp_unsigned("!=", jb, ir.Constant(I8P, None))):
        b.call(declare(module, "longjmp", VOID, [I8P, i32], ("noreturn", "nounwind")), [jb, _c(1)])
        b.unreachable()
    b.call(declare(module, "llvm.trap", VOID, [], ("noreturn", "nounwind")), [])
    b.unreachable()
    return fn


def _fail(lc, kind, site, aux):
    b = lc.builder
    b.call(fail_function(lc.module), [lc.thread_ctx, _c(kind), _c(site)] + list(aux))
    b.unreachable()
    b.position_at_end(lc.new_block("warp.ok"))


def emit_warp_op(lc, node, op):
    """The CPU form of one warp operation (``op`` a kdebug.frontend.intrinsics_warp.WarpOp)."""
    if lc.function_tf.kind != "kernel":
        raise lc.src.error(node, f"{op.what} in a device function that is not inlined into a kernel",
                           "call the device function directly from a kernel (not through kdebug.deferred)")
    st = CO.begin_coroutine(lc)
    b = lc.builder
    site = lc.state.check_sites.add(M.Site("warp barrier", lc.tf.name, lc.src.loc(node), what=op.what,
                                  function_kind=lc.tf.kind))
    lane = b.urem(linear_tid(b, lc.thread_ctx), _c(32))
    kind = KIND_ACTIVEMASK if op.kind == "activemask" else KIND_SYNC if op.kind == "syncwarp" else KIND_COLLECTIVE
    mask = op.mask if op.mask is not None else _c(-1)
    if kind != KIND_ACTIVEMASK:
        ok = lc.new_block("warp.inmask")
        bad = lc.new_block("warp.notinmask")
        b.cbranch(_bit(b, mask, lane), ok, bad)
        b.position_at_end(bad)
        b.call(fail_function(lc.module), [lc.thread_ctx, _c(M.WARP_NOT_IN_MASK), _c(site), _c(0), mask, lane, _c(0)])
        b.unreachable()
        b.position_at_end(ok)
    value = op.value
    xin = _c(0, i64) if value is None else b.zext(value, i64) if value.type.width < 64 else value
    CO.pin_locals(lc)
    b.store(mask, ctx_field(b, lc.thread_ctx, CTX_WMASK))
    b.store(_c(kind), ctx_field(b, lc.thread_ctx, CTX_WKIND))
    b.store(xin, ctx_field(b, lc.thread_ctx, CTX_XIN))
    b.store(_c(site | WARP_FLAG), ctx_field(b, lc.thread_ctx, CTX_BARRIER))
    CO.suspend(lc, st, final=False)
    group = b.load(ctx_field(b, lc.thread_ctx, CTX_WGROUP))
    return result(lc, op, site, lane, group, xin, op.mask,
                  peer=lambda j: b.load(ctx_field(b, b.gep(lc.thread_ctx, [b.sub(j, lane)]), CTX_XOUT)),
                  gather=lambda what: b.call(_gather_function(lc.module, what), [lc.thread_ctx, lane, group, xin]))


def result(lc, op, site, lane, group, xin, mask, peer, gather, source=None):
    """What the warp operation gives this lane: ``group`` the lanes that took part, ``xin`` this lane's
    operand, ``peer(j)`` lane j's operand (i64 bits), ``gather(what)`` the group's ballot or match bits
    (coroutines: the peers' contexts; the region form: a column of the region frame); ``source``: a
    shuffle's source lane, where it was computed before the operation (the region form's cut)."""
    b = lc.builder
    k = op.kind
    if k == "syncwarp":
        return None
    if k == "activemask":
        return group
    if k.startswith("shfl."):
        j = source if source is not None else source_lane(b, k[5:], lane, op.b, op.c)
        ok = lc.new_block("shfl.source")
        bad = lc.new_block("shfl.inactive")
        b.cbranch(_bit(b, group, j), ok, bad)
        b.position_at_end(bad)
        b.call(fail_function(lc.module), [lc.thread_ctx, _c(M.WARP_INACTIVE_SOURCE), _c(site), group, mask, j, lane])
        b.unreachable()
        b.position_at_end(ok)
        v = peer(j)
        return b.trunc(v, op.value.type) if op.value.type.width < 64 else v
    if k.startswith("vote."):
        ballot = gather("ballot")
        if k == "vote.ballot":
            return ballot
        if k == "vote.all":
            return b.icmp_unsigned("==", ballot, group)
        if k == "vote.any":
            return b.icmp_unsigned("!=", ballot, _c(0))
        return b.or_(b.icmp_unsigned("==", ballot, _c(0)), b.icmp_unsigned("==", ballot, group))
    same = gather("match")
    if k == "match.any":
        return same
    everyone = b.icmp_unsigned("==", same, group)
    pair = ir.Constant(ir.LiteralStructType([i32, i1]), ir.Undefined)
    pair = b.insert_value(pair, b.select(everyone, group, _c(0)), 0)
    return b.insert_value(pair, everyone, 1)


def source_lane(b, mode, lane, bval, c):
    """PTX's shfl.sync: the lane to read, or this lane when the source is outside the segment."""
    bval = b.and_(bval, _c(31))
    cval = b.and_(c, _c(31))
    segmask = b.and_(b.lshr(c, _c(8)), _c(31))
    min_lane = b.and_(lane, segmask)
    max_lane = b.or_(min_lane, b.and_(cval, b.xor(segmask, _c(31))))
    if mode == "up":
        j = b.sub(lane, bval)
        valid = b.icmp_signed(">=", j, max_lane)
    elif mode == "down":
        j = b.add(lane, bval)
        valid = b.icmp_signed("<=", j, max_lane)
    elif mode == "bfly":
        j = b.xor(lane, bval)
        valid = b.icmp_signed("<=", j, max_lane)
    else:
        j = b.or_(min_lane, b.and_(bval, b.xor(segmask, _c(31))))
        valid = b.icmp_signed("<=", j, max_lane)
    return b.select(valid, j, lane)


def _gather_function(module: ir.Module, what: str, columns: bool = False) -> ir.Function:
    """``kdebug.rt.warp_<what>(ctx, lane, group, v) -> i32``: over the group's lanes, the bits of those
    whose ``xout`` is non-zero (ballot) or equal to ``v`` (match). ``columns``: the region form's
    ``kdebug.rt.warp_<what>.columns(xout, lane, group, v)``, ``xout`` this lane's entry of the column
    of the operands (regions.emit_warp_op), lane l's ``l - lane`` entries on."""
    name = f"kdebug.rt.warp_{what}" + (".columns" if columns else "")
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(i32, [ir.PointerType(i64) if columns else CONTEXT_P, i32, i32, i64]),
                     name=name)
    fn.linkage = "internal"
    ctx, lane, group, v = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = b.alloca(i32)
    b.store(_c(0), acc)
    with _lanes(b, _c(32), "gather") as lane_l:
        with b.if_then(_bit(b, group, lane_l)):
            if columns:
                x = b.load(b.gep(ctx, [b.sext(b.sub(lane_l, lane), i64)]))
            else:
                x = b.load(ctx_field(b, b.gep(ctx, [b.sub(lane_l, lane)]), CTX_XOUT))
            hit = b.icmp_unsigned("!=", x, _c(0, i64)) if what == "ballot" else b.icmp_unsigned("==", x, v)
            with b.if_then(hit):
                b.store(b.or_(b.load(acc), b.shl(_c(1), lane_l)), acc)
    b.ret(b.load(acc))
    return fn


# ---- the scheduler's side ---------------------------------------------------------------------------------
def warp_pass_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.warp_pass(lane0_ctx, nlanes) -> i32``: release the group of the warp's first lane
    waiting at a warp operation (1), or record why it cannot be released (0)."""
    name = "kdebug.rt.warp_pass"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(i32, [CONTEXT_P, i32]), name=name)
    fn.linkage = "internal"
    base, nlanes = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    resume = declare(module, "llvm.coro.resume", VOID, [I8P])
    leader = b.alloca(i32, name="leader")
    group = b.alloca(i32, name="group")
    b.store(_c(-1), leader)
    b.store(_c(0), group)

    def lane_ctx(lane):
        return b.gep(base, [lane])

    def field(lane, f):
        return ctx_field(b, lane_ctx(lane), f)

    with _lanes(b, nlanes, "find") as lane:
        waiting = b.icmp_signed(">=", b.load(field(lane, CTX_BARRIER)), _c(WARP_FLAG))
        with b.if_then(b.and_(waiting, b.icmp_signed("<", b.load(leader), _c(0)))):
            b.store(lane, leader)
    lead = b.load(leader)
    none = fn.append_basic_block("none")
    found = fn.append_basic_block("found")
    b.cbranch(b.icmp_signed("<", lead, _c(0)), none, found)
    b.position_at_end(none)
    b.ret(_c(0))
    b.position_at_end(found)
    site = b.load(field(lead, CTX_BARRIER))
    mask = b.load(field(lead, CTX_WMASK))
    kind = b.load(field(lead, CTX_WKIND))
    exist = b.select(b.icmp_signed(">=", nlanes, _c(32)), _c(-1), b.sub(b.shl(_c(1), nlanes), _c(1)))
    warp = b.udiv(linear_tid(b, base), _c(32))
    fail = fn.append_basic_block("fail")
    release = fn.append_basic_block("release")
    with b.if_else(b.icmp_signed("==", kind, _c(KIND_ACTIVEMASK))) as (active, synced):
        with active:
            with _lanes(b, nlanes, "active") as lane:
                with b.if_then(b.icmp_signed("==", b.load(field(lane, CTX_BARRIER)), site)):
                    b.store(b.or_(b.load(group), b.shl(_c(1), lane)), group)
        with synced:
            members = b.and_(mask, exist)
            with _lanes(b, nlanes, "members") as lane:
                with b.if_then(_bit(b, members, lane)):
                    _check_member(b, fn, lane, field(lane, CTX_BARRIER), field(lane, CTX_WMASK), lane_ctx(lane),
                                  site, mask, kind, warp, group, fail)
    b.branch(release)
    b.position_at_end(fail)
    b.ret(_c(0))
    b.position_at_end(release)
    g = b.load(group)
    with _lanes(b, nlanes, "copy") as lane:
        with b.if_then(_bit(b, g, lane)):
            b.store(b.load(field(lane, CTX_XIN)), field(lane, CTX_XOUT))
            b.store(g, field(lane, CTX_WGROUP))
    with _lanes(b, nlanes, "resume") as lane:
        with b.if_then(_bit(b, g, lane)):
            b.store(_c(0), field(lane, CTX_BARRIER))
            b.call(resume, [b.load(field(lane, CTX_CORO))])
    b.ret(_c(1))
    return fn


def _check_member(b, fn, lane, barrier_p, mask_p, ctx, site, mask, kind, warp, group, fail):
    """One lane named in the leader's mask: in the group, exited, or a divergent-warp error."""
    w = b.load(barrier_p)
    here = fn.append_basic_block("member.here")
    elsewhere = fn.append_basic_block("member.elsewhere")
    done = fn.append_basic_block("member.done")
    b.cbranch(b.icmp_signed("==", w, site), here, elsewhere)
    b.position_at_end(here)
    lane_mask = b.load(mask_p)
    same = fn.append_basic_block("member.samemask")
    other = fn.append_basic_block("member.othermask")
    b.cbranch(b.icmp_unsigned("==", lane_mask, mask), same, other)
    b.position_at_end(other)
    _record(b, ctx, M.WARP_MASK_MISMATCH, b.sub(site, _c(WARP_FLAG)), [lane_mask, mask, lane, warp])
    b.branch(fail)
    b.position_at_end(same)
    b.store(b.or_(b.load(group), b.shl(_c(1), lane)), group)
    b.branch(done)
    b.position_at_end(elsewhere)
    exited = fn.append_basic_block("member.exited")
    waits = fn.append_basic_block("member.waits")
    b.cbranch(b.icmp_signed("==", w, _c(0)), exited, waits)
    b.position_at_end(exited)
    is_sync = b.icmp_signed("==", kind, _c(KIND_SYNC))
    exit_err = fn.append_basic_block("member.exiterror")
    b.cbranch(is_sync, exit_err, done)
    b.position_at_end(exit_err)
    _record(b, ctx, M.WARP_EXITED, b.sub(site, _c(WARP_FLAG)), [_c(0), mask, lane, warp])
    b.branch(fail)
    b.position_at_end(waits)
    other_site = b.select(b.icmp_signed(">=", w, _c(WARP_FLAG)), b.sub(w, _c(WARP_FLAG)),
                          b.select(b.icmp_signed("<", w, _c(0)), b.neg(w), w))
    _record(b, ctx, M.DIVERGENT_WARP, b.sub(site, _c(WARP_FLAG)), [other_site, mask, lane, warp])
    b.branch(fail)
    b.position_at_end(done)
