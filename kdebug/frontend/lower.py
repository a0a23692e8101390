"""Lowering: a TypedFunction -> LLVM IR (llvmlite.ir), one function per kernel or device function.

Every local is an alloca in the entry block (LLVM's mem2reg turns them into
SSA values). Targets shape a few things through small hooks (see
``kdebug/targets/base.py``): the hidden thread-context parameter, special
registers, device-side launches and function pointers. A hook sees a ``LoweringContext``
(hook_context.py), never the lowerer.
"""
from __future__ import annotations

import ast
import copy
import functools

import numpy as np
from llvmlite import ir

from kdebug import markers
from kdebug.frontend.debug_info import Locations, module_debug_info
from kdebug.frontend.hook_context import LoweringContext, access_kind
from kdebug.frontend.typeinfer import PyValue, TypedFunction, constant_index
from kdebug.frontend import complex_numbers as C, datetimes as D, enums as EN, records as R, registry
from kdebug.frontend import strings as S, vectors as V
from kdebug.frontend.slices import lower_view, strides_tuple, to_strided
from kdebug.frontend.exceptions import (FLOAT_FLOORDIV, FLOAT_MOD, INT_FLOORDIV, INT_MOD, TRUEDIV, ZERO_POWER,
                                        check_zero_divisor, lower_raise, may_raise)
from kdebug.lang import intrinsics as I
from kdebug.lang import types as T
from kdebug.frontend import grid_stride
from kdebug.frontend.index_split import splittable
from kdebug.frontend import index_bounds
from kdebug.frontend.math_extra import allow_contraction, apply_fastmath, int_power_function

i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
f32, f64 = ir.FloatType(), ir.DoubleType()


def llvm_type(t: T.Type) -> ir.Type:
    """The register type of a kernel-language value."""
    if isinstance(t, T.EnumMember):  # its value
        return llvm_type(t.dtype)
    if isinstance(t, T.Record):  # a reference to the element (kdebug/frontend/records.py)
        return ir.PointerType(i8)
    if isinstance(t, T.CharSeq):  # its character codes
        return ir.ArrayType(ir.IntType(t.char_bits), t.count)
    if isinstance(t, T.StringConstant):  # a compile-time value: nothing at run time
        return ir.LiteralStructType([])
    if isinstance(t, V.VectorType):  # float32x4: a struct of its components
        return ir.LiteralStructType([llvm_type(t.base_type)] * t.num_elements)
    if isinstance(t, T.Scalar):
        if t.is_bool:
            return i1
        if t.is_int or t.is_datetime:
            return ir.IntType(t.bits)
        if t.is_complex:  # numpy's layout of complex64/complex128: the real part, then the imaginary
            part = llvm_type(t.underlying_float)
            return ir.LiteralStructType([part, part])
        return {16: ir.HalfType(), 32: f32}.get(t.bits, f64)
    if isinstance(t, T.Array):  # data, shape (and strides in elements for a strided view)
        dims = [ir.ArrayType(i64, t.ndim)] * (2 if t.strided else 1)
        return ir.LiteralStructType([ir.PointerType(mem_type(t.dtype))] + dims)
    if isinstance(t, T.Tuple):
        return ir.LiteralStructType([llvm_type(x) for x in t.types])
    if isinstance(t, T.NoneType):
        return ir.VoidType()
    if isinstance(t, T.Optional):  # numba's OptionalModel: {data, valid}
        return ir.LiteralStructType([llvm_type(t.type), i1])
    if isinstance(t, T.FunctionPointer):
        return ir.PointerType(i8)
    if isinstance(t, T.CPointer):
        return ir.PointerType(mem_type(t.dtype))
    model = registry.data_model(t)
    if model is not None:  # a numba extension type: its data model's value type
        return model.get_value_type()
    raise TypeError(f"no LLVM type for {t}")


def mem_type(t: T.Scalar) -> ir.Type:
    """The in-memory type of an array element (booleans are bytes in memory, a record its bytes)."""
    if isinstance(t, T.Record):
        return ir.ArrayType(i8, t.size)
    return i8 if t.is_bool else llvm_type(t)


def const(t: T.Type, value) -> ir.Constant:
    if isinstance(t, T.EnumMember):
        return const(t.dtype, value.value)
    if isinstance(t, T.Tuple):
        return ir.Constant(llvm_type(t), [const(x, v) for x, v in zip(t.types, value)])
    if t.is_float:
        return ir.Constant(llvm_type(t), float(value))
    if t.is_complex:
        z = complex(value)
        return ir.Constant(llvm_type(t), [const(t.underlying_float, z.real), const(t.underlying_float, z.imag)])
    if t.is_bool:
        return ir.Constant(i1, int(bool(value)))
    if t.is_datetime:  # np.datetime64/np.timedelta64 in the type's unit
        return ir.Constant(i64, int(np.array(value).astype(t.np_dtype).astype(np.int64)))
    v = int(value)
    return ir.Constant(llvm_type(t), v & ((1 << t.bits) - 1))


