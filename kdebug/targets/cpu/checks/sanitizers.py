"""racecheck and initcheck in the CPU target's IR: every array access updates a shadow entry.

Shared memory has one ``ShadowEntry`` per byte of the block's shared memory
(allocated beside it by the launcher), global memory one per element of each
array argument (``Region``s, allocated by the runtime, kdebug/runtime/sanitizers.py).
An entry describes one *epoch*: for shared memory the span between two block
barriers; for global memory the span between two grid barriers, with the
block epoch of every access kept so that accesses of one block on both sides
of a ``syncthreads`` count as ordered. When an access finds an entry of an
older epoch, the entry is *evicted*: its slots are checked for a hazard,
which goes into the runtime record's hazard table (one slot per kind and
site pair, counted), and it starts afresh. The block's end evicts its shared
entries, the launch's end the global ones.

Threads run one after another between barriers, in an order ``--shuffle-threads``
may change; the slots keep the two lowest-numbered writers and readers, so
the verdicts do not depend on that order. A hazard's kind (RAW or WAR) is
decided by the two accesses' positions since the last barrier, as if the
block ran in lockstep.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.runtime import record as R
from kdebug.runtime import sanitizers as S
from kdebug.targets.cpu.ir_helpers import Loop, cond_value, const, declare, field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_DEPTH, CTX_EPOCH, CTX_GRID_EPOCH, CTX_RUNTIME,
                                       CTX_SAN_GID_BASE, CTX_SAN_NT, CTX_SAN_SHADOW, CTX_SAN_SHARED_BYTES,
                                       CTX_SAN_TID, CTX_SEQ, CTX_SHARED, HAZARD, I8P, REGION, RT_HAZARD_CAP,
                                       RT_HAZARDS, RT_HAZARDS_LOST, RT_NHAZARDS, RT_NREGIONS, RT_REGIONS,
                                       RUNTIME_P, SHADOW, SHADOW_BYTES, VOID, i1, i8, i32, i64,
                                       struct_field_index)

SHADOW_P, HAZARD_P, REGION_P = ir.PointerType(SHADOW), ir.PointerType(HAZARD), ir.PointerType(REGION)
E = {n: struct_field_index(R.ShadowEntry, n) for n in ("epoch", "init", "index", "id", "site", "pos", "bepoch")}
H = {n: struct_field_index(R.HazardSlot, n) for n in ("kind", "site_a", "site_b", "index", "gid_a", "gid_b", "count")}
G = {n: struct_field_index(R.Region, n) for n in ("base", "nbytes", "itemsize", "shadow", "written")}
INIT_BEFORE, INIT_ATOMIC = 1, 2
WRITERS, READERS = 0, 2  # first slot of each role


class _Entry:
    """Loads and stores of one shadow entry's fields."""

    def __init__(self, b: ir.IRBuilder, p) -> None:
        self.b, self.p = b, p

    def ptr(self, name: str, k: int | None = None):
        return field(self.b, self.p, E[name], k)

    def get(self, name: str, k: int | None = None):
        return self.b.load(self.ptr(name, k))

    def set(self, name: str, value, k: int | None = None) -> None:
        self.b.store(value, self.ptr(name, k))

    def set_slot(self, k: int, ident, site, pos, bepoch) -> None:
        for name, v in (("id", ident), ("site", site), ("pos", pos), ("bepoch", bepoch)):
            self.set(name, v, k)

    def copy_slot(self, src: int, dst: int) -> None:
        for name in ("id", "site", "pos", "bepoch"):
            self.set(name, self.get(name, src), dst)


