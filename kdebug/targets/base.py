"""The target interface: small hooks, each with a note on *when* it runs, in four groups by concern:
``LoweringHooks`` (while lower writes a job's IR), ``DeferredHooks`` (device-side launches and the
entries deferred markers become), ``AutodiffHooks`` (a kernel's adjoint), ``PipelineHooks`` (the phases
after lower, in their order). ``Target`` is all four.

A target overrides only what it needs (after GPUCompiler.jl's interface.jl).
Lowering-time hooks get ``lc``, a LoweringContext (kdebug/frontend/hook_context.py:
``lc.builder``, ``lc.module``, ``lc.fn``, ``lc.thread_ctx``, ``lc.tf``...), never the
lowerer; what they produce for later goes into ``lc.state``, the target's own record of
the module (``module_state``), which the job keeps for finish_ir and emit
(``job.target_state``). Pipeline hooks get an llvmlite.binding ModuleRef.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from kdebug import passes
from kdebug.frontend.lower import i64, llvm_type, mem_type
from kdebug.lang.host import DeviceNDArray
from kdebug.stages import Stage
from kdebug.targets import pass_record
from kdebug.targets.pass_record import init_llvm  # noqa: F401 - the targets' LLVM start-up, here as always


class LoweringHooks:
    """While ``lower`` turns a job's typed code into LLVM IR: each hook gets ``lc`` (the
    LoweringContext) at the construct it names, and keeps what later phases need in ``lc.state``."""

    def module_state(self):
        """Runs when lower starts a job's module: a fresh record for the lowering hooks to fill in
        (``lc.state``; shared memory laid out...), kept as ``job.target_state``. None by default."""
        return None

    def context_type(self) -> ir.Type | None:
        """A hidden first parameter of every function (the CPU's thread context), or None."""
        return None

    def prepare_module(self, module: ir.Module) -> None:
        """Runs when lower creates a module: triple and data layout."""
        module.triple = self.triple
        module.data_layout = self.data_layout

    def special_register(self, lc, reg: str, dim: str) -> ir.Value:
        """Where a kernel reads threadIdx/blockIdx/blockDim/gridDim .x/.y/.z: the value as i32."""
        raise NotImplementedError

    def print_line(self, lc, node, items) -> None:
        """Lowers ``print(...)`` in a kernel: items are ("s", text) or (scalar type, value), one line per thread."""
        raise lc.src.error(node, f"print() in kernels is not supported on the {self.name} target",
                           "run on the CPU backend or the ptx target")

    def raise_exception(self, lc, node, exc_class, exc_args) -> None:
        """Lowers a raise (or, with ``debug=True``, a failed division check): the thread stops, and with
        ``lc.debug`` the launch raises ``exc_class`` on the host (kdebug/frontend/exceptions.py). Ends the
        current block with a terminator."""
        raise lc.src.error(node, f"raise in kernels is not supported on the {self.name} target",
                           "run on the CPU backend or the ptx target")

    def after_raising_call(self, lc) -> None:
        """Runs after a call to a device function that may raise: stop this thread too when it did."""

    def check_bounds(self, lc, node, arr_t, indices, extents, access: str) -> None:
        """Runs before every array access is lowered: memcheck hook (no-op by default). ``access``
        is read, write, update or atomic."""

    def instrument_access(self, lc, node, arr_t, ptr, indices, access: str) -> None:
        """Runs once an array element's address is computed, before the access: the sanitizers' hook
        (racecheck, initcheck; no-op by default). ``access`` is read, write, update or atomic."""

    def enter_while(self, lc, node):
        """Runs where a while loop is entered, before its first test. Returns what ``leave_while`` gets
        back for the loop around a nested one (the CPU target: the loop's site, for a report while it runs)."""
        return None

    def leave_while(self, lc, node, outer) -> None:
        """Runs at the start of a while loop's exit block (also reached by ``break``); ``outer`` is
        ``enter_while``'s value for the enclosing while loop, or None at the top."""

    def lockstep_loop(self, lc, node, start, step, trips, iteration) -> ir.Block | None:
        """At a ``for`` loop over a range, its bounds and trip count computed: None (the default), or the
        block where the loop ends when the target runs it for many threads at once (the CPU target's
        lockstep loops), using ``iteration(slots, ctx, value, latch, stop, nonneg)`` to lower one
        iteration of the body (kdebug/frontend/lower.py); the ordinary loop is then lowered where the
        target left the builder, for the threads it does not run, and goes on to that block."""
        return None

    def takes_loop(self, lc, node) -> bool:
        """Whether ``lowers_loop`` lowers the range loop ``node`` itself (asked before a grid-stride while
        loop is lowered as that range: kdebug/frontend/grid_stride.py). No, by default."""
        return False

    def lowers_loop(self, lc, node, start, step, trips, iteration) -> ir.Block | None:
        """At a ``for`` loop over a range, its bounds and trip count computed, before ``lockstep_loop``: None
        (the default), or the block after the loop when the target lowered the whole loop itself (the CPU
        target's loops in rounds, kdebug/targets/cpu/forms/regions/cut.py), with ``iteration`` as for ``lockstep_loop``;
        the lowering goes on there."""
        return None

    def function_prologue(self, lc) -> None:
        """Runs in a function's entry block once its variables have slots, before its arguments are stored."""

    def keeps_loop_bounds_in_slots(self, lc) -> bool:
        """At a range loop: whether its bounds and trip count go through stack slots rather than registers
        (the CPU target's region form cuts a kernel at its barriers, and registers do not cross a cut)."""
        return False

    def range_loop_slots(self, lc, node, slots: list) -> None:
        """After the slots of range loop ``node``'s counter and held bounds (``keeps_loop_bounds_in_slots``)
        are made: the CPU target's region form notes those of a loop every thread of a block runs alike."""

    def function_epilogue(self, lc) -> None:
        """Runs in a function's exit block, just before its return instruction is emitted."""

    def inlines_call(self, lc, callee_tf) -> bool:
        """At a device-function call: whether lower emits the callee's body into the caller (the
        CPU target's device functions with barriers) instead of calling it."""
        return False

    def array_constant(self, lc, value, arr_t) -> ir.Value:
        """Where a kernel uses a module-level numpy array (frozen) or device array (by reference)."""
        b = lc.builder
        elem_p = ir.PointerType(mem_type(arr_t.dtype))
        if isinstance(value, DeviceNDArray):
            # captured by reference: the kernel sees later writes to it (its device address on a GPU)
            ptr = ir.Constant(i64, value.device_address()).inttoptr(elem_p)
        else:
            ptr = self.frozen_array_pointer(lc, np.ascontiguousarray(value), elem_p)
        arr = ir.Constant(llvm_type(arr_t), ir.Undefined)
        arr = b.insert_value(arr, ptr, 0)
        for k, n in enumerate(value.shape):
            arr = b.insert_value(arr, ir.Constant(i64, n), [1, k])
        return arr

    def frozen_array_pointer(self, lc, data, elem_p: ir.Type) -> ir.Value:
        """From array_constant: a constant global holding ``data`` (a frozen numpy array), as an
        ``elem_p`` pointer."""
        raise NotImplementedError

    def libm_name(self, name: str, single: bool) -> str:
        """Where a math function is lowered to a library call: the math library's symbol."""
        return name + "f" if single else name

    # a multiply and an add may become one fused multiply-add (LLVM's ``contract`` flag on every float
    # add, subtract and multiply): what the target's own compiler does by default (NVVM's -fma=1)
    contracts_multiply_add = False

    def approximate_math(self, name: str, single: bool) -> str | None:
        """Under ``fastmath=True``: the symbol of the target's approximate ``math.<name>`` (``"truediv"``:
        ``/``) for float32 (``single``) or float64, or None to keep the precise one (with LLVM's fast flags)."""
        return None

    # A target without barriers or shared memory keeps these defaults: ``implements`` tells the
    # intrinsics, which then raise a located error instead of calling them.
    def barrier(self, lc, node, what: str, vote=None, grid: bool = False) -> ir.Value | None:
        """At ``cuda.syncthreads()`` and its votes (returns the count with ``vote``), and at
        ``this_grid().sync()`` with ``grid``."""
        raise NotImplementedError(what)

    def warp_op(self, lc, node, op) -> ir.Value | None:
        """At a warp operation (kdebug/frontend/intrinsics_warp.py's ``WarpOp``): a shuffle, vote,
        match, ``activemask()`` or ``syncwarp(mask)``; returns its result bits."""
        raise NotImplementedError(op.what)

    def shared_memory(self, lc, nbytes: int, align: int = 16) -> ir.Value:
        """At ``cuda.shared.array``: an i8* to ``nbytes`` of the block's shared memory."""
        raise NotImplementedError("cuda.shared.array")

    def extern_function(self, lc, node, decl, fnty: ir.FunctionType) -> ir.Function:
        """At a call of a ``cuda.declare_device`` function ``decl``: the function to call (type ``fnty``)."""
        files = ", ".join(map(str, decl.link)) or "none given"
        raise lc.src.error(node, f"{decl.name} is declared with cuda.declare_device (link: {files}): the {self.name} "
                                 f"target would need its code compiled for it, which kdebug does not do",
                           "compile for the ptx target (cuda.compile_ptx, kdebug dump --target ptx), whose PTX declares "
                           "it for linking, or write the function in Python with @cuda.jit(device=True)")

    def dynamic_shared_memory(self, lc) -> tuple[ir.Value, ir.Value]:
        """At ``cuda.shared.array(0, dtype)``: (i8* base, i64 bytes) of the launch's dynamic shared memory."""
        raise NotImplementedError("dynamic shared memory")


class DeferredHooks:
    """Deferred codegen: a kernel's device-side launches and the entries other jobs' markers become
    (after expand_deferred, when the strategy resolves a marker to a job's entry)."""

    def device_launch(self, lc, node, marker, grid, block, args, argtypes) -> None:
        """At ``child[grid, block](args)`` inside a kernel. ``marker`` (i8*) becomes the address of
        the child's launch entry (``deferred_entry_name``); grid and block are three i32 values each;
        ``args`` are already cast to ``argtypes``."""
        raise lc.src.error(node, f"device-side launches are not supported on the {self.name} target",
                           "launch the child kernel from the host")

    def deferred_entry_name(self, job) -> str:
        """The function whose address replaces a deferred marker for ``job``."""
        return job.entry

    def deferred_entry_type(self, job) -> ir.FunctionType:
        """Its type, to declare it where it is referenced before it is defined."""
        params = [llvm_type(t) for t in job.argtypes]
        ctx = self.context_type()
        if ctx is not None:
            params = [ctx] + params
        ret = llvm_type(job.typed.restype) if job.typed is not None else ir.VoidType()
        return ir.FunctionType(ret, params)

    def entry_finished(self, mod, job) -> bool:
        """Whether the final module shows the finish passes on ``job``'s entry."""
        return True

    supports_cross_module_references = False  # may a module refer to an entry loaded by an earlier one?

    def entry_address(self, job):
        """With cross-module references: the launchable entry of ``job``, loaded by an earlier module."""
        raise NotImplementedError("entry_address needs supports_cross_module_references")

    def entry_artifact(self, job):
        """With cross-module references: what a launch of ``entry_address(job)`` reads in place of the
        earlier module's artifact (kdebug/runtime/artifacts.py)."""
        raise NotImplementedError("entry_artifact needs supports_cross_module_references")


class AutodiffHooks:
    """A kernel's adjoint (``kdebug.adjoint``), while the reverse transform (kdebug/autodiff/) writes it:
    how its threads share a block, its barriers and shared arrays, the thread index it reads."""

    # Whether a block's threads run one at a time, each from one barrier to the next without another's
    # code in between (the CPU backend's thread loops and coroutines), blocks side by side: the reverse
    # transform then adds plainly into shadow elements no other block touches. A GPU runs them together.
    serial_block_threads = False

    # a thread's stack stays as it was across a barrier (a GPU's); the CPU backend's adjoint bodies with
    # barriers are coroutines, whose stack a barrier leaves: their per-trip tape records go on the heap
    barriers_keep_the_stack = True

    def special_register_of(self, inst, defs: dict, ctx: str | None) -> tuple[str, str] | None:
        """The (register, dimension) an instruction of parsed IR (llvmlite.binding) reads, as
        ``special_register`` lowers it, or None (the reverse transform's thread-index analysis);
        ``defs``: the function's instructions by name, ``ctx``: the name of its context parameter."""
        return None

    # Lowered for the reverse transform, a primal's barriers and shared arrays are marker calls
    # (kdebug/autodiff/adjoint_primal.py); the transform writes the adjoint body through these hooks,
    # where ``b`` is its builder and ``ctx`` the body's context parameter (None without one).
    def adjoint_site(self, lc, node, what: str) -> tuple[int, int]:
        """(site, reach line) a barrier of the adjoint's primal records (``node`` None: one the adjoint
        adds, at the function's line); what the target's barrier errors name."""
        return 0, 0

    def adjoint_begin(self, b, ctx) -> None:
        """At the top of the entry block of an adjoint body with barriers or shared arrays."""

    def adjoint_barrier(self, b, ctx, site: int, line: int, vote, what: str | None):
        """A barrier of the adjoint body (``vote``: an i32 or None); ``what`` names one the adjoint adds
        (the reverse of a barrier, the shadows' zeroing), placed at ``site``. Returns the votes (i32)."""
        raise NotImplementedError("a barrier in a kernel's adjoint")

    def adjoint_shared(self, b, ctx, nbytes: int, align: int):
        """An i8* to ``nbytes`` of the block's shared memory for the adjoint body (arrays and shadows)."""
        raise NotImplementedError("a shared array in a kernel's adjoint")

    def adjoint_end(self, b, ctx) -> None:
        """Before the adjoint body's return (``b`` may be left in another block)."""

    def adjoint_finished(self, entry: str, fn) -> None:
        """The transform wrote adjoint body ``entry`` (its kernel's gradient function ``fn``)."""


class PipelineHooks:
    """The phases after lower, in the order they run: link_runtime, optimize, finish_ir (once per
    job's entry), finish_module, validate, emit, the target's own stages (``stages``), load. optimize,
    finish_ir, finish_module and emit get ``compilation``: the target's record of the toplevel compilation
    they run in (``compilation_state``), kept by the driver's compilation and dropped with it."""

    def compilation_state(self):
        """Runs when a toplevel compilation starts: a fresh record of it that optimize, finish_ir,
        finish_module and emit share (the CPU target's tier plan); never another compilation's, and gone
        with the compilation, failed or not. None by default."""
        return None

    def link_runtime(self, mod, jobs) -> None:
        """After expand_deferred: link the target's runtime libraries."""

    def optimize(self, mod, jobs, compilation) -> None:
        """Optimise the linked module of ``jobs`` (before finish)."""

    def finish_ir(self, mod, job, compilation) -> list[str]:
        """After optimize, once for every job's entry. Returns the names of functions it added."""
        return []

    def finish_module(self, mod, jobs, compilation) -> None:
        """After every finish_ir: module-wide clean-up (internalisation...)."""

    def validate(self, mod, jobs) -> None:
        """Check the finished module; raise CompileError on anything the target cannot take."""
        mod.verify()

    def emit(self, mod, jobs, compilation):
        """Produce the target's artifact (machine code, PTX): a kdebug/runtime/artifacts.py type, whose
        ``text`` is the emit snapshot."""
        raise NotImplementedError

    def load(self, artifact, jobs):
        """Make the artifact callable: returns {job id: launchable entry}."""
        raise NotImplementedError

    def stages(self) -> tuple[Stage, ...]:
        """Stages this target adds (kdebug/stages.py): those listed before ``emit`` run on each job's
        lowered module (``transform_lowered``), the others in order between emit and load (ptxas)."""
        return ()

    def transform_lowered(self, stage: Stage, module, target_state, job_kind: str):
        """One of ``stages()`` that runs after ``lower``, on a job's own module: returns the module."""
        raise NotImplementedError(stage.name)

    def shows_stage(self, stage: Stage, target_state) -> bool:
        """Whether a job lowered into ``target_state`` gets a snapshot of ``stage`` (one that runs after lower)."""
        return True

    def stage_header(self, stage: Stage, target_state) -> str:
        """Comment lines above the snapshot of one of ``stages()`` that runs after ``lower``."""
        return ""

    def code_form(self, target_state, entry: str):
        """How the target runs kernel ``entry`` as lowered, (form, why not a faster one or None), or None."""
        return None

    def run_stage(self, stage: Stage, artifact, jobs) -> dict:
        """Runs one of ``stages()`` on the emitted artifact: {job id: snapshot text} of the jobs it shows."""
        raise NotImplementedError(stage.name)

    def ptxas_report(self, artifact) -> dict | None:
        """The assembler's resource report of an emitted artifact, made on first request; None for
        targets without one."""
        return None


class Target(LoweringHooks, DeferredHooks, AutodiffHooks, PipelineHooks):
    """A target: the hooks of the four groups above, each a default a target overrides where it needs to
    (kdebug/targets/cpu/target.py, kdebug/targets/ptx/target.py)."""

    name = "base"
    emit_language = "asm"  # what emit's snapshot holds: asm or ptx
    triple = ""
    data_layout = ""

    def implements(self, hook: str) -> bool:
        """Whether this target overrides the base target's ``hook`` (a feature it has)."""
        return getattr(type(self), hook) is not getattr(Target, hook)


def tuning_options(speed_level: int, unroll: bool = True, interleave: bool = True):
    """The -O level's pipeline options (vectorisers from -O2; ``unroll``, ``interleave`` as asked)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = speed_level >= 2
    pto.slp_vectorization = speed_level >= 2
    pto.loop_unrolling = unroll
    pto.loop_interleaving = interleave
    return pto


def run_pipeline(tm, mod, speed_level: int = 3, unroll: bool = True, interleave: bool = True) -> None:
    """LLVM's new pass manager at the given -O level (``unroll``/``interleave``: loop unrolling and
    the vectoriser's interleaving, on by default). Inside ``kdebug.passes.recording()`` every pass is
    kept in its log (``pass_record.py``)."""
    pto = tuning_options(speed_level, unroll, interleave)
    cut = passes.open_cut()
    if cut is not None:  # kdebug bisect: the pipeline cut after pass N
        return pass_record.run_cut(lambda: llvm.create_pass_builder(tm, pto), mod, cut)
    log = passes.open_log()
    if log is not None and log.on_demand:  # kept for a replay where someone looks at the passes
        return pass_record.run_kept(tm, pto, speed_level, mod, log)
    if log is not None:  # something shows the passes (the driver opened a log): the same pipeline, recorded
        return pass_record.run_recorded(lambda: llvm.create_pass_builder(tm, pto), mod, log)
    with pass_record.PIPELINE_LOCK:  # never while another thread records (LLVM's print options are global)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)


def run_passes(tm, mod, names: tuple[str, ...]) -> None:
    """A short pipeline: the passes ``names`` (llvmlite's ``add_<name>_pass``) in order, recorded as
    ``run_pipeline``'s are inside ``kdebug.passes.recording()``."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    cut = passes.open_cut()
    if cut is not None:
        return pass_record.run_cut(lambda: llvm.create_pass_builder(tm, pto), mod, cut, names)
    log = passes.open_log()
    if log is not None and log.on_demand:
        return pass_record.run_kept(tm, pto, 3, mod, log, names)
    if log is not None:
        return pass_record.run_recorded(lambda: llvm.create_pass_builder(tm, pto), mod, log, names)
    with pass_record.PIPELINE_LOCK:
        pb = llvm.create_pass_builder(tm, pto)
        pass_record.module_pass_manager(pb, names).run(mod, pb)
