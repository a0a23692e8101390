"""Lockstep loops: a coroutine kernel's loop without suspend points, run by all of its threads at once.

In a kernel with barriers or warp operations every thread is a coroutine (coroutines.py) that runs
alone from one suspend point to the next, so a grid-stride loop ``for k in range(i, n, stride)`` runs
thread after thread, each walking its own elements ``stride`` apart (no cache line is used twice, no
prefetch). On a GPU the threads of a warp run it together, each iteration touching contiguous memory.

A loop that lockstep_rules.py accepts becomes a suspend point instead. The thread stores the loop's
variables and its range (trips, start, step) in a record of its own, puts the record's address in its
context (``xin``) and waits with ``site | LOCKSTEP_FLAG``. The block scheduler's lockstep pass
(``pass_function``) resumes the first waiting thread in *run* mode; that one copies the records of the
threads waiting at the same site into structure-of-arrays columns (chunks of ``CHUNK`` threads), runs

    for c in 0, 1, ... while some thread has iterations left:
        for l in threads of the chunk:  if c < trips[l]: one iteration of the body with l's variables

and copies the columns back. The body is lowered again with the variables mapped to column ``l`` and
the thread context to ``l``'s (kdebug/frontend/lower.py ``lockstep_iteration``). The inner loop is
straight-line, so LLVM vectorises it across threads; when the chunk's threads are consecutive
(``start[l] = start[0] + l``, one step), a second copy of the body computes ``k`` as ``base + l``, where
``a[k]`` is a contiguous vector access. The pass then resumes the others; every thread copies its
variables back from its record and goes on after the loop.

A failed bounds check inside the run is held back in the thread's columns (site, index, extent), the
thread's loop ends there, and the thread reports it (``kdebug.rt.oob``) when it resumes: threads resume in
thread order, so the first failure in thread order is reported, as when the loops ran one by one.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.lang import types as T
from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines import lockstep_rules
from kdebug.targets.cpu.forms.coroutines import lowering as CO
from kdebug.targets.cpu.ir_helpers import Loop, const, declare, field
from kdebug.targets.cpu.layout import CONTEXT_P, CTX_BARRIER, CTX_CORO, CTX_WKIND, CTX_XIN, CTX_XOUT, I8P, VOID, i1, i32, i64
from kdebug.targets.cpu.checks.memcheck import oob_function
from kdebug.runtime.record import LOCKSTEP_FLAG  # the barrier field's bits, one table for every form

LS_RUN = 7  # the wkind the lockstep pass gives the thread that runs the loop for the others
CHUNK = 1024  # threads per structure-of-arrays chunk
LOCKSTEP_GROUP = 4  # blocks the scheduler keeps alive at once, so that a run spans them (a round reads
# 4 x 256 adjacent elements of a grid-stride loop: measured 7 ms against 11 ms with one block of 256)
PREFETCH_ROUNDS = 4  # how many rounds ahead the runner prefetches the arrays indexed by k
# the record's own fields, named so that no variable can have their names
_RANGE = ("range.trips", "range.start", "range.step")
_DONE = "run.done"  # 1 once a run did the thread's iterations; 0: the thread runs its loop itself
_FAIL = ("fail.site", "fail.idx0", "fail.idx1", "fail.idx2", "fail.ext0", "fail.ext1", "fail.ext2")


def is_lockstep_wait(b: ir.IRBuilder, w):
    """Whether a thread's barrier field says it waits at a lockstep loop."""
    return b.icmp_unsigned("==", b.and_(w, const(-LOCKSTEP_FLAG)), const(LOCKSTEP_FLAG))


class Columns:
    """The structure-of-arrays columns of one run, CHUNK entries per field, each its own allocation (so
    that LLVM knows they do not overlap and vectorises the rounds without run-time alias checks)."""

    def __init__(self, names, types) -> None:
        self.names = list(names)
        self.types = dict(zip(names, types))
        self.ptrs: dict = {}

    def allocate(self, b, malloc) -> None:
        for n in self.names:
            t = self.types[n]
            size = b.ptrtoint(b.gep(ir.Constant(ir.PointerType(t), None), [const(CHUNK)]), i64)
            self.ptrs[n] = b.bitcast(b.call(malloc, [size]), ir.PointerType(t))

    def release(self, b, free) -> None:
        for p in self.ptrs.values():
            b.call(free, [b.bitcast(p, I8P)])

    def at(self, b, buf, name, lane):
        return b.gep(self.ptrs[name], [lane], inbounds=True)


