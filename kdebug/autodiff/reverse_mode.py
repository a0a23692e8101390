"""Reverse-mode automatic differentiation of LLVM IR, as Enzyme's reverse mode.

The transform reads the *resolved* primal (as forward mode does, ``forward_mode.py``) and
builds, for every function the primal entry reaches, a gradient twin
``(params..., d_result) -> {adjoint of each float parameter}`` in one function:

- the **augmented forward sweep** is the primal's code, and each block, when it runs,
  pushes a *record* on a tape: the block's number, the record before it, and the primal
  values the block's reverse needs (the operands of products and quotients, math calls'
  arguments and results, select conditions, shadow addresses). A block outside every
  loop has one record of its own (a frame slot); a block in a loop gets a fresh record per
  run (the values it overwrites each trip are kept, not recomputed);
- the **reverse sweep** pops the records, newest first, and runs each block's
  instructions backwards: every float value has an adjoint slot, read and zeroed at its
  definition and accumulated into its operands (the chain rule); a ``phi`` gives its
  adjoint to the incoming value of the predecessor, which is the next record's block;
- local memory (``alloca``) gets a shadow: the reverse of a load adds to it, the reverse of
  a store reads and zeroes it; global memory is constant here;
- math intrinsics and libm calls get their partials (forward mode's table, at unit tangent);
- a call to a function defined in the module calls its gradient twin in the reverse sweep
  (its forward is run again there: recomputed, not taped);
- a call to another job's entry gets that job's reverse-mode partials, asked for as new
  deferred requests (``derivative(job, k)``);
- an unresolved ``kdebug.deferred.N`` marker is opaque (``NotDifferentiable.marker``).

``Report`` holds what the transform decided (the activity of every value, what each block
caches and why, bytes per thread): the ``activity`` and ``tape`` stages show it.
"""
from __future__ import annotations

from llvmlite import ir

from kdebug import markers
from kdebug.autodiff import forward_mode as FM
from kdebug.autodiff.forward_mode import VK, NotDifferentiable, zero
from kdebug.autodiff.ir_types import leading_type, parse_type
from kdebug.autodiff.reverse_barriers import BarrierSweeps, marker_of
from dataclasses import field

from kdebug.lazy_dataclasses import dataclass

_FLOATS = (ir.DoubleType, ir.FloatType, ir.HalfType)
_I32, _I8P = ir.IntType(32), ir.PointerType(ir.IntType(8))
_ORDERINGS = ("unordered", "monotonic", "acquire", "release", "acq_rel", "seq_cst")


def is_float(t: ir.Type) -> bool:
    return isinstance(t, _FLOATS)


def floaty(t: ir.Type) -> bool:
    """Memory that holds floats only (a shadow mirrors it)."""
    if is_float(t):
        return True
    if isinstance(t, (ir.ArrayType, ir.VectorType)):
        return floaty(t.element)
    if isinstance(t, ir.LiteralStructType):
        return bool(t.elements) and all(floaty(e) for e in t.elements)
    return False


def _size(t: ir.Type) -> int:
    if isinstance(t, ir.DoubleType) or isinstance(t, ir.PointerType):
        return 8
    if isinstance(t, ir.FloatType):
        return 4
    if isinstance(t, ir.HalfType):
        return 2
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.ArrayType):
        return t.count * _size(t.element)
    if isinstance(t, ir.LiteralStructType):
        return sum(_size(e) for e in t.elements)
    return 8


def _record_bytes(fields, header: int = 12) -> int:
    """A record's size: its header (the record before it, the block's number; none for a static
    reverse), then its fields, each at its natural alignment."""
    offset, align = header, 8
    for t in fields:
        size = _size(t)
        a = min(size, 8) if not isinstance(t, (ir.ArrayType, ir.LiteralStructType)) else 8
        offset = (offset + a - 1) // a * a + size
    return (offset + align - 1) // align * align


@dataclass
class Cached:
    """One value the reverse sweep reads from the tape."""

    function: str
    block: str
    name: str  # its IR name
    type: str
    why: str


@dataclass
class Report:
    """What the reverse transform decided, for the ``activity`` and ``tape`` stages."""

    active: dict = field(default_factory=dict)  # function -> IR names of values that carry adjoints
    constant: dict = field(default_factory=dict)  # function -> IR names of float values that do not
    cached: list = field(default_factory=list)  # Cached
    blocks: dict = field(default_factory=dict)  # function -> [(block, in a loop, record bytes)]
    recomputed: list = field(default_factory=list)  # (function, callee): forwards run again in the reverse
    atomics: list = field(default_factory=list)  # (function, block, load): reads become atomic accumulations
    reloaded: list = field(default_factory=list)  # (function, block, value, variable, why): read again, not kept
    partials: list = field(default_factory=list)  # (function, job name, argument): other jobs' partials
    static: dict = field(default_factory=dict)  # function -> its reverse is static (no cycles: no linked tape)
    exclusive: list = field(default_factory=list)  # (function, block, load): reads of this thread's own element
    # (function, block, load, (lo, hi)): reads at the own index plus a constant in [lo, hi], plain adds inside
    # the block's window where the target runs a block's threads one at a time
    block_local: list = field(default_factory=list)
    shared: list = field(default_factory=list)  # (function, marker, bytes): shared arrays, each with a shadow
    barriers: list = field(default_factory=list)  # (function, marker, site): barriers, run forwards then backwards

    def activity_text(self) -> str:
        out = []
        for fn in self.active:
            out.append(f"function {fn}")
            out.append("  active (carry an adjoint): " + (", ".join("%" + n for n in self.active[fn]) or "none"))
            out.append("  constant floats: " + (", ".join("%" + n for n in self.constant[fn]) or "none"))
        return "\n".join(out) + "\n"

    def tape_text(self, place=None) -> str:
        """The tape file; ``place(function, IR name)``: the source position of a value, or ""."""
        at = (lambda fn, name: (f" at {p}" if (p := place(fn, name)) else "")) if place is not None else \
            (lambda fn, name: "")
        out = ["# the tape: what the augmented forward sweep keeps for the reverse sweep", ""]
        for fn, blocks in self.blocks.items():
            out.append(f"function {fn}")
            once = sum(b for _, loop, b in blocks if not loop)
            looped = [(n, b) for n, loop, b in blocks if loop]
            out.append(f"  bytes per thread: {once} for the blocks outside loops"
                       + (", plus per loop trip: " + ", ".join(f"{n} {b}" for n, b in looped) if looped else ""))
            if self.static.get(fn):
                out.append("  reverse sweep: static (no cycles, each block runs at most once: its record is a frame "
                           "slot of its own, unlinked; a block entered from several keeps the number of the one it "
                           "came from, 4 bytes)")
            else:
                out.append("  reverse sweep: a linked tape (a cycle: each record holds the one before it and its "
                           "block's number, 12 bytes of header)")
            for name, loop, size in blocks:
                where = "a record per run (in a loop)" if loop else "one record"
                out.append(f"  block {name}: {where}, {size} bytes")
                for c in self.cached:
                    if c.function == fn and c.block == name:
                        out.append(f"    cached %{c.name} ({c.type}){at(fn, c.name)}: {c.why}")
        for fn, blk, name, var, why in self.reloaded:
            out.append(f"recomputed: {fn} block {blk}: %{name}{at(fn, name)} ({why}) is read again from %{var}, which is "
                       f"stored only in the entry block")
        for fn, callee in sorted(set(self.recomputed)):
            out.append(f"recomputed: {fn} runs the forward of {callee} again in its reverse sweep (no tape kept)")
        for fn, job, k in self.partials:
            out.append(f"partial: {fn} asks job {job} for its reverse-mode partial by argument {k}")
        for fn, blk, name in self.exclusive:
            out.append(f"exclusive: {fn} block {blk}: the read %{name}{at(fn, name)} is this thread's own element: kept "
                       f"as a plain add into its shadow (an atomic one where the launch is not one-dimensional or the "
                       f"shadows overlap)")
        for fn, blk, name, (lo, hi) in self.block_local:
            out.append(f"block-local: {fn} block {blk}: the read %{name}{at(fn, name)} is at the thread's own index "
                       f"plus {lo}..{hi}: a plain add into its shadow where the element is its block's alone (this "
                       f"target runs a block's threads one at a time), an atomic one at the block's edges, the array's "
                       f"last {max(-lo, 0)} element(s), or where the launch is not one-dimensional or the shadows overlap")
        if self.exclusive:
            out.append("exclusive reads kept as plain adds: " + ", ".join(f"%{n}" for _, _, n in self.exclusive)
                       + " (every access to their arrays is at the thread's own cuda.grid(1) index)")
        if self.atomics:
            for fn, blk, name in self.atomics:
                out.append(f"atomic: {fn} block {blk}: the read %{name}{at(fn, name)} of a global array becomes an atomic "
                           f"accumulation (atomicrmw fadd) into its shadow")
            if not self.exclusive and not self.block_local:
                out.append("exclusive reads kept as plain adds: none proved (every global read is accumulated atomically)")
        elif not self.exclusive and not self.block_local:
            out.append("atomics: none (the reverse sweep writes only this thread's own adjoints)")
        for fn, name, nbytes in self.shared:
            out.append(f"shared: {fn}: the shared array %{name}{at(fn, name)} ({nbytes} bytes a block) has a shadow of "
                       f"its size in shared memory, zeroed by the block's threads where the adjoint starts; its reads "
                       f"add into the shadow")
        for fn, name, _ in self.barriers:
            out.append(f"barrier: {fn}: the barrier %{name}{at(fn, name)} runs in the forward sweep and again in the "
                       f"reverse sweep, where the reverse reaches it: values computed before it that the reverse "
                       f"needs are on the tape")
        return "\n".join(out) + "\n"


