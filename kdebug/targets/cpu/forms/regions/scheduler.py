"""The launcher body of a kernel in the region form (regions.py): each region a loop over the block's threads.

Per block, the threads start in region 0 and run a *thread loop*: for every thread in order (x
fastest, as a barrier-free kernel's loop; or the ``--shuffle-threads`` order of the phase) the step
function, inlined, runs the thread to its next barrier or its end, on one context private to the
loop (its fields forwarded by LLVM, as ``plain_blocks``' are), and the loop keeps the thread's state
(where it waits, the barrier's reach line, its exit line, its vote) in four columns and the least
and greatest waiting site. One loop is made for each region, numbered (the thread starts with
``barrier = k | REGION_INDEX``; a barrier names the number of the region after it in ``wkind``, a
warp field the region form leaves unused), the number a constant in each loop, so that LLVM keeps
only that region's code in it and may vectorise it across threads. The launcher depends on the
kernel only through its number of barriers, so it is built once per signature (launcher.py's cache).

Before each call the loop sets every context field the step function may write from the thread's own
column, so no value passes from thread to thread through the shared context (a loop-carried value
LLVM cannot vectorise), and the region after the barrier is the greatest a thread names (a max
reduction). When every thread waits at the same barrier (the least site is the greatest and not 0), the barrier
completes: the votes are summed, the updated block-uniform variables' next entries become their
current ones (regions.updated_uniform_variables), the phase advances (the shuffled order changes, as the block
scheduler's) and the loop of the code after that barrier runs. When all have exited, the block is
done. Anything else (threads at different barriers, some exited while others wait) is what the block
scheduler decides: the threads' states are copied into their own contexts and block_scheduler.py's
code takes the block over from there (divergent barrier errors, the exit rule and its warning, the
votes), resuming each thread by calling the step function on its context. So the region form keeps
the coroutine form's order of every thread's operations, its phases and its findings. A loop in rounds
(regions.emit_rounds) has thread loops of its own (``_round``), run again while a thread has iterations
left.
"""
from __future__ import annotations

import dataclasses

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines.scheduler import BlockScheduler
from kdebug.targets.cpu.ir_helpers import Loop, const, each_thread, entry_alloca, field
from kdebug.targets.cpu.layout import (CONTEXT, CTX_BAR_LINE, CTX_BARRIER, CTX_EXIT_LINE, CTX_FRAME, CTX_TID,
                                       CTX_VOTE, CTX_WKIND, I8P, WARP_FLAG, i1, i32, i64)
from kdebug.targets.cpu.checks.memcheck import FAILED_STEP, error_flag, first_failure_function
from kdebug.targets.cpu.forms.coroutines.lockstep import is_lockstep_wait
from kdebug.runtime.record import REGION_INDEX, ROUND_DONE, ROUND_START
from kdebug.targets.cpu.forms.regions.cut import LANES

SCHEDULER_SUFFIX = ".grid.scheduler"  # the block scheduler's function of a region-form launcher (_scheduler_function)
SMALL_BLOCKS_SUFFIX = ".grid.small_blocks"  # its blocks where they fit the kernel's block limits (_small_blocks_function)
_STATE = (("waits", CTX_BARRIER), ("bar_line", CTX_BAR_LINE), ("exit_line", CTX_EXIT_LINE), ("vote", CTX_VOTE))