class Frame:
    """What memcheck needs while a run's body is lowered: the columns, the lane, where its loop ends."""

    def __init__(self, cols, buf, lane, stop) -> None:
        self.cols, self.buf, self.lane, self.stop = cols, buf, lane, stop

    def fail(self, b, site: int, idx, ext) -> None:
        """A failed check: the access into the lane's columns, and the lane's loop ends. (The columns
        of the dimensions the array lacks keep the gather's 0 and 1: fewer masked stores a lane.)"""
        for name, v in zip(_FAIL, [const(site)] + list(idx) + list(ext)):
            if not (isinstance(v, ir.Constant) and v.constant == (0 if name.startswith("fail.idx") else 1)):
                b.store(v, self.cols.at(b, self.buf, name, self.lane))
        b.branch(self.stop)


def _names(node) -> tuple[list[str], set[str]]:
    """The variables the loop reads or writes (target, range bounds, body), and those it writes."""
    used, written = [], set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            if n.id not in used:
                used.append(n.id)
            if isinstance(n.ctx, ast.Store):
                written.add(n.id)
    return used, written


def _uniform(tf, used) -> set[str]:
    """Kernel parameters the kernel never assigns: one value for every thread (kept in the runner's slots)."""
    stored = {n.id for n in ast.walk(tf.source.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n for n in used if n in tf.argnames and n not in stored}


def lower_loop(lc, node, start, step, trips, iteration) -> ir.Block:
    """The thread's side of a lockstep loop and the runner's code (see the module docstring).
    ``iteration(slots, ctx, value, latch, stop, nonneg)`` lowers one iteration of the body. Leaves the
    builder where the thread runs the loop itself (the run did not take its chunk); returns the block
    after the loop, where that ordinary loop must go on."""
    st = CO.begin_coroutine(lc)
    b = lc.builder
    slots = lc.slots[0]
    used, written = _names(node)
    uniform = _uniform(lc.tf, used)
    lane_vars = [n for n in used if n in slots and n not in uniform]
    ty = start.type
    names = lane_vars + list(_RANGE) + list(_FAIL) + [_DONE]
    types = [slots[n].type.pointee for n in lane_vars] + [ty] * 3 + [i32] + [i64] * 6 + [i32]
    rec_t = ir.LiteralStructType(types)
    rec = lc.alloca(rec_t, name="lockstep.rec")
    ctx = lc.thread_ctx

    def rec_field(r, name):
        return b.gep(r, [const(0), const(names.index(name))], inbounds=True)

    for n in lane_vars:
        b.store(b.load(slots[n]), rec_field(rec, n))
    for n, v in zip(_RANGE, (trips, start, step)):
        b.store(v, rec_field(rec, n))
    b.store(const(0), rec_field(rec, "fail.site"))
    b.store(const(0), rec_field(rec, _DONE))
    site = lc.state.check_sites.add(M.Site("lockstep loop", lc.tf.name, lc.src.loc(node), what="for loop",
                                  function_kind=lc.tf.kind))
    assert site < LOCKSTEP_FLAG
    CO.pin_locals(lc)
    b.store(b.ptrtoint(rec, i64), field(b, ctx, CTX_XIN))
    b.store(const(0), field(b, ctx, CTX_WKIND))
    b.store(const(site | LOCKSTEP_FLAG), field(b, ctx, CTX_BARRIER))
    CO.suspend(lc, st, final=False)
    run = lc.new_block("lockstep.run")
    after = lc.new_block("lockstep.after")
    b.cbranch(b.icmp_signed("==", b.load(field(b, ctx, CTX_WKIND)), const(LS_RUN)), run, after)
    b.position_at_end(run)
    cols = Columns(names[:-1] + ["ctx.lane"], types[:-1] + [CONTEXT_P])
    _Runner(lc, node, cols, rec_t, site | LOCKSTEP_FLAG, slots, lane_vars, written, iteration,
            lockstep_rules.writes_arrays(lc.tf, node)).emit()
    b.branch(after)
    b.position_at_end(after)
    ran, solo, join = lc.new_block("lockstep.ran"), lc.new_block("lockstep.solo"), lc.new_block("lockstep.join")
    b.cbranch(b.icmp_signed("!=", b.load(rec_field(rec, _DONE)), const(0)), ran, solo)
    b.position_at_end(ran)
    for n in lane_vars:
        if n in written:
            b.store(b.load(rec_field(rec, n)), slots[n])
    fail_site = b.load(rec_field(rec, "fail.site"))
    failed, ok = lc.new_block("lockstep.failed"), lc.new_block("lockstep.done")
    b.cbranch(b.icmp_unsigned("!=", fail_site, const(0)), failed, ok).set_weights([1, 1 << 20])
    b.position_at_end(failed)
    b.call(oob_function(lc.module), [ctx, fail_site] + [b.load(rec_field(rec, n)) for n in _FAIL[1:]])
    b.unreachable()
    b.position_at_end(ok)
    b.branch(join)
    b.position_at_end(solo)
    return join


class _Runner:
    """The run: gather a chunk of waiting threads' records into columns, the rounds, scatter back."""

    def __init__(self, lc, node, cols, rec_t, wait_value, slots, lane_vars, written, iteration, writes) -> None:
        self.lc, self.b, self.node, self.cols = lc, lc.builder, node, cols
        self.writes = writes  # the body writes a shared or global array (only at a[k]: lockstep_rules.py)
        self.rec_p = ir.PointerType(rec_t)
        self.wait_value = wait_value
        self.slots, self.lane_vars, self.written = slots, lane_vars, written
        self.iteration = iteration
        self.ty = cols.types["range.trips"]
        self.fields = lane_vars + list(_RANGE) + list(_FAIL) + [_DONE]  # the record's
        var = self.var = node.target.id  # k = base + l is known >= 0 unless the body assigns k
        self.nonneg = not any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store)
                              for s in node.body for n in ast.walk(s))
        # k in a register, its last value computed once at the end (no column store per iteration)
        self.k_register = self.nonneg and var in cols.types and cols.types[var] == self.ty
        self.streams = _streams(lc.tf, node, set(slots) - set(lane_vars))

    def emit(self) -> None:
        lc, b = self.lc, self.b
        m = lc.module
        malloc = declare(m, "malloc", I8P, [i64])
        free = declare(m, "free", VOID, [I8P])
        self.cols.allocate(b, malloc)
        self.buf = None
        n = b.load(field(b, lc.thread_ctx, CTX_XOUT))  # the pass: how many contexts from this one to look at
        self.t = lc.alloca(i64, name="lockstep.t")
        self.k_slot = lc.alloca(self.ty, name="lockstep.k")
        self.count = lc.alloca(i64, name="lockstep.m")
        self.maxtrips = lc.alloca(self.ty, name="lockstep.maxtrips")
        b.store(const(0, i64), self.t)
        head, body, done = (lc.new_block(f"lockstep.chunk.{s}") for s in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        self._gather(n)
        cnt = b.load(self.count)
        b.cbranch(b.icmp_signed(">", cnt, const(0, i64)), body, done)
        b.position_at_end(body)
        consecutive, k0, s0 = self._consecutive(cnt)
        taken = lc.new_block("lockstep.chunk.taken")
        # else the chunk's threads run their loops themselves, as without lockstep; where the body writes, so
        # do the chunks after it (a later chunk's run would come before the earlier threads' own loops)
        b.cbranch(consecutive, taken, done if self.writes else head)
        b.position_at_end(taken)
        self._rounds(consecutive, k0, s0, cnt)
        self._scatter(cnt)
        b.branch(head)
        b.position_at_end(done)
        self.cols.release(b, free)

    def _member(self, t):
        """Whether the t-th context from the runner's is in the run (the runner itself is its first)."""
        b = self.b
        c = b.gep(self.lc.thread_ctx, [t])
        waits = b.icmp_signed("==", b.load(field(b, c, CTX_BARRIER)), const(self.wait_value))
        return c, b.or_(waits, b.icmp_signed("==", t, const(0, i64)))

    def _gather(self, n) -> None:
        b, lc, cols = self.b, self.lc, self.cols
        b.store(const(0, i64), self.count)
        b.store(ir.Constant(self.ty, 0), self.maxtrips)
        head, body, take, nxt, done = (lc.new_block(f"lockstep.gather.{s}") for s in ("head", "body", "take", "next", "done"))
        b.branch(head)
        b.position_at_end(head)
        t, cnt = b.load(self.t), b.load(self.count)
        more = b.and_(b.icmp_signed("<", t, n), b.icmp_signed("<", cnt, const(CHUNK, i64)))
        b.cbranch(more, body, done)
        b.position_at_end(body)
        c, member = self._member(t)
        check = lc.new_block("lockstep.gather.check")
        b.cbranch(member, check, nxt)
        b.position_at_end(check)
        rec = b.inttoptr(b.load(field(b, c, CTX_XIN)), self.rec_p)
        done_p = b.gep(rec, [const(0), const(self.fields.index(_DONE))])
        b.cbranch(b.icmp_signed("==", b.load(done_p), const(0)), take, nxt)  # a prerun did it already
        b.position_at_end(take)
        for k, name in enumerate(self.lane_vars + list(_RANGE)):
            b.store(b.load(b.gep(rec, [const(0), const(k)], inbounds=True)), cols.at(b, self.buf, name, cnt))
        for name, v in zip(_FAIL, [const(0)] + [const(0, i64)] * 3 + [const(1, i64)] * 3):
            b.store(v, cols.at(b, self.buf, name, cnt))  # a check of fewer dimensions leaves 0 and 1
        b.store(c, cols.at(b, self.buf, "ctx.lane", cnt))
        trips = b.load(cols.at(b, self.buf, "range.trips", cnt))
        mx = b.load(self.maxtrips)
        b.store(b.select(b.icmp_unsigned(">", trips, mx), trips, mx), self.maxtrips)
        b.store(b.add(cnt, const(1, i64)), self.count)
        b.branch(nxt)
        b.position_at_end(nxt)
        b.store(b.add(t, const(1, i64)), self.t)
        b.branch(head)
        b.position_at_end(done)

    def _scatter(self, cnt) -> None:
        b, cols = self.b, self.cols
        back = [n for n in self.lane_vars if n in self.written] + list(_FAIL)
        with Loop(b, const(0, i64), cnt, "lockstep.scatter") as lane:
            c = b.load(cols.at(b, self.buf, "ctx.lane", lane))
            rec = b.inttoptr(b.load(field(b, c, CTX_XIN)), self.rec_p)
            if self.k_register:  # k's last value: start + (trips - 1) * step, if the lane iterated at all
                trips = b.load(cols.at(b, self.buf, "range.trips", lane))
                start = b.load(cols.at(b, self.buf, "range.start", lane))
                step = b.load(cols.at(b, self.buf, "range.step", lane))
                last = b.add(start, b.mul(b.sub(trips, ir.Constant(self.ty, 1)), step))
                k_col = cols.at(b, self.buf, self.var, lane)
                b.store(b.select(b.icmp_unsigned(">", trips, ir.Constant(self.ty, 0)), last, b.load(k_col)), k_col)
            fields = self.lane_vars + list(_RANGE) + list(_FAIL) + [_DONE]
            for name in back:
                b.store(b.load(cols.at(b, self.buf, name, lane)), b.gep(rec, [const(0), const(fields.index(name))]))
            b.store(const(1), b.gep(rec, [const(0), const(fields.index(_DONE))]))

    def _prefetch(self, cnt, k) -> None:
        """Ask for the lines a later round reads of each array indexed by k: the rounds jump ``step``
        elements, and the hardware prefetcher does not follow (a prefetch never faults)."""
        b = self.b
        prefetch = declare(self.lc.module, "llvm.prefetch.p0", VOID, [I8P, i32, i32, i32])
        for name, esize in self.streams:
            data = b.extract_value(b.load(self.slots[name]), 0)
            first = b.bitcast(b.gep(data, [k if self.ty.width == 64 else b.sext(k, i64)]), I8P)
            nbytes = b.mul(cnt, const(esize, i64))
            with Loop(b, const(0, i64), b.udiv(b.add(nbytes, const(63, i64)), const(64, i64)), "lockstep.prefetch") as j:
                b.call(prefetch, [b.gep(first, [b.mul(j, const(64, i64))]), const(0), const(3), const(1)])

    def _consecutive(self, cnt):
        """Whether the chunk's threads iterate k = base + l (one positive step, starts 0.., +1 apart)."""
        b, cols, lc = self.b, self.cols, self.lc
        zero = ir.Constant(self.ty, 0)
        s0 = b.load(cols.at(b, self.buf, "range.step", const(0, i64)))
        k0 = b.load(cols.at(b, self.buf, "range.start", const(0, i64)))
        ok = lc.alloca(i1, name="lockstep.consecutive")
        b.store(b.and_(b.icmp_signed(">", s0, zero), b.icmp_signed(">=", k0, zero)), ok)
        with Loop(b, const(1, i64), cnt, "lockstep.check") as lane:
            same = b.icmp_signed("==", b.load(cols.at(b, self.buf, "range.step", lane)), s0)
            want = b.add(k0, b.trunc(lane, self.ty) if self.ty.width < 64 else lane)
            here = b.icmp_signed("==", b.load(cols.at(b, self.buf, "range.start", lane)), want)
            b.store(b.and_(b.load(ok), b.and_(same, here)), ok)
        if self.writes:  # a step no smaller than the threads: their ranges' elements never meet
            wide = b.icmp_signed(">=", s0 if self.ty.width == 64 else b.sext(s0, i64), cnt)
            b.store(b.and_(b.load(ok), wide), ok)
        return b.load(ok), k0, s0

    def _rounds(self, consecutive, k0, s0, cnt) -> None:
        b, lc = self.b, self.lc
        c_slot = lc.alloca(self.ty, name="lockstep.c")
        live = lc.alloca(i1, name="lockstep.live")
        b.store(ir.Constant(self.ty, 0), c_slot)
        b.store(const(1, i1), live)
        head, body, done = (lc.new_block(f"lockstep.round.{s}") for s in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        c = b.load(c_slot)
        b.cbranch(b.and_(b.load(live), b.icmp_unsigned("<", c, b.load(self.maxtrips))), body, done)
        b.position_at_end(body)
        b.store(const(0, i1), live)
        self._prefetch(cnt, b.add(k0, b.mul(b.add(c, ir.Constant(self.ty, PREFETCH_ROUNDS)), s0)))
        self._lanes(cnt, c, live, base=b.add(k0, b.mul(c, s0)))
        b.store(b.add(c, ir.Constant(self.ty, 1)), c_slot)
        b.branch(head)
        b.position_at_end(done)

    def _lanes(self, cnt, c, live, base) -> None:
        """One round: iteration c of every lane that has it, k = base + l."""
        b, lc, cols, buf = self.b, self.lc, self.cols, self.buf
        with Loop(b, const(0, i64), cnt, "lockstep.lane") as lane:
            trips_p = cols.at(b, buf, "range.trips", lane)
            active, latch, stop, end = (lc.new_block(f"lockstep.lane.{s}") for s in ("active", "latch", "stop", "end"))
            b.cbranch(b.icmp_unsigned("<", c, b.load(trips_p)), active, end)
            b.position_at_end(active)
            k = b.add(base, b.trunc(lane, self.ty) if self.ty.width < 64 else lane)
            lane_slots = dict(self.slots)
            for n in self.lane_vars:
                lane_slots[n] = cols.at(b, buf, n, lane)
            if self.k_register:
                lane_slots[self.var] = self.k_slot
            ctx = b.load(cols.at(b, buf, "ctx.lane", lane))
            lc.state.lockstep_frame = Frame(cols, buf, lane, stop)
            try:
                self.iteration(lane_slots, ctx, k, latch, stop, self.nonneg)
            finally:
                lc.state.lockstep_frame = None
            b.position_at_end(stop)  # break or a failed check: iteration c is the lane's last
            b.store(b.add(c, ir.Constant(self.ty, 1)), trips_p)
            b.branch(latch)
            b.position_at_end(latch)
            more = b.icmp_unsigned("<", b.add(c, ir.Constant(self.ty, 1)), b.load(trips_p))
            b.store(b.or_(b.load(live), more), live)
            b.branch(end)
            b.position_at_end(end)


def _streams(tf, node, uniform) -> list[tuple[str, int]]:
    """(array, element bytes) of the body's ``a[k]`` with ``a`` one array for all threads (a kernel
    parameter never assigned), 1-D and contiguous, and ``k`` the loop variable."""
    out = []
    for n in (x for s in node.body for x in ast.walk(s)):
        if not (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and isinstance(n.slice, ast.Name)):
            continue
        t = tf.types.get(n.value)
        if (n.slice.id == node.target.id and n.value.id in uniform and isinstance(t, T.Array) and t.ndim == 1
                and not t.strided and n.value.id not in [s for s, _ in out]):
            out.append((n.value.id, t.dtype.bits // 8 if hasattr(t.dtype, "bits") else 8))
    return out


def pass_function(module: ir.Module, resume: bool = True) -> ir.Function:
    """``kdebug.rt.lockstep_pass(ctx, n)``: over the ``n`` contexts from ``ctx`` (a block, or a warp),
    run the lockstep loops their threads wait at, until none waits at one. A run takes the first
    waiting thread and the threads after it waiting at the same loop, up to the first thread waiting at
    another lockstep loop (so that threads still resume in thread order); the first runs the loop for
    all (its ``xout``: how many contexts from it to look at), then the others resume.
    ``resume=False`` (``kdebug.rt.lockstep_prerun``, over a group of blocks just started): one run, and
    only its runner resumes; the others stay waiting with their iterations done, and each block's own
    pass resumes them later, in the order the blocks run."""
    name = "kdebug.rt.lockstep_pass" if resume else "kdebug.rt.lockstep_prerun"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i64]), name=name)
    fn.linkage = "internal"
    base, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    resume_fn = declare(module, "llvm.coro.resume", VOID, [I8P])
    first, end = b.alloca(i64, name="first"), b.alloca(i64, name="end")
    again = fn.append_basic_block("again")
    b.branch(again)
    b.position_at_end(again)

    def barrier(t):
        return field(b, b.gep(base, [t]), CTX_BARRIER)

    b.store(const(-1, i64), first)
    with Loop(b, const(0, i64), n, "find") as t:
        with b.if_then(b.and_(b.icmp_signed("<", b.load(first), const(0, i64)), is_lockstep_wait(b, b.load(barrier(t))))):
            b.store(t, first)
    f = b.load(first)
    found = fn.append_basic_block("found")
    none = fn.append_basic_block("none")
    b.cbranch(b.icmp_signed("<", f, const(0, i64)), none, found)
    b.position_at_end(none)
    b.ret_void()
    b.position_at_end(found)
    site = b.load(barrier(f))
    b.store(n, end)
    with Loop(b, f, n, "upto") as t:
        w = b.load(barrier(t))
        other = b.and_(is_lockstep_wait(b, w), b.icmp_signed("!=", w, site))
        with b.if_then(b.and_(other, b.icmp_signed("==", b.load(end), n))):
            b.store(t, end)
    e = b.load(end)
    runner = b.gep(base, [f])
    b.store(const(LS_RUN), field(b, runner, CTX_WKIND))
    b.store(b.sub(e, f), field(b, runner, CTX_XOUT))
    if not resume:
        b.store(const(0), field(b, runner, CTX_BARRIER))
        b.call(resume_fn, [b.load(field(b, runner, CTX_CORO))])
        b.ret_void()
        return fn
    with Loop(b, f, e, "resume") as t:
        c = b.gep(base, [t])
        with b.if_then(b.icmp_signed("==", b.load(field(b, c, CTX_BARRIER)), site)):
            b.store(const(0), field(b, c, CTX_BARRIER))
            b.call(resume_fn, [b.load(field(b, c, CTX_CORO))])
    b.branch(again)
    return fn