def differentiate(view, primal: str, entry: str, argnum, hooks: FM.Hooks, report: Report | None = None,
                  forward_only: bool = False, shadows: tuple | None = None) -> ir.Module:
    """The gradient module: ``entry`` (the primal's parameters) returns d primal / d argument
    ``argnum``, or with ``argnum=None`` the struct of the partials by every float argument.
    ``forward_only``: stop after the augmented forward sweeps (the reverse sweeps left out: a
    module to look at, not to run). ``shadows``: a kernel's adjoint (``kdebug.adjoint``): the
    primal parameters (arrays) that get a shadow parameter after them; ``entry`` returns nothing."""
    tr = _Transform(view, entry, hooks, report if report is not None else Report())
    tr.forward_only = forward_only
    tr.shadows = shadows
    tr.wrapper(primal, argnum)
    while tr.pending:
        tr.pending.pop().emit()
    if shadows is not None and hooks.target is not None:
        body = tr.twins[primal]
        hooks.target.adjoint_finished(entry, body.fn)
    return tr.out


class _Transform(FM._Transform):
    def __init__(self, view, entry: str, hooks: FM.Hooks, report: Report) -> None:
        super().__init__(view, entry, hooks)
        self.report = report
        self.twins: dict[str, _Gradient] = {}

    def twin(self, name: str) -> "_Gradient":
        g = self.twins.get(name)
        if g is None:
            g = self.twins[name] = _Gradient(self, self.facts.function(name))
            self.pending.append(g)
        return g

    def wrapper(self, primal: str, argnum) -> None:
        if self.shadows is not None:
            return self.adjoint_wrapper(primal)
        g = self.twin(primal)
        if not is_float(g.fnty.return_type):
            raise NotDifferentiable(f"a function returning {g.fnty.return_type}", primal)
        ctx = 1 if self.hooks.has_ctx else 0
        if argnum is None:
            rty = ir.LiteralStructType([g.fnty.return_type] * len(g.fparams)) if len(g.fparams) != 1 else None
            rty = rty or ir.LiteralStructType([g.fnty.return_type])
        else:
            rty = g.fnty.return_type
        fn = ir.Function(self.out, ir.FunctionType(rty, g.fnty.args), name=self.entry)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        adj = b.call(g.fn, list(fn.args) + [ir.Constant(g.fnty.return_type, 1.0)])
        parts = []
        for j, k in enumerate(g.fparams):
            v = b.extract_value(adj, j)
            if v.type != g.fnty.return_type:  # a float32 argument of a float64 function
                v = b.fpext(v, g.fnty.return_type) if _size(v.type) < _size(g.fnty.return_type) else \
                    b.fptrunc(v, g.fnty.return_type)
            parts.append((k - ctx, v))
        if argnum is None:
            out = ir.Constant(rty, ir.Undefined)
            for j, (_, v) in enumerate(parts):
                out = b.insert_value(out, v, j)
            b.ret(out)
        else:
            hit = [v for k, v in parts if k == argnum]
            b.ret(hit[0] if hit else zero(rty))


    def adjoint_wrapper(self, primal: str) -> None:
        """A kernel's adjoint: (context, each parameter, each array's shadow after it) -> void."""
        g = self.twins[primal] = _Gradient(self, self.facts.function(primal), self.shadows)
        self.pending.append(g)
        ctx = 1 if self.hooks.has_ctx else 0
        params = list(g.fnty.args)
        interleaved = params[:ctx]
        for p, t in enumerate(params[ctx:]):
            interleaved.append(t)
            if p in self.shadows:
                interleaved.append(t)
        fn = ir.Function(self.out, ir.FunctionType(ir.VoidType(), interleaved), name=self.entry)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        args = list(fn.args)
        vals, shadows, k = args[:ctx], [], ctx
        for p in range(len(params) - ctx):
            vals.append(args[k])
            k += 1
            if p in self.shadows:
                shadows.append(args[k])
                k += 1
        b.call(g.fn, vals + shadows)
        b.ret_void()
        # the body's one caller is its wrapper kernel: inlined there whatever its size after the reverse
        # sweep, the target's thread loop sees it whole (the CPU launcher vectorises it)
        for f in (fn, g.fn):
            f.attributes.add("alwaysinline")