class RegionScheduler(BlockScheduler):
    """The block scheduler's decisions, with a thread resumed by a call of the step function."""

    def __init__(self, body, launch) -> None:
        """``launch``: the kernel's ``launcher.RegionLaunch``."""
        # the block scheduler's lockstep machinery counts the threads at a loop run in rounds apart (_loop_pass)
        super().__init__(body, grid_sync=False, lockstep=launch.rounds is not None)
        self.launch = launch
        self.round_entry, self.round_regions = launch.rounds if launch.rounds is not None else (None, ())
        self.nbarriers, self.votes, self.uniform_copy = launch.cuts, launch.votes, launch.uniform_copy
        self.narrow = launch.narrow and not launch.votes
        self.warp_columns = launch.warp_columns
        self.fresh = launch.fresh  # memcheck: failed checks end their thread's step (regions.fail_fresh)

    def _round_counter(self):
        """The round counter of the loops in rounds (regions.emit_rounds): an entry of the region frame."""
        b = self.b
        return b.bitcast(b.gep(self.lb.frame, [const(self.round_entry, i64)], inbounds=True), ir.PointerType(i64))

    def _rounds_begin(self, site) -> None:
        """The block's threads all wait at ``site``: at a loop's start (regions.emit_rounds), its rounds begin
        with the counter at 0 (``_round`` counts on)."""
        if self.round_entry is None:
            return
        b = self.b
        start = b.and_(is_lockstep_wait(b, site), b.icmp_signed("!=", b.and_(site, const(ROUND_START)), const(0)))
        with b.if_then(start):
            b.store(const(0, i64), self._round_counter())

    def _round(self, ctx, region: int) -> None:
        """One round of a loop in rounds (regions.emit_rounds): every thread runs the loop's iteration region
        once, stopping at the loop (an iteration left) or at its end. The thread loop keeps no state: a thread's
        lines and vote after the loop are those it had at the loop's start (the region writes the same), and
        where it waits matters only as whether any thread waits at the loop, an or over the threads. Then the
        round again (the counter one more), or, when every thread is at the loop's end, the region after it.
        (The threads all reached the loop's start together, or the block scheduler has the block.)"""
        b, lb = self.b, self.lb
        more = self.more
        b.store(ir.Constant(i1, 0), more)
        with each_thread(b, ctx, (lb.bx, lb.by, lb.bz), CTX_TID, "rt"):
            b.store(const(region | REGION_INDEX), field(b, ctx, CTX_BARRIER))
            b.call(lb.kernel, [ctx] + lb.args)
            w = b.load(field(b, ctx, CTX_BARRIER))
            at_loop = b.icmp_signed("==", b.and_(w, const(ROUND_DONE)), const(0))
            b.store(b.or_(b.load(more), at_loop), more)
        again = b.load(more)
        b.store(b.select(again, const(region), const(region + 1)), self.at)
        self._advance_uniform()
        counter = self._round_counter()
        b.store(b.add(b.load(counter), b.zext(again, i64)), counter)

    def _loop_pass(self, bi) -> None:
        """Threads wait at a loop run in rounds (regions.emit_rounds) in a block the scheduler took over (some
        of its threads exited before the loop): round after round, every thread waiting at the loop's start
        or at the loop runs its next iteration, in thread order, and the round counter advances; when none is
        left there, the threads at the loop's end go on past it, in thread order."""
        b, lb, fn = self.b, self.lb, self.fn
        more = entry_alloca(b, i1, "rounds.more")
        counter = self._round_counter()
        with Loop(b, const(0), lb.nt32, "rounds.first") as t:  # threads that just arrived: the first round
            w = b.load(field(b, self._thread_ctx(bi, t), CTX_BARRIER))
            with b.if_then(b.and_(is_lockstep_wait(b, w), b.icmp_signed("!=", b.and_(w, const(ROUND_START)), const(0)))):
                b.store(const(0, i64), counter)
        head, again, ends = (fn.append_basic_block(f"rounds.{n}") for n in ("head", "again", "ends"))
        b.branch(head)
        b.position_at_end(head)
        b.store(ir.Constant(i1, 0), more)
        with Loop(b, const(0), lb.nt32, "rounds.t") as t:
            c = self._thread_ctx(bi, t)
            w = b.load(field(b, c, CTX_BARRIER))
            with b.if_then(b.and_(is_lockstep_wait(b, w), b.icmp_signed("==", b.and_(w, const(ROUND_DONE)), const(0)))):
                self._resume(c)
                b.store(ir.Constant(i1, 1), more)
        b.cbranch(b.load(more), again, ends)
        b.position_at_end(again)
        b.store(b.add(b.load(counter), const(1, i64)), counter)
        b.branch(head)
        b.position_at_end(ends)
        with Loop(b, const(0), lb.nt32, "rounds.end") as t:
            c = self._thread_ctx(bi, t)
            with b.if_then(is_lockstep_wait(b, b.load(field(b, c, CTX_BARRIER)))):
                self._resume(c)

    def _pass_warp_operation(self, site) -> None:
        """Every thread of the block waits at warp operation ``site``: each lane's operand becomes what its
        peers read (regions.emit_warp_op): the column of the operands copied to that of the copies."""
        if self.warp_columns is None:
            return
        b, lb = self.b, self.lb
        operands, copies = self.warp_columns
        memcpy = b.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, i64])
        with b.if_then(b.icmp_signed(">=", site, const(WARP_FLAG))):
            b.call(memcpy, [b.gep(lb.frame, [const(copies, i64)], inbounds=True),
                            b.gep(lb.frame, [const(operands, i64)], inbounds=True), b.mul(lb.nt, const(8, i64)),
                            ir.Constant(i1, 0)])

    def _warp_barriers(self, bi) -> None:
        """The block taken over with a lane at a warp operation: regions._warp_reason admits warp operations
        only where every thread of the block reaches each alike, so its threads never part ways there; were
        they to, the first such lane's warp is named divergent (the coroutines' pass resumes coroutines)."""
        b, lb = self.b, self.lb
        found = entry_alloca(b, i32, "warp.lane")
        b.store(const(-1), found)
        with Loop(b, const(0), lb.nt32, "warp.find") as t:
            w = b.load(field(b, self._thread_ctx(bi, t), CTX_BARRIER))
            with b.if_then(b.and_(b.icmp_signed(">=", w, const(WARP_FLAG)), b.icmp_signed("<", b.load(found), const(0)))):
                b.store(t, found)
        c = self._thread_ctx(bi, b.load(found))
        site = b.sub(b.load(field(b, c, CTX_BARRIER)), const(WARP_FLAG))
        t = b.load(found)
        self._record(M.DIVERGENT_WARP, c, site, [const(0), const(-1), b.urem(t, const(32)), b.udiv(t, const(32))])

    def _advance_uniform(self) -> None:
        """A barrier completes: the updated block-uniform variables' values its threads left become the
        values the next region starts from (regions.updated_uniform_variables). Each variable is copied as
        one load and store of its own width: a wider copy (the padded area at once) would load across the
        narrower stores the threads just made, which the store buffer cannot forward (measured: a 64-byte
        copy after the tree reduction's 8-byte ``step`` stalled for a third of the kernel's time)."""
        if self.uniform_copy is None:
            return
        b, lb = self.b, self.lb
        cur, nxt, _, pieces = self.uniform_copy
        for at, nbytes in pieces:
            src = b.gep(lb.frame, [const(nxt + at, i64)], inbounds=True)
            dst = b.gep(lb.frame, [const(cur + at, i64)], inbounds=True)
            if nbytes in (1, 2, 4, 8, 16):
                # the alignment the entries have (both areas start on a cache line), not the integer's
                # own: an i128 is 16-aligned, a complex128 entry only 8
                align = min(nbytes, (at & -at) if at else nbytes)
                ty = ir.IntType(8 * nbytes).as_pointer()
                b.store(b.load(b.bitcast(src, ty), align=align), b.bitcast(dst, ty), align=align)
            else:
                memcpy = b.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, i64])
                b.call(memcpy, [dst, src, const(nbytes, i64), ir.Constant(i1, 0)])

    def _release_block(self, bi, blk) -> None:  # the block scheduler's release, after a hand-over
        self._advance_uniform()
        super()._release_block(bi, blk)

    # the block scheduler's code, for a thread that is a step function rather than a coroutine
    def _resume(self, c) -> None:
        b = self.b
        with b.if_then(b.icmp_signed("!=", b.load(field(b, c, CTX_BARRIER)), const(0))):
            b.call(self.lb.kernel, [c] + self.lb.args, attrs=("noinline",))  # it reads the site itself
            if self.fresh:  # a failed check ended its step: reported now, as the stopping check would
                self._report_fresh(self._failed(c), ctx=c)

    def _failed(self, ctx):
        """Whether a failed check ended the step the thread of ``ctx`` just ran (regions.fail_fresh)."""
        b = self.b
        return b.icmp_signed("==", b.load(field(b, ctx, CTX_BARRIER)), const(FAILED_STEP))

    def _report_fresh(self, failed, ctx=None, blk=None) -> None:
        """A failed check ended a thread's step (regions.fail_fresh): the first such thread in thread order
        gets the runtime record (its slot's access, as the stopping check records it) and the launcher stops.
        After a thread loop (``blk``), the call gets a thread context of its own, filled here: the loop's
        private context never escapes, so LLVM keeps its fields in registers across the loop."""
        b, lb = self.b, self.lb
        with b.if_then(failed, likely=False):
            if ctx is None:
                ctx = b.gep(lb.ctxs, [const(0, i64)])
                lb.init_ctx(ctx, blk, const(0), lb.shared, None)
            b.call(first_failure_function(b.module, fresh=True), [ctx, lb.nt])
            b.branch(lb.stop)
            b.position_at_end(self.fn.append_basic_block("failed.after"))

    def _destroy_all(self, nblocks) -> None:  # no coroutine frames
        pass

    def _scan_threads(self, bi, blk) -> None:
        """The block taken over after a thread loop: its threads counted in the order that loop ran them,
        as the block scheduler counts them (in thread order after the start, in the phase's order after a
        release), so that the first odd thread it names is the same."""
        b, lb = self.b, self.lb
        ph = b.load(self.ph)
        with Loop(b, const(0, i64), lb.nt, "scan.k") as k:
            t = b.select(b.icmp_signed("==", ph, const(0, i64)), b.trunc(k, i32), lb.order(blk, k, ph))
            self._count_thread(t, b.gep(lb.ctxs, [b.zext(t, i64)]))

    def build(self) -> None:
        b, lb = self.b, self.lb
        self._declare_state()
        self.fail = self.fn.append_basic_block("fail")
        ctx = entry_alloca(b, CONTEXT, "ctx")  # private: LLVM forwards its fields into the thread loops
        cols = {name: entry_alloca(b, ir.ArrayType(i32, LANES), name=f"state.{name}") for name, _ in _STATE}
        self.lo, self.hi, self.vsum = (entry_alloca(b, i32, n) for n in ("waits.lo", "waits.hi", "votes.sum"))
        self.vtotal, self.at, self.ph = entry_alloca(b, i32, "votes.total"), entry_alloca(b, i32, "region"), \
            entry_alloca(b, i64, "region.phase")
        self.next_at = entry_alloca(b, i32, "region.next")
        self.more = entry_alloca(b, i1, "rounds.more")  # a thread of the round waits at the loop (_round)
        # a failed check ended a thread's step in this thread loop: an or over its threads, which LLVM
        # vectorises with the loop (a scan of the failure slots after it cost a fifth of the reduction)
        self.failed = entry_alloca(b, i1, "memcheck.failed")
        # narrowed thread loops (region_bounds.py): threads x < pend, multiples of pstride, keep their state in
        # the columns, the others all have the state of the idle thread the last narrowed loop ran (rep)
        self.pend = entry_alloca(b, i32, "columns.upto")
        self.pstride = entry_alloca(b, i32, "columns.stride")
        self.rep = {name: entry_alloca(b, i32, f"idle.{name}") for name, _ in _STATE}
        if b.block is lb.fn.entry_basic_block:  # the allocas went in above the builder's place
            b.position_at_end(b.block)
        self.cols = {name: b.gep(p, [const(0), const(0)], inbounds=True) for name, p in cols.items()}
        limits = self.launch.block_limits
        if limits is None:
            self._blocks(ctx)
        else:  # blocks that fit the limits run a copy of their own, which knows they do (block_limits.py)
            fits = [b.icmp_unsigned("<=", d, const(c)) for d, c in zip((lb.bx, lb.by, lb.bz), limits)]
            with b.if_else(b.and_(b.and_(fits[0], fits[1]), fits[2]), likely=True) as (small, other):
                with small:
                    b.call(self._small_blocks_function(limits), list(self.fn.args))
                with other:
                    self._blocks(ctx)
        b.branch(lb.stop)
        b.position_at_end(self.fail)
        b.branch(lb.stop)

    def _small_blocks_function(self, limits) -> ir.Function:
        """``<entry>.grid.small_blocks``: the launcher body's blocks for a launch whose blocks are no larger than
        ``limits``, where the body's code reads the block's sizes as at most those (``LauncherBody.within``), so
        that LLVM folds memcheck's checks of the thread index (block_limits.py). A function of its own, kept
        out of line: inside the body, beside the copy for other blocks, LLVM's passes left some of those
        checks unfolded (measured: Harris's reduction #4, its two loads' checks)."""
        m = self.fn.module
        fn = ir.Function(m, self.fn.function_type, name=self.lb.kernel.name + SMALL_BLOCKS_SUFFIX)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        for k, a in enumerate(self.fn.args):  # the body's own: noalias where it has it
            for attr in a.attributes:
                fn.args[k].add_attribute(attr)
        lb = self.lb.on(fn)
        with lb.within(limits):
            RegionScheduler(lb, dataclasses.replace(self.launch, block_limits=None)).build()
        lb.b.position_at_end(lb.stop)
        lb.b.ret_void()
        return fn

    def _blocks(self, ctx) -> None:
        """The launcher's blocks, one after the other: each run region by region (``_run_regions``)."""
        b, lb = self.b, self.lb
        with Loop(b, lb.first, lb.last, "block") as blk:
            lb.init_ctx(ctx, blk, None, lb.shared, None)
            b.store(lb.frame, field(b, ctx, CTX_FRAME))
            self._run_regions(ctx, blk)
            nxt = self.fn.append_basic_block("block.next")
            b.cbranch(error_flag(b, lb.runtime), lb.stop, nxt)
            b.position_at_end(nxt)

    def _run_regions(self, ctx, blk) -> None:
        """One block: thread loops region after region while its threads agree; else the scheduler's code."""
        b, fn = self.b, self.fn
        b.store(const(0), self.at)
        b.store(const(0, i64), self.ph)  # the threads start in phase 0 (block_scheduler._start_threads)
        b.store(const(0), self.vtotal)
        b.store(const(LANES), self.pend)
        b.store(const(1), self.pstride)
        head = fn.append_basic_block("regions.head")
        after = fn.append_basic_block("regions.after")
        done = fn.append_basic_block("regions.done")
        b.branch(head)
        b.position_at_end(head)
        b.store(const(0x7FFFFFFF), self.lo)
        b.store(const(-0x80000000), self.hi)
        b.store(const(0), self.vsum)
        b.store(const(0), self.next_at)
        at = b.load(self.at)
        sw = b.switch(at, after)
        for k in range(self.nbarriers + 1):
            loop = fn.append_basic_block(f"region.{k}.threads")
            sw.add_case(const(k), loop)
            b.position_at_end(loop)
            if k in self.round_regions:
                self._round(ctx, k)
                b.branch(head)
                continue
            if self.fresh:
                b.store(ir.Constant(i1, 0), self.failed)
            self._thread_loop(ctx, blk, k | REGION_INDEX)
            if self.fresh:  # before any thread's state is read: a failed thread's is not stored
                self._report_fresh(b.load(self.failed), blk=blk)
            b.branch(after)
        b.position_at_end(after)
        lo, hi = b.load(self.lo), b.load(self.hi)
        agree = fn.append_basic_block("regions.agree")
        differ = fn.append_basic_block("regions.differ")
        b.cbranch(b.icmp_signed("==", lo, hi), agree, differ)
        b.position_at_end(agree)
        go_on = fn.append_basic_block("regions.barrier")
        b.cbranch(b.icmp_signed("==", lo, const(0)), done, go_on)
        b.position_at_end(go_on)  # every thread waits at barrier ``lo`` (or at a loop's start): it completes
        b.store(b.load(self.next_at), self.at)
        b.store(b.load(self.vsum), self.vtotal)
        b.store(self._next_phase(), self.ph)
        self._advance_uniform()
        self._pass_warp_operation(lo)
        self._rounds_begin(lo)
        b.branch(head)
        b.position_at_end(differ)  # the block scheduler takes the block over
        self._hand_over(blk)
        self._take_over(blk, done)
        b.position_at_end(done)

    def _thread_loop(self, ctx, blk, site: int) -> None:
        """Every thread of the block runs from ``site`` (region k's number | REGION_INDEX) to its next stop."""
        b, lb = self.b, self.lb
        if lb.shuffle:
            with b.if_else(lb.use_perm) as (shuffled, ordered):
                with shuffled:
                    ph = b.load(self.ph)
                    with Loop(b, const(0, i64), lb.nt, "k") as k:
                        t = lb.order(blk, k, ph)
                        lb.set_tid(ctx, t)
                        self._one_thread(ctx, site, b.zext(t, i64), b.urem(t, lb.bx))
                    if self.narrow:
                        b.store(lb.bx, self.pend)
                        b.store(const(1), self.pstride)
                with ordered:
                    self._ordered(ctx, site)
        else:
            self._ordered(ctx, site)

    def _ordered(self, ctx, site: int) -> None:
        b, lb = self.b, self.lb
        upto, stride = lb.bx, None
        if self.narrow:  # only the threads x < bound, multiples of the stride, can change anything in this region
            bound = b.call(lb.bound, [ctx, const(site & ~REGION_INDEX)] + lb.args)
            bound = b.select(b.icmp_signed("<", bound, const(0, i64)), const(0, i64), bound)
            bx = b.zext(lb.bx, i64)
            upto = b.trunc(b.select(b.icmp_signed("<", bound, bx), bound, bx), i32)
            # a power of two, 1 for most regions (a constant once inlined); kept below 2^30, a multiple of
            # which no thread index but 0 is
            stride = b.call(lb.stride, [ctx, const(site & ~REGION_INDEX)] + lb.args)
            few = const(1 << 30, i64)
            stride = b.trunc(b.select(b.icmp_unsigned("<", stride, few), stride, few), i32)
        # threads that all stop alike (region_bounds.Region.alike) keep one state, the last thread's: a
        # constant once the function is inlined, so LLVM keeps the one form of the loop it asks for
        alike = b.call(lb.alike, [const(site & ~REGION_INDEX)]) if self.narrow else None
        with Loop(b, const(0), lb.bz, "tz") as tz:
            b.store(tz, field(b, ctx, CTX_TID, 2))
            with Loop(b, const(0), lb.by, "ty") as ty:
                b.store(ty, field(b, ctx, CTX_TID, 1))
                row = b.zext(b.mul(lb.bx, b.add(ty, b.mul(lb.by, tz))), i64)
                with Loop(b, const(0), upto, "tx", step=stride) as tx:
                    b.store(tx, field(b, ctx, CTX_TID, 0))
                    self._one_thread(ctx, site, b.add(row, b.zext(tx, i64)), tx, alike=alike)
        if not self.narrow:
            return
        # threads left out: those from the bound up, and those between the stride's multiples
        strided = b.and_(b.icmp_unsigned(">", stride, const(1)), b.icmp_unsigned(">", lb.bx, const(1)))
        with b.if_else(b.or_(b.icmp_unsigned("<", upto, lb.bx), strided)) as (idle, every):
            with idle:  # one idle thread for all of them: they take one path to one stop
                first = b.select(b.icmp_unsigned("<", upto, lb.bx), upto, const(1))  # 1: not a multiple
                for k, v in enumerate((first, const(0), const(0))):
                    b.store(v, field(b, ctx, CTX_TID, k))
                self._one_thread(ctx, site, b.zext(first, i64), first, idle=True)
                b.store(b.select(alike, const(0), upto), self.pend)
                b.store(stride, self.pstride)
            with every:
                with b.if_else(alike) as (one, each):
                    with one:  # the context holds the last thread's state, which is every thread's
                        self._keep_state(ctx, rep=True)
                        b.store(const(0), self.pend)
                    with each:
                        b.store(lb.bx, self.pend)
                b.store(const(1), self.pstride)

    def _state(self, name: str, t, tx):
        """Thread ``t``'s (x index ``tx``) state ``name``: its column, or the idle thread's (narrowed loops)."""
        b = self.b
        col = b.load(b.gep(self.cols[name], [t], inbounds=True))
        if not self.narrow:
            return col
        multiple = b.icmp_unsigned("==", b.and_(tx, b.sub(b.load(self.pstride), const(1))), const(0))
        return b.select(b.and_(b.icmp_unsigned("<", tx, b.load(self.pend)), multiple), col, b.load(self.rep[name]))

    def _one_thread(self, ctx, site: int, t, tx, idle: bool = False, alike=None) -> None:
        """The step function inlined for thread ``t`` from ``site``; its state into the columns. Every
        context field the step function may write is set before the call, from the thread's own column
        (its initial value in region 0): no value passes from one thread to the next through the shared
        context, which would be a loop-carried value that keeps LLVM from vectorising the loop."""
        b, lb = self.b, self.lb
        first = site == REGION_INDEX
        b.store(const(site), field(b, ctx, CTX_BARRIER))
        for name, f in _STATE[1:]:
            if name == "vote" and self.votes:
                v = b.load(self.vtotal)
            else:
                v = const(0) if first else self._state(name, t, tx)
            b.store(v, field(b, ctx, f))
        b.store(const(0), field(b, ctx, CTX_WKIND))
        b.call(lb.kernel, [ctx] + lb.args)
        if self.fresh:
            b.store(b.or_(b.load(self.failed), self._failed(ctx)), self.failed)
        if alike is None:
            self._keep_state(ctx, rep=idle, t=t)
            return
        with b.if_then(b.not_(alike)):  # else the state stays in the context until the loop ends
            self._keep_state(ctx, rep=idle, t=t)

    def _keep_state(self, ctx, rep: bool, t=None) -> None:
        """The state the step function left in ``ctx``: into the thread's columns, or (``rep``) as the state
        of every thread the columns do not hold; the least and greatest site and the next region."""
        b = self.b
        nxt, got = b.load(self.next_at), b.load(field(b, ctx, CTX_WKIND))
        # the region after the barrier the threads stop at (the launcher reads it when they all agree)
        b.store(b.select(b.icmp_signed(">", got, nxt), got, nxt), self.next_at)
        for name, f in _STATE:
            v = b.load(field(b, ctx, f))
            b.store(v, self.rep[name] if rep else b.gep(self.cols[name], [t], inbounds=True))
            if name == "waits":
                lo, hi = b.load(self.lo), b.load(self.hi)
                b.store(b.select(b.icmp_signed("<", v, lo), v, lo), self.lo)
                b.store(b.select(b.icmp_signed(">", v, hi), v, hi), self.hi)
            elif name == "vote" and self.votes:
                b.store(b.add(b.load(self.vsum), v), self.vsum)

    def _take_over(self, blk, done) -> None:
        """The block scheduler runs the block to its end, in a function of its own (``_scheduler_function``):
        it gets the block, the region phase and the scheduler's phase count, and gives back the phase count
        (or -1: the launcher stops, a check failed or a barrier diverged)."""
        b = self.b
        phase = b.call(self._scheduler_function(), list(self.fn.args) + [blk, b.load(self.ph), b.load(self.phase_slot)])
        go_on = self.fn.append_basic_block("scheduler.after")
        b.cbranch(b.icmp_signed("<", phase, const(0, i64)), self.lb.stop, go_on)
        b.position_at_end(go_on)
        b.store(phase, self.phase_slot)
        b.branch(done)

    def _scheduler_function(self) -> ir.Function:
        """``<entry>.grid.scheduler``: the block scheduler's code for a block its thread loops hand over (threads
        at different barriers, some exited while others wait: rare, and most of the launcher's code). It runs
        outside LLVM's optimisation (``optnone``; its threads' steps are the kernel's optimised code, called),
        so that emit's -O2 spends nothing on it: a third of a barrier kernel's emit time before."""
        m = self.fn.module
        name = self.lb.kernel.name + SCHEDULER_SUFFIX
        if name in m.globals:
            return m.globals[name]
        fn = ir.Function(m, ir.FunctionType(i64, list(self.fn.function_type.args) + [i64, i64, i64]), name=name)
        fn.linkage = "internal"
        for attr in ("noinline", "optnone", "cold"):
            fn.attributes.add(attr)
        RegionScheduler(self.lb.on(fn), self.launch).build_scheduler(*fn.args[-3:])
        return fn

    def build_scheduler(self, blk, ph, phase) -> None:
        """The body of ``_scheduler_function``: the block scheduler's state, the region phase ``ph`` (which
        ``_scan_threads`` orders the threads by) and its phase count ``phase``, then the block run to its end."""
        b, lb = self.b, self.lb
        self._declare_state()
        self.ph = entry_alloca(b, i64, "region.phase")
        if b.block is lb.fn.entry_basic_block:  # the allocas went in above the builder's place
            b.position_at_end(b.block)
        self._reset_group_counts()  # a grid barrier's counts: the region form has none, but they are kept
        b.store(ph, self.ph)
        b.store(phase, self.phase_slot)
        self.fail = self.fn.append_basic_block("fail")
        self._run_block(const(0, i64), blk)
        b.ret(b.load(self.phase_slot))
        for stop in (self.fail, lb.stop):
            b.position_at_end(stop)
            b.ret(const(-1, i64))

    def _hand_over(self, blk) -> None:
        """Each thread's own context, with the state the thread loop left in the columns."""
        b, lb = self.b, self.lb
        with Loop(b, const(0, i64), lb.nt, "handover") as t:
            c = b.gep(lb.ctxs, [t])
            lb.init_ctx(c, blk, b.trunc(t, i32), lb.shared, None)
            b.store(lb.frame, field(b, c, CTX_FRAME))
            tx = b.urem(b.trunc(t, i32), lb.bx)
            for name, f in _STATE:
                b.store(self._state(name, t, tx), field(b, c, f))


def region_blocks(lb, launch) -> None:
    """The launcher body of a region-form kernel (launcher.py), as its ``launcher.RegionLaunch`` says: a
    thread loop per region between its ``launch.cuts`` cuts (barriers and warp operations); with
    ``launch.narrow``, each over the threads its region's bound lets in (region_bounds.py);
    ``launch.warp_columns``: the frame offsets of the warp operations' operands and copies; ``launch.rounds``:
    (the frame offset of the round counter, the numbers of the iteration regions) of the kernel's loops in
    rounds (regions.emit_rounds), or None; ``launch.fresh``: the kernel's failed checks end their thread's step
    (regions.fail_fresh), reported after each thread loop and each resumed thread."""
    RegionScheduler(lb, launch).build()