class FunctionLowerer:
    """Lowers one typed function into an llvmlite function of ``module``."""

    def __init__(self, module: ir.Module, tf: TypedFunction, target, name: str, linkage: str,
                 functions: dict, requester=None, target_state=None) -> None:
        self.module, self.tf, self.target = module, tf, target
        self.functions = functions  # (py_func, argtypes) -> ir.Function, shared by one module
        self.target_state = target_state  # the target's record of the module (Target.module_state)
        # requester(function, argtypes, kind, reason, loc) -> job id: the driver's job table
        self.requester = requester
        self.src = tf.source
        # a compile-time argument (a function, an intrinsic, a type: numba's first-class functions) is no
        # parameter: the function is specialised on it, as numba's dispatcher is
        params = [llvm_type(t) for t in tf.argtypes if not isinstance(t, PyValue)]
        ctx_t = target.context_type()
        if ctx_t is not None:
            params = [ctx_t] + params
        fnty = ir.FunctionType(llvm_type(tf.restype), params)
        self.fn = ir.Function(module, fnty, name=name)
        self.fn.linkage = linkage
        self.functions[(tf.source.function, tf.argtypes)] = self.fn
        self.ctx = self.fn.args[0] if ctx_t is not None else None
        self.entry = self.fn.append_basic_block("entry")
        self.builder = ir.IRBuilder(self.entry)
        self.slots: dict[str, ir.Value] = {}
        self.exit_lines: dict[ir.Block, int] = {}  # block ending in a return -> the return's line
        self.nonneg_names: set[str] = set()  # range loop variables known >= 0 here (index_split.py)
        # range loop variables that index an array inside its extent here: name -> (array, dimension) (index_bounds.py)
        self.in_bounds: dict[str, tuple[str, int]] = {}
        self.loops: list[tuple[ir.Block, ir.Block]] = []
        self.whiles: list = []  # the target's enter_while values of the enclosing while loops (inlined calls too)
        self.counter = 0
        self.fastmath = False  # @cuda.jit(fastmath=True): set by whoever lowers the function
        self.debug = False  # @cuda.jit(debug=True): numba's python error model (kdebug/frontend/exceptions.py)
        self.lineinfo = False  # !dbg locations on every instruction (kdebug/frontend/debug_info.py)
        self.locations: Locations | None = None  # this body's, once lower() or an inlined call made them
        self.root = self  # the lowerer of ``fn`` itself (an inlined device function's is its kernel's)
        self.call_path: tuple = ()  # an inlined device function's calls from the kernel down: (call node, caller tf)
        self._hook_context: LoweringContext | None = None

    @property
    def hook_context(self) -> LoweringContext:
        """What the target's hooks see of this lowerer; made at the first hook, once the exit block
        and the options (``debug``) are set."""
        if self._hook_context is None:
            self._hook_context = self.make_hook_context()
        return self._hook_context

    def make_hook_context(self) -> LoweringContext:
        """What the target's hooks see of this lowerer."""
        return LoweringContext(module=self.module, fn=self.fn, entry=self.entry, builder=self.builder,
                               thread_ctx=self.ctx, tf=self.tf, function_tf=self.root.tf,
                               slots=(self.slots, self.root.slots), state=self.target_state,
                               exit=getattr(self, "exit", None), function_exit=getattr(self.root, "exit", None),
                               exit_lines=self.exit_lines, call_path=self.call_path,
                               debug=self.debug, new_block=self.new_block, alloca=self.alloca)

    def inlined(self, callee_tf: TypedFunction, node=None) -> "FunctionLowerer":
        """A lowerer that emits ``callee_tf``'s body into this function (an inlined call at ``node``): the
        same module, function, builder and target state, its own variables and loops."""
        il = copy.copy(self)
        il.tf, il.src = callee_tf, callee_tf.source
        il.call_path = self.call_path + ((node, self.tf),)
        il.slots, il.loops = {}, []
        il.nonneg_names, il.in_bounds = set(), {}  # what is known of the caller's variables is not of its own
        il._hook_context = None  # its own: made at its first hook
        if self.locations is not None:  # its lines are its own file's, inlined at the call
            src = callee_tf.source
            info = self.locations.info
            scope = info.subprogram(callee_tf.name, src.file, src.first_line + src.tree.lineno - 1)
            il.locations = Locations(info, scope, src.first_line, src.indent,
                                     inlined_at=self.locations.at(node) if node is not None else None)
        return il

    def inline_call(self, node, callee_tf: TypedFunction, vals):
        """Lower a device function's body into this function; returns its result (None for void)."""
        il = self.inlined(callee_tf, node)
        for name, t in callee_tf.locals.items():
            if not isinstance(t, PyValue):
                il.slots[name] = il.alloca(llvm_type(t), name=name)
        for name, t, v in zip(callee_tf.argnames, callee_tf.argtypes, vals):
            if not isinstance(t, PyValue):
                il.builder.store(il.cast(v, t, callee_tf.locals[name]), il.slots[name])
        il.exit = il.new_block(f"inline.{callee_tf.name}.exit")
        if callee_tf.restype != T.void:
            il.retslot = il.alloca(llvm_type(callee_tf.restype), name="inline.retval")
            il.init_optional_result()
        il.body(callee_tf.source.tree.body)
        il.branch(il.exit)
        il.builder.position_at_end(il.exit)
        if self.locations is not None:
            self.builder.debug_metadata = self.locations.at(node)  # back at the call
        self.counter = il.counter
        if callee_tf.restype == T.void:
            return None
        return il.builder.load(il.retslot)

    def special_register(self, reg: str, dim: str) -> ir.Value:
        """threadIdx/blockIdx/blockDim/gridDim .x/.y/.z as i32, from the target."""
        return self.target.special_register(self.hook_context, reg, dim)

    # ---- helpers --------------------------------------------------------------
    llvm_type = staticmethod(llvm_type)  # for the modules that lower one kind of value (complex_numbers...)
    mem_type = staticmethod(mem_type)

    def loc(self, node):
        return self.src.loc(node)

    def alloca(self, ty: ir.Type, name: str = "") -> ir.Value:
        with self.builder.goto_entry_block():
            if self.entry.instructions:
                self.builder.position_before(self.entry.instructions[0])
            return self.builder.alloca(ty, name=name)

    def new_block(self, name: str) -> ir.Block:
        self.counter += 1
        return self.fn.append_basic_block(f"{name}.{self.counter}")

    def branch(self, target: ir.Block) -> None:
        if not self.builder.block.is_terminated:
            self.builder.branch(target)

    def after_jump(self) -> None:
        """Statements after return/break/continue go to an unreachable block."""
        self.builder.position_at_end(self.new_block("dead"))

    def type_of(self, node) -> T.Type:
        return self.tf.types[node]

    # ---- driving --------------------------------------------------------------
    def lower(self) -> ir.Function:
        b = self.builder
        if self.lineinfo:
            src = self.tf.source
            info = module_debug_info(self.module, src.file)
            scope = info.subprogram(self.fn.name, src.file, src.first_line + src.tree.lineno - 1)
            self.fn.set_metadata("dbg", scope)
            self.locations = Locations(info, scope, src.first_line, src.indent)
            b.debug_metadata = self.locations.at(src.tree)  # the prologue's: the def line
        args = self.fn.args[1:] if self.ctx is not None else self.fn.args
        for name, t in self.tf.locals.items():
            if not isinstance(t, PyValue):
                self.slots[name] = self.alloca(llvm_type(t), name=name)
        self.exit = self.fn.append_basic_block("exit")
        if self.tf.restype != T.void:
            self.retslot = self.alloca(llvm_type(self.tf.restype), name="retval")
            self.init_optional_result()
        self.target.function_prologue(self.hook_context)  # before the arguments are stored (a cut kernel's entry)
        runtime = [(n, t) for n, t in zip(self.tf.argnames, self.tf.argtypes) if not isinstance(t, PyValue)]
        for (name, t), arg in zip(runtime, args):
            arg.name = f"arg.{name}"
            b.store(self.cast(arg, t, self.tf.locals[name]), self.slots[name])
        self.body(self.tf.source.tree.body)
        self.branch(self.exit)
        b.position_at_end(self.exit)
        self.target.function_epilogue(self.hook_context)
        if self.tf.restype == T.void:
            b.ret_void()
        else:
            b.ret(b.load(self.retslot))
        if self.fastmath:
            apply_fastmath(self.fn)
        elif self.target.contracts_multiply_add:
            allow_contraction(self.fn)
        if self.locations is not None:
            self.locate_the_rest()
        return self.fn

    def init_optional_result(self) -> None:
        """An Optional result starts as None: what a bare ``return`` or the end of the body returns."""
        if isinstance(self.tf.restype, T.Optional):
            self.builder.store(self.cast(None, T.none, self.tf.restype), self.retslot)

    def locate_the_rest(self) -> None:
        """A location for the instructions llvmlite's builder leaves without one: the one before it in
        its block, else the function's own line. (llvmlite prints ``unreachable`` without its metadata
        all the same; LLVM needs none there.)"""
        first = self.locations.at(self.tf.source.tree)
        for block in self.fn.blocks:
            last = first
            for instr in block.instructions:
                if "dbg" in instr.metadata:
                    last = instr.metadata["dbg"]
                else:
                    instr.set_metadata("dbg", last)

    # ---- statements -----------------------------------------------------------
    def body(self, stmts) -> None:
        for s in stmts:
            if self.locations is not None:
                self.builder.debug_metadata = self.locations.at(s)
            getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Pass(self, node) -> None:
        pass

    def stmt_Raise(self, node) -> None:
        lower_raise(self, node)

    def stmt_Expr(self, node) -> None:
        if isinstance(node.value, ast.Constant):
            return
        self.expr(node.value)

    def stmt_Assign(self, node) -> None:
        value = self.expr(node.value)
        vt = self.type_of(node.value)
        for target in node.targets:
            self.store_target(target, value, vt)

    def store_target(self, target, value, vt) -> None:
        b = self.builder
        if isinstance(target, ast.Name):
            lt = self.tf.locals[target.id]
            b.store(self.cast(value, vt, lt), self.slots[target.id])
        elif isinstance(target, ast.Tuple):
            for i, elt in enumerate(target.elts):
                self.store_target(elt, b.extract_value(value, i), vt.types[i])
        elif R.is_record_target(self, target):
            R.store_field(self, target, self.type_of(target.value), value, vt)
        elif isinstance(target, ast.Subscript):
            ptr, elem_t = self.element_pointer(target)
            if isinstance(elem_t, T.Record):
                R.copy_record(self, ptr, value, elem_t)
                return
            if isinstance(elem_t, T.CharSeq):
                self.builder.store(S.charseq_value(self, value, vt, elem_t), ptr)
                return
            self.store_element(ptr, elem_t, self.cast(value, vt, elem_t))

    def store_element(self, ptr, elem_t, value) -> None:
        if elem_t.is_bool:
            value = self.builder.zext(value, i8)
        self.builder.store(value, ptr)

    def load_element(self, ptr, elem_t):
        if isinstance(elem_t, T.Record):  # a[i] of a record array: a reference to the element
            return self.builder.bitcast(ptr, ir.PointerType(i8))
        v = self.builder.load(ptr)
        return self.builder.icmp_unsigned("!=", v, ir.Constant(i8, 0)) if elem_t.is_bool else v

    def stmt_AugAssign(self, node) -> None:
        rt = self.type_of(node)
        target = node.target
        rhs = self.expr(node.value)
        if isinstance(target, ast.Name):
            lt = self.tf.locals[target.id]
            cur = self.builder.load(self.slots[target.id])
            result = self.binop(node.op, cur, lt, rhs, self.type_of(node.value), rt, node)
            self.builder.store(self.cast(result, rt, lt), self.slots[target.id])
        elif R.is_record_target(self, target):
            rec = self.type_of(target.value)
            cur = R.load_field(self, target, rec)
            ft = self.type_of(target)
            R.store_field(self, target, rec, self.binop(node.op, cur, ft, rhs, self.type_of(node.value), rt, node), rt)
        else:
            ptr, elem_t = self.element_pointer(target, "update")  # read and written: the sanitizers see one update
            cur = self.load_element(ptr, elem_t)
            result = self.binop(node.op, cur, elem_t, rhs, self.type_of(node.value), rt, node)
            self.store_element(ptr, elem_t, self.cast(result, rt, elem_t))

    def stmt_If(self, node) -> None:
        b = self.builder
        cond = self.truth(self.expr(node.test), self.type_of(node.test))
        then, merge = self.new_block("if.then"), self.new_block("if.end")
        other = self.new_block("if.else") if node.orelse else merge
        b.cbranch(cond, then, other)
        b.position_at_end(then)
        self.body(node.body)
        self.branch(merge)
        if node.orelse:
            b.position_at_end(other)
            self.body(node.orelse)
            self.branch(merge)
        b.position_at_end(merge)

    def stmt_While(self, node) -> None:
        loop = grid_stride.as_range(self.tf, node)
        if loop is not None and self.target.takes_loop(self.hook_context, loop):
            return self.range_loop_lowered_by_target(loop)
        b = self.builder
        head, body, end = self.new_block("while.cond"), self.new_block("while.body"), self.new_block("while.end")
        self.whiles.append(self.target.enter_while(self.hook_context, node))
        self.branch(head)
        b.position_at_end(head)
        b.cbranch(self.truth(self.expr(node.test), self.type_of(node.test)), body, end)
        b.position_at_end(body)
        self.loops.append((head, end))
        at_while = b.debug_metadata
        self.body(node.body)
        self.loops.pop()
        b.debug_metadata = at_while
        self.branch(head)
        b.position_at_end(end)
        self.whiles.pop()
        self.target.leave_while(self.hook_context, node, self.whiles[-1] if self.whiles else None)

    def stmt_For(self, node) -> None:
        b = self.builder
        it = node.iter
        lt = self.type_of(it)
        ty = llvm_type(lt)
        vals = [self.cast(self.expr(a), self.type_of(a), lt) for a in it.args]
        if len(vals) == 1:
            start, stop, step = ir.Constant(ty, 0), vals[0], ir.Constant(ty, 1)
        elif len(vals) == 2:
            start, stop, step = vals[0], vals[1], ir.Constant(ty, 1)
        else:
            start, stop, step = vals
        # A counted loop, as numba iterates a range: the trip count is computed once, so a counter
        # near the integer limits cannot wrap around into an endless loop.
        sign = _constant_sign(it.args[2]) if len(it.args) == 3 else 1
        trips = self._range_trip_count(start, stop, step, sign)
        # the target may lower the whole loop itself, or run it for many threads at once and leave the
        # threads it does not take to the loop below
        after = self.target.lowers_loop(self.hook_context, node, start, step, trips,
                                        functools.partial(self.lockstep_iteration, node))
        if after is not None:
            b.position_at_end(after)
            return
        join = self.target.lockstep_loop(self.hook_context, node, start, step, trips,
                                         functools.partial(self.lockstep_iteration, node))
        counter = self.alloca(ty, name="range.k")
        b.store(ir.Constant(ty, 0), counter)
        held = self.target.keeps_loop_bounds_in_slots(self.hook_context)
        if held:  # a kernel cut at its barriers: the bounds outlive a barrier in the body in slots
            start, step, trips = (self._held(v, n) for v, n in ((start, "range.start"), (step, "range.step"),
                                                                (trips, "range.trips")))
        held_slots = [counter] + [v.slot for v in (start, step, trips) if isinstance(v, _HeldBound)]
        if splittable(self, node):  # index_split.py: the iterations with k < 0 first, then k >= 0
            zero = ir.Constant(ty, 0)
            st0, tr0 = self._bound(start), self._bound(trips)
            negative = b.select(b.icmp_signed("<", st0, zero), b.sub(zero, st0), zero)
            negative = b.select(b.icmp_unsigned("<", negative, tr0), negative, tr0)
            if held:
                negative = self._held(negative, "range.negative")
                held_slots.append(negative.slot)
            self._counted_loop(node, counter, negative, start, step, lt)
            self.nonneg_names.add(node.target.id)
            self._known_in_bounds(node)
            self._counted_loop(node, counter, trips, start, step, lt)
            self.nonneg_names.discard(node.target.id)
            self.in_bounds.pop(node.target.id, None)
        else:
            self._counted_loop(node, counter, trips, start, step, lt)
        self.target.range_loop_slots(self.hook_context, node, held_slots)
        if join is not None:
            self.branch(join)
            b.position_at_end(join)

    def _counted_loop(self, node, counter, trips, start, step, lt) -> None:
        """The iterations of a range loop from the counter's value up to ``trips``."""
        b = self.builder
        ty = llvm_type(lt)
        head, body, latch, end = (self.new_block(n) for n in ("for.cond", "for.body", "for.inc", "for.end"))
        at_for = b.debug_metadata  # the loop's own code is at its for line (LLVM's remarks name a loop by it)
        b.branch(head)
        b.position_at_end(head)
        k = b.load(counter)
        b.cbranch(b.icmp_unsigned("<", k, self._bound(trips)), body, end)
        b.position_at_end(body)
        i = b.add(self._bound(start), b.mul(k, self._bound(step)))
        var = node.target.id
        b.store(self.cast(i, lt, self.tf.locals[var]), self.slots[var])
        self.loops.append((latch, end))
        self.body(node.body)
        self.loops.pop()
        b.debug_metadata = at_for
        self.branch(latch)
        b.position_at_end(latch)
        b.store(b.add(b.load(counter), ir.Constant(ty, 1)), counter)
        b.branch(head)
        b.position_at_end(end)

    def _held(self, value, name: str):
        """``value`` kept in a slot of its own (read again by ``_bound`` where it is used)."""
        slot = self.alloca(value.type, name=name)
        self.builder.store(value, slot)
        return _HeldBound(slot)

    def _bound(self, value):
        """A loop bound: the value, or its slot's content (``_held``)."""
        return self.builder.load(value.slot) if isinstance(value, _HeldBound) else value

    def range_loop_lowered_by_target(self, loop) -> None:
        """A grid-stride while loop as the range it walks (grid_stride.py), lowered by the target that
        takes it (``takes_loop``): the CPU target's region form runs it in rounds, as it runs the ``for``."""
        it = loop.iter
        lt = self.type_of(it)
        start, stop, step = (self.cast(self.expr(a), self.type_of(a), lt) for a in it.args)
        trips = self._range_trip_count(start, stop, step, 1)  # its step is positive (grid_stride.py)
        after = self.target.lowers_loop(self.hook_context, loop, start, step, trips,
                                        functools.partial(self.lockstep_iteration, loop))
        self.builder.position_at_end(after)

    def lockstep_iteration(self, node, slots, ctx, value, latch, stop, nonneg: bool) -> None:
        """One iteration of the range loop ``node`` for one thread of a target's lockstep run
        (kdebug/targets/cpu/forms/coroutines/lockstep.py): the variables in ``slots``, the thread's context ``ctx``, the
        loop variable's ``value`` (``nonneg``: known >= 0); ``continue`` goes to ``latch``, ``break`` to ``stop``."""
        saved = self.slots, self.ctx, self._hook_context
        var = node.target.id
        self.slots, self.ctx, self._hook_context = slots, ctx, None
        if nonneg:
            self.nonneg_names.add(var)
            self._known_in_bounds(node)
        try:
            self.builder.store(self.cast(value, self.type_of(node.iter), self.tf.locals[var]), slots[var])
            self.loops.append((latch, stop))
            self.body(node.body)
            self.loops.pop()
            self.branch(latch)
        finally:
            self.slots, self.ctx, self._hook_context = saved
            self.nonneg_names.discard(var)
            self.in_bounds.pop(var, None)

    def _known_in_bounds(self, node) -> None:
        """Where the range loop ``node``'s variable, known >= 0 now, indexes an array inside its extent
        (index_bounds.py), note it for the body's accesses."""
        bound = index_bounds.bound(self.tf, node)
        if bound is not None:
            self.in_bounds[node.target.id] = bound

    def _range_trip_count(self, start, stop, step, sign: int):
        """How many values range(start, stop, step) yields (0 for a zero step, where Python raises)."""
        b = self.builder
        zero, one = ir.Constant(start.type, 0), ir.Constant(start.type, 1)

        def upward(lo, hi, stride):  # values lo, lo + stride, ... below hi, for stride > 0
            stride = b.select(b.icmp_signed("==", stride, zero), one, stride)  # never divide by zero
            n = b.add(b.udiv(b.sub(b.sub(hi, lo), one), stride), one)  # the distance is exact unsigned
            return b.select(b.icmp_signed(">", hi, lo), n, zero)

        if sign > 0:
            return upward(start, stop, step)
        if sign < 0:
            return upward(stop, start, b.neg(step))
        up = upward(start, stop, step)
        down = upward(stop, start, b.neg(step))
        n = b.select(b.icmp_signed(">", step, zero), up, down)
        return b.select(b.icmp_signed("==", step, zero), zero, n)

    def stmt_Break(self, node) -> None:
        self.builder.branch(self.loops[-1][1])
        self.after_jump()

    def stmt_Continue(self, node) -> None:
        self.builder.branch(self.loops[-1][0])
        self.after_jump()

    def stmt_Return(self, node) -> None:
        if node.value is not None:
            v = self.expr(node.value)
            if self.tf.restype != T.void:  # (return None from a function that returns nothing else)
                self.builder.store(self.cast(v, self.type_of(node.value), self.tf.restype), self.retslot)
        elif isinstance(self.tf.restype, T.Optional):  # a bare return: None
            self.builder.store(self.cast(None, T.none, self.tf.restype), self.retslot)
        self.exit_lines[self.builder.block] = self.src.loc(node).line
        self.builder.branch(self.exit)
        self.after_jump()

    # ---- expressions ------------------------------------------------------------
    def expr(self, node):
        if node in self.tf.consts:
            return self.constant_value(node, self.tf.consts[node])
        if self.locations is None:
            return self.unwrap_optional(node, getattr(self, "expr_" + type(node).__name__)(node))
        outer = self.builder.debug_metadata
        self.builder.debug_metadata = self.locations.at(node)
        try:
            return self.unwrap_optional(node, getattr(self, "expr_" + type(node).__name__)(node))
        finally:
            self.builder.debug_metadata = outer

    def unwrap_optional(self, node, v):
        """The value of an Optional where typeinfer found its value needed (``TypedFunction.unwraps``): as
        numba's optional_to_any (numba/core/optional.py), TypeError("expected T, got None") when it is None,
        unless an ``is None`` test narrowed it."""
        unwrap = self.tf.unwraps.get(node)
        if unwrap is None:
            return v
        opt_t, checked = unwrap
        b = self.builder
        if checked:
            fail, ok = self.new_block("optional.none"), self.new_block("optional.value")
            b.cbranch(b.extract_value(v, 1), ok, fail).set_weights([1 << 20, 1])
            b.position_at_end(fail)
            self.target.raise_exception(self.hook_context, node, TypeError, (f"expected {opt_t.type}, got None",))
            b.position_at_end(ok)
        return b.extract_value(v, 0)

    def constant_value(self, node, value):
        if isinstance(value, I.Intrinsic):  # a value intrinsic such as cuda.laneid
            return registry.lower_value(self, node, value)
        t = self.type_of(node)
        if isinstance(t, T.Array):
            return self.target.array_constant(self.hook_context, value, t)
        return const(t, value)

    def expr_Constant(self, node):
        t = self.type_of(node)
        if isinstance(t, T.StringConstant):
            return ir.Constant(ir.LiteralStructType([]), [])
        if isinstance(t, T.NoneType):
            return None
        return const(t, node.value)

    def expr_Name(self, node):
        if node.id in self.slots:
            return self.builder.load(self.slots[node.id])
        return None  # a compile-time Python object; its use is resolved by the parent node

    def expr_Attribute(self, node):
        t = self.type_of(node)
        call = getattr(node, "kdebug_attribute_call", None)
        if call is not None:  # an overload_attribute: its implementation called with the object
            return self.device_call(call, None, [self.expr(a) for a in call.args], [self.type_of(a) for a in call.args])
        lower_hooked = getattr(node, "kdebug_attribute_lower", None)
        if lower_hooked is not None:  # an extension type's attribute (make_attribute_wrapper, lower_getattr)
            return lower_hooked(self, node, self.type_of(node.value))
        if node.attr == "data" and isinstance(node.value, ast.Attribute) and node.value.attr == "ctypes":
            data = self.builder.extract_value(self.expr(node.value.value), 0)  # a.ctypes.data: the address
            return self.builder.ptrtoint(data, i64)
        base_t = self.type_of(node.value)
        if isinstance(base_t, T.Array):
            arr = self.expr(node.value)
            if node.attr == "shape":
                return self.shape_tuple(arr, base_t)
            if node.attr == "strides":
                return strides_tuple(self, arr, base_t)
            if node.attr == "ndim":
                return ir.Constant(i64, base_t.ndim)
            size = ir.Constant(i64, 1)
            for k in range(base_t.ndim):
                size = self.builder.mul(size, self.builder.extract_value(arr, [1, k]))
            return size
        if isinstance(base_t, PyValue) and isinstance(base_t.value, I.Dim3Intrinsic):
            return self.special_register(base_t.value.name, node.attr)
        if isinstance(base_t, T.Record):
            return R.load_field(self, node, base_t)
        if EN.is_member(base_t):  # .value: the member is its value
            return self.cast(self.expr(node.value), base_t, t)
        if isinstance(base_t, T.NamedTuple):  # p.x: the field's element
            return self.builder.extract_value(self.expr(node.value), base_t.fields.index(node.attr))
        if isinstance(base_t, V.VectorType):
            return V.lower_attribute(self, node, self.expr(node.value), base_t)
        if isinstance(base_t, T.Scalar) and not isinstance(t, C.NumberMethod):  # z.real, z.imag
            return C.attribute(self, node, self.expr(node.value), base_t)
        if isinstance(t, C.NumberMethod):
            return None  # z.conjugate: the call lowers it
        if isinstance(t, PyValue):
            return None
        raise AssertionError(f"unexpected attribute lowering for {ast.dump(node)}")

    def shape_tuple(self, arr, arr_t):
        tup = ir.Constant(llvm_type(T.Tuple((T.int64,) * arr_t.ndim)), ir.Undefined)
        for k in range(arr_t.ndim):
            tup = self.builder.insert_value(tup, self.builder.extract_value(arr, [1, k]), k)
        return tup

    def expr_Tuple(self, node):
        t = self.type_of(node)
        tup = ir.Constant(llvm_type(t), ir.Undefined)
        for k, e in enumerate(node.elts):
            tup = self.builder.insert_value(tup, self.cast(self.expr(e), self.type_of(e), t.types[k]), k)
        return tup

    def expr_Subscript(self, node):
        base_t = self.type_of(node.value)
        if isinstance(base_t, T.Record):
            return R.load_field(self, node, base_t)
        if isinstance(base_t, T.Array) and isinstance(self.type_of(node), T.Array):
            return lower_view(self, node)
        if isinstance(base_t, (T.Array, T.CPointer)):
            ptr, elem_t = self.element_pointer(node)
            return self.load_element(ptr, elem_t)
        if isinstance(base_t, T.Tuple):
            tup = self.expr(node.value)
            idx = node.slice
            if constant_index(idx) is not None:
                k = constant_index(idx) % len(base_t.types)
                return self.builder.extract_value(tup, k)
            # a uniform tuple indexed at run time: spill it to memory
            slot = self.alloca(llvm_type(base_t))
            self.builder.store(tup, slot)
            k = self.cast(self.expr(idx), self.type_of(idx), T.int64)
            k = self.wrap_negative(k, ir.Constant(i64, len(base_t.types)))
            self.check_tuple_index(node, k, len(base_t.types))
            arr_ptr = self.builder.bitcast(slot, ir.PointerType(llvm_type(base_t.types[0])))
            return self.builder.load(self.builder.gep(arr_ptr, [k]))
        return None  # kernel[grid, block]: resolved by the call

    def check_tuple_index(self, node, k, n: int) -> None:
        """numba's getitem of a tuple at a run-time index: outside the tuple, IndexError("tuple index out of
        range") stops the thread (raised on the host with debug=True)."""
        b = self.builder
        bad, ok = self.new_block("tuple.oob"), self.new_block("tuple.inbounds")
        b.cbranch(b.icmp_unsigned(">=", k, ir.Constant(i64, n)), bad, ok).set_weights([1, 1 << 20])
        b.position_at_end(bad)
        self.target.raise_exception(self.hook_context, node, IndexError, ("tuple index out of range",))
        b.position_at_end(ok)

    def wrap_negative(self, i, extent):
        """numba's wraparound: a negative index counts from the end."""
        b = self.builder
        return b.select(b.icmp_signed("<", i, ir.Constant(i64, 0)), b.add(i, extent), i)

    def element_pointer(self, node, access: str | None = None):
        """Address of ``array[indices]`` (bounds-checked by the target when memcheck is on).
        ``access``: update (``a[i] += x``) or atomic; else read or write, as the subscript says."""
        access = access or access_kind(node)
        b = self.builder
        arr_t = self.type_of(node.value)
        arr = self.expr(node.value)
        idx = node.slice
        if isinstance(arr_t, T.CPointer):  # a raw pointer: no extents, so no bounds check (as numba)
            return b.gep(arr, [self.cast(self.expr(idx), self.type_of(idx), T.int64)]), arr_t.dtype
        if isinstance(idx, ast.Tuple):
            indices = [(self.expr(p), self.type_of(p)) for p in idx.elts]
        elif arr_t.ndim > 1:
            tup = self.expr(idx)
            tt = self.type_of(idx)
            indices = [(b.extract_value(tup, k), tt.types[k]) for k in range(arr_t.ndim)]
        else:
            indices = [(self.expr(idx), self.type_of(idx))]
        data = b.extract_value(arr, 0)
        extents = [b.extract_value(arr, [1, k]) for k in range(arr_t.ndim)]
        linear_parts = []
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        for (v, vt), extent, p in zip(indices, extents, parts + [None] * len(indices)):
            k = self.cast(v, vt, T.int64)
            known_nonneg = isinstance(p, ast.Name) and p.id in self.nonneg_names
            if (vt.signed or vt.is_float) and not known_nonneg:  # a float: an atomic's index, cast to intp
                k = self.wrap_negative(k, extent)
            linear_parts.append(k)
        if not (isinstance(node.value, ast.Name) and len(parts) == arr_t.ndim and all(
                isinstance(p, ast.Name) and self.in_bounds.get(p.id) == (node.value.id, d) for d, p in enumerate(parts))):
            self.target.check_bounds(self.hook_context, node, arr_t, linear_parts, extents, access)
        if arr_t.strided:  # a view such as a[:, j]: each index times its stride
            linear = ir.Constant(i64, 0)
            for k, dim in enumerate(linear_parts):
                linear = b.add(linear, b.mul(dim, b.extract_value(arr, [2, k])))
            ptr = b.gep(data, [linear])
        else:
            linear = linear_parts[0]
            for k, extent in zip(linear_parts[1:], extents[1:]):
                linear = b.add(b.mul(linear, extent), k)
            ptr = b.gep(data, [linear], inbounds=True)
        self.target.instrument_access(self.hook_context, node, arr_t, ptr, linear_parts, access)
        return ptr, arr_t.dtype

    def expr_BinOp(self, node):
        lt, rt = self.type_of(node.left), self.type_of(node.right)
        return self.binop(node.op, self.expr(node.left), lt, self.expr(node.right), rt, self.type_of(node), node)

    def binop(self, op, a, at, c, ct, result_t, node=None):
        """``a op c`` in ``result_t``; ``node`` locates the ZeroDivisionError of a debug=True kernel."""
        b = self.builder
        if at.is_datetime or ct.is_datetime:
            return D.binop(self, op, a, at, c, ct, result_t)
        if result_t.is_complex:
            return C.binop(self, op, self.cast(a, at, result_t), self.cast(c, ct, result_t), result_t, node)
        if isinstance(op, ast.Div):
            x, y = self.cast(a, at, result_t), self.cast(c, ct, result_t)
            if self.fastmath and result_t == T.float32:
                # numba-cuda's fastmath float32 division: no ZeroDivisionError check, and the target's
                # approximate division where it has one (libdevice's __nv_fast_fdividef on the GPU)
                approx = self.target.approximate_math("truediv", True)
                return self.call_declared(approx, [x, y]) if approx is not None else b.fdiv(x, y)
            check_zero_divisor(self, node, y, TRUEDIV)
            return b.fdiv(x, y)
        if result_t.is_bool:  # & | ^ on booleans
            return {ast.BitAnd: b.and_, ast.BitOr: b.or_, ast.BitXor: b.xor}[type(op)](a, c)
        if isinstance(op, ast.Pow) and result_t.is_float and not ct.is_float:  # numba's int_power_impl
            x = self.cast(a, at, result_t)
            return b.call(int_power_function(self.module, x.type), [x, self.cast(c, ct, T.int64)])
        x, y = self.cast(a, at, result_t), self.cast(c, ct, result_t)
        if result_t.is_float:
            if isinstance(op, ast.Add):
                return b.fadd(x, y)
            if isinstance(op, ast.Sub):
                return b.fsub(x, y)
            if isinstance(op, ast.Mult):
                return b.fmul(x, y)
            if isinstance(op, (ast.FloorDiv, ast.Mod)):
                check_zero_divisor(self, node, y, FLOAT_FLOORDIV if isinstance(op, ast.FloorDiv) else FLOAT_MOD)
                return self.float_divmod(op, x, y)
            if isinstance(op, ast.Pow):
                return self.call_intrinsic("llvm.pow", [x, y])
        signed = result_t.signed
        if isinstance(op, ast.Add):
            return b.add(x, y)
        if isinstance(op, ast.Sub):
            return b.sub(x, y)
        if isinstance(op, ast.Mult):
            return b.mul(x, y)
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            check_zero_divisor(self, node, y, INT_FLOORDIV if isinstance(op, ast.FloorDiv) else INT_MOD)
            return self.int_divmod(op, x, y, signed)
        if isinstance(op, ast.Pow):
            if signed:  # 0 ** -n
                check_zero_divisor(self, node, x, ZERO_POWER, b.icmp_signed("<", y, ir.Constant(y.type, 0)))
            return b.call(self.ipow_function(x.type, signed), [x, y])
        if isinstance(op, ast.BitAnd):
            return b.and_(x, y)
        if isinstance(op, ast.BitOr):
            return b.or_(x, y)
        if isinstance(op, ast.BitXor):
            return b.xor(x, y)
        if isinstance(op, ast.LShift):
            return b.shl(x, y)
        if isinstance(op, ast.RShift):
            return b.ashr(x, y) if signed else b.lshr(x, y)
        raise AssertionError(op)

    def int_divmod(self, op, x, y, signed):
        """Python's // and % (rounding toward -inf); x // 0 and x % 0 give 0, as numba on a GPU.

        A divisor that is a power of two at run time takes a mask or a shift instead of the division
        (for y = 2**k > 0, x % y == x & (y - 1) and x // y == x >> k, two's complement rounding toward
        -inf as Python does): GPU code divides by powers of two it computes (``tid % (2 * s)`` in
        numba's reduction example), which LLVM cannot see, and an integer division costs 20-90 cycles
        where it ran in a thread loop of 256 threads per barrier (measured: numba's reduction example
        8.6 -> 4.6 ns per element). LLVM folds the test where it knows the divisor (a constant)."""
        b = self.builder
        ty = x.type
        zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
        positive = b.icmp_signed(">", y, zero) if signed else b.icmp_unsigned("!=", y, zero)
        power_of_two = b.and_(positive, b.icmp_unsigned("==", b.and_(y, b.sub(y, one)), zero))
        with b.if_else(power_of_two, likely=None) as (then, otherwise):
            with then:
                if isinstance(op, ast.Mod):
                    fast = b.and_(x, b.sub(y, one))
                else:
                    shift = b.cttz(y, ir.Constant(ir.IntType(1), 1))
                    fast = b.ashr(x, shift) if signed else b.lshr(x, shift)
                fast_block = b.block
            with otherwise:
                slow = self._int_divmod_general(op, x, y, signed)
                slow_block = b.block
        result = b.phi(ty)
        result.add_incoming(fast, fast_block)
        result.add_incoming(slow, slow_block)
        return result

    def _int_divmod_general(self, op, x, y, signed):
        b = self.builder
        ty = x.type
        zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
        is_zero = b.icmp_unsigned("==", y, zero)
        if not signed:
            safe = b.select(is_zero, one, y)
            r = b.udiv(x, safe) if isinstance(op, ast.FloorDiv) else b.urem(x, safe)
            return b.select(is_zero, zero, r)
        minus_one = ir.Constant(ty, -1)
        is_m1 = b.icmp_signed("==", y, minus_one)  # avoids INT_MIN / -1, which traps on x86
        safe = b.select(b.or_(is_zero, is_m1), one, y)
        q, r = b.sdiv(x, safe), b.srem(x, safe)
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.icmp_unsigned("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        if isinstance(op, ast.FloorDiv):
            q = b.select(adjust, b.sub(q, one), q)
            q = b.select(is_m1, b.neg(x), q)
            return b.select(is_zero, zero, q)
        r = b.select(adjust, b.add(r, y), r)
        return b.select(b.or_(is_zero, is_m1), zero, r)

    def float_divmod(self, op, x, y):
        """Python's float // and % (CPython's and numba's algorithm, so 1.0 // 0.1 == 9.0).

        A zero divisor gives x / 0 for // and NaN for %, as numba on a GPU (no exception).
        """
        b = self.builder
        zero, one, half = (ir.Constant(x.type, v) for v in (0.0, 1.0, 0.5))
        mod = b.frem(x, y)
        div = b.fdiv(b.fsub(x, mod), y)
        fix = b.and_(b.fcmp_unordered("!=", mod, zero),
                     b.icmp_unsigned("!=", b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
        mod = b.select(fix, b.fadd(mod, y), mod)
        div = b.select(fix, b.fsub(div, one), div)
        if isinstance(op, ast.Mod):
            signed_zero = self.call_intrinsic("llvm.copysign", [zero, y])
            return b.select(b.fcmp_ordered("==", mod, zero), signed_zero, mod)
        floor = self.call_intrinsic("llvm.floor", [div])
        floor = b.select(b.fcmp_ordered(">", b.fsub(div, floor), half), b.fadd(floor, one), floor)
        quotient = b.fdiv(x, y)
        result = b.select(b.fcmp_ordered("==", div, zero), self.call_intrinsic("llvm.copysign", [zero, quotient]),
                          floor)
        return b.select(b.fcmp_ordered("==", y, zero), quotient, result)

    def ipow_function(self, ty, signed=True):
        """Integer x ** n by squaring. As numba: for n < 0 the result is 0 unless x**|n| is 1 or -1, and
        0 ** -n gives the most negative integer (numba's result when zero division does not raise)."""
        name = f"kdebug.ipow.{'i' if signed else 'u'}{ty.width}"
        if name in self.module.globals:
            return self.module.globals[name]
        fn = ir.Function(self.module, ir.FunctionType(ty, [ty, ty]), name=name)
        fn.linkage = "internal"
        base, exp = fn.args
        entry, loop, body, done = (fn.append_basic_block(n) for n in ("entry", "loop", "body", "done"))
        b = ir.IRBuilder(entry)
        negative = b.icmp_signed("<", exp, ir.Constant(ty, 0)) if signed else ir.Constant(i1, 0)
        magnitude = b.select(negative, b.neg(exp), exp)
        b.branch(loop)
        b.position_at_end(loop)
        acc = b.phi(ty)
        cur = b.phi(ty)
        e = b.phi(ty)
        acc.add_incoming(ir.Constant(ty, 1), entry)
        cur.add_incoming(base, entry)
        e.add_incoming(magnitude, entry)
        b.cbranch(b.icmp_unsigned(">", e, ir.Constant(ty, 0)), body, done)
        b.position_at_end(body)
        odd = b.trunc(e, i1)
        acc2 = b.select(odd, b.mul(acc, cur), acc)
        cur2 = b.mul(cur, cur)
        e2 = b.lshr(e, ir.Constant(ty, 1))
        acc.add_incoming(acc2, body)
        cur.add_incoming(cur2, body)
        e.add_incoming(e2, body)
        b.branch(loop)
        b.position_at_end(done)
        unit = b.or_(b.icmp_signed("==", acc, ir.Constant(ty, 1)), b.icmp_signed("==", acc, ir.Constant(ty, -1)))
        inverted = b.select(unit, acc, ir.Constant(ty, 0))
        inverted = b.select(b.icmp_signed("==", acc, ir.Constant(ty, 0)), ir.Constant(ty, 1 << (ty.width - 1)), inverted)
        b.ret(b.select(negative, inverted, acc))
        return fn

    def call_intrinsic(self, name, args):
        ty = args[0].type
        suffix = "f32" if ty == f32 else "f16" if isinstance(ty, ir.HalfType) else "f64"
        full = f"{name}.{suffix}"
        fn = self.module.globals.get(full)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ty, [a.type for a in args]), name=full)
        return self.builder.call(fn, args)

    def call_libm(self, name, args):
        return self.call_declared(self.target.libm_name(name, args[0].type == f32), args)

    def call_declared(self, full, args):
        """A call of function ``full``, declared in the module on first use with the first argument's
        type as its result (a math function of the target's library)."""
        fn = self.module.globals.get(full)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(args[0].type, [a.type for a in args]), name=full)
        return self.builder.call(fn, args)

    def expr_UnaryOp(self, node):
        b = self.builder
        t, rt = self.type_of(node.operand), self.type_of(node)
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return b.not_(self.truth(v, t))
        if isinstance(node.op, ast.Invert):
            return b.not_(v) if rt.is_bool else b.not_(self.cast(v, t, rt))
        v = self.cast(v, t, rt)
        if isinstance(node.op, ast.USub):
            return C.negate(self, v, rt) if rt.is_complex else b.fneg(v) if rt.is_float else b.neg(v)
        return v

    def truth(self, v, t):
        b = self.builder
        if t.is_bool:
            return v
        if t.is_complex:
            return C.truth(self, v)
        if t.is_float:
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def expr_BoolOp(self, node):
        b = self.builder
        rt = self.type_of(node)
        slot = self.alloca(llvm_type(rt))
        end = self.new_block("bool.end")
        for k, value in enumerate(node.values):
            v = self.expr(value)
            vt = self.type_of(value)
            b.store(self.cast(v, vt, rt), slot)
            if k == len(node.values) - 1:
                b.branch(end)
                break
            nxt = self.new_block("bool.next")
            t = self.truth(v, vt)
            if isinstance(node.op, ast.And):
                b.cbranch(t, nxt, end)
            else:
                b.cbranch(t, end, nxt)
            b.position_at_end(nxt)
        b.position_at_end(end)
        return b.load(slot)

    def expr_Compare(self, node):
        b = self.builder
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and T.none in (self.type_of(node.left), self.type_of(node.comparators[0])):
            return self.is_none(node)
        if len(node.ops) == 1:
            return self.compare(node.ops[0], self.expr(node.left), self.type_of(node.left),
                                self.expr(node.comparators[0]), self.type_of(node.comparators[0]))
        slot = self.alloca(i1)
        end = self.new_block("cmp.end")
        left, lt = self.expr(node.left), self.type_of(node.left)
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            right, rt = self.expr(right_node), self.type_of(right_node)
            r = self.compare(op, left, lt, right, rt)
            b.store(r, slot)
            if k == len(node.ops) - 1:
                b.branch(end)
                break
            nxt = self.new_block("cmp.next")
            b.cbranch(r, nxt, end)
            b.position_at_end(nxt)
            left, lt = right, rt
        b.position_at_end(end)
        return b.load(slot)

    def is_none(self, node):
        """``x is None`` / ``x is not None``: an Optional's valid bit (numba/core/optional.py, optional_is_none),
        True for None is None, False for any other type (numba/cuda/cpython/builtins.py, generic_is)."""
        b = self.builder
        values = [(self.expr(n), self.type_of(n)) for n in (node.left, node.comparators[0])]
        opt = [v for v, t in values if isinstance(t, T.Optional)]
        if opt:
            result = b.not_(b.extract_value(opt[0], 1))
        else:
            result = ir.Constant(i1, int(all(t == T.none for _, t in values)))
        return b.not_(result) if isinstance(node.ops[0], ast.IsNot) else result

    def compare(self, op, a, at, c, ct):
        b = self.builder
        if S.is_string(at):  # a string array element or constant (kdebug/frontend/strings.py)
            return S.compare(self, op, a, at, c, ct)
        if EN.takes_compare(op, at, ct):
            return EN.compare(self, op, a, at, c, ct)
        sym = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[type(op)]
        if at.is_datetime:
            return D.compare(self, op, a, c)
        common = T.arith_result(at, ct) if not (at.is_bool and ct.is_bool) else T.boolean
        if common.is_complex:
            return C.compare(self, op, self.cast(a, at, common), self.cast(c, ct, common))
        if at.is_float or ct.is_float:
            common = T.unify(at, ct) if T.unify(at, ct).is_float else T.float64
        x, y = self.cast(a, at, common), self.cast(c, ct, common)
        if common.is_float:
            return b.fcmp_unordered(sym, x, y) if sym == "!=" else b.fcmp_ordered(sym, x, y)
        if common.is_bool or not common.signed:
            return b.icmp_unsigned(sym, x, y)
        return b.icmp_signed(sym, x, y)

    def expr_IfExp(self, node):
        b = self.builder
        rt = self.type_of(node)
        slot = self.alloca(llvm_type(rt))
        then, other, end = self.new_block("ifexp.then"), self.new_block("ifexp.else"), self.new_block("ifexp.end")
        b.cbranch(self.truth(self.expr(node.test), self.type_of(node.test)), then, other)
        for block, value in ((then, node.body), (other, node.orelse)):
            b.position_at_end(block)
            b.store(self.cast(self.expr(value), self.type_of(value), rt), slot)
            b.branch(end)
        b.position_at_end(end)
        return b.load(slot)

    def expr_Call(self, node):
        """A call, lowered by its callee's entry in the registry (kdebug/frontend/registry.py)."""
        callee, fn = registry.callee(self.type_of(node.func))
        return callee.lower(self, node, fn)

    def device_call(self, node, fn, args, argts, callee_tf=None):
        """A call of device function ``fn`` (typed as ``callee_tf``, else as typeinfer recorded at ``node``)."""
        callee_tf = callee_tf or self.tf.callees[node]
        if self.target.inlines_call(self.hook_context, callee_tf):  # e.g. one with barriers (CPU target)
            vals = [self.cast(a, t, ct) for a, t, ct in zip(args, argts, callee_tf.argtypes)]
            return self.inline_call(node, callee_tf, vals)
        key = (callee_tf.source.function, callee_tf.argtypes)
        callee = self.functions.get(key)
        if callee is None:
            name = f"{callee_tf.name}.{len(self.functions)}"
            lowerer = FunctionLowerer(self.module, callee_tf, self.target, name, "internal", self.functions,
                                      self.requester, self.target_state)
            lowerer.fastmath = self.fastmath or bool(getattr(fn, "options", {}).get("fastmath"))
            lowerer.debug = self.debug
            lowerer.lineinfo = self.lineinfo
            callee = lowerer.lower()
        vals = [self.cast(a, t, ct) for a, t, ct in zip(args, argts, callee_tf.argtypes) if not isinstance(ct, PyValue)]
        if self.ctx is not None:
            vals = [self.ctx] + vals
        result = self.builder.call(callee, vals)
        if may_raise(self, callee_tf):  # the callee's raise stopped the thread: stop here too
            self.target.after_raising_call(self.hook_context)
        return None if callee_tf.restype == T.void else result

    # ---- deferred codegen -------------------------------------------------------------
    def request(self, node):
        """The DeferredRequest typeinfer recorded for ``node``."""
        return next(r for r in self.tf.deferred if r.node is node)

    def deferred_marker(self, req) -> ir.Value:
        """A placeholder call carrying the requested job's id; expand_deferred replaces it
        with the address of the job's entry."""
        if self.requester is None:
            raise self.src.error(req.node, "deferred code generation needs the driver",
                                 "compile kernels through cuda.jit, not lower_function directly")
        job_id = self.requester(req.function, req.argtypes, req.job_kind, req.reason, self.src.loc(req.node))
        name = markers.name(job_id)
        marker = self.module.globals.get(name)
        if marker is None:
            marker = ir.Function(self.module, ir.FunctionType(ir.PointerType(i8), []), name=name)
        return self.builder.call(marker, [], name=f"deferred.{job_id}")

    # ---- casts ----------------------------------------------------------------
    def cast(self, v, src: T.Type, dst: T.Type):
        b = self.builder
        if src == dst:
            return v
        if isinstance(dst, T.Optional):  # numba/core/optional.py: any_to_optional, optional_to_optional
            ty = llvm_type(dst)
            if src == T.none:
                return ir.Constant(ty, [ir.Constant(ty.elements[0], None), ir.Constant(i1, 0)])
            if isinstance(src, T.Optional):
                data = self.cast(b.extract_value(v, 0), src.type, dst.type)
                return b.insert_value(b.insert_value(ir.Constant(ty, ir.Undefined), data, 0), b.extract_value(v, 1), 1)
            data = self.cast(v, src, dst.type)
            return b.insert_value(b.insert_value(ir.Constant(ty, ir.Undefined), data, 0), ir.Constant(i1, 1), 1)
        if isinstance(src, T.Optional):  # typeinfer unwraps an Optional where its value is needed
            raise TypeError(f"internal: no cast from {src} to {dst} (an Optional is unwrapped where it is used)")
        if v is None:
            return v
        if isinstance(src, T.Tuple) and isinstance(dst, T.Tuple):
            out = ir.Constant(llvm_type(dst), ir.Undefined)
            for k, (s, d) in enumerate(zip(src.types, dst.types)):
                out = b.insert_value(out, self.cast(b.extract_value(v, k), s, d), k)
            return out
        if isinstance(src, T.Array) and isinstance(dst, T.Array) and dst.strided and not src.strided:
            return to_strided(self, v, src, dst)
        if not (isinstance(src, T.Scalar) and isinstance(dst, T.Scalar)):
            return v
        if dst.is_complex:
            return C.cast(self, v, src, dst)
        if src.is_complex:  # typeinfer allows this only into booleans (truth) and .real
            return self.truth(v, src) if dst.is_bool else self.cast(b.extract_value(v, 0), src.underlying_float, dst)
        if dst.is_bool:
            return self.truth(v, src)
        dty = llvm_type(dst)
        if src.is_bool:
            return b.uitofp(v, dty) if dst.is_float else b.zext(v, dty)
        if src.is_int and dst.is_int:
            if src.bits == dst.bits:
                return v
            if src.bits > dst.bits:
                return b.trunc(v, dty)
            return b.sext(v, dty) if src.signed else b.zext(v, dty)
        if dst == T.float16 and (src.is_int or src.bits == 64):
            return b.fptrunc(self.to_float32_for_half(v, src), dty)
        if src.is_int and dst.is_float:
            return b.sitofp(v, dty) if src.signed else b.uitofp(v, dty)
        if src.is_float and dst.is_int:
            return b.fptosi(v, dty) if dst.signed else b.fptoui(v, dty)
        if src.bits < dst.bits:
            return b.fpext(v, dty)
        return b.fptrunc(v, dty)

    def to_float32_for_half(self, v, src):
        """An integer or double on its way to float16, as a float32 that rounds to the same half. Hosts
        have no double->half instruction (LLVM's libcall is missing under the JIT): a double is rounded
        to float32 *to odd*, which keeps the one rounding to half exact; integers that do not overflow
        half are exact in float32."""
        b = self.builder
        if src.is_int:
            return b.sitofp(v, f32) if src.signed else b.uitofp(v, f32)
        f = b.fptrunc(v, f32)
        inexact = b.fcmp_ordered("!=", b.fpext(f, f64), v)
        away = b.fcmp_ordered(">", self.call_intrinsic("llvm.fabs", [b.fpext(f, f64)]),
                              self.call_intrinsic("llvm.fabs", [v]))
        bits = b.bitcast(f, i32)
        toward_zero = b.select(away, b.sub(bits, ir.Constant(i32, 1)), bits)
        odd = b.or_(toward_zero, ir.Constant(i32, 1))
        return b.select(inexact, b.bitcast(odd, f32), f)