class _Gradient(BarrierSweeps, FM._Dual):
    """One function's gradient twin: its augmented forward sweep, then its reverse sweep."""

    def __init__(self, tr: _Transform, src, shadows: tuple | None = None) -> None:  # noqa: not the dual's __init__
        self.tr, self.src = tr, src
        self.fnty = parse_type(str(src.global_value_type))
        params = self.fnty.args
        ctx = 1 if tr.hooks.has_ctx else 0
        # a kernel's adjoint body (shadows given, maybe none): the parameters (arrays) with a shadow parameter
        self.shadowed = [ctx + p for p in shadows or ()]
        self.kernel = shadows is not None
        skip = 0 if tr.hooks.has_ctx and params and isinstance(params[0], ir.PointerType) else -1
        self.fparams = [k for k, t in enumerate(params) if is_float(t) and k != skip]
        if self.kernel:
            self.fparams = []  # a kernel's scalars are constants
        ret = self.fnty.return_type
        self.adjty = ir.LiteralStructType([params[k] for k in self.fparams])
        fnty = ir.FunctionType(self.adjty, list(params) + ([ret] if is_float(ret) else [])
                               + [params[k] for k in self.shadowed])
        self.fn = ir.Function(tr.out, fnty, name=f"{tr.entry}.{src.name}.gradient")
        self.fn.linkage = "internal"
        self.tparams = []

    # the forward sweep is the primal's own code: no tangents
    def T(self, op):
        return None

    def op_alloca(self, inst, ops) -> None:
        ty = leading_type(str(inst).split("alloca", 1)[1])
        # the primal's entry-block allocas stay static: in the gradient's entry block (a coroutine's
        # split keeps only those in its frame or its resume function's entry; an alloca in a later block
        # broke the dominance of its uses there, found by -O1's pipeline on a barrier adjoint)
        v = (self.entry_b if inst.name in self.allocas else self.b).alloca(ty, name=inst.name)
        if floaty(ty):
            s = self.entry_b.alloca(ty, name=inst.name + ".shadow")
            self.entry_b.store(zero(ty), s)
            self.sh[inst.name] = s
        self.define(inst, v, None)

    def op_phi(self, inst, ops) -> None:
        v = self.b.phi(parse_type(str(inst.type)), name=inst.name)
        self.phis.append((inst, v, None))
        self.define(inst, v, None)

    def op_getelementptr(self, inst, ops) -> None:
        super().op_getelementptr(inst, ops)
        base = ops[0]
        if base.name in self.sh and inst.name in self.v:
            g = self.v[inst.name]
            self.sh[inst.name] = self.b.gep(self.sh[base.name], list(g.indices), inbounds=g.inbounds,
                                            source_etype=g.source_etype)

    def op_bitcast(self, inst, ops) -> None:
        super().op_bitcast(inst, ops)
        if ops[0].name in self.sh and inst.name in self.v:
            self.sh[inst.name] = self.b.bitcast(self.sh[ops[0].name], self.v[inst.name].type)

    op_addrspacecast = op_bitcast

    def op_store(self, inst, ops) -> None:
        val, ptr = ops
        if val.value_kind in (VK.argument, VK.instruction) and (val.name in self.sh or val.name in self.allocas):
            if val.name in self.sh and ptr.name in self.allocas and self.cur_block.name == self.entry_name:
                # a local array's descriptor, stored once where the function starts: its loads get the
                # descriptor of the shadow
                self.mem_sh[ptr.name] = self.sh[val.name]
            else:
                raise self.fail("a local array's address stored in memory after the function's start "
                                "(a cuda.local.array passed on)")
        super().op_store(inst, ops)

    def op_load(self, inst, ops) -> None:
        super().op_load(inst, ops)
        if ops[0].name in self.mem_sh and inst.name:
            self.sh[inst.name] = self.mem_sh[ops[0].name]

    def op_atomicrmw(self, inst, ops) -> None:
        """cuda.atomic.add/sub on a float array: the primal's own; its reverse reads the shadow."""
        words = str(inst).split("atomicrmw", 1)[1].split()
        words = [w for w in words if w != "volatile"]
        op, ordering = words[0], next((w for w in words if w in _ORDERINGS), "monotonic")
        ptr, val = ops
        if op not in ("fadd", "fsub") and is_float(parse_type(str(val.type))):
            raise self.fail(f"an atomic {op} on a float array")
        if op in ("fadd", "fsub") and inst.name and inst.name in self.used_names:
            raise self.fail("the old value of an atomic add/sub used in the differentiated code")
        self.define(inst, self.b.atomic_rmw(op, self.V(ptr), self.V(val), ordering), None)

    def op_insertvalue(self, inst, ops) -> None:
        super().op_insertvalue(inst, ops)
        agg, x = ops
        if agg.name in self.sh or x.name in self.sh:
            idx = self.indices(inst)
            base = self.sh.get(agg.name) if agg.name in self.sh else self.V(agg)
            self.sh[inst.name] = self.b.insert_value(base, self.sh.get(x.name, self.V(x)), idx)

    def op_extractvalue(self, inst, ops) -> None:
        super().op_extractvalue(inst, ops)
        if ops[0].name in self.sh:
            self.sh[inst.name] = self.b.extract_value(self.sh[ops[0].name], self.indices(inst))

    def op_ret(self, inst, ops) -> None:
        self.finish_record()
        if ops and is_float(parse_type(str(ops[0].type))):
            self.accumulate(ops[0], self.fn.args[len(self.fnty.args)])
        # a static reverse starts at the reverse of the block that returned
        self.b.branch(self.rev_block(self.cur_block.name) if self.rev_loop is None else self.rev_loop)

    def op_call(self, inst, ops) -> None:
        m = marker_of(inst)
        if m is not None:
            return self.forward_marker(inst, m)
        callee = ops[-1]
        sym = callee.name if callee.value_kind == VK.function else self.origin.get(callee.name)
        if sym is not None and markers.job_of(sym) is None and self.math_name(sym) is None:
            fn = self.tr.facts.function(sym)
            own = FM._OWNER_PREFIX.sub("", sym)
            if not own.startswith(FM._RUNTIME_PREFIXES) and any(
                    a.value_kind == VK.instruction and a.name in self.sh and a.name not in self.allocas
                    and self.kernel for a in ops[:-1]):
                raise self.fail(f"a call to {own} passing an array of the kernel (its shadow is not passed on "
                                f"in this version)")
            if not fn.is_declaration and not own.startswith(FM._RUNTIME_PREFIXES):
                # the primal's own callee: its value now, its gradient twin in the reverse sweep
                fnty = parse_type(fn.global_value_type)
                y = self.b.call(self.tr.function(sym, fnty), [self.V(a) for a in ops[:-1]])
                return self.define(inst, y, None)
        super().op_call(inst, ops)

    # ---- driving ------------------------------------------------------------------
    def emit(self) -> None:
        src = self.src
        self.v, self.t, self.nonnull, self.origin, self.phis = {}, {}, set(), {}, []
        self.sh: dict[str, ir.Value] = {}  # pointer -> its shadow (local memory)
        self.mem_sh: dict[str, ir.Value] = {}  # a variable holding a local array's descriptor -> the shadow's
        args = list(self.fn.args)
        params = list(src.arguments)
        for k, a in enumerate(params):
            self.v[a.name] = args[k]
        for j, k in enumerate(self.shadowed):
            self.sh[params[k].name] = args[len(args) - len(self.shadowed) + j]
        self.global_names = set()
        blocks = list(src.blocks)
        self.entry_name = blocks[0].name
        self.allocas = {i.name for i in blocks[0].instructions if i.opcode == "alloca"}
        self.used_names = {o.name for blk in blocks for i in blk.instructions for o in i.operands
                           if o.value_kind == VK.instruction}
        self.loops = _blocks_in_cycles(blocks)
        # no cycles: every block runs at most once, so its reverse needs no linked records (a static
        # reverse: each block's reverse follows back the edge its forward came in by)
        self.static = not self.loops
        self.header = [] if self.static else [_I8P, _I32]
        self.ids = {b.name: n for n, b in enumerate(blocks)}
        self.top = self.fn.append_basic_block("tape")
        self.blocks = {b.name: self.fn.append_basic_block(b.name or "bb") for b in blocks}
        self.entry_b = ir.IRBuilder(self.top)
        self.begin_barriers(blocks)  # a kernel's barriers and shared arrays (reverse_barriers.py)
        self.rev_loop = self.fn.append_basic_block("reverse") if not self.static or self.tr.forward_only else None
        self.rev_blocks: dict[str, ir.Block] = {}
        self.records: dict[str, ir.Value] = {}
        self.ends: dict[str, ir.Block] = {}
        self.b = ir.IRBuilder(self.blocks[blocks[0].name])
        self.scratch = self.entry_b.alloca(ir.ArrayType(ir.IntType(8), FM._SCRATCH_BYTES), name="shadow.scratch")
        reached = FM._reverse_postorder(blocks)
        self.reached = reached
        self.succs = {blk.name: list(dict.fromkeys(FM._unquote(m) for m in FM._LABEL.findall(
            str(list(blk.instructions)[-1])))) for blk in reached}
        self.preds: dict[str, list] = {blk.name: [] for blk in reached}
        for blk in reached:
            for s in self.succs[blk.name]:
                if s in self.preds:
                    self.preds[s].append(blk.name)
        self.plan(reached)
        self.sh_candidates()
        self.exclusive_arrays()
        self.windows: dict[int, tuple] = {}  # window array -> (its shadow's address, first, last element)
        self.own_ok = self.own_guard() if (self.own_ptrs or self.window_ptrs) and self.tr.hooks.read_special_register \
            else None
        if self.own_ok is None:
            self.own_ptrs, self.window_ptrs = set(), {}
        self.from_slots: dict[str, ir.Value] = {}
        if self.static:
            # a block entered from several: which one it came from (the last edge into it is the one taken)
            for blk in reached:
                if len(self.preds[blk.name]) > 1:
                    self.from_slots[blk.name] = self.entry_b.alloca(_I32, name=f"from.{blk.name}")
        else:
            # the tape's head and its sentinel record
            self.head = self.entry_b.alloca(_I8P, name="tape.head")
            base = ir.LiteralStructType([_I8P, _I32])
            sentinel = self.entry_b.alloca(base, name="tape.sentinel")
            zero32 = ir.Constant(_I32, 0)
            self.entry_b.store(ir.Constant(_I8P, None), self.entry_b.gep(sentinel, [zero32, zero32]))
            self.entry_b.store(ir.Constant(_I32, -1), self.entry_b.gep(sentinel, [zero32, ir.Constant(_I32, 1)]))
            self.sentinel = self.entry_b.bitcast(sentinel, _I8P)
            self.entry_b.store(self.sentinel, self.head)
        # the adjoint slots
        self.slots: dict[str, ir.Value] = {}
        for k, a in enumerate(params):
            if k in self.fparams:
                self.slot(a.name, args[k].type)
        for blk in reached:
            self.cur_block = blk
            self.b.position_at_end(self.blocks[blk.name])
            for inst in blk.instructions:
                if inst.opcode in ("br", "switch", "unreachable") or inst.opcode == "ret":
                    if inst.opcode != "ret":
                        self.finish_record()
                self.instruction(inst)
            self.ends[blk.name] = self.b.block
        for blk in blocks:
            if blk.name not in self.ends:
                self.b.position_at_end(self.blocks[blk.name])
                self.b.unreachable()
        for inst, v, _ in self.phis:
            for val, blk in zip(inst.operands, inst.incoming_blocks):
                if blk.name in self.ends:
                    v.add_incoming(self.V(val), self.ends[blk.name])
        if self.tr.forward_only:
            self.b.position_at_end(self.rev_loop)
            self.b.unreachable()  # the reverse sweep goes here
        else:
            self.reverse(reached)
        if self.shared_sh:  # the shadows zeroed before any thread's forward sweep
            self.zero_shared_shadows(self.entry_b)
        self.entry_b.branch(self.blocks[blocks[0].name])

    # ---- the plan: activity, what each block keeps ------------------------------------
    def plan(self, reached) -> None:
        """Which float values carry adjoints (those that depend on a float parameter), and for each
        block the primal values its reverse reads."""
        active = {a.name for k, a in enumerate(self.src.arguments) if k in self.fparams}
        memory_active = self.kernel  # a kernel's arrays carry adjoints from the start
        changed = True
        insts = [i for blk in reached for i in blk.instructions]
        types = {i.name: parse_type(str(i.type)) for i in insts if i.name}
        shadowed = self.sh_candidates()
        while changed:  # to a fixed point: loops carry activity around through phis and memory
            changed = False
            for inst in insts:
                if not inst.name and inst.opcode != "store":
                    continue
                ops = list(inst.operands)
                if inst.opcode == "store":
                    if self.is_active_in(ops[0], active) and ops[1].name in shadowed and not memory_active:
                        memory_active = changed = True
                    continue
                if inst.name in active or inst.opcode == "atomicrmw":
                    continue
                ty = types[inst.name]
                if inst.opcode == "load":
                    hit = memory_active and ops[0].name in shadowed
                elif inst.opcode in ("getelementptr", "bitcast", "addrspacecast"):
                    hit = ops[0].name in active
                else:
                    hit = any(self.is_active_in(o, active) for o in ops)
                if hit and (is_float(ty) or isinstance(ty, ir.PointerType)):
                    active.add(inst.name)
                    changed = True
        self.active = active
        fname = self.src.name
        self.tr.report.active[fname] = [n for n, t in types.items() if n in active and is_float(t)]
        self.tr.report.constant[fname] = [n for n, t in types.items() if n not in active and is_float(t)]
        self.needs: dict[str, list] = {}
        defined_in_entry = {i.name for i in reached[0].instructions if i.name}
        # a local variable stored only in the entry block holds one value all along: its loads are
        # read again in the reverse sweep (recomputed), not kept on the tape
        written_later = {list(i.operands)[1].name for blk in reached[1:] for i in blk.instructions
                         if i.opcode == "store"}
        stable = {n for n in self.allocas if n not in written_later}
        self.reload = {i.name: list(i.operands)[0].name for i in insts
                       if i.opcode == "load" and list(i.operands)[0].name in stable and i.name not in defined_in_entry}
        blocks_report = []
        for blk in reached:
            need, seen = [], set()

            def keep(op, why, blk=blk):
                if op.value_kind not in (VK.argument, VK.instruction) or op.name in defined_in_entry \
                        or op.value_kind == VK.argument or op.name in seen:
                    return
                if op.name in self.reload:
                    seen.add(op.name)
                    self.tr.report.reloaded.append((fname, blk.name, op.name, self.reload[op.name], why))
                    return
                seen.add(op.name)
                need.append((op.name, why))

            for inst in blk.instructions:
                self.needs_of(inst, keep)
            self.needs[blk.name] = need
            loop = blk.name in self.loops
            blocks_report.append((blk.name, loop, _record_bytes([types[n] for n, _ in need],
                                                                header=0 if self.static else 12)
                                  + (4 if self.static and len(self.preds[blk.name]) > 1 else 0)))
            for name, why in need:
                ty = types[name]
                self.tr.report.cached.append(Cached(fname, blk.name, name, str(ty),
                                                    why + (" (overwritten in a loop: kept per trip)" if loop else "")))
        self.tr.report.blocks[fname] = blocks_report
        self.tr.report.static[fname] = self.static

    @staticmethod
    def is_active_in(op, active) -> bool:
        return op.value_kind in (VK.argument, VK.instruction) and op.name in active

    def is_active(self, op) -> bool:
        return self.is_active_in(op, self.active)

    def needs_of(self, inst, keep) -> None:
        """The primal values the reverse of ``inst`` reads (only for instructions that carry adjoints)."""
        op = inst.opcode
        ops = list(inst.operands)
        if op == "fmul":
            if self.is_active(ops[0]) or self.is_active(ops[1]):
                keep(ops[0], "operand of a product"), keep(ops[1], "operand of a product")
        elif op == "fdiv":
            if self.is_active(ops[0]) or self.is_active(ops[1]):
                keep(ops[1], "divisor of a quotient")
                if self.is_active(ops[1]):
                    keep(inst, "quotient, for the divisor's adjoint")
        elif op == "frem" and self.is_active(ops[1]):
            keep(ops[0], "operand of a remainder"), keep(ops[1], "operand of a remainder")
        elif op == "select" and self.is_active(inst):
            keep(ops[0], "the condition of a select")
        elif op == "atomicrmw":
            if ops[0].name in self.sh_candidates() and is_float(parse_type(str(ops[1].type))):
                keep(ops[0], "the address an atomic add/sub updates (for its shadow)")
        elif op in ("load", "store"):
            ptr = ops[0] if op == "load" else ops[1]
            ty = parse_type(str(inst.type if op == "load" else ops[0].type))
            if is_float(ty) and ptr.name in self.sh_candidates():
                keep(ptr, "the address of a local value (for its shadow)")
        elif op == "call" and (inst.name in self.active or self.is_active_call(inst)):
            for a in ops[:-1]:
                if a.value_kind in (VK.argument, VK.instruction):
                    keep(a, "argument of a call (the reverse sweep calls its partials)")
            if self.math_name(self.callee_symbol(inst) or "") is not None:
                keep(inst, "result of a math call (its partial uses it)")

    def sh_candidates(self) -> set:
        """The values that have a shadow: local memory's addresses, the kernel's arrays and shared
        arrays, and the descriptors holding them (through insertvalue, a store in the entry block, its
        loads, extractvalue)."""
        if not hasattr(self, "_sh_candidates"):
            params = list(self.src.arguments)
            insts = [i for blk in self.src.blocks for i in blk.instructions]
            arrays = {params[k].name for k in self.shadowed}
            self._sh_candidates = _reach(insts, arrays | set(self.shared_sh), allocas=True)
            # those that address global memory (the arrays' shadows), and those of shared memory
            self._global_sh = _reach(insts, arrays)
            self._shared_sh = _reach(insts, set(self.shared_sh))
        return self._sh_candidates

    # ---- exclusive elements: reads that only this thread makes ---------------------------
    def exclusive_arrays(self) -> None:
        """Which of a kernel's shadowed arrays every thread accesses only at its own ``cuda.grid(1)``
        index (``self.exclusive_roots``: parameter positions), and the pointers of those accesses
        (``self.own_ptrs``). Their reads' adjoints need no atomics when the launch is one-dimensional
        and no other shadow overlaps theirs (``own_guard``, checked at run time)."""
        self.exclusive_roots, self.own_ptrs, self.elem_bytes = set(), set(), {}
        self.window_roots, self.window_ptrs = {}, {}
        if not self.kernel or not self.shadowed:
            return
        params = list(self.src.arguments)
        blocks = list(self.src.blocks)
        insts = [i for blk in blocks for i in blk.instructions]
        sreg = self.tr.hooks.special_register_of
        defs = {i.name: i for i in insts if i.name}
        ctx = params[0].name if self.tr.hooks.has_ctx else None
        reads = {i.name: sreg(i, defs, ctx) for i in insts if i.name and i.opcode in ("load", "call")}
        reads = {n: r for n, r in reads.items() if r is not None}

        def inst_of(v, opcode):
            i = defs.get(v.name) if v.value_kind == VK.instruction else None
            return i if i is not None and i.opcode == opcode else None

        def zext_of(v, reg):
            z = inst_of(v, "zext")
            return z is not None and reads.get(list(z.operands)[0].name) == (reg, "x")
        stores: dict[str, list] = {}
        for i in insts:
            if i.opcode == "store":
                val, ptr = list(i.operands)
                stores.setdefault(ptr.name, []).append(val)
        own: set[str] = set()
        # values that are the own index plus a constant (cuda.grid(1) + c, maybe through numba's wraparound
        # select): name -> c; own ones are 0. Off-own accesses matter where a block's threads run one at a
        # time (Target.serial_block_threads): inside the block's window they are its threads' alone
        offset: dict[str, int] = {}

        def const_of(v) -> int | None:
            if v.value_kind != VK.constant_int:
                return None
            try:
                return int(str(v).split()[-1])
            except ValueError:
                return None
        changed = True
        while changed:
            changed = False
            for i in insts:
                if i.name and i.name not in offset and i.name not in own:
                    ops = list(i.operands)
                    c = None
                    if i.opcode in ("add", "sub") and len(ops) == 2:
                        for v, k, sign in ((ops[0], ops[1], 1), (ops[1], ops[0], 1)) if i.opcode == "add" else \
                                ((ops[0], ops[1], -1),):
                            if v.name in offset and (n := const_of(k)) is not None:
                                c = offset[v.name] + sign * n
                                break
                    elif i.opcode == "select" and ops[2].name in offset and ops[2].name not in own:
                        cmp = inst_of(ops[0], "icmp")
                        cops = list(cmp.operands) if cmp is not None else []
                        if cmp is not None and " slt " in str(cmp) and cops[0].name == ops[2].name:
                            c = offset[ops[2].name]  # wrapped or not: the run-time window test sees the address
                    elif i.opcode == "load" and ops[0].name in self.allocas:
                        vals = stores.get(ops[0].name, [])
                        cs = {offset.get(v.name) if v.value_kind == VK.instruction else None for v in vals}
                        if len(cs) == 1 and None not in cs and cs != {0}:
                            c = cs.pop()
                    if c is not None:
                        offset[i.name] = c
                        changed = True
                if not i.name or i.name in own:
                    continue
                ops = list(i.operands)
                hit = False
                if i.opcode == "add" and len(ops) == 2:  # ctaid.x * ntid.x + tid.x, as cuda.grid(1) lowers
                    for m, t in (ops, ops[::-1]):
                        mul = inst_of(m, "mul")
                        if zext_of(t, "threadIdx") and mul is not None:
                            a, c = list(mul.operands)
                            hit = hit or (zext_of(a, "blockIdx") and zext_of(c, "blockDim")) or \
                                (zext_of(a, "blockDim") and zext_of(c, "blockIdx"))
                elif i.opcode == "load" and ops[0].name in self.allocas:
                    vals = stores.get(ops[0].name, [])
                    hit = bool(vals) and all(v.value_kind == VK.instruction and v.name in own for v in vals)
                elif i.opcode == "select" and ops[2].name in own:
                    # numba's negative-index wraparound: select(i < 0, i + n, i) is i, which is never negative
                    c = inst_of(ops[0], "icmp")
                    cops = list(c.operands) if c is not None else []
                    hit = c is not None and " slt " in str(c) and cops[0].name == ops[2].name and \
                        cops[1].value_kind == VK.constant_int and str(cops[1]).endswith(" 0")
                if hit:
                    own.add(i.name)
                    offset[i.name] = 0
                    changed = True
        # each value derived from a shadowed parameter: the parameter's position
        root = {params[k].name: k for k in self.shadowed}
        changed = True
        while changed:
            changed = False
            for i in insts:
                ops = list(i.operands)
                if i.opcode == "store" and ops[0].name in root and ops[1].name in self.allocas \
                        and ops[1].name not in root:
                    root[ops[1].name] = root[ops[0].name]
                    changed = True
                elif i.name and i.name not in root and i.opcode in (
                        "load", "extractvalue", "getelementptr", "bitcast", "addrspacecast") and ops[0].name in root:
                    if i.opcode == "load" and ops[0].name not in self.allocas or \
                            not str(i.type).startswith(("ptr", "{", "[", "<")) and "*" not in str(i.type):
                        continue  # an element's value or the array's shape, not an address
                    root[i.name] = root[ops[0].name]
                    changed = True
        bad, own_ptrs, ptr_offset = set(), set(), {}
        serial = self.tr.hooks.serial_block_threads

        def own_gep(ptr) -> bool:
            """``ptr`` indexes a shadowed 1-D array at the own index (or, on a target whose block's threads
            run one at a time, the own index plus a constant: ``ptr_offset``)."""
            g = defs.get(ptr.name)
            if g is None or g.opcode != "getelementptr":
                return False
            gops = list(g.operands)
            base = defs.get(gops[0].name)
            ok = len(gops) == 2 and (gops[1].name in own or serial and gops[1].name in offset) and base is not None \
                and base.opcode == "extractvalue" and list(self.indices(base)) == [0] and gops[0].name in root
            if ok:
                etype = leading_type(str(g).split("getelementptr", 1)[1].replace("inbounds", "", 1))
                self.elem_bytes.setdefault(root[gops[0].name], _size(etype))
                ptr_offset[ptr.name] = 0 if gops[1].name in own else offset[gops[1].name]
            return ok
        for blk in blocks:
            for i in blk.instructions:
                ops = list(i.operands)
                used = [o for o in ops if o.value_kind in (VK.argument, VK.instruction) and o.name in root]
                if not used:
                    continue
                k = root[used[0].name]
                op = i.opcode
                if op in ("extractvalue", "getelementptr", "bitcast", "addrspacecast"):
                    continue
                if op == "load" and ops[0].name in self.allocas:
                    continue
                if op == "store" and ops[1].name in self.allocas and blk.name == self.entry_name:
                    continue  # the descriptor kept in its variable
                ptr = ops[0] if op in ("load", "atomicrmw") else ops[1] if op == "store" else None
                if ptr is not None and ptr.name in root and own_gep(ptr) and \
                        not (op == "store" and ops[0].name in root):
                    own_ptrs.add(ptr.name)
                    continue
                bad |= {root[o.name] for o in used}
        offsets: dict[int, set] = {}
        for p in own_ptrs:
            offsets.setdefault(root[p], set()).add(ptr_offset[p])
        ok = {k for k in self.shadowed if k not in bad}
        self.exclusive_roots = {k for k in ok if offsets.get(k, {0}) == {0}}
        # arrays read at the own index plus constants: (smallest, largest) offset
        self.window_roots = {k: (min(offsets[k]), max(offsets[k])) for k in ok - self.exclusive_roots}
        self.own_ptrs = {p for p in own_ptrs if root[p] in self.exclusive_roots}
        self.window_ptrs = {p: root[p] for p in own_ptrs if root[p] in self.window_roots}

    def own_element(self, ptr) -> bool:
        return ptr.name in self.own_ptrs

    def own_guard(self) -> ir.Value:
        """At run time, where the function starts: whether the accesses at the thread's own index are
        its alone (a one-dimensional launch, and each such array's shadow overlapping no other
        shadow but itself)."""
        b, hooks = self.entry_b, self.tr.hooks
        ctx = self.fn.args[0] if hooks.has_ctx else None
        one = ir.Constant(_I32, 1)
        ok = ir.Constant(ir.IntType(1), 1)
        for reg in ("blockDim", "gridDim"):
            for dim in "yz":
                ok = b.and_(ok, b.icmp_unsigned("==", hooks.read_special_register(b, ctx, self.tr.out, reg, dim), one))
        args = list(self.fn.args)
        i64 = ir.IntType(64)
        spans = {}
        for j, k in enumerate(self.shadowed):
            desc = args[len(args) - len(self.shadowed) + j]
            start = b.ptrtoint(b.extract_value(desc, 0), i64)
            shape = desc.type.elements[1]
            count = ir.Constant(i64, 1)
            for d in range(shape.count):
                count = b.mul(count, b.extract_value(desc, [1, d]))
            size = b.mul(count, ir.Constant(i64, self.elem_bytes.get(k, 16)))
            spans[k] = (start, b.add(start, size))
        for k in sorted(self.exclusive_roots | set(self.window_roots)):
            s0, e0 = spans[k]
            for q, (s1, e1) in spans.items():
                if q == k:
                    continue
                apart = b.or_(b.icmp_unsigned("<=", e0, s1), b.icmp_unsigned("<=", e1, s0))
                if k in self.exclusive_roots and q in self.exclusive_roots:
                    # the same array passed twice: each thread still has its own element
                    apart = b.or_(apart, b.icmp_unsigned("==", s0, s1))
                ok = b.and_(ok, apart)
        if self.window_roots:
            # a block's threads run one at a time (Target.serial_block_threads), blocks side by side: thread
            # t of block B reads elements B*bd + t + c, c in [lo, hi], so elements B*bd + hi .. B*bd + bd-1 + lo
            # are this block's alone; the last -lo elements are not (numba's wraparound sends negative
            # indices there, from any block)
            bid = b.zext(hooks.read_special_register(b, ctx, self.tr.out, "blockIdx", "x"), i64)
            bdim = b.zext(hooks.read_special_register(b, ctx, self.tr.out, "blockDim", "x"), i64)
            first_of_block = b.mul(bid, bdim)
            for k, (lo, hi) in sorted(self.window_roots.items()):
                start, end = spans[k]
                count = b.sdiv(b.sub(end, start), ir.Constant(i64, self.elem_bytes.get(k, 16)))
                first = b.add(first_of_block, ir.Constant(i64, hi))
                last = b.add(b.add(first_of_block, bdim), ir.Constant(i64, lo - 1))
                top = b.add(count, ir.Constant(i64, min(lo, 0) - 1))
                last = b.select(b.icmp_signed("<", top, last), top, last)
                self.windows[k] = (start, first, last)
        return ok

    def plain_or_atomic_add(self, plain_ok: ir.Value, sp, d) -> None:
        """``*sp += d``: a plain read-add-write where ``plain_ok`` holds at run time, an atomic one otherwise."""
        b = self.b
        with b.if_else(plain_ok) as (plain, shared):
            with plain:
                self.store(b.fadd(b.load(sp, typ=d.type), d), sp)
            with shared:
                b.atomic_rmw("fadd", sp, d, "monotonic")

    def in_window(self, b, k: int, sp) -> ir.Value:
        """At run time: whether the element of window array ``k`` that ``sp`` points into is this block's alone."""
        start, first, last = self.windows[k]
        i64 = ir.IntType(64)
        idx = b.sdiv(b.sub(b.ptrtoint(sp, i64), start), ir.Constant(i64, self.elem_bytes.get(k, 16)))
        inside = b.and_(b.icmp_signed(">=", idx, first), b.icmp_signed("<=", idx, last))
        return b.and_(self.own_ok, inside)

    def is_active_call(self, inst) -> bool:
        return any(self.is_active(a) for a in list(inst.operands)[:-1])

    def callee_symbol(self, inst) -> str | None:
        callee = list(inst.operands)[-1]
        return callee.name if callee.value_kind == VK.function else None

    # ---- the tape -----------------------------------------------------------------
    def record_type(self, blk_name: str) -> ir.LiteralStructType:
        fields = self.header + [self.cached_type(n) for n, _ in self.needs[blk_name]]
        return ir.LiteralStructType(fields)

    def rev_block(self, name: str) -> ir.Block:
        """The reverse of source block ``name``."""
        if name not in self.rev_blocks:
            self.rev_blocks[name] = self.fn.append_basic_block(f"reverse.{name}")
        return self.rev_blocks[name]

    def cached_type(self, name: str) -> ir.Type:
        return self.v[name].type if name in self.v else parse_type(self.src.instruction(name).type)

    def finish_record(self) -> None:
        """Before the block's terminator: its record, linked on the tape (a static reverse: its own
        frame slot, unlinked, and the edges out of it noted where their target has several)."""
        blk = self.cur_block
        rty = self.record_type(blk.name)
        b = self.b
        h = len(self.header)
        if blk.name in self.loops and self.heap_tape:
            # a fresh record per trip, on the heap: the body is a coroutine, whose stack a barrier leaves
            rec = self.heap_record(rty)
        elif blk.name in self.loops:
            rec = self.b.alloca(rty, name=f"tape.{blk.name}")  # a fresh record per trip
        elif not self.static or self.needs[blk.name]:
            rec = self.records[blk.name] = self.entry_b.alloca(rty, name=f"tape.{blk.name}")
        if not self.static:
            b.store(b.load(self.head), b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, 0)]))
            b.store(ir.Constant(_I32, self.ids[blk.name]), b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, 1)]))
        for j, (name, _) in enumerate(self.needs[blk.name]):
            val = self.sh[name] if name in self.sh_candidates() else self.v[name]
            b.store(val, b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, h + j)]))
        if not self.static:
            b.store(b.bitcast(rec, _I8P), self.head)
        for s in self.succs[blk.name]:
            if s in self.from_slots:
                b.store(ir.Constant(_I32, self.ids[blk.name]), self.from_slots[s])

    def heap_record(self, rty) -> ir.Value:
        """A record from the thread's tape arena (reverse_barriers.TapeArena): chunks from malloc,
        each record bumped off the current one, given back in the reverse sweep's order."""
        size = ir.Constant(ir.PointerType(rty), None).gep([ir.Constant(_I32, 1)]).ptrtoint(ir.IntType(64))
        return self.b.bitcast(self.arena.push(self.b, self.fn, self.tr.function, size), ir.PointerType(rty))

    # ---- adjoints -----------------------------------------------------------------
    def slot(self, name: str, ty: ir.Type) -> ir.Value:
        s = self.slots.get(name)
        if s is None:
            s = self.slots[name] = self.entry_b.alloca(ty, name=f"{name}.adjoint")
            self.entry_b.store(zero(ty), s)
        return s

    def accumulate(self, op, d) -> None:
        """adjoint(op) += d (nothing for constants and inactive values)."""
        if d is None or not self.is_active(op):
            return
        ty = parse_type(str(op.type))
        if not is_float(ty):
            return
        s = self.slot(op.name, ty)
        if d.type != ty:
            d = self.b.fpext(d, ty) if _size(d.type) < _size(ty) else self.b.fptrunc(d, ty)
        self.b.store(self.b.fadd(self.b.load(s), d), s)

    def take(self, inst):
        """The adjoint of ``inst``'s value, read and zeroed (a loop defines it again next trip)."""
        if not inst.name or not self.is_active(inst):
            return None
        ty = parse_type(str(inst.type))
        if not is_float(ty):
            return None
        s = self.slot(inst.name, ty)
        d = self.b.load(s)
        self.b.store(zero(ty), s)
        return d

    def scaled(self, d, factor) -> ir.Value:
        """d * factor, and 0 where the adjoint d is 0: a path not taken (a select's other side)
        may hold an infinite or NaN partial, which must not turn a zero adjoint into NaN."""
        if factor.type != d.type:
            factor = self.b.fpext(factor, d.type) if _size(factor.type) < _size(d.type) else \
                self.b.fptrunc(factor, d.type)
        return self.b.select(self.b.fcmp_ordered("==", d, zero(d.type)), zero(d.type), self.b.fmul(d, factor))

    def P(self, op) -> ir.Value:
        """A primal value in the reverse sweep: from the record, the entry block, or a constant."""
        if op.value_kind in (VK.argument, VK.instruction) and op.name in self.rv:
            return self.rv[op.name]
        if op.value_kind == VK.instruction and op.name in self.reload:
            return self.b.load(self.v[self.reload[op.name]], typ=parse_type(str(op.type)))
        return self.V(op)

    def reverse(self, reached) -> None:
        if self.static:
            return self.static_reverse(reached)
        b = self.b
        b.position_at_end(self.rev_loop)
        cur = b.load(self.head, name="tape.record")
        base = ir.LiteralStructType([_I8P, _I32])
        done = self.fn.append_basic_block("reverse.done")
        dispatch = self.fn.append_basic_block("reverse.dispatch")
        b.cbranch(b.icmp_unsigned("==", cur, self.sentinel), done, dispatch)
        b.position_at_end(dispatch)
        bid = b.load(b.gep(b.bitcast(cur, ir.PointerType(base)), [ir.Constant(_I32, 0), ir.Constant(_I32, 1)]))
        targets = [(blk, self.fn.append_basic_block(f"reverse.{blk.name}")) for blk in reached]
        # a chain of tests, not a switch: forward mode (grad of a gradient) reads this code too
        for n, (blk, target) in enumerate(targets):
            if n == len(targets) - 1:
                b.branch(target)
                break
            nxt = self.fn.append_basic_block(f"reverse.test.{n}")
            b.cbranch(b.icmp_signed("==", bid, ir.Constant(_I32, self.ids[blk.name])), target, nxt)
            b.position_at_end(nxt)
        for blk, target in targets:
            b.position_at_end(target)
            rty = self.record_type(blk.name)
            rec = b.bitcast(cur, ir.PointerType(rty))
            prev = b.load(b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, 0)]))
            rv = {name: b.load(b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, 2 + j)]), typ=rty.elements[2 + j])
                  for j, (name, _) in enumerate(self.needs[blk.name])}
            came_from = []

            def pid(prev=prev, came_from=came_from):  # the block number in the record before this one
                if not came_from:
                    came_from.append(b.load(b.gep(b.bitcast(prev, ir.PointerType(base)),
                                                  [ir.Constant(_I32, 0), ir.Constant(_I32, 1)])))
                return came_from[0]
            self.reverse_block(blk, rv, pid)
            b.store(prev, self.head)
            if blk.name in self.loops and self.heap_tape:
                self.arena.pop(b, self.fn, self.tr.function, cur)
            b.branch(self.rev_loop)
        self.finish_reverse(done)

    def finish_reverse(self, done) -> None:
        """The reverse sweep's end: the parameters' adjoints returned."""
        b = self.b
        b.position_at_end(done)
        out = ir.Constant(self.adjty, ir.Undefined)
        for j, k in enumerate(self.fparams):
            a = list(self.src.arguments)[k]
            out = b.insert_value(out, b.load(self.slot(a.name, self.adjty.elements[j])), j)
        if self.has_barriers:  # a kernel's (no parameter adjoints): the target's end of a body with barriers
            self.tr.hooks.target.adjoint_end(b, self.ctx_arg)
        b.ret(out)

    def reverse_block(self, blk, rv, pid) -> None:
        """One block's reverse, at the builder: its instructions backwards, then its phis' adjoints to
        the incoming values of the predecessor ``pid`` (its number) it was entered from."""
        b = self.b
        self.cur_rev_block = blk.name
        self.rv = rv
        insts = list(blk.instructions)
        for inst in reversed(insts):
            if inst.opcode != "phi":
                self.adjoint(inst)
        for inst in (i for i in insts if i.opcode == "phi"):
            d = self.take(inst)
            if d is None:
                continue
            for val, pb in zip(inst.operands, inst.incoming_blocks):
                if pb.name in self.ids and self.is_active(val):
                    came = b.icmp_signed("==", pid(), ir.Constant(_I32, self.ids[pb.name]))
                    self.accumulate(val, b.select(came, d, zero(d.type)))

    def static_reverse(self, reached) -> None:
        """The reverse of a function without cycles: each block's reverse reads its own record, then
        goes to the reverse of the block it was entered from (known where it has one predecessor,
        read from its ``from`` slot where it has several), down to the entry block's."""
        b = self.b
        done = self.fn.append_basic_block("reverse.done")
        for blk in reached:
            b.position_at_end(self.rev_block(blk.name))
            rec = self.records.get(blk.name)
            rv = {name: b.load(b.gep(rec, [ir.Constant(_I32, 0), ir.Constant(_I32, j)]),
                               typ=self.record_type(blk.name).elements[j])
                  for j, (name, _) in enumerate(self.needs[blk.name])}
            preds = self.preds[blk.name]
            came_from = []

            def pid(blk=blk, preds=preds, came_from=came_from):
                if not came_from:
                    came_from.append(b.load(self.from_slots[blk.name], name=f"from.{blk.name}")
                                     if blk.name in self.from_slots else ir.Constant(_I32, self.ids[preds[0]]))
                return came_from[0]
            self.reverse_block(blk, rv, pid)
            if not preds:
                b.branch(done)
                continue
            if len(preds) == 1:
                b.branch(self.rev_block(preds[0]))
                continue
            which = pid()
            for n, p in enumerate(preds):
                if n == len(preds) - 1:
                    b.branch(self.rev_block(p))
                    break
                nxt = self.fn.append_basic_block(f"reverse.{blk.name}.from.{n}")
                b.cbranch(b.icmp_signed("==", which, ir.Constant(_I32, self.ids[p])), self.rev_block(p), nxt)
                b.position_at_end(nxt)
        self.finish_reverse(done)

    def adjoint(self, inst) -> None:
        """The reverse of one instruction: its adjoint into its operands'."""
        op = inst.opcode
        ops = list(inst.operands)
        b = self.b
        m = marker_of(inst)
        if m is not None:
            return self.reverse_marker(inst, m)
        if op == "store":
            val, ptr = ops
            ty = parse_type(str(val.type))
            if is_float(ty) and ptr.name in self.sh_candidates():
                sp = self.P(ptr) if ptr.name in self.rv else self.sh[ptr.name]
                d = b.load(sp, typ=ty)
                self.store(zero(ty), sp)
                self.accumulate(val, d)
            return
        if op == "atomicrmw":
            ptr, val = ops
            verb = str(inst).split("atomicrmw", 1)[1].split()
            verb = [w for w in verb if w != "volatile"][0]
            if verb in ("fadd", "fsub") and ptr.name in self.sh_candidates() and self.is_active(val):
                sp = self.P(ptr) if ptr.name in self.rv else self.sh[ptr.name]
                ty = parse_type(str(val.type))
                d = b.load(sp, typ=ty)  # the adjoint of what was added to, which the addition keeps
                self.accumulate(val, d if verb == "fadd" else b.fneg(d))
            return
        d = self.take(inst)
        if d is None:
            return
        if op == "fadd":
            self.accumulate(ops[0], d), self.accumulate(ops[1], d)
        elif op == "fsub":
            self.accumulate(ops[0], d), self.accumulate(ops[1], b.fneg(d))
        elif op == "fneg":
            self.accumulate(ops[0], b.fneg(d))
        elif op == "fmul":
            if self.is_active(ops[0]):
                self.accumulate(ops[0], self.scaled(d, self.P(ops[1])))
            if self.is_active(ops[1]):
                self.accumulate(ops[1], self.scaled(d, self.P(ops[0])))
        elif op == "fdiv":
            c = self.P(ops[1])
            if self.is_active(ops[0]):
                self.accumulate(ops[0], self.scaled(d, b.fdiv(ir.Constant(c.type, 1.0), c)))
            if self.is_active(ops[1]):
                self.accumulate(ops[1], b.fneg(self.scaled(d, b.fdiv(self.P(inst), c))))
        elif op == "frem":
            self.accumulate(ops[0], d)
            if self.is_active(ops[1]):
                k = self.call_math("trunc", [b.fdiv(self.P(ops[0]), self.P(ops[1]))])
                self.accumulate(ops[1], b.fneg(b.fmul(d, k)))
        elif op in ("fpext", "fptrunc"):
            self.accumulate(ops[0], d)
        elif op == "select":
            c = self.P(ops[0])
            self.accumulate(ops[1], b.select(c, d, zero(d.type)))
            self.accumulate(ops[2], b.select(c, zero(d.type), d))
        elif op == "load":
            ptr = ops[0]
            if ptr.name in self.sh_candidates():
                sp = self.P(ptr) if ptr.name in self.rv else self.sh[ptr.name]
                if ptr.name in self._global_sh and self.own_element(ptr):
                    # only this thread touches the element (a 1-D launch, shadows apart): a plain add
                    self.plain_or_atomic_add(self.own_ok, sp, d)
                    self.tr.report.exclusive.append((self.src.name, self.cur_rev_block, inst.name))
                elif ptr.name in self._global_sh and ptr.name in self.window_ptrs:
                    # a neighbour's element: this block's alone inside its window, where its threads,
                    # run one at a time, add plainly; at the block's edges other blocks may add too
                    k = self.window_ptrs[ptr.name]
                    self.plain_or_atomic_add(self.in_window(b, k, sp), sp, d)
                    self.tr.report.block_local.append((self.src.name, self.cur_rev_block, inst.name,
                                                      self.window_roots[k]))
                elif ptr.name in self._global_sh:  # other threads may read the same element: accumulate atomically
                    b.atomic_rmw("fadd", sp, d, "monotonic")
                    self.tr.report.atomics.append((self.src.name, self.cur_rev_block, inst.name))
                elif ptr.name in self._shared_sh and not self.tr.hooks.serial_block_threads:
                    b.atomic_rmw("fadd", sp, d, "monotonic")  # the block's threads may add into it at once
                else:
                    self.store(b.fadd(b.load(sp, typ=d.type), d), sp)
        elif op == "call":
            self.call_adjoint(inst, ops, d)
        elif op in ("extractvalue", "insertvalue", "phi"):
            raise self.fail(f"a float value through {op} (an aggregate)")
        # integer results, comparisons: no adjoint

    def call_adjoint(self, inst, ops, d) -> None:
        b = self.b
        callee, args = ops[-1], ops[:-1]
        sym = callee.name if callee.value_kind == VK.function else self.origin.get(callee.name)
        vals = [self.P(a) for a in args]
        name = self.math_name(sym)
        if name is not None:
            y = self.P(inst)
            for k, a in enumerate(args):
                if not self.is_active(a):
                    continue
                ts = [ir.Constant(v.type, 1.0) if j == k else None for j, v in enumerate(vals)]
                partial = self.math_tangent(name, vals, ts, y)
                if partial is not None:
                    self.accumulate(a, self.scaled(d, partial))
            return
        fn = self.tr.facts.function(sym)
        if not fn.is_declaration:
            g = self.tr.twin(sym)
            if not g.fparams:
                return
            adj = b.call(g.fn, vals + [d])
            self.tr.report.recomputed.append((self.src.name, sym))
            for j, k in enumerate(g.fparams):
                self.accumulate(args[k], b.extract_value(adj, j))
            return
        job = self.tr.hooks.job_of(sym)
        fnty = ir.FunctionType(parse_type(str(inst.type)), [v.type for v in vals])
        ctx = 1 if self.tr.hooks.has_ctx else 0
        for k, a in enumerate(args):
            if k < ctx or not self.is_active(a) or not is_float(vals[k].type):
                continue
            jid = self.tr.hooks.derivative(job, k - ctx)
            self.tr.report.partials.append((self.src.name, job.name, k - ctx))
            marker = self.tr.function(markers.name(jid), ir.FunctionType(_I8P, []))
            ptr = b.call(marker, [], name=f"deferred.{jid}")
            partial = b.call(b.bitcast(ptr, ir.PointerType(fnty)), vals)
            self.accumulate(a, self.scaled(d, partial))


