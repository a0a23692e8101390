"""Forward-mode automatic differentiation of LLVM IR: dual numbers, as Enzyme's forward mode.

The transform reads the *resolved* primal (its deferred markers already replaced by
references to other jobs' entries) with llvmlite.binding and builds the derivative with
llvmlite.ir. Every function the primal entry reaches gets a dual twin that takes a
tangent beside each parameter that can carry one (floats, aggregates, pointers into local
memory) and returns (value, tangent):

- arithmetic gets the chain rule; ``phi``/``select`` get tangent ``phi``/``select``;
- local memory (``alloca``) gets shadow memory of the same type: a store stores the
  tangent to the shadow, a load loads it; global memory has no shadow (zero tangent);
- math intrinsics and libm calls get their known derivatives; floor/ceil/trunc slope 0;
- a call to a function defined in the module calls its dual twin;
- a call to another job's entry (a deferred reference) gets that job's derivatives, one
  per float argument, asked for as new deferred requests (``derivative(job, k)``);
- an unresolved ``kdebug.deferred.N`` marker is opaque: the transform cannot see through
  it and says so (``NotDifferentiable.marker``), Enzyme.jl#1707's failure.
"""
from __future__ import annotations

import math
import re
from typing import Callable

import llvmlite.binding as llvm
from llvmlite import ir

from kdebug import markers
from kdebug.autodiff.ir_facts import Facts
from kdebug.autodiff.ir_types import leading_type, parse_type
from kdebug.lazy_dataclasses import dataclass

VK = llvm.ValueKind
_OWNER_PREFIX = re.compile(r"^(?:\w+_j\d+\.)+")
_INTRINSIC = re.compile(r"^llvm\.(\w+)\.f(32|64)$")
_LABEL = re.compile(r'label %("(?:[^"\\]|\\.)*"|[-\w.$]+)')
_INDICES = re.compile(r"((?:,\s*\d+)+)\s*(?:,\s*!.*)?$")
_ZERO_SLOPE = {"floor", "ceil", "trunc", "roundeven", "rint", "nearbyint", "round"}
_RUNTIME_PREFIXES = ("kdebug.rt.", "llvm.trap", "llvm.assume", "llvm.lifetime", "llvm.dbg", "longjmp",
                     "llvm.nvvm.read.ptx.sreg.")  # the last: the PTX target's thread and block indices (integers)
_SCRATCH_BYTES = 256  # the largest value read through a pointer that may have no shadow
_FCMP = {"oeq": "==", "one": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">=", "ord": "ord",
         "ueq": "==", "une": "!=", "ult": "<", "ule": "<=", "ugt": ">", "uge": ">=", "uno": "uno"}