class _HeldBound:
    """A range loop's bound kept in a stack slot (FunctionLowerer._held)."""
    __slots__ = ("slot",)

    def __init__(self, slot) -> None:
        self.slot = slot


def _constant_sign(node) -> int:
    """+1 or -1 for a literal step (``2``, ``-1``), 0 when only known at run time."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_sign(node.operand)
        return -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return 1 if node.value > 0 else -1
    return 0


def lower_function(tf: TypedFunction, target, name: str, module: ir.Module | None = None,
                   requester=None, fastmath: bool = False, debug: bool = False, target_state=None,
                   lineinfo: bool = False) -> ir.Module:
    """Lower a kernel or device-function job (and the device functions it calls) into a new module.
    ``target_state``: the target's record of the module (``Target.module_state()``; a new one when
    not given), which its lowering hooks fill in; the caller keeps it with the module for finish_ir.
    ``lineinfo``: every instruction carries its source location (kdebug/frontend/debug_info.py)."""
    if module is None:
        module = ir.Module(name=name)
        target.prepare_module(module)
    if target_state is None:
        target_state = target.module_state()
    lowerer = FunctionLowerer(module, tf, target, name, "external", {}, requester, target_state)
    lowerer.fastmath = fastmath
    lowerer.debug = debug
    lowerer.lineinfo = lineinfo
    lowerer.lower()
    return module