def _reach(insts, seeds: set, allocas: bool = False) -> set:
    """The pointers derived from ``seeds`` (and, with ``allocas``, from float local memory): through
    getelementptr, casts, extractvalue, insertvalue, and a store into a variable and its loads."""
    cand, held = set(seeds), set()
    changed = True
    while changed:
        changed = False
        for i in insts:
            ops = list(i.operands)
            if i.opcode == "alloca":
                hit = allocas and floaty(leading_type(str(i).split("alloca", 1)[1]))
            elif i.opcode in ("getelementptr", "bitcast", "addrspacecast", "extractvalue"):
                hit = ops[0].name in cand
            elif i.opcode == "insertvalue":
                hit = any(o.name in cand for o in ops if o.value_kind == VK.instruction)
            elif i.opcode == "load":
                hit = ops[0].name in held
            elif i.opcode == "store":
                if ops[0].name in cand and ops[1].name not in held:
                    held.add(ops[1].name)
                    changed = True
                continue
            else:
                continue
            if hit and i.name not in cand:
                cand.add(i.name)
                changed = True
    return cand


def _blocks_in_cycles(blocks) -> set:
    """The names of the blocks on some cycle of the control-flow graph (they may run more than once)."""
    succ = {}
    for blk in blocks:
        term = list(blk.instructions)[-1]
        succ[blk.name] = [FM._unquote(m) for m in FM._LABEL.findall(str(term))]
    # Tarjan's strongly connected components, iteratively
    index, low, on, stack, out, counter = {}, {}, set(), [], set(), [0]
    for root in succ:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in succ:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(succ[nxt])))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in succ[node]:
                    out |= set(comp)
    return out