_ICMP = {"eq": ("==", False), "ne": ("!=", False), "slt": ("<", True), "sle": ("<=", True), "sgt": (">", True),
         "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False), "uge": (">=", False)}
_INT_OPS = {"add": "add", "sub": "sub", "mul": "mul", "sdiv": "sdiv", "udiv": "udiv", "srem": "srem",
            "urem": "urem", "shl": "shl", "lshr": "lshr", "ashr": "ashr", "and": "and_", "or": "or_", "xor": "xor"}
_CASTS = {"zext", "sext", "trunc", "sitofp", "uitofp", "fptosi", "fptoui", "inttoptr", "ptrtoint"}


_INT_FLAGS = ("nuw", "nsw", "exact", "disjoint")


def int_flags(inst) -> tuple:
    """An integer instruction's wrap flags (``add nuw nsw``, ``udiv exact``...), kept in its copy: LLVM
    proves an index non-negative from them (numba's wraparound select folds, the thread loop vectorises)."""
    words = str(inst).split("=", 1)[-1].split()
    return tuple(w for w in words[1:4] if w in _INT_FLAGS)


class NotDifferentiable(Exception):
    """Something in the primal the transform cannot differentiate; ``marker``: an opaque marker's job id."""

    def __init__(self, what: str, function: str = "", marker: int | None = None) -> None:
        super().__init__(what)
        self.what, self.function, self.marker = what, function, marker


@dataclass
class Hooks:
    """What the transform asks of the driver."""

    job_of: Callable[[str], object]  # entry symbol -> the job whose entry it is, or None
    derivative: Callable[[object, int], int]  # (job, argument index) -> marker id of its derivative job
    libm: dict  # libm symbol -> (math name, single precision)
    libm_name: Callable[[str, bool], str]  # the target's libm symbol for a math name
    has_ctx: bool  # every function's first parameter is the target's hidden context
    # (register, dim) a parsed instruction reads (threadIdx...), or None: the reverse transform's thread index
    special_register_of: Callable[..., object] = lambda inst, defs, ctx: None
    # (builder, the function's context or None, module, register, dim) -> the register's value (i32)
    read_special_register: Callable[..., object] | None = None
    # the target runs a block's threads one at a time, each from barrier to barrier (the CPU backend): a
    # thread's read-add-write of an element no other block touches needs no atomic
    serial_block_threads: bool = False
    # the target, for a kernel adjoint's barriers and shared arrays (its adjoint_* hooks)
    target: object = None


def carries(t: ir.Type) -> bool:
    """Whether values of type ``t`` travel with a tangent."""
    if isinstance(t, (ir.DoubleType, ir.FloatType, ir.HalfType, ir.PointerType)):
        return True
    if isinstance(t, ir.LiteralStructType):
        return any(carries(e) for e in t.elements)
    if isinstance(t, (ir.ArrayType, ir.VectorType)):
        return carries(t.element)
    return False


def zero(t: ir.Type) -> ir.Constant:
    if isinstance(t, (ir.DoubleType, ir.FloatType, ir.HalfType)):
        return ir.Constant(t, 0.0)
    if isinstance(t, ir.IntType):
        return ir.Constant(t, 0)
    return ir.Constant(t, None)  # null, zeroinitializer


def differentiate(view, primal: str, entry: str, argnum: int, hooks: Hooks) -> ir.Module:
    """The derivative module: ``entry`` (the primal's signature) returns d primal / d argument ``argnum``."""
    tr = _Transform(view, entry, hooks)
    tr.wrapper(primal, argnum)
    while tr.pending:
        tr.pending.pop().emit()
    return tr.out


class _Transform:
    def __init__(self, view, entry: str, hooks: Hooks) -> None:
        self.view, self.entry, self.hooks = view, entry, hooks
        self.facts = Facts(view)  # the module's functions as records, each read once (ir_facts.py)
        self.out = ir.Module(name=entry)
        self.out.triple, self.out.data_layout = view.triple, view.data_layout
        self.duals: dict[str, _Dual] = {}
        self.pending: list[_Dual] = []
        self._zero_buffer = None

    def dual(self, name: str) -> "_Dual":
        d = self.duals.get(name)
        if d is None:
            d = self.duals[name] = _Dual(self, self.facts.function(name))
            self.pending.append(d)
        return d

    def function(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        fn = self.out.globals.get(name)
        return fn if fn is not None else ir.Function(self.out, fnty, name=name)

    def global_variable(self, name: str, ty: ir.Type) -> ir.GlobalVariable:
        g = self.out.globals.get(name)
        return g if g is not None else ir.GlobalVariable(self.out, ty, name=name)

    @property
    def zero_buffer(self) -> ir.GlobalVariable:
        """Read instead of a missing shadow: global memory has zero tangent."""
        if self._zero_buffer is None:
            ty = ir.ArrayType(ir.IntType(8), _SCRATCH_BYTES)
            g = self._zero_buffer = ir.GlobalVariable(self.out, ty, name=f"{self.entry}.zero")
            g.initializer, g.global_constant, g.linkage = ir.Constant(ty, None), True, "internal"
        return self._zero_buffer

    def constant(self, op) -> ir.Value:
        kind = op.value_kind
        if kind == VK.function:  # an operand does not know it is a global: ask the module
            return self.function(op.name, parse_type(self.facts.function(op.name).global_value_type))
        if kind == VK.global_variable:
            g = self.view.get_global_variable(op.name)
            return self.global_variable(op.name, parse_type(str(g.global_value_type)))
        ty = parse_type(str(op.type))
        if kind == VK.constant_int:
            return ir.Constant(ty, op.get_constant_value(signed_int=True))
        if kind == VK.constant_fp:
            return ir.Constant(ty, op.get_constant_value(round_fp=True))
        if kind in (VK.undef_value, VK.poison_value):
            return ir.Constant(ty, ir.Undefined)
        if kind in (VK.constant_pointer_null, VK.constant_aggregate_zero):
            return zero(ty)
        if kind in (VK.constant_struct, VK.constant_array, VK.constant_vector):
            return ir.Constant(ty, [self.constant(o) for o in op.operands])
        raise NotDifferentiable(f"the constant {str(op).strip()}")

    def wrapper(self, primal: str, argnum: int) -> None:
        """The job's entry: the primal's signature; seeds argument ``argnum`` with tangent 1."""
        p = self.dual(primal)
        fn = ir.Function(self.out, p.fnty, name=self.entry)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        seed = argnum + (1 if self.hooks.has_ctx else 0)
        tangents = [ir.Constant(p.fnty.args[k], 1.0) if k == seed else zero(p.fnty.args[k]) for k in p.tparams]
        r = b.call(p.fn, list(fn.args) + tangents)
        b.ret(b.extract_value(r, 1))


class _Dual:
    """One function's dual twin."""

    def __init__(self, tr: _Transform, src) -> None:
        self.tr, self.src = tr, src
        self.fnty = parse_type(str(src.global_value_type))
        params = self.fnty.args
        # the context pointer never carries a tangent; a helper of kdebug's own (kdebug.int_power) has none
        skip = 0 if tr.hooks.has_ctx and params and isinstance(params[0], ir.PointerType) else -1
        self.tparams = [k for k, t in enumerate(params) if carries(t) and k != skip]
        ret = self.fnty.return_type
        self.ret_dual = carries(ret)
        dret = ir.LiteralStructType([ret, ret]) if self.ret_dual else ret
        fnty = ir.FunctionType(dret, list(params) + [params[k] for k in self.tparams])
        self.fn = ir.Function(tr.out, fnty, name=f"{tr.entry}.{src.name}.dual")
        self.fn.linkage = "internal"

    # ---- values -----------------------------------------------------------------
    def V(self, op) -> ir.Value:
        kind = op.value_kind
        if kind in (VK.argument, VK.instruction):
            return self.v[op.name]
        if kind == VK.basic_block:
            return self.blocks[op.name]
        return self.tr.constant(op)

    def T(self, op) -> ir.Value | None:
        """The tangent of ``op``; None where it is statically zero (constants, globals, integers)."""
        if op.value_kind in (VK.argument, VK.instruction):
            return self.t.get(op.name)
        return None

    def TZ(self, op, ty: ir.Type) -> ir.Value:
        t = self.T(op)
        return t if t is not None else zero(ty)

    def fail(self, what: str):
        return NotDifferentiable(what, self.src.name)

    # ---- driving ------------------------------------------------------------------
    def emit(self) -> None:
        src = self.src
        self.v: dict[str, ir.Value] = {}
        self.t: dict[str, ir.Value | None] = {}
        self.nonnull: set[str] = set()  # shadows known to exist (derived from a shadow alloca)
        self.origin: dict[str, str] = {}  # pointer value -> the function it addresses
        self.phis: list = []
        args = list(self.fn.args)
        params = list(src.arguments)
        for k, a in enumerate(params):
            self.v[a.name] = args[k]
        for j, k in enumerate(self.tparams):
            self.t[params[k].name] = args[len(params) + j]
        blocks = list(src.blocks)
        self.blocks = {b.name: self.fn.append_basic_block(b.name or "bb") for b in blocks}
        self.ends: dict[str, ir.Block] = {}
        self.b = ir.IRBuilder(self.blocks[blocks[0].name])
        self.scratch = self.b.alloca(ir.ArrayType(ir.IntType(8), _SCRATCH_BYTES), name="shadow.scratch")
        reached = _reverse_postorder(blocks)
        for blk in reached:
            self.b.position_at_end(self.blocks[blk.name])
            for inst in blk.instructions:
                self.instruction(inst)
            self.ends[blk.name] = self.b.block
        for blk in blocks:  # unreachable blocks: nothing runs there
            if blk.name not in self.ends:
                self.b.position_at_end(self.blocks[blk.name])
                self.b.unreachable()
        for inst, v, t in self.phis:
            for val, blk in zip(inst.operands, inst.incoming_blocks):
                if blk.name not in self.ends:
                    continue
                end = self.ends[blk.name]
                v.add_incoming(self.V(val), end)
                if t is not None:
                    t.add_incoming(self.TZ(val, t.type), end)

    def instruction(self, inst) -> None:
        op = inst.opcode
        handler = getattr(self, "op_" + op, None)
        if handler is None:
            if op in _INT_OPS:
                a, c = (self.V(o) for o in inst.operands)
                return self.define(inst, getattr(self.b, _INT_OPS[op])(a, c, flags=int_flags(inst)), None)
            if op in _CASTS:
                (x,) = inst.operands
                return self.define(inst, getattr(self.b, op)(self.V(x), parse_type(str(inst.type))), None)
            what = {"atomicrmw": "an atomic", "cmpxchg": "an atomic", "fence": "a memory fence",
                    "switch": "a switch", "indirectbr": "an indirect branch"}.get(op, f"the instruction {op}")
            raise self.fail(what)
        handler(inst, list(inst.operands))

    def define(self, inst, v, t, nonnull: bool = False) -> None:
        if inst.name:
            self.v[inst.name] = v
            if t is not None:
                self.t[inst.name] = t
                if nonnull:
                    self.nonnull.add(inst.name)

    # ---- memory -----------------------------------------------------------------
    def op_alloca(self, inst, ops) -> None:
        ty = leading_type(str(inst).split("alloca", 1)[1])
        v = self.b.alloca(ty, name=inst.name)
        t = self.b.alloca(ty, name=inst.name + ".shadow") if carries(ty) else None
        self.define(inst, v, t, nonnull=True)

    def shadow(self, ptr_op, store: bool) -> ir.Value | None:
        """The shadow address for an access through ``ptr_op``; None where memory has no shadow."""
        sp = self.T(ptr_op)
        if sp is None or ptr_op.name in self.nonnull:
            return sp
        # the pointer came through memory or an argument: a local array's shadow, or null (global memory)
        present = self.b.icmp_unsigned("!=", sp, ir.Constant(sp.type, None))
        spare = self.scratch if store else self.tr.zero_buffer
        return self.b.select(present, sp, spare)  # sp first: the result keeps its (opaque) pointer type

    def op_load(self, inst, ops) -> None:
        ty = parse_type(str(inst.type))
        v = self.b.load(self.V(ops[0]), typ=ty)
        t = None
        if carries(ty):
            sp = self.shadow(ops[0], store=False)
            t = self.b.load(sp, typ=ty) if sp is not None else None
        self.define(inst, v, t)

    def op_store(self, inst, ops) -> None:
        val, ptr = ops
        self.store(self.V(val), self.V(ptr))
        ty = parse_type(str(val.type))
        if carries(ty):
            sp = self.shadow(ptr, store=True)
            if sp is not None:
                self.store(self.TZ(val, ty), sp)

    def store(self, value, ptr) -> None:
        """A store; where llvmlite typed ``ptr`` otherwise (a field's address in a struct built
        here: llvmlite types such a GEP by the struct, and IR with opaque pointers has no types
        to agree on) the instruction is made directly."""
        if isinstance(ptr.type, ir.PointerType) and not ptr.type.is_opaque and ptr.type.pointee != value.type:
            st = ir.instructions.StoreInstr(self.b.block, value, ptr)
            st.align = None
            self.b._insert(st)
        else:
            self.b.store(value, ptr)

    def op_getelementptr(self, inst, ops) -> None:
        text = str(inst).split("getelementptr", 1)[1]
        inbounds = " inbounds " in f" {text.split(',')[0]} "
        text = re.sub(r"^\s*(?:(?:inbounds|nuw|nusw|inrange\(\S+\))\s+)*", "", text)
        ty = leading_type(text)
        base, idx = ops[0], [self.V(o) for o in ops[1:]]
        if self.follow_function(inst, base):
            return
        v = self.b.gep(self.V(base), idx, inbounds=inbounds, source_etype=ty)
        tb = self.T(base)
        t = self.b.gep(tb, idx, inbounds=inbounds, source_etype=ty) if tb is not None else None
        self.define(inst, v, t, nonnull=base.name in self.nonnull)

    def follow_function(self, inst, base) -> bool:
        """A resolved marker (``getelementptr i8, ptr @entry, i64 0`` and its casts) only names the
        function a call will reach: remember it, emit nothing."""
        if base.value_kind == VK.function:
            self.origin[inst.name] = base.name
        elif base.name in self.origin:
            self.origin[inst.name] = self.origin[base.name]
        else:
            return False
        self.v[inst.name] = self.tr.constant(base) if base.value_kind == VK.function else self.v[base.name]
        return True

    def op_bitcast(self, inst, ops) -> None:
        (x,) = ops
        ty = parse_type(str(inst.type))
        tx = self.T(x)
        if self.follow_function(inst, x):
            return
        self.define(inst, self.b.bitcast(self.V(x), ty), self.b.bitcast(tx, ty) if tx is not None else None,
                    nonnull=x.name in self.nonnull)

    op_addrspacecast = op_bitcast

    def op_fpext(self, inst, ops) -> None:
        self.fp_cast(inst, ops, self.b.fpext)

    def op_fptrunc(self, inst, ops) -> None:
        self.fp_cast(inst, ops, self.b.fptrunc)

    def fp_cast(self, inst, ops, cast) -> None:
        ty = parse_type(str(inst.type))
        tx = self.T(ops[0])
        self.define(inst, cast(self.V(ops[0]), ty), cast(tx, ty) if tx is not None else None)

    # ---- aggregates, choices ------------------------------------------------------
    def indices(self, inst) -> list[int]:
        m = _INDICES.search(str(inst))
        return [int(x) for x in m.group(1).replace(" ", "").strip(",").split(",")]

    def op_extractvalue(self, inst, ops) -> None:
        idx = self.indices(inst)
        ta = self.T(ops[0])
        ty = parse_type(str(inst.type))
        t = self.b.extract_value(ta, idx) if ta is not None and carries(ty) else None
        self.define(inst, self.b.extract_value(self.V(ops[0]), idx), t)

    def op_insertvalue(self, inst, ops) -> None:
        idx = self.indices(inst)
        agg, x = ops
        aty, xty = parse_type(str(agg.type)), parse_type(str(x.type))
        t = self.T(agg)
        if carries(xty) and (t is not None or self.T(x) is not None):
            t = self.b.insert_value(self.TZ(agg, aty), self.TZ(x, xty), idx)
        self.define(inst, self.b.insert_value(self.V(agg), self.V(x), idx), t)

    def op_select(self, inst, ops) -> None:
        c, a, d = ops
        ty = parse_type(str(inst.type))
        cv = self.V(c)
        t = None
        if carries(ty) and (self.T(a) is not None or self.T(d) is not None):
            t = self.b.select(cv, self.TZ(a, ty), self.TZ(d, ty))
        self.define(inst, self.b.select(cv, self.V(a), self.V(d)), t)

    def op_phi(self, inst, ops) -> None:
        ty = parse_type(str(inst.type))
        v = self.b.phi(ty, name=inst.name)
        t = self.b.phi(ty, name=inst.name + ".tangent") if carries(ty) else None
        self.phis.append((inst, v, t))
        self.define(inst, v, t)

    def op_icmp(self, inst, ops) -> None:
        pred = str(inst).split("icmp", 1)[1].split()[0]
        sym, signed = _ICMP[pred]
        a, c = self.V(ops[0]), self.V(ops[1])
        self.define(inst, (self.b.icmp_signed if signed else self.b.icmp_unsigned)(sym, a, c), None)

    def op_fcmp(self, inst, ops) -> None:
        pred = str(inst).split("fcmp", 1)[1].split()[0]
        if pred in ("true", "false"):
            self.define(inst, ir.Constant(ir.IntType(1), int(pred == "true")), None)
            return
        a, c = self.V(ops[0]), self.V(ops[1])
        cmp = self.b.fcmp_ordered if pred.startswith("o") else self.b.fcmp_unordered
        self.define(inst, cmp(_FCMP[pred], a, c), None)

    # ---- arithmetic ---------------------------------------------------------------
    def op_fneg(self, inst, ops) -> None:
        t = self.T(ops[0])
        self.define(inst, self.b.fneg(self.V(ops[0])), self.b.fneg(t) if t is not None else None)

    def op_fadd(self, inst, ops) -> None:
        a, c = ops
        self.define(inst, self.b.fadd(self.V(a), self.V(c)), self.add(self.T(a), self.T(c)))

    def op_fsub(self, inst, ops) -> None:
        a, c = ops
        tc = self.T(c)
        self.define(inst, self.b.fsub(self.V(a), self.V(c)),
                    self.add(self.T(a), self.b.fneg(tc) if tc is not None else None))

    def op_fmul(self, inst, ops) -> None:
        a, c = ops
        av, cv = self.V(a), self.V(c)
        self.define(inst, self.b.fmul(av, cv), self.add(self.mul(self.T(a), cv), self.mul(self.T(c), av)))

    def op_fdiv(self, inst, ops) -> None:
        a, c = ops
        av, cv = self.V(a), self.V(c)
        q = self.b.fdiv(av, cv)
        ta, tc = self.T(a), self.T(c)
        t = None
        if ta is not None or tc is not None:  # (ta - q tc) / c
            num = self.add(ta, self.b.fneg(self.mul(tc, q)) if tc is not None else None)
            t = self.b.fdiv(num, cv)
        self.define(inst, q, t)

    def op_frem(self, inst, ops) -> None:
        a, c = ops
        av, cv = self.V(a), self.V(c)
        ta, tc = self.T(a), self.T(c)
        t = None
        if ta is not None or tc is not None:  # a - trunc(a / c) c
            k = self.call_math("trunc", [self.b.fdiv(av, cv)])
            t = self.add(ta, self.b.fneg(self.mul(tc, k)) if tc is not None else None)
        self.define(inst, self.b.frem(av, cv), t)

    def add(self, x, y):
        if x is None:
            return y
        return x if y is None else self.b.fadd(x, y)

    def mul(self, t, v):
        return None if t is None else self.b.fmul(t, v)

    # ---- control flow -------------------------------------------------------------
    def op_br(self, inst, ops) -> None:
        labels = [_unquote(m) for m in _LABEL.findall(str(inst))]
        if len(labels) == 1:
            self.b.branch(self.blocks[labels[0]])
        else:
            self.b.cbranch(self.V(ops[0]), self.blocks[labels[0]], self.blocks[labels[1]])

    def op_ret(self, inst, ops) -> None:
        if not ops:
            self.b.ret_void()
            return
        v = self.V(ops[0])
        if not self.ret_dual:
            self.b.ret(v)
            return
        pair = ir.Constant(self.fn.function_type.return_type, ir.Undefined)
        pair = self.b.insert_value(pair, v, 0)
        self.b.ret(self.b.insert_value(pair, self.TZ(ops[0], v.type), 1))

    def op_unreachable(self, inst, ops) -> None:
        self.b.unreachable()

    # ---- calls ------------------------------------------------------------------------
    def op_call(self, inst, ops) -> None:
        callee, args = ops[-1], ops[:-1]
        sym = callee.name if callee.value_kind == VK.function else self.origin.get(callee.name)
        if sym is None:
            raise self.fail("a call through a pointer the transform cannot follow")
        marker_job = markers.job_of(sym)
        if marker_job is not None:
            raise NotDifferentiable(f"the deferred-codegen marker {sym}", self.src.name, marker_job)
        vals = [self.V(a) for a in args]
        math_fn = self.math_name(sym)
        if math_fn is not None:
            y = self.b.call(self.tr.function(sym, ir.FunctionType(vals[0].type, [v.type for v in vals])), vals)
            return self.define(inst, y, self.math_tangent(math_fn, vals, [self.T(a) for a in args], y))
        fn = self.tr.facts.function(sym)
        fnty = parse_type(fn.global_value_type)
        own = _OWNER_PREFIX.sub("", sym)  # helpers renamed by the jobs that linked them (f_j3.kdebug.rt.oob)
        if own.startswith(_RUNTIME_PREFIXES):  # the target's runtime: checks, traps; no tangent
            return self.define(inst, self.b.call(self.tr.function(sym, fnty), vals), None)
        if not fn.is_declaration:
            return self.call_dual(inst, sym, args, vals)
        if sym.startswith("llvm.") and isinstance(fnty.return_type, ir.IntType):
            # an integer intrinsic (the shift of a power-of-two divisor: lower.int_divmod): no tangent
            return self.define(inst, self.b.call(self.tr.function(sym, fnty), vals), None)
        job = self.tr.hooks.job_of(sym)
        if job is None:
            raise self.fail(f"a call to {sym}, which has no derivative")
        if job.kind == "kernel":
            raise self.fail(f"a device-side launch of {job.name}")
        # the call's own type: a job's entry may be declared before its return type is known
        fnty = ir.FunctionType(parse_type(str(inst.type)), [v.type for v in vals])
        self.call_job(inst, job, sym, fnty, args, vals)

    def call_dual(self, inst, sym, args, vals) -> None:
        d = self.tr.dual(sym)
        tangents = [self.TZ(args[k], d.fnty.args[k]) for k in d.tparams]
        r = self.b.call(d.fn, vals + tangents)
        if d.ret_dual:
            self.define(inst, self.b.extract_value(r, 0), self.b.extract_value(r, 1))
        else:
            self.define(inst, r, None)

    def call_job(self, inst, job, sym, fnty, args, vals) -> None:
        """Another job's entry: its value by calling it, its tangent by calling its derivatives."""
        y = self.b.call(self.b.bitcast(self.tr.function(sym, fnty), ir.PointerType(fnty)), vals)
        t = None
        if carries(fnty.return_type):
            ctx = 1 if self.tr.hooks.has_ctx else 0
            for k, a in enumerate(args):
                ta = self.T(a)
                if k < ctx or ta is None or not isinstance(ta.type, (ir.DoubleType, ir.FloatType)):
                    continue
                jid = self.tr.hooks.derivative(job, k - ctx)
                marker = self.tr.function(markers.name(jid), ir.FunctionType(ir.PointerType(ir.IntType(8)), []))
                ptr = self.b.call(marker, [], name=f"deferred.{jid}")
                partial = self.b.call(self.b.bitcast(ptr, ir.PointerType(fnty)), vals)
                t = self.add(t, self.b.fmul(partial, ta))
        self.define(inst, y, t)

    # ---- math -----------------------------------------------------------------------------
    def math_name(self, sym: str) -> str | None:
        m = _INTRINSIC.match(sym)
        if m:
            return m.group(1)
        hit = self.tr.hooks.libm.get(sym)
        return hit[0] if hit else None

    def call_math(self, name: str, vals: list) -> ir.Value:
        ty = vals[0].type
        single = isinstance(ty, ir.FloatType)
        if name in ("sin", "cos", "exp", "log", "sqrt", "pow", "trunc", "fabs", "exp2"):
            sym = f"llvm.{name}.{'f32' if single else 'f64'}"
        else:
            sym = self.tr.hooks.libm_name(name, single)
        return self.b.call(self.tr.function(sym, ir.FunctionType(ty, [v.type for v in vals])), vals)

    def math_tangent(self, name: str, xs: list, ts: list, y):
        if all(t is None for t in ts) or name in _ZERO_SLOPE:
            return None
        b, ty = self.b, y.type
        c = lambda v: ir.Constant(ty, v)  # noqa: E731
        x, t = xs[0], ts[0]
        sq = lambda v: b.fmul(v, v)  # noqa: E731
        if len(xs) == 1 and name in _UNARY:
            return b.fmul(_UNARY[name](self, b, c, x, y), t)
        if len(xs) == 2:
            a, d = xs
            ta, td = ts
            if name == "pow":  # b a^(b-1) da + log(a) a^b db
                da = self.mul(ta, b.fmul(d, self.call_math("pow", [a, b.fsub(d, c(1.0))])))
                db = self.mul(td, b.fmul(self.call_math("log", [a]), y)) if td is not None else None
                return self.add(da, db)
            if name == "atan2":  # (d da - a dd) / (a^2 + d^2)
                num = self.add(self.mul(ta, d), b.fneg(self.mul(td, a)) if td is not None else None)
                return b.fdiv(num, b.fadd(sq(a), sq(d)))
            if name == "hypot":
                return b.fdiv(self.add(self.mul(ta, a), self.mul(td, d)), y)
            if name == "copysign":
                return None if ta is None else b.select(b.fcmp_ordered("==", y, a), ta, b.fneg(ta))
            if name == "fmod":
                k = self.call_math("trunc", [b.fdiv(a, d)])
                return self.add(ta, b.fneg(self.mul(td, k)) if td is not None else None)
            if name in ("minnum", "maxnum", "minimum", "maximum"):
                pick = b.fcmp_ordered("==", y, a)
                return b.select(pick, ta if ta is not None else c(0.0), td if td is not None else c(0.0))
        if name == "fma" and len(xs) == 3:
            a, d, e = xs
            return self.add(self.add(self.mul(ts[0], d), self.mul(ts[1], a)), ts[2])
        raise self.fail(f"math.{name}, which has no derivative here")


# d name(x) / dx, for (the dual twin, its builder, a constant of y's type, x, y = name(x)): the math
# functions of one argument
_UNARY = {
    "sin": lambda d, b, c, x, y: d.call_math("cos", [x]),
    "cos": lambda d, b, c, x, y: b.fneg(d.call_math("sin", [x])),
    "tan": lambda d, b, c, x, y: b.fadd(c(1.0), b.fmul(y, y)),
    "exp": lambda d, b, c, x, y: y,
    "exp2": lambda d, b, c, x, y: b.fmul(y, c(math.log(2.0))),
    "expm1": lambda d, b, c, x, y: b.fadd(y, c(1.0)),
    "log": lambda d, b, c, x, y: b.fdiv(c(1.0), x),
    "log2": lambda d, b, c, x, y: b.fdiv(c(1.0), b.fmul(x, c(math.log(2.0)))),
    "log10": lambda d, b, c, x, y: b.fdiv(c(1.0), b.fmul(x, c(math.log(10.0)))),
    "log1p": lambda d, b, c, x, y: b.fdiv(c(1.0), b.fadd(x, c(1.0))),
    "sqrt": lambda d, b, c, x, y: b.fdiv(c(0.5), y),
    "tanh": lambda d, b, c, x, y: b.fsub(c(1.0), b.fmul(y, y)),
    "sinh": lambda d, b, c, x, y: d.call_math("cosh", [x]),
    "cosh": lambda d, b, c, x, y: d.call_math("sinh", [x]),
    "atan": lambda d, b, c, x, y: b.fdiv(c(1.0), b.fadd(c(1.0), b.fmul(x, x))),
    "asin": lambda d, b, c, x, y: b.fdiv(c(1.0), d.call_math("sqrt", [b.fsub(c(1.0), b.fmul(x, x))])),
    "acos": lambda d, b, c, x, y: b.fdiv(c(-1.0), d.call_math("sqrt", [b.fsub(c(1.0), b.fmul(x, x))])),
    "asinh": lambda d, b, c, x, y: b.fdiv(c(1.0), d.call_math("sqrt", [b.fadd(b.fmul(x, x), c(1.0))])),
    "acosh": lambda d, b, c, x, y: b.fdiv(c(1.0), d.call_math("sqrt", [b.fsub(b.fmul(x, x), c(1.0))])),
    "atanh": lambda d, b, c, x, y: b.fdiv(c(1.0), b.fsub(c(1.0), b.fmul(x, x))),
    "fabs": lambda d, b, c, x, y: b.select(b.fcmp_ordered("<", x, c(0.0)), c(-1.0), c(1.0)),
    "erf": lambda d, b, c, x, y: b.fmul(c(2.0 / math.sqrt(math.pi)), d.call_math("exp", [b.fneg(b.fmul(x, x))])),
    "erfc": lambda d, b, c, x, y: b.fmul(c(-2.0 / math.sqrt(math.pi)), d.call_math("exp", [b.fneg(b.fmul(x, x))])),
}


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _reverse_postorder(blocks) -> list:
    """Blocks reachable from the entry, each after every block that dominates it."""
    by_name = {b.name: b for b in blocks}
    seen, order = set(), []

    def successors(blk):
        term = list(blk.instructions)[-1]
        return [_unquote(m) for m in _LABEL.findall(str(term))]

    stack = [(blocks[0], iter(successors(blocks[0])))]
    seen.add(blocks[0].name)
    while stack:
        blk, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(blk)
            stack.pop()
        elif nxt not in seen and nxt in by_name:
            seen.add(nxt)
            stack.append((by_name[nxt], iter(successors(by_name[nxt]))))
    return order[::-1]