def _internal(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is not None:
        return fn, None
    fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    fn.linkage = "internal"
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


# ---- the hazard table -----------------------------------------------------------------------------
def _lex_less(b, pairs):
    """(a0, a1, ...) < (b0, b1, ...) for signed integer pairs."""
    less = const(0, i1)
    equal = const(1, i1)
    for x, y in pairs:
        less = b.or_(less, b.and_(equal, b.icmp_signed("<", x, y)))
        equal = b.and_(equal, b.icmp_signed("==", x, y))
    return less


def report_function(module) -> ir.Function:
    """``kdebug.rt.san_report(rt, kind, site_a, site_b, ix0, ix1, ix2, gid_a, gid_b)``: count the hazard in its
    slot (kind, site_a, site_b), keeping the occurrence that comes first in (gid_a, gid_b, index) order."""
    fn, b = _internal(module, "kdebug.rt.san_report", VOID, [I8P, i32, i32, i32, i32, i32, i32, i64, i64])
    if b is None:
        return fn
    fn.attributes.add("noinline")
    rt_i8, kind, sa, sb, x0, x1, x2, ga, gb = fn.args
    rt = b.bitcast(rt_i8, RUNTIME_P)
    table = b.bitcast(b.load(field(b, rt, RT_HAZARDS)), HAZARD_P)
    n = b.load(field(b, rt, RT_NHAZARDS))
    idx = (x0, x1, x2)

    def fill(slot, count):
        for name, v in (("kind", kind), ("site_a", sa), ("site_b", sb), ("gid_a", ga), ("gid_b", gb)):
            b.store(v, field(b, slot, H[name]))
        for k in range(3):
            b.store(idx[k], field(b, slot, H["index"], k))
        b.store(count, field(b, slot, H["count"]))

    head, body, nxt, done = (fn.append_basic_block(x) for x in ("find.head", "find.body", "find.next", "find.none"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(i32)
    k.add_incoming(const(0), pre)
    b.cbranch(b.icmp_signed("<", k, n), body, done)
    b.position_at_end(body)
    slot = b.gep(table, [k])
    same = b.and_(b.and_(b.icmp_signed("==", b.load(field(b, slot, H["kind"])), kind),
                         b.icmp_signed("==", b.load(field(b, slot, H["site_a"])), sa)),
                  b.icmp_signed("==", b.load(field(b, slot, H["site_b"])), sb))
    hit = fn.append_basic_block("find.hit")
    b.cbranch(same, hit, nxt)
    b.position_at_end(hit)
    count = b.add(b.load(field(b, slot, H["count"])), const(1, i64))
    b.store(count, field(b, slot, H["count"]))
    old = [b.load(field(b, slot, H["gid_a"])), b.load(field(b, slot, H["gid_b"]))]
    old += [b.load(field(b, slot, H["index"], j)) for j in range(3)]
    with b.if_then(_lex_less(b, list(zip([ga, gb, x0, x1, x2], old)))):
        fill(slot, count)
    b.ret_void()
    b.position_at_end(nxt)
    k.add_incoming(b.add(k, const(1)), nxt)
    b.branch(head)
    b.position_at_end(done)
    with b.if_else(b.icmp_signed("<", n, b.load(field(b, rt, RT_HAZARD_CAP)))) as (room, full):
        with room:
            fill(b.gep(table, [n]), const(1, i64))
            b.store(b.add(n, const(1)), field(b, rt, RT_NHAZARDS))
        with full:
            lost = field(b, rt, RT_HAZARDS_LOST)
            b.store(b.add(b.load(lost), const(1)), lost)
    b.ret_void()
    return fn


# ---- eviction: the hazards of an entry's finished epoch ----------------------------------------------
def evict_function(module, racecheck: bool) -> ir.Function:
    """``kdebug.rt.san_evict(rt, entry, gid_base, nt)``: report the entry's hazards (racecheck), then fold
    "written" into ``init`` for the next epoch. ``gid_base + id - 1`` is a slot's thread in the launch."""
    fn, b = _internal(module, "kdebug.rt.san_evict", VOID, [I8P, SHADOW_P, i64, i64])
    if b is None:
        return fn
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    rt, p, gid_base, nt = fn.args
    e = _Entry(b, p)
    if racecheck:
        _report_races(b, module, rt, e, [e.get("id", k) for k in range(4)], gid_base, nt)
    b.ret_void()
    return fn


def _may_race(b, ids):
    """Two writers, or a writer and a reader that is another thread (the exact test is in eviction)."""
    other_reader = b.and_(b.icmp_signed("!=", ids[2], const(0)),
                          b.or_(b.icmp_signed("!=", ids[2], ids[0]), b.icmp_signed("!=", ids[3], const(0))))
    return b.or_(b.icmp_signed("!=", ids[1], const(0)), b.and_(b.icmp_signed("!=", ids[0], const(0)), other_reader))


def _evict(b, module, racecheck: bool, rt, e: "_Entry", gid_base, nt) -> None:
    """Report the finished epoch's hazards (a cold call, only when there may be one), then fold "written"
    into ``init`` for the next epoch."""
    ids = [e.get("id", k) for k in range(4)]
    if racecheck:
        with b.if_then(_may_race(b, ids), likely=False):
            b.call(evict_function(module, racecheck), [rt, e.p, gid_base, nt])
    written = b.or_(b.icmp_signed("!=", e.get("init"), const(0)), b.icmp_signed("!=", ids[0], const(0)))
    e.set("init", b.zext(written, i32))


def _report_races(b, module, rt, e, ids, gid_base, nt) -> None:
    report = report_function(module)
    sites = [e.get("site", k) for k in range(4)]
    pos = [e.get("pos", k) for k in range(4)]
    bep = [e.get("bepoch", k) for k in range(4)]
    gids = [b.add(gid_base, b.sub(b.zext(v, i64), const(1, i64))) for v in ids]
    idx = [e.get("index", k) for k in range(3)]

    def unordered(x, y):
        """Not ordered by a barrier: other blocks, or the same block epoch."""
        same_block = b.icmp_unsigned("==", b.udiv(gids[x], nt), b.udiv(gids[y], nt))
        return b.not_(b.and_(same_block, b.icmp_signed("!=", bep[x], bep[y])))

    # write after write: the two lowest writers; the earlier access first
    with b.if_then(b.and_(b.icmp_signed("!=", ids[1], const(0)), unordered(0, 1))):
        later_first = b.icmp_signed("<", pos[1], pos[0])
        sel = lambda v: (b.select(later_first, v[1], v[0]), b.select(later_first, v[0], v[1]))  # noqa: E731
        (s1, s2), (g1, g2) = sel(sites), sel(gids)
        b.call(report, [rt, const(S.WAW), s1, s2] + idx + [g1, g2])
    # read and write: the first unordered (writer, reader) pair of different threads
    found = b.alloca(i1)
    b.store(const(0, i1), found)
    for w, r in ((0, 2), (0, 3), (1, 2), (1, 3)):
        cand = b.and_(b.and_(b.icmp_signed("!=", ids[w], const(0)), b.icmp_signed("!=", ids[r], const(0))),
                      b.icmp_signed("!=", ids[w], ids[r]))
        with b.if_then(b.and_(b.and_(cand, b.not_(b.load(found))), unordered(w, r))):
            b.store(const(1, i1), found)
            war = b.icmp_signed("<", pos[r], pos[w])
            kind = b.select(war, const(S.WAR), const(S.RAW))
            b.call(report, [rt, kind, b.select(war, sites[r], sites[w]), b.select(war, sites[w], sites[r])] + idx
                   + [b.select(war, gids[r], gids[w]), b.select(war, gids[w], gids[r])])


# ---- the access ------------------------------------------------------------------------------------
def access_function(module, access: str, racecheck: bool, initcheck: bool) -> ir.Function:
    """``kdebug.rt.san_<access>(ctx, ptr, site, ix0, ix1, ix2)``: one checked access of ``access`` kind
    (read, write, atomic, update) to the element at ``ptr`` (shared or global memory; others are ignored)."""
    fn, b = _internal(module, f"kdebug.rt.san_{access}", VOID, [CONTEXT_P, I8P, i32, i32, i32, i32])
    if b is None:
        return fn
    fn.attributes.add("alwaysinline")
    ctx, ptr, site, x0, x1, x2 = fn.args
    leave = fn.append_basic_block("leave")
    tid1 = b.load(field(b, ctx, CTX_SAN_TID))
    bepoch = b.load(field(b, ctx, CTX_EPOCH))
    p = b.ptrtoint(ptr, i64)
    lo = b.ptrtoint(b.load(field(b, ctx, CTX_SHARED)), i64)
    in_shared = b.icmp_unsigned("<", b.sub(p, lo), b.load(field(b, ctx, CTX_SAN_SHARED_BYTES)))
    shared_bb, global_bb, common = (fn.append_basic_block(x) for x in ("shared", "global", "common"))
    b.cbranch(in_shared, shared_bb, global_bb)
    # shared memory: an entry per byte of the block's shared memory, threads numbered in the block
    b.position_at_end(shared_bb)
    sh_entry = b.gep(b.bitcast(b.load(field(b, ctx, CTX_SAN_SHADOW)), SHADOW_P), [b.sub(p, lo)])
    sh_id = tid1
    b.branch(common)
    # global memory: the array arguments of a host launch, threads numbered in the launch
    b.position_at_end(global_bb)
    rt = b.load(field(b, ctx, CTX_RUNTIME))
    g_entry, g_written = _find_region(b, fn, ctx, rt, p, leave)
    gl_id = b.trunc(b.add(b.load(field(b, ctx, CTX_SAN_GID_BASE)), b.zext(tid1, i64)), i32)
    g_epoch = b.add(b.load(field(b, ctx, CTX_GRID_EPOCH)), const(1))
    g_end = b.block
    b.branch(common)
    b.position_at_end(common)

    def phi(ty, a, c):
        v = b.phi(ty)
        v.add_incoming(a, shared_bb)
        v.add_incoming(c, g_end)
        return v

    entry = _Entry(b, phi(SHADOW_P, sh_entry, g_entry))
    me = phi(i32, sh_id, gl_id)
    epoch = phi(i32, bepoch, g_epoch)
    host_written = phi(i1, const(0, i1), g_written)

    def numbering():
        """(runtime record, first thread number of the slots' numbering, threads per block): slow paths only."""
        gid_base = b.select(in_shared, b.load(field(b, ctx, CTX_SAN_GID_BASE)), const(0, i64))
        return b.load(field(b, ctx, CTX_RUNTIME)), gid_base, b.load(field(b, ctx, CTX_SAN_NT))

    # a new epoch for this entry: evict the old one
    old = entry.get("epoch")
    with b.if_then(b.icmp_signed("!=", old, epoch), likely=False):
        with b.if_then(b.icmp_signed("!=", old, const(0))):
            rt, gid_base, nt = numbering()
            _evict(b, module, racecheck, rt, entry, gid_base, nt)
        entry.set("epoch", epoch)
        for k in range(4):
            entry.set("id", const(0), k)
        for k, v in enumerate((x0, x1, x2)):
            entry.set("index", v, k)
    seq = field(b, ctx, CTX_SEQ)
    pos = b.load(seq)
    b.store(b.add(pos, const(1)), seq)
    if initcheck and access != "write":
        _check_initialised(b, module, numbering, entry, me, bepoch, host_written, site, (x0, x1, x2))
    if access in ("write", "update"):
        _insert(b, entry, WRITERS, me, site, pos, bepoch)
    elif racecheck:  # reads and atomics: atomics conflict only with plain writes
        _insert(b, entry, READERS, me, site, pos, bepoch)
    if access == "atomic":
        entry.set("init", b.or_(entry.get("init"), const(INIT_ATOMIC)))
    b.branch(leave)
    b.position_at_end(leave)
    b.ret_void()
    return fn


def _find_region(b, fn, ctx, rt_i8, p, leave):
    """The shadow entry and host-written flag of global address ``p``; branches to ``leave`` when no
    array argument holds it (or in a device-side launch)."""
    rt = b.bitcast(rt_i8, RUNTIME_P)
    top = fn.append_basic_block("regions")
    b.cbranch(b.icmp_signed("!=", b.load(field(b, ctx, CTX_DEPTH)), const(0)), leave, top)
    b.position_at_end(top)
    regions = b.bitcast(b.load(field(b, rt, RT_REGIONS)), REGION_P)
    n = b.load(field(b, rt, RT_NREGIONS))
    head, body, nxt, hit = (fn.append_basic_block(x) for x in ("region.head", "region.body", "region.next",
                                                                  "region.hit"))
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(i32)
    k.add_incoming(const(0), top)
    b.cbranch(b.icmp_signed("<", k, n), body, leave)
    b.position_at_end(body)
    r = b.gep(regions, [k])
    base = b.ptrtoint(b.load(field(b, r, G["base"])), i64)
    off = b.sub(p, base)
    b.cbranch(b.icmp_unsigned("<", off, b.load(field(b, r, G["nbytes"]))), hit, nxt)
    b.position_at_end(nxt)
    k.add_incoming(b.add(k, const(1)), nxt)
    b.branch(head)
    b.position_at_end(hit)
    elem = b.udiv(off, b.load(field(b, r, G["itemsize"])))
    entry = b.gep(b.bitcast(b.load(field(b, r, G["shadow"])), SHADOW_P), [elem])
    written = b.load(field(b, r, G["written"]))
    none = b.icmp_unsigned("==", written, ir.Constant(I8P, None))
    host_written = cond_value(b, b.not_(none), lambda: b.icmp_unsigned(
        "!=", b.load(b.gep(written, [elem])), const(0, i8)), const(1, i1))
    return entry, host_written


def _insert(b, e: _Entry, base: int, me, site, pos, bepoch) -> None:
    """Keep ``me`` if it is one of the two lowest thread numbers of the role (the first access of each)."""
    s0, s1 = e.get("id", base), e.get("id", base + 1)
    known = b.or_(b.icmp_signed("==", s0, me), b.icmp_signed("==", s1, me))
    with b.if_then(b.not_(known)):
        lowest = b.or_(b.icmp_signed("==", s0, const(0)), b.icmp_unsigned("<", me, s0))
        with b.if_else(lowest) as (first, other):
            with first:
                with b.if_then(b.icmp_signed("!=", s0, const(0))):
                    e.copy_slot(base, base + 1)
                e.set_slot(base, me, site, pos, bepoch)
            with other:
                with b.if_then(b.or_(b.icmp_signed("==", s1, const(0)), b.icmp_unsigned("<", me, s1))):
                    e.set_slot(base + 1, me, site, pos, bepoch)


def _check_initialised(b, module, numbering, e: _Entry, me, bepoch, host_written, site, idx) -> None:
    """initcheck: the element was written before this read, in an order a barrier guarantees (an earlier
    epoch, an earlier block epoch of the same block, by this thread, or by the host)."""
    fast_ok = b.or_(host_written, b.icmp_signed("!=", b.and_(e.get("init"), const(INIT_BEFORE)), const(0)))
    with b.if_then(b.not_(fast_ok), likely=False):
        _check_writers(b, module, *numbering(), e, me, bepoch, site, idx)


def _check_writers(b, module, rt, gid_base, nt, e: _Entry, me, bepoch, site, idx) -> None:
    """Not written before this epoch: this thread, or an earlier block epoch of its block, must have."""
    ok = const(0, i1)
    my_gid = b.add(gid_base, b.sub(b.zext(me, i64), const(1, i64)))
    for k in (0, 1):
        w = e.get("id", k)
        gid = b.add(gid_base, b.sub(b.zext(w, i64), const(1, i64)))
        same_block = b.icmp_unsigned("==", b.udiv(gid, nt), b.udiv(my_gid, nt))
        before = b.and_(same_block, b.icmp_signed("<", e.get("bepoch", k), bepoch))
        mine = b.icmp_signed("==", w, me)
        ok = b.or_(ok, b.and_(b.icmp_signed("!=", w, const(0)), b.or_(mine, before)))
    with b.if_then(b.not_(ok), likely=False):
        b.call(report_function(module), [rt, const(S.UNINIT), site, const(0)] + list(idx) + [my_gid, const(-1, i64)])


# ---- ends of blocks and launches ----------------------------------------------------------------------
def block_end_function(module, racecheck: bool) -> ir.Function:
    """``kdebug.rt.san_block_end(ctx, nbytes)``: evict the block's shared entries, then clear them for the
    next block that uses this shared memory."""
    fn, b = _internal(module, "kdebug.rt.san_block_end", VOID, [CONTEXT_P, i64])
    if b is None:
        return fn
    ctx, nbytes = fn.args
    rt = b.load(field(b, ctx, CTX_RUNTIME))
    gid_base, nt = b.load(field(b, ctx, CTX_SAN_GID_BASE)), b.load(field(b, ctx, CTX_SAN_NT))
    shadow = b.bitcast(b.load(field(b, ctx, CTX_SAN_SHADOW)), SHADOW_P)
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        with Loop(b, const(0, i64), nbytes, "evict") as k:
            e = b.gep(shadow, [k])
            with b.if_then(b.icmp_signed("!=", b.load(field(b, e, E["epoch"])), const(0))):
                _evict(b, module, racecheck, rt, _Entry(b, e), gid_base, nt)
    memset = declare(module, "llvm.memset.p0i8.i64", VOID, [I8P, i8, i64, i1])
    b.call(memset, [b.bitcast(shadow, I8P), const(0, i8), b.mul(nbytes, const(SHADOW_BYTES, i64)), const(0, i1)])
    b.ret_void()
    return fn


def launch_end_function(module, racecheck: bool) -> ir.Function:
    """``kdebug.rt.san_launch_end(rt, nt)``: evict every global entry and mark what the launch wrote in the
    arrays' written maps (later launches read it as initialised)."""
    fn, b = _internal(module, "kdebug.rt.san_launch_end", VOID, [I8P, i64])
    if b is None:
        return fn
    rt_i8, nt = fn.args
    rt = b.bitcast(rt_i8, RUNTIME_P)
    regions = b.bitcast(b.load(field(b, rt, RT_REGIONS)), REGION_P)
    with Loop(b, const(0), b.load(field(b, rt, RT_NREGIONS)), "region") as k:
        r = b.gep(regions, [k])
        shadow = b.bitcast(b.load(field(b, r, G["shadow"])), SHADOW_P)
        written = b.load(field(b, r, G["written"]))
        count = b.udiv(b.load(field(b, r, G["nbytes"])), b.load(field(b, r, G["itemsize"])))
        with Loop(b, const(0, i64), count, "elem") as j:
            e = b.gep(shadow, [j])
            with b.if_then(b.icmp_signed("!=", b.load(field(b, e, E["epoch"])), const(0))):
                _evict(b, module, racecheck, rt_i8, _Entry(b, e), const(0, i64), nt)
                with b.if_then(b.and_(b.icmp_unsigned("!=", written, ir.Constant(I8P, None)),
                                      b.icmp_signed("!=", b.load(field(b, e, E["init"])), const(0)))):
                    b.store(const(1, i8), b.gep(written, [j]))
    b.ret_void()
    return fn


def emit_access(lc, node, arr_t, ptr, indices, access: str, racecheck: bool, initcheck: bool) -> None:
    """At an array access: register its site and call the checking function of its kind."""
    b = lc.builder
    base = node.value
    array = base.id if isinstance(base, ast.Name) else ast.unparse(base)
    site = lc.state.check_sites.add(M.Site("access", lc.tf.name, lc.src.loc(node), array, lc.memory_space(node),
                                  access, arr_t.ndim, function_kind=lc.tf.kind))
    idx = [b.trunc(v, i32) for v in indices] + [const(0)] * (3 - len(indices))
    fn = access_function(lc.module, access, racecheck, initcheck)
    b.call(fn, [lc.thread_ctx, b.bitcast(ptr, I8P), const(site)] + idx)
