"""A kernel adjoint's barriers and shared arrays: what the reverse transform adds for them.

The adjoint's primal holds them as marker calls (adjoint_primal.py). In the adjoint body:

- each **shared array** gets a shadow of its own size in the block's shared memory (the target's
  ``adjoint_shared``), zeroed by the block's threads together where the body starts, then a
  barrier, before any thread's forward sweep reads or writes it;
- a **barrier** of the primal stays where it is in the forward sweep (its votes too), and the
  reverse sweep meets it again when it reaches its place: every shadow update that the code after
  the barrier made, in any thread, is done before any thread runs the reverse of the code before
  it. A tree reduction's ``while step > 0:`` loop thus runs backwards with a barrier per trip;
- reads of a shared array become adds into its shadow: plain ones on a target that runs a
  block's threads one at a time (``serial_block_threads``, the CPU backend), atomic ones on a GPU.

The target writes the barrier itself (``adjoint_barrier``): on the CPU backend the body becomes a
coroutine (kdebug/targets/cpu/adjoint_barriers.py), on the PTX target it is ``bar.sync``.
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.autodiff import adjoint_primal as AP
from kdebug.autodiff import forward_mode as FM
from kdebug.autodiff.forward_mode import VK

_I32 = ir.IntType(32)
REVERSE_BARRIER = "the reverse sweep's barrier for"


def marker_of(inst) -> str | None:
    """The adjoint marker (adjoint_primal.MARKERS) ``inst`` calls, or None."""
    if inst.opcode != "call":
        return None
    callee = list(inst.operands)[-1]
    if callee.value_kind != VK.function:
        return None
    own = FM._OWNER_PREFIX.sub("", callee.name)
    return own if own in AP.MARKERS else None


def constant(op) -> int:
    """The value of an integer constant operand of parsed IR (``i64 2048``)."""
    return int(str(op).split()[-1])


class BarrierSweeps:
    """The barrier and shared-array part of a kernel's gradient twin (reverse_mode._Gradient)."""

    def begin_barriers(self, blocks) -> None:
        """Where the body starts (``entry_b`` at the top of its entry block): the body's coroutine,
        the shared arrays and their shadows."""
        self.ctx_arg = self.fn.args[0] if self.tr.hooks.has_ctx else None
        self.shared_v: dict[str, ir.Value] = {}  # shared marker -> the array's memory
        self.shared_sh: dict[str, tuple] = {}  # shared marker -> (its shadow's memory, bytes, zeroing site)
        found = [(i, m) for blk in blocks for i in blk.instructions if (m := marker_of(i)) is not None]
        self.has_barriers = bool(found)
        self.heap_tape = False  # per-trip tape records on the heap (a target whose barriers leave the stack)
        if not found:
            return
        if not self.kernel:
            raise self.fail("a barrier or a shared array in a device function reached from the adjoint by a "
                            "call it cannot inline")
        target = self.tr.hooks.target
        self.heap_tape = not target.barriers_keep_the_stack
        if self.heap_tape:
            self.arena = TapeArena(self.entry_b)
        target.adjoint_begin(self.entry_b, self.ctx_arg)
        for inst, m in found:
            if m != AP.SHARED or inst.name in self.shared_v:
                continue
            nbytes, align, site = (constant(o) for o in list(inst.operands)[:3])
            self.shared_v[inst.name] = target.adjoint_shared(self.entry_b, self.ctx_arg, nbytes, align)
            shadow = target.adjoint_shared(self.entry_b, self.ctx_arg, nbytes, align)
            self.shared_sh[inst.name] = (shadow, nbytes, site)
            self.tr.report.shared.append((self.src.name, inst.name, nbytes))

    def forward_marker(self, inst, m: str) -> None:
        """A marker in the forward sweep: the array's memory (and its shadow), or the barrier."""
        if m == AP.SHARED:
            self.sh[inst.name] = self.shared_sh[inst.name][0]
            return self.define(inst, self.shared_v[inst.name], None)
        ops = list(inst.operands)
        vote = self.V(ops[2]) if m == AP.BARRIER_VOTE else None
        v = self.tr.hooks.target.adjoint_barrier(self.b, self.ctx_arg, constant(ops[0]), constant(ops[1]), vote, None)
        self.tr.report.barriers.append((self.src.name, inst.name, constant(ops[0])))
        self.define(inst, v, None)

    def reverse_marker(self, inst, m: str) -> None:
        """A marker met by the reverse sweep: a barrier is a barrier again."""
        if m == AP.SHARED:
            return
        ops = list(inst.operands)
        self.tr.hooks.target.adjoint_barrier(self.b, self.ctx_arg, constant(ops[0]), constant(ops[1]), None,
                                             REVERSE_BARRIER)

    def zero_shared_shadows(self, b: ir.IRBuilder) -> None:
        """At ``b``: the block's threads zero the shared shadows together (thread k the words k,
        k + threads, ...), then wait for each other."""
        if not self.shared_sh:
            return
        hooks = self.tr.hooks
        reg = lambda r, d: b.zext(hooks.read_special_register(b, self.ctx_arg, self.tr.out, r, d), ir.IntType(64))  # noqa: E731
        tx, ty, tz = (reg("threadIdx", d) for d in "xyz")
        nx, ny, nz = (reg("blockDim", d) for d in "xyz")
        me = b.add(tx, b.mul(nx, b.add(ty, b.mul(ny, tz))))
        count = b.mul(nx, b.mul(ny, nz))
        i64 = ir.IntType(64)
        fn = b.function
        site = 0
        for shadow, nbytes, site in self.shared_sh.values():
            word = _I32 if nbytes % 4 == 0 else ir.IntType(8)
            n = ir.Constant(i64, nbytes // (word.width // 8))
            pre = b.block
            head, body, done = (fn.append_basic_block(f"shadow.zero.{s}") for s in ("head", "body", "done"))
            b.branch(head)
            b.position_at_end(head)
            j = b.phi(i64, name="shadow.zero.j")
            j.add_incoming(me, pre)
            b.cbranch(b.icmp_unsigned("<", j, n), body, done)
            b.position_at_end(body)
            b.store(ir.Constant(word, 0), b.gep(b.bitcast(shadow, ir.PointerType(word)), [j], inbounds=True))
            j.add_incoming(b.add(j, count), body)
            b.branch(head)
            b.position_at_end(done)
        hooks.target.adjoint_barrier(b, self.ctx_arg, site, 0, None, None)


_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
CHUNK_BYTES = 1024  # a chunk of the tape arena: small enough for malloc's per-thread cache
CHUNK_HEADER = 32  # the chunk before it: its base, top and end


class TapeArena:
    """Per-thread tape records where a barrier leaves the stack behind (a coroutine's): a bump
    allocator over a chain of malloc'd chunks, its base, top and end in entry-block slots (so in the
    coroutine's frame). The records of one thread are pushed in the forward sweep and read back in
    the opposite order, so the reverse pops them: a chunk is freed when its first record is read.
    One malloc a thread where it was one per loop trip (measured: malloc and free were 40% of the
    block-reduction adjoint's profile)."""

    def __init__(self, entry_b: ir.IRBuilder) -> None:
        null = ir.Constant(_I8P, None)
        self.base, self.top, self.end = (entry_b.alloca(_I8P, name=f"tape.arena.{n}") for n in ("base", "top", "end"))
        for slot in (self.base, self.top, self.end):
            entry_b.store(null, slot)

    def push(self, b: ir.IRBuilder, fn, function, size: ir.Value) -> ir.Value:
        """``size`` bytes (rounded up to 16) off the current chunk, or off a new one where it is full."""
        size = b.and_(b.add(size, ir.Constant(_I64, 15)), ir.Constant(_I64, ~15))
        top, end = b.load(self.top), b.load(self.end)
        full = b.or_(b.icmp_unsigned("==", top, ir.Constant(_I8P, None)),
                     b.icmp_unsigned(">", b.add(b.ptrtoint(top, _I64), size), b.ptrtoint(end, _I64)))
        grow, have = fn.append_basic_block("tape.arena.grow"), fn.append_basic_block("tape.arena.have")
        before = b.block
        b.cbranch(full, grow, have)
        b.position_at_end(grow)
        need = b.add(size, ir.Constant(_I64, CHUNK_HEADER))
        nbytes = b.select(b.icmp_unsigned(">", need, ir.Constant(_I64, CHUNK_BYTES)), need,
                          ir.Constant(_I64, CHUNK_BYTES))
        chunk = b.call(function("malloc", ir.FunctionType(_I8P, [_I64])), [nbytes], name="tape.chunk")
        header = b.bitcast(chunk, ir.ArrayType(_I8P, 3).as_pointer())
        for k, slot in enumerate((self.base, self.top, self.end)):
            b.store(b.load(slot), b.gep(header, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)]))
        first = b.gep(chunk, [ir.Constant(_I64, CHUNK_HEADER)])
        b.store(chunk, self.base)
        b.store(b.gep(chunk, [nbytes]), self.end)
        b.branch(have)
        b.position_at_end(have)
        at = b.phi(_I8P, name="tape.at")
        at.add_incoming(top, before)
        at.add_incoming(first, grow)
        b.store(b.gep(at, [size]), self.top)
        return at

    def pop(self, b: ir.IRBuilder, fn, function, record: ir.Value) -> None:
        """``record``, the last pushed, read: the top goes back to it; a chunk left empty is freed."""
        b.store(record, self.top)
        base = b.load(self.base)
        empty = b.icmp_unsigned("==", record, b.gep(base, [ir.Constant(_I64, CHUNK_HEADER)]))
        release, after = fn.append_basic_block("tape.arena.release"), fn.append_basic_block("tape.arena.after")
        b.cbranch(empty, release, after)
        b.position_at_end(release)
        header = b.bitcast(base, ir.ArrayType(_I8P, 3).as_pointer())
        saved = [b.load(b.gep(header, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)]))
                 for k in range(3)]
        b.call(function("free", ir.FunctionType(ir.VoidType(), [_I8P])), [base])
        for value, slot in zip(saved, (self.base, self.top, self.end)):
            b.store(value, slot)
        b.branch(after)
        b.position_at_end(after)
