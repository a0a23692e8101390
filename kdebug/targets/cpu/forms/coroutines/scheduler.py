"""The block scheduler: the launcher body of a kernel with barriers.

Every thread is a coroutine (coroutines.py). The scheduler starts every thread
of a block; each runs to its next barrier or to its end. Then, per block:

* per warp, the lanes waiting at a warp operation (``syncwarp``, a shuffle, vote or match) with the
  lanes of its mask are released together, or the reason they cannot be is an error (warp.py);
* when every thread waits at the same block barrier, the votes of
  ``syncthreads_count/and/or`` are combined and all are resumed (a new phase);
* threads at different barriers are a divergent-barrier error in the runtime record; threads
  that exited release a barrier the others wait at (sm_70 and later), a grid barrier only while
  the block's thread (0, 0, 0), which arrives for the block, has not exited; such a barrier inside
  a branch is recorded as a warning;
* a block whose threads all wait at a grid barrier is parked; when every block
  of the group is parked the grid barrier releases them (the group is the
  whole grid for a kernel with a grid barrier, else one block).
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.ir_helpers import Loop, abs_i32, const, declare, entry_alloca, field
from kdebug.targets.cpu.layout import (CTX_BAR_LINE, CTX_BARRIER, CTX_CORO, CTX_EPOCH, CTX_EXIT_LINE, CTX_GRID_EPOCH,
                                       CTX_SEQ, CTX_VOTE, I8P, IN_BRANCH, RT_WARN_CTAID, RT_WARN_DONE,
                                       RT_WARN_EXIT_LINE, RT_WARN_SITE, RT_WARN_TID, RT_WARN_WAITING, RUNTIME_P,
                                       VOID, WARP, WARP_FLAG, i32, i64)
from kdebug.targets.cpu.checks.memcheck import emit_record_error, error_flag, thread_position
from kdebug.targets.cpu.forms.coroutines.lockstep import LOCKSTEP_GROUP, is_lockstep_wait
from kdebug.targets.cpu.forms.coroutines.lockstep import pass_function as lockstep_pass_function
from kdebug.targets.cpu.warp import warp_pass_function


class BlockScheduler:
    """Builds the scheduler into a ``LauncherBody`` (launcher.py): ``BlockScheduler(body, grid_sync).build()``."""

    def __init__(self, body, grid_sync: bool, lockstep: bool = False) -> None:
        self.lb = body
        self.b = body.b
        self.fn = body.fn
        self.grid_sync = grid_sync
        self.lockstep = lockstep  # the kernel has lockstep loops: run them before anything else (lockstep.py)
        m = self.b.module
        self.resume_fn = declare(m, "llvm.coro.resume", VOID, [I8P])
        self.destroy_fn = declare(m, "llvm.coro.destroy", VOID, [I8P])
        self.null = ir.Constant(I8P, None)

    # ---- the whole body ----------------------------------------------------------------------
    def build(self) -> None:
        b, lb = self.b, self.lb
        self._declare_state()
        self.fail = self.fn.append_basic_block("fail")
        group = b.sub(lb.last, lb.first) if self.grid_sync else const(LOCKSTEP_GROUP if self.lockstep else 1, i64)
        b.store(lb.first, self.g0_slot)
        ghead = self.fn.append_basic_block("group.head")
        gbody = self.fn.append_basic_block("group.body")
        b.branch(ghead)
        b.position_at_end(ghead)
        g0 = b.load(self.g0_slot)
        b.cbranch(b.icmp_signed("<", g0, lb.last), gbody, lb.stop)
        b.position_at_end(gbody)
        rem = b.sub(lb.last, g0)
        gsize = b.select(b.icmp_signed("<", rem, group), rem, group)
        b.store(gsize, self.gsize_slot)
        self._start_threads(g0, gsize)
        if self.lockstep:  # the group's threads at a lockstep loop run it together; each block resumes its own
            b.call(lockstep_pass_function(b.module, resume=False), [self._thread_ctx(const(0, i64), const(0)),
                                                                    b.mul(gsize, lb.nt)])
        grid_phase = self.fn.append_basic_block("grid.phase")
        b.branch(grid_phase)
        b.position_at_end(grid_phase)
        self._reset_group_counts()
        with Loop(b, const(0, i64), gsize, "sched.b") as bi:
            self._run_block(bi, b.add(g0, bi))
        group_done = self._grid_barrier(g0, gsize, grid_phase)
        b.position_at_end(group_done)
        if lb.sanitize:
            with Loop(b, const(0, i64), gsize, "end.b") as bi:
                lb.end_block(self._thread_ctx(bi, const(0)))
        self._destroy_all(gsize)
        b.store(b.add(g0, gsize), self.g0_slot)
        self._stop_on_error(lb.stop, ghead)
        b.position_at_end(self.fail)
        self._destroy_all(b.load(self.gsize_slot))
        b.branch(lb.stop)

    def _declare_state(self) -> None:
        """The scheduler's counters, as entry-block allocas."""
        b = self.b
        slots = {"phase": i64, "gsize": i64, "g0": i64,
                 # per group of blocks
                 "ndone_blocks": i64, "ngrid_blocks": i64, "grid_site": i32, "grid_first_done": i64,
                 # per block, recounted after every resume
                 "ndone": i32, "ngrid": i32, "site0": i32, "odd": i32, "first_done": i32, "nwarp": i32,
                 "votes": i32, "nlock": i32}
        for name, ty in slots.items():
            setattr(self, name + "_slot", entry_alloca(b, ty, name=name.replace("_", ".")))
        b.store(const(0, i64), self.phase_slot)

    # ---- helpers -----------------------------------------------------------------------------
    def _thread_ctx(self, bi, t32):
        lb = self.lb
        return self.b.gep(lb.ctxs, [self.b.add(self.b.mul(bi, lb.nt), self.b.zext(t32, i64))])

    def _inc(self, slot, ty=i32) -> None:
        self.b.store(self.b.add(self.b.load(slot), const(1, ty)), slot)

    def _next_phase(self):
        ph = self.b.add(self.b.load(self.phase_slot), const(1, i64))
        self.b.store(ph, self.phase_slot)
        return ph

    def _resume(self, c) -> None:
        """Resume a waiting thread (an exited one stays at its final suspend point)."""
        b = self.b
        slot = field(b, c, CTX_BARRIER)
        with b.if_then(b.icmp_signed("!=", b.load(slot), const(0))):
            b.store(const(0), slot)
            if self.lb.sanitize:  # positions count from the barrier (racecheck's lockstep order)
                b.store(const(0), field(b, c, CTX_SEQ))
            b.call(self.resume_fn, [b.load(field(b, c, CTX_CORO))])

    def _pass_barrier(self, c, grid: bool) -> None:
        """The sanitizers' epochs: a block barrier starts a new block epoch, a grid barrier a new grid one."""
        if not self.lb.sanitize:
            return
        b = self.b
        for f in (CTX_EPOCH, CTX_GRID_EPOCH) if grid else (CTX_EPOCH,):
            b.store(b.add(b.load(field(b, c, f)), const(1)), field(b, c, f))

    def _stop_on_error(self, on_error, otherwise) -> None:
        self.b.cbranch(error_flag(self.b, self.lb.runtime), on_error, otherwise)

    def _destroy_all(self, nblocks) -> None:
        b = self.b
        with Loop(b, const(0, i64), b.mul(nblocks, self.lb.nt), "destroy") as k:
            slot = field(b, b.gep(self.lb.ctxs, [k]), CTX_CORO)
            h = b.load(slot)
            with b.if_then(b.icmp_unsigned("!=", h, self.null)):
                b.call(self.destroy_fn, [h])
                b.store(self.null, slot)

    def _record(self, kind, c, site, aux) -> None:
        b = self.b
        ctaid, tid = thread_position(b, c)
        with b.if_then(b.icmp_unsigned("!=", self.lb.runtime, self.null)):
            emit_record_error(b, self.lb.runtime, kind, site, ctaid, tid, aux=aux)

    # ---- starting a group ----------------------------------------------------------------------
    def _start_threads(self, g0, gsize) -> None:
        """Start every thread: it runs to its first barrier or to its end."""
        b, lb = self.b, self.lb
        with Loop(b, const(0, i64), gsize, "start.b") as bi:
            blk = b.add(g0, bi)
            sh = b.gep(lb.shared, [b.mul(bi, lb.stride)])
            with Loop(b, const(0, i64), lb.nt, "start.k") as k:
                t = lb.order(blk, k, const(0, i64))
                c = self._thread_ctx(bi, t)
                lb.init_ctx(c, blk, t, sh, lb.block_shadow(bi) if lb.sanitize else None)
                b.call(lb.kernel, [c] + lb.args)

    def _reset_group_counts(self) -> None:
        b = self.b
        b.store(const(0, i64), self.ndone_blocks_slot)
        b.store(const(0, i64), self.ngrid_blocks_slot)
        b.store(const(0), self.grid_site_slot)
        b.store(const(-1, i64), self.grid_first_done_slot)

    # ---- one block: resume its barriers until it is done or waits at the grid barrier -----------
    def _reset_block_counts(self) -> None:
        for slot, v in ((self.ndone_slot, 0), (self.ngrid_slot, 0), (self.nwarp_slot, 0), (self.site0_slot, 0),
                        (self.odd_slot, -1), (self.first_done_slot, -1), (self.votes_slot, 0), (self.nlock_slot, 0)):
            self.b.store(const(v), slot)

    def _count_thread(self, t, c) -> None:
        """Count thread t's state after it ran: finished, or waiting at which barrier."""
        b = self.b
        w = b.load(field(b, c, CTX_BARRIER))
        if not self.lockstep:
            self._count_wait(t, w, c)
            return
        with b.if_else(is_lockstep_wait(b, w)) as (in_loop, other):
            with in_loop:  # the lockstep pass runs it before anything else is decided
                self._inc(self.nlock_slot)
            with other:
                self._count_wait(t, w, c)

    def _count_wait(self, t, w, c) -> None:
        b = self.b
        with b.if_else(b.icmp_signed("==", w, const(0))) as (is_done, waiting):
            with is_done:
                self._inc(self.ndone_slot)
                with b.if_then(b.icmp_signed("<", b.load(self.first_done_slot), const(0))):
                    b.store(t, self.first_done_slot)
            with waiting:
                with b.if_then(b.icmp_signed(">=", w, const(WARP_FLAG))):
                    self._inc(self.nwarp_slot)
                b.store(b.add(b.load(self.votes_slot), b.load(field(b, c, CTX_VOTE))), self.votes_slot)
                with b.if_then(b.icmp_signed("<", w, const(0))):
                    self._inc(self.ngrid_slot)
                s0 = b.load(self.site0_slot)
                with b.if_else(b.icmp_signed("==", s0, const(0))) as (first_w, later_w):
                    with first_w:
                        b.store(w, self.site0_slot)
                    with later_w:
                        with b.if_then(b.and_(b.icmp_signed("!=", w, s0),
                                              b.icmp_signed("<", b.load(self.odd_slot), const(0)))):
                            b.store(t, self.odd_slot)

    def _run_block(self, bi, blk) -> None:
        """Scan the block's threads, then decide: done, warp barriers, divergence, grid or block barrier.
        Leaves the builder in the block that goes on to the next block of the group."""
        b, fn, lb = self.b, self.fn, self.lb
        scan = fn.append_basic_block("scan")
        decide = fn.append_basic_block("decide")
        b.branch(scan)
        b.position_at_end(scan)
        self._reset_block_counts()
        self._scan_threads(bi, blk)
        b.branch(decide)
        b.position_at_end(decide)
        if self.lockstep:  # threads at a lockstep loop: run it, then look at the block again
            run_loops = fn.append_basic_block("sched.lockstep")
            decided = fn.append_basic_block("sched.decided")
            b.cbranch(b.icmp_signed(">", b.load(self.nlock_slot), const(0)), run_loops, decided)
            b.position_at_end(run_loops)
            self._loop_pass(bi)
            self._stop_on_error(self.fail, scan)
            b.position_at_end(decided)
        n_done = b.load(self.ndone_slot)
        all_done = b.icmp_signed("==", n_done, lb.nt32)
        next_block = fn.append_basic_block("sched.next")
        check = fn.append_basic_block("sched.check")
        with b.if_then(all_done):
            self._inc(self.ndone_blocks_slot, i64)
            with b.if_then(b.icmp_signed("<", b.load(self.grid_first_done_slot), const(0, i64))):
                b.store(bi, self.grid_first_done_slot)
        warps = fn.append_basic_block("sched.warps")
        b.cbranch(all_done, next_block, warps)
        b.position_at_end(warps)
        warp_pass = fn.append_basic_block("sched.warppass")
        b.cbranch(b.icmp_signed(">", b.load(self.nwarp_slot), const(0)), warp_pass, check)
        b.position_at_end(warp_pass)
        self._warp_barriers(bi)
        self._stop_on_error(self.fail, scan)
        b.position_at_end(check)
        self._block_barrier(bi, blk, n_done, decide, next_block)
        b.position_at_end(next_block)

    def _loop_pass(self, bi) -> None:
        """Threads of the block wait at lockstep loops: run them (lockstep.py's pass)."""
        b = self.b
        b.call(lockstep_pass_function(b.module), [self._thread_ctx(bi, const(0)), self.lb.nt])

    def _scan_threads(self, bi, blk) -> None:
        """Count every thread's state, in thread order (after the start; a release counts as it resumes)."""
        with Loop(self.b, const(0), self.lb.nt32, "scan.t") as t:
            self._count_thread(t, self._thread_ctx(bi, t))

    def _warp_barriers(self, bi) -> None:
        """Warp operations first: per warp, the group of its first waiting lane goes on, or the reason it
        cannot is recorded (warp.py)."""
        b, nt32 = self.b, self.lb.nt32
        wpass = warp_pass_function(b.module)
        nwarps = b.udiv(b.add(nt32, const(WARP - 1)), const(WARP))
        with Loop(b, const(0), nwarps, "warp") as wi:
            lo = b.mul(wi, const(WARP))
            hi = b.select(b.icmp_signed("<", b.add(lo, const(WARP)), nt32), b.add(lo, const(WARP)), nt32)
            b.call(wpass, [self._thread_ctx(bi, lo), b.sub(hi, lo)])
            if self.lockstep:  # the lanes it released may have reached a lockstep loop: before the next warp
                b.call(lockstep_pass_function(b.module), [self._thread_ctx(bi, lo), b.zext(b.sub(hi, lo), i64)])

    def _block_barrier(self, bi, blk, n_done, decide, next_block) -> None:
        """Not every thread is done, no warp barrier pending: all must wait at one barrier."""
        b, fn, nt32 = self.b, self.fn, self.lb.nt32
        s0, o = b.load(self.site0_slot), b.load(self.odd_slot)
        mism = fn.append_basic_block("sched.mismatch")
        same_site = fn.append_basic_block("sched.samesite")
        b.cbranch(b.icmp_signed(">=", o, const(0)), mism, same_site)
        b.position_at_end(mism)  # threads wait at different barriers
        oc = self._thread_ctx(bi, o)
        other = b.load(field(b, oc, CTX_BARRIER))
        self._record(M.DIVERGENT_BARRIER, oc, abs_i32(b, s0), [abs_i32(b, other), b.sub(nt32, n_done), n_done, nt32])
        b.branch(self.fail)
        b.position_at_end(same_site)
        some_done = fn.append_basic_block("sched.somedone")
        none_done = fn.append_basic_block("sched.nonedone")
        b.cbranch(b.icmp_signed(">", n_done, const(0)), some_done, none_done)
        b.position_at_end(some_done)  # the others exited: since sm_70 that releases the barrier
        self._exits_release(bi, s0, n_done, none_done)
        b.position_at_end(none_done)
        at_grid = fn.append_basic_block("sched.atgrid")
        at_block = fn.append_basic_block("sched.atblock")
        b.cbranch(b.icmp_signed(">", b.load(self.ngrid_slot), const(0)), at_grid, at_block)
        b.position_at_end(at_grid)  # the whole block waits at one grid barrier
        self._inc(self.ngrid_blocks_slot, i64)
        b.store(s0, self.grid_site_slot)
        b.branch(next_block)
        b.position_at_end(at_block)  # the whole block waits at one barrier: vote, then resume
        self._release_block(bi, blk)
        self._stop_on_error(self.fail, decide)

    def _exits_release(self, bi, s0, n_done, go_on) -> None:
        """Some threads wait at one barrier and the rest have exited: the barrier completes (PTX ``exit``:
        exiting threads release a barrier they hold up). A grid barrier still needs its block's thread
        (0, 0, 0), the one that arrives for the block at the grid level; a barrier inside a branch that
        completes this way is noted as a warning (CUDA calls it undefined)."""
        b, fn, nt32 = self.b, self.fn, self.lb.nt32
        c0 = self._thread_ctx(bi, const(0))
        t0_exited = b.icmp_signed("==", b.load(field(b, c0, CTX_BARRIER)), const(0))
        hang = fn.append_basic_block("sched.noarriver")
        ok = fn.append_basic_block("sched.exitsrelease")
        b.cbranch(b.and_(b.icmp_signed("<", s0, const(0)), t0_exited), hang, ok)
        b.position_at_end(hang)
        self._record(M.GRID_SYNC_NO_ARRIVER, c0, abs_i32(b, s0), [const(0), b.sub(nt32, n_done), n_done, nt32])
        b.branch(self.fail)
        b.position_at_end(ok)
        site = abs_i32(b, s0)
        skipped, first = self._skipped_barrier(bi, site)
        with b.if_then(b.icmp_signed(">", skipped, const(0))):
            self._note_warning(self._thread_ctx(bi, first), site, b.sub(nt32, n_done), skipped)
        b.branch(go_on)

    def _skipped_barrier(self, bi, site):
        """Of the exited threads, those that ran past the barrier without reaching it: they left by a return
        below its reach line in the kernel (or its end; barrier_lines.py, also for a barrier in a device
        function), where an early-exit guard's threads leave above it. Returns (their number, the first one)."""
        b, lb = self.b, self.lb
        count, first, bar_line = entry_alloca(b, i32), entry_alloca(b, i64), entry_alloca(b, i32)
        b.store(const(0), count)
        b.store(const(-1, i64), first)
        b.store(const(-1), bar_line)
        with Loop(b, const(0, i64), lb.nt, "skip.w") as t:  # the waiting threads' barrier line (one barrier)
            c = self._thread_ctx(bi, t)
            with b.if_then(b.icmp_signed("!=", b.load(field(b, c, CTX_BARRIER)), const(0))):
                b.store(b.load(field(b, c, CTX_BAR_LINE)), bar_line)
        line = b.load(bar_line)
        lexical = b.icmp_unsigned("!=", b.and_(site, const(IN_BRANCH)), const(0))
        with Loop(b, const(0, i64), lb.nt, "skip.t") as t:
            c = self._thread_ctx(bi, t)
            exited = b.icmp_signed("==", b.load(field(b, c, CTX_BARRIER)), const(0))
            below = b.icmp_signed(">", b.load(field(b, c, CTX_EXIT_LINE)), line)
            past = b.select(b.icmp_signed("<", line, const(0)), lexical, below)
            with b.if_then(b.and_(exited, past)):
                self._inc(count, i32)
                with b.if_then(b.icmp_signed("<", b.load(first), const(0, i64))):
                    b.store(t, first)
        return b.load(count), b.load(first)

    def _note_warning(self, cs, site, waiting, skipped) -> None:
        """The first barrier completed only because threads that skipped it exited, for the host to report
        (``cs``: the first of those threads)."""
        b = self.b
        with b.if_then(b.icmp_unsigned("!=", self.lb.runtime, self.null)):
            rt = b.bitcast(self.lb.runtime, RUNTIME_P)
            pair = b.cmpxchg(field(b, rt, RT_WARN_SITE), const(0), site, "monotonic", "monotonic")
            with b.if_then(b.extract_value(pair, 1)):
                ctaid, tid = thread_position(b, cs)
                for k in range(3):
                    b.store(ctaid[k], field(b, rt, RT_WARN_CTAID, k))
                    b.store(tid[k], field(b, rt, RT_WARN_TID, k))
                b.store(waiting, field(b, rt, RT_WARN_WAITING))
                b.store(skipped, field(b, rt, RT_WARN_DONE))
                b.store(b.load(field(b, cs, CTX_EXIT_LINE)), field(b, rt, RT_WARN_EXIT_LINE))

    def _release_block(self, bi, blk) -> None:
        """Resume every thread of the block past its barrier with the combined vote, counting the new states
        as they run (no separate scan)."""
        b, lb = self.b, self.lb
        ph = self._next_phase()
        total = b.load(self.votes_slot)
        self._reset_block_counts()
        with Loop(b, const(0, i64), lb.nt, "resume.k") as k:
            t = lb.order(blk, k, ph)
            c = self._thread_ctx(bi, t)
            b.store(total, field(b, c, CTX_VOTE))
            self._pass_barrier(c, grid=False)
            self._resume(c)
            self._count_thread(t, c)

    # ---- the grid barrier ------------------------------------------------------------------------
    def _grid_barrier(self, g0, gsize, grid_phase):
        """Every block is done or waits at a grid barrier: release them, or report a divergent one.
        Returns the block reached when the whole group is done."""
        b, fn, lb = self.b, self.fn, self.lb
        nd, ng = b.load(self.ndone_blocks_slot), b.load(self.ngrid_blocks_slot)
        group_done = fn.append_basic_block("group.done")
        grid_wait = fn.append_basic_block("grid.wait")
        b.cbranch(b.icmp_signed("==", ng, const(0, i64)), group_done, grid_wait)
        b.position_at_end(grid_wait)
        mixed = fn.append_basic_block("grid.mixed")
        release = fn.append_basic_block("grid.release")
        b.cbranch(b.icmp_signed(">", nd, const(0, i64)), mixed, release)
        b.position_at_end(mixed)  # some blocks finished without reaching it
        dc = self._thread_ctx(b.load(self.grid_first_done_slot), const(0))
        s = b.load(self.grid_site_slot)
        self._record(M.DIVERGENT_GRID_BARRIER, dc, b.neg(s),
                     [const(0), b.trunc(b.mul(ng, lb.nt), i32), b.trunc(nd, i32), lb.nt32])
        b.branch(self.fail)
        b.position_at_end(release)
        ph = self._next_phase()
        with Loop(b, const(0, i64), gsize, "grel.b") as bi:
            blk = b.add(g0, bi)
            with Loop(b, const(0, i64), lb.nt, "grel.k") as k:
                c = self._thread_ctx(bi, lb.order(blk, k, ph))
                self._pass_barrier(c, grid=True)
                self._resume(c)
        self._stop_on_error(self.fail, grid_phase)
        return group_done
