"""The CPU target: kernels become host code, JIT-compiled by llvmlite, with the grid emulated.

Every function takes a hidden ``ThreadContext*`` (layout.py). The finish pass
wraps each kernel in its grid launcher ``<entry>.grid(params, dims,
first_block, end_block, runtime)`` (launcher.py) and marks the kernel internal
and always-inline, so that emit's optimisation turns a barrier-free kernel
into one vectorisable loop.
"""
from __future__ import annotations

import dataclasses
import functools

import re
import threading
from dataclasses import field

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from kdebug import markers
from kdebug.frontend.lower import i8, i32, i64
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import device_launch
from kdebug.runtime import memcheck as M
from kdebug.runtime.artifacts import CpuArtifact
from kdebug.settings import CompileOptions, Recording
from kdebug import passes, stages
from kdebug.targets import pass_record
from kdebug.targets.base import Target, init_llvm, run_passes, run_pipeline
from kdebug.targets.cpu import exceptions_ir, kernel_print, progress_ir, tiers, warp
from kdebug.targets.cpu.forms.coroutines import lowering as coroutines
from kdebug.targets.cpu.forms.coroutines import lockstep as lockstep
from kdebug.targets.cpu.forms.coroutines import lockstep_rules as lockstep_rules
from kdebug.targets.cpu.checks import memcheck as memcheck_ir
from kdebug.targets.cpu.forms.regions import cut as regions
from kdebug.targets.cpu.checks import sanitizers as sanitizer_ir
from kdebug.targets.cpu.adjoint_barriers import WHY_COROUTINES, AdjointBarriers
from kdebug.frontend.lower import llvm_type
from kdebug.targets.cpu.forms.regions import block_limits
from kdebug.targets.cpu.forms.regions import bounds as region_bounds
from kdebug.targets.cpu.forms import FORM_COROUTINES, FORM_REGIONS, FORM_THREAD_LOOP
from kdebug.targets.cpu.forms.choice import choose_form
from kdebug.targets.cpu.launcher import LauncherSpec, RegionLaunch, launcher_module, name_entry
from kdebug.targets.cpu.machines import new_machine
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_DEPTH, CTX_DYN_BYTES, CTX_DYN_SHARED, CTX_RUNTIME,
                                       CTX_SHARED, I8P, LAUNCHER_TYPE, SHARED_ALIGN, SPECIAL_REGISTER_FIELD, param_struct_type)

_engine_lock = threading.RLock()  # re-entrant: entry_address holds it while calling execution_engine()
_engine = None
_machines: dict[str, object] = {}


def host_target_machine(host_cpu: str = ""):
    """One target machine per CPU model for optimisation and assembly (MCJIT gets its own)."""
    tm = _machines.get(host_cpu)
    if tm is None:
        tm = _machines[host_cpu] = new_machine(host_cpu, 3)
    return tm


def execution_engine():
    """The process's one MCJIT engine; each compiled module is added to it."""
    global _engine
    with _engine_lock:
        if _engine is None:
            init_llvm()
            target = llvm.Target.from_triple(llvm.get_process_triple())
            tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                              features=llvm.get_host_cpu_features().flatten(), opt=3)
            # the engine's first module: the runtime functions kernels' modules declare (memcheck_ir.runtime_module)
            backing = llvm.parse_assembly(str(memcheck_ir.runtime_module()))
            backing.triple, backing.data_layout = llvm.get_process_triple(), str(tm.target_data)
            _engine = llvm.create_mcjit_compiler(backing, tm)
            _engine.finalize_object()
            provide_half_precision_functions()
        return _engine


HALF_PRECISION_FUNCTIONS = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2", "__extendhfdf2")


def provide_half_precision_functions() -> None:
    """float16 conversions on a CPU model without F16C (x86-64-v2 and older, KDEBUG_HOST_CPU) are calls
    of the compiler runtime's ``__extendhfsf2``/``__truncsfhf2``...; LLVM's JIT finds them in the process,
    where libgcc_s (GCC 12 and later) has them with LLVM's calling convention. Unresolved, a call would
    jump to address 0."""
    if all(llvm.address_of_symbol(name) for name in HALF_PRECISION_FUNCTIONS):
        return
    try:
        llvm.load_library_permanently("libgcc_s.so.1")
    except RuntimeError:  # not a glibc system: the CPU's own conversions (F16C) are what remains
        pass



_CTX_FIELD = re.compile(r", i32 0, i32 (\d+), i32 (\d+)\s*(?:,|$)")
_REGISTER_OF_FIELD = {field: reg for reg, field in SPECIAL_REGISTER_FIELD.items()}


# the values a kernel can read, as launches are checked (kdebug/lang/dispatcher.py, runtime/device_launch.py:
# a block of at most 1024 threads, each dimension at least 1; a grid dimension at most 2^31 - 1): [lo, hi)
REGISTER_RANGE = {"threadIdx": (0, 1024), "blockDim": (1, 1025), "blockIdx": (0, 2**31 - 1), "gridDim": (1, 2**31 - 1)}

@dataclass
class CpuModuleState:
    """What the CPU target's lowering hooks record about one module, for finish_ir and emit."""
    # the target's memcheck sites (runtime/memcheck.SiteTable), where the lowering numbers a check's, a
    # barrier's, a raise's or a while loop's source site; the artifact carries it to the reports
    check_sites: object = None
    shared_bytes: int = 0  # the module's static shared-memory layout (one for all its kernels)
    shared_align: int = SHARED_ALIGN  # the largest alignment one of its shared arrays asks for
    coroutines: dict = field(default_factory=dict)  # kernel name -> CoroState: kernels with barriers
    grid_sync: set = field(default_factory=set)  # kernels with a grid barrier
    thread_exit: set = field(default_factory=set)  # kernels whose failed checks end their thread (memcheck_ir.py)
    loops: dict = field(default_factory=dict)  # kernel name -> whether its source has a loop
    lockstep: set = field(default_factory=set)  # kernels with lockstep loops (lockstep.py)
    lockstep_reasons: dict = field(default_factory=dict)  # loop node id -> why it is not lockstep (or None)
    lockstep_frame: object = None  # while a lockstep run's body is lowered: lockstep.Frame
    regions: dict = field(default_factory=dict)  # kernel name -> regions.RegionLowering: kernels cut at barriers
    cuts: dict = field(default_factory=dict)  # kernel name -> regions.RegionCut: what the regions stage made
    thread_bounds: dict = field(default_factory=dict)  # kernel name -> each region's thread bound, in words (finish)
    # kernel name -> the block shape its thread loops have a copy for, or None (block_limits.py; finish)
    block_limits: dict = field(default_factory=dict)
    forms: dict = field(default_factory=dict)  # kernel name -> (form, why not the region form or None)
    syntax_holders: dict = field(default_factory=dict)  # id(tree) -> (tree, each node's holder): barrier_lines.py
    # no loop and no barrier in the module as lowered (tiers.straight_line): its tier 0 takes the short pipeline
    straight: bool = False


# emit's optimisation: optimize has unrolled the kernels' own loops already: unrolling or interleaving
# again only multiplies the launcher's loops (measured: a fifth less compile time, the same run time
# for saxpy and matmul_tiled)
EMIT_UNROLL = EMIT_INTERLEAVE = False


def emit_pipeline(tm, mod, speed_level: int) -> None:
    """emit's optimisation: inline kernels into their launchers and vectorise the thread loops."""
    run_pipeline(tm, mod, speed_level, unroll=EMIT_UNROLL, interleave=EMIT_INTERLEAVE)


def _launcher_bitcode(entry: str, argtypes, target, spec: LauncherSpec) -> bytes:
    """The bitcode of a kernel's launcher (launcher_module's), for tier 1 (tiers.Plan.finished_module)."""
    return launcher_module(entry, argtypes, target, spec)[1]


def _tier1_steps(locked: bool) -> tiers.Steps:
    """What tier 1 runs (tiers.Plan): optimize's pipeline, finish's linking, emit's pipeline — on the
    background thread without llvmlite's lock, or (``locked``) as the synchronous compile runs them."""
    if locked:
        def optimise(tm, mod, level, unroll, interleave):
            run_pipeline(tm, mod, level, unroll=unroll, interleave=interleave)
    else:
        optimise = tiers.optimise_unlocked
    return tiers.Steps(optimise=optimise, link_launcher=link_launcher, name_entry=name_entry,
                       internalise=internalise, emit_unroll=EMIT_UNROLL, emit_interleave=EMIT_INTERLEAVE)


def link_launcher(mod, entry: str, launcher) -> None:
    """finish: the kernel's launcher linked in, the kernel internal and inlined into it."""
    mod.link_in(launcher)
    fn = mod.get_function(entry)
    fn.linkage = "internal"
    fn.add_function_attribute("alwaysinline")


def internalise(mod, keep) -> None:
    """finish: every function defined here but those in ``keep`` internal, so LLVM may inline and drop it."""
    for fn in mod.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = "internal"


def load_object(obj: bytes, names) -> dict:
    """Add machine code to the process's engine: {function name: address} of ``names``."""
    engine = execution_engine()
    with _engine_lock:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        return {n: engine.get_function_address(n) for n in names}


def _has_loop(lc) -> bool:
    """memcheck_ir.has_loop of the kernel being lowered, looked at once per kernel."""
    hit = lc.state.loops.get(lc.fn.name)
    if hit is None:
        hit = lc.state.loops[lc.fn.name] = memcheck_ir.has_loop(lc.function_tf.source.tree)
    return hit


def module_state(job) -> CpuModuleState:
    """The record of the module ``job`` was lowered in (an empty one for a job lowered elsewhere)."""
    return job.target_state if job.target_state is not None else CpuModuleState()


HOST_ASM_NOT_RECORDED = ("; host assembly is recorded only when something shows it:\n"
                         "; the TUI, kdebug dump, or kdebug run --trace\n")
HOST_ASM_ON_DEMAND = "; host assembly: made when the job's passes are replayed (where someone looks at them)\n"


class CpuTarget(Target):
    name = "cpu"
    barriers_keep_the_stack = False  # an adjoint body with barriers is a coroutine (adjoint_barriers.py)
    serial_block_threads = True  # a block runs on one host thread: its threads in a loop, or as coroutines
    def __init__(self, options: CompileOptions | None = None, recording: Recording | None = None) -> None:
        """Made from the frozen compile options (``kdebug/settings.py``), which it never changes:
        ``memcheck``: bounds checks compiled into every array access; ``recording.snapshots``: the emit
        snapshot holds the host assembly (a second code generation; a plain headless run goes without);
        ``racecheck``, ``initcheck``: shadow-memory checks on every shared and global access;
        ``lockstep``: a coroutine kernel's loops run by its threads together (lockstep.py);
        ``shuffle``: barrier-free kernels' launchers can run the threads in a shuffled order
        (``--shuffle-threads``; without it their launchers only run them in order); ``tiered``: emit
        makes quick code first and the optimised code in the background (tiers.py; ``compile_options``
        sets it only where the host assembly is not recorded: what is shown is always the code that
        runs); ``host_cpu``: the LLVM CPU model the code is made for ("": this host's)."""
        self.options = options if options is not None else CompileOptions()
        self.recording = recording if recording is not None else Recording()  # not part of the code made
        # the tables whose ids the lowering compiles into the code, the target's for its lifetime: a
        # device-side launch's site (device_launch.LaunchSite), a print call's format and memcheck's source
        # sites (runtime/memcheck.SiteTable: checks, barriers, raises, while loops). Every module this
        # target makes refers to them (a kernel launched from the device may come from an earlier
        # module); the artifacts carry them to the launch's context (kdebug/runtime/launch_context.py)
        self.launch_sites: list = []
        self.print_formats: list = []
        self.check_sites = M.SiteTable()  # memcheck's sites, numbered by the lowering (lc.state.check_sites)
        self.tables_lock = threading.Lock()
        init_llvm()
        device_launch.register_symbol()
        self.tm = host_target_machine(self.options.host_cpu)
        self.triple = llvm.get_process_triple()
        self.data_layout = str(self.tm.target_data)
        self._const_counter = 0
        self.adjoints = AdjointBarriers(self.check_sites)  # kdebug.adjoint's barriers and shared arrays (adjoint_barriers.py)
        self._tier_worker: tiers.Worker | None = None  # made by tier_worker, at the first tiered load

    # the options, read-only: a target is made for one set of them
    memcheck = property(lambda self: self.options.memcheck)
    racecheck = property(lambda self: self.options.racecheck)
    initcheck = property(lambda self: self.options.initcheck)
    lockstep = property(lambda self: self.options.lockstep)
    shuffle = property(lambda self: self.options.shuffle)
    tiered = property(lambda self: self.options.tiered)
    record_host_asm = property(lambda self: self.recording.snapshots and not self.recording.passes_on_demand)
    # passes kept for a replay: emit's assembly too is made by the replay, from the module emit's
    # pipeline made (its digest checked), not by a second code generation during the compile
    host_asm_on_demand = property(lambda self: self.recording.passes_on_demand)  # only with snapshots

    # ---- lowering time -------------------------------------------------------
    def module_state(self) -> CpuModuleState:
        return CpuModuleState(check_sites=self.check_sites)

    def context_type(self):
        return CONTEXT_P

    def special_register(self, lc, reg, dim):
        """The value, loaded from the thread's context with its range (``REGISTER_RANGE``): LLVM then knows it
        is not negative, so that ``x[blockIdx.x * n + threadIdx.x]`` needs no wraparound of a negative index,
        and a thread loop's accesses are contiguous (a masked vector load, where a gather was)."""
        b = lc.builder
        # the context as an opaque pointer (a transform's function, parsed): the struct named for the GEP
        etype = CONTEXT_P.pointee if getattr(lc.thread_ctx.type, "is_opaque", False) else None
        ptr = b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, SPECIAL_REGISTER_FIELD[reg]), ir.Constant(i32, "xyz".index(dim))],
                    inbounds=True, source_etype=etype)
        value = b.load(ptr, typ=i32)
        lo, hi = REGISTER_RANGE[reg]
        value.set_metadata("range", lc.module.add_metadata([ir.Constant(i32, lo), ir.Constant(i32, hi)]))
        return value

    def special_register_of(self, inst, defs, ctx):
        if inst.opcode != "load":
            return None
        gep = defs.get(list(inst.operands)[0].name)
        if gep is None or gep.opcode != "getelementptr":
            return None
        base = list(gep.operands)[0]
        if base.value_kind.name != "argument" or base.name != ctx:
            return None  # not the thread context (every function's first parameter)
        m = _CTX_FIELD.search(str(gep))
        if m is None:
            return None
        reg = _REGISTER_OF_FIELD.get(int(m[1]))
        return (reg, "xyz"[int(m[2])]) if reg is not None and int(m[2]) < 3 else None

    def print_line(self, lc, node, items) -> None:
        kernel_print.lower_print(lc, self, items)

    def raise_exception(self, lc, node, exc_class, exc_args) -> None:
        exceptions_ir.emit_raise(lc, node, exc_class, exc_args)

    def after_raising_call(self, lc) -> None:
        exceptions_ir.after_raising_call(lc)

    def check_bounds(self, lc, node, arr_t, indices, extents, access: str) -> None:
        frame = lc.state.lockstep_frame if lc.state is not None else None
        rk = lc.state.regions.get(lc.fn.name) if lc.state is not None else None
        if self.memcheck and frame is not None:  # inside a lockstep run: held back for the thread
            memcheck_ir.emit_bounds_check(lc, node, arr_t, indices, extents, access, on_fail=frame.fail)
        elif self.memcheck and rk is not None and rk.fresh and lc.tf is lc.function_tf:
            # the region form: the thread's step ends, the launcher reports after the thread loop
            n = len(indices)
            memcheck_ir.emit_bounds_check(lc, node, arr_t, indices, extents, access,
                                          on_fail=lambda b, site, idx, ext: regions.fail_fresh(lc, b, site, idx[:n],
                                                                                              ext[:n]))
        elif self.memcheck:
            # the sanitizers' instrumented code keeps the stopping check (their launcher is not vectorised)
            thread_exit = (not (self.racecheck or self.initcheck) and memcheck_ir.ends_thread(lc)
                           and _has_loop(lc))
            if thread_exit:
                lc.state.thread_exit.add(lc.fn.name)
            memcheck_ir.emit_bounds_check(lc, node, arr_t, indices, extents, access, thread_exit)

    def instrument_access(self, lc, node, arr_t, ptr, indices, access: str) -> None:
        if (self.racecheck or self.initcheck) and lc.thread_ctx is not None:
            sanitizer_ir.emit_access(lc, node, arr_t, ptr, indices, access, self.racecheck, self.initcheck)

    def enter_while(self, lc, node) -> int:
        """The thread notes the loop and its block in the runtime record (progress_ir.py); in a kernel cut
        at its barriers, not a loop with a barrier in it (its threads' atomic notes would keep the region's
        thread loop from being vectorised, and every iteration passes a barrier)."""
        if lc.state is not None and lc.fn.name in lc.state.regions and regions.has_barrier(lc.tf, node):
            return progress_ir.loop_site(lc, node)
        if lc.state is not None and lc.fn.name in lc.state.regions:
            regions.note_while(lc, node)
        return progress_ir.enter_loop(lc, node)

    def leave_while(self, lc, node, outer) -> None:
        progress_ir.leave_loop(lc, outer)

    def takes_loop(self, lc, node) -> bool:
        """A grid-stride loop of a region-form kernel, which runs in rounds (``lowers_loop``)."""
        if lc.state is None or lc.fn.name not in lc.state.regions or not self.lockstep:
            return False
        return lc.tf is lc.function_tf and lc.state.lockstep_frame is None and regions.runs_in_rounds(lc, node)

    def lowers_loop(self, lc, node, start, step, trips, iteration):
        """A grid-stride loop of a region-form kernel: run in rounds (regions.emit_rounds), as coroutines run
        it in lockstep."""
        if not self.takes_loop(lc, node):
            return None
        if self.memcheck:  # its failures held back in the launcher's failure slots (memcheck_ir.record_in_slot)
            lc.state.thread_exit.add(lc.fn.name)
        return regions.emit_rounds(lc, node, start, step, trips, iteration, self.memcheck)

    def lockstep_loop(self, lc, node, start, step, trips, iteration):
        """A loop of a kernel with barriers or warp operations that lockstep_rules.py accepts: run by
        the threads waiting at it together (lockstep.py)."""
        if lc.state is not None and lc.fn.name in lc.state.regions:  # a region's thread loop runs it already
            return None
        if not self.lockstep or self.racecheck or self.initcheck or lc.debug or lc.thread_ctx is None:
            return None
        if lc.tf is not lc.function_tf or lc.tf.kind != "kernel" or "barrier" not in lc.tf.features:
            return None
        if lc.state.lockstep_frame is not None:
            return None
        if lockstep_rules.loop_reason(lc.tf, node, lc.state.lockstep_reasons) is not None:
            return None
        lc.state.lockstep.add(lc.fn.name)
        return lockstep.lower_loop(lc, node, start, step, trips, iteration)

    def function_prologue(self, lc) -> None:
        """A kernel's form (forms/__init__.py's table): one thread loop (no barriers), cut at its barriers, or
        coroutines."""
        if lc.tf.kind != "kernel" or lc.tf is not lc.function_tf or lc.thread_ctx is None or lc.state is None:
            return
        form, why = choose_form(lc, self.options)
        lc.state.forms[lc.fn.name] = (form, why)
        if form == FORM_REGIONS:
            rk = regions.begin(lc)
            if self.memcheck:  # failed checks end the thread's step (regions.fresh_checks_reason)
                rk.fresh_why = regions.fresh_checks_reason(lc)
                rk.fresh = rk.fresh_why is None
                if rk.fresh:
                    lc.state.thread_exit.add(lc.fn.name)

    def keeps_loop_bounds_in_slots(self, lc) -> bool:
        return lc.state is not None and lc.fn.name in lc.state.regions

    def range_loop_slots(self, lc, node, slots: list) -> None:
        if lc.state is not None and lc.fn.name in lc.state.regions:
            regions.note_range_loop(lc, node, slots)

    def function_epilogue(self, lc) -> None:
        if lc.state is not None and lc.fn.name in lc.state.regions:
            regions.function_epilogue(lc)
            return
        if lc.fn.name in lc.state.coroutines and lc.fn.name in lc.state.thread_exit:
            # its failed checks would leave it without the final suspend (memcheck_ir.ends_thread)
            raise AssertionError(f"{lc.fn.name}: thread-ending memcheck in a coroutine kernel")
        coroutines.function_epilogue(lc)

    def inlines_call(self, lc, callee_tf) -> bool:
        """Device functions with barriers are lowered into the kernel: their barriers suspend its coroutine."""
        return "barrier" in callee_tf.features

    def barrier(self, lc, node, what: str, vote=None, grid: bool = False):
        if grid:
            lc.state.grid_sync.add(lc.fn.name)
        if lc.fn.name in lc.state.regions:
            return regions.emit_barrier(lc, node, what, vote)
        return coroutines.emit_barrier(lc, node, what, vote, grid)

    def warp_op(self, lc, node, op):
        """Shuffles, votes, matches, activemask, syncwarp: a warp-level suspend point (a coroutine's), or
        a cut of a region-form kernel."""
        if lc.state is not None and lc.fn.name in lc.state.regions:
            return regions.emit_warp_op(lc, node, op)
        return warp.emit_warp_op(lc, node, op)

    def shared_memory(self, lc, nbytes: int, align: int = 16) -> ir.Value:
        """An i8* to ``nbytes`` of the block's shared memory (one static layout per module)."""
        b = lc.builder
        off = (lc.state.shared_bytes + align - 1) // align * align
        lc.state.shared_align = max(lc.state.shared_align, align)
        lc.state.shared_bytes = off + nbytes
        base = b.load(b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, CTX_SHARED)], inbounds=True))
        return b.gep(base, [ir.Constant(i64, off)], inbounds=True)

    def dynamic_shared_memory(self, lc):
        """(i8* base, i64 bytes) of the block's dynamic shared memory (the launch's shared_bytes)."""
        b = lc.builder
        base = b.load(b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, CTX_DYN_SHARED)], inbounds=True))
        nbytes = b.load(b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, CTX_DYN_BYTES)], inbounds=True))
        return base, nbytes

    def frozen_array_pointer(self, lc, data: np.ndarray, elem_p: ir.Type) -> ir.Value:
        self._const_counter += 1
        gv = ir.GlobalVariable(lc.module, ir.ArrayType(i8, data.nbytes),
                               name=f"kdebug.const.{lc.fn.name}.{self._const_counter}")
        gv.global_constant = True
        gv.linkage = "internal"
        gv.align = 64
        gv.initializer = ir.Constant(ir.ArrayType(i8, data.nbytes), bytearray(data.tobytes()))
        return gv.bitcast(elem_p)

    # ---- a kernel's adjoint: its barriers and shared arrays (adjoint_barriers.py) --------------
    def adjoint_site(self, lc, node, what):
        return self.adjoints.site(lc, node, what)

    def adjoint_begin(self, b, ctx) -> None:
        self.adjoints.begin(b, ctx)

    def adjoint_barrier(self, b, ctx, site, line, vote, what):
        return self.adjoints.barrier(b, ctx, site, line, vote, what)

    def adjoint_shared(self, b, ctx, nbytes, align):
        return self.adjoints.shared(b, ctx, nbytes, align)

    def adjoint_end(self, b, ctx) -> None:
        self.adjoints.end(b, ctx)

    def adjoint_finished(self, entry, fn) -> None:
        self.adjoints.finished(entry, fn)

    # ---- the regions stage ------------------------------------------------------
    def stages(self):
        return (stages.REGIONS,)

    def transform_lowered(self, stage, module, target_state, job_kind: str):
        """regions: the region-form kernels' live-across-barrier slots become per-thread columns."""
        if stage is not stages.REGIONS:
            raise NotImplementedError(stage.name)
        if target_state is not None:
            self._cut(module, target_state)
            if self.tiered:  # looked at here, on the module as lowered: optimize gets the linked one
                target_state.straight = not (target_state.regions or target_state.coroutines or target_state.lockstep
                                             or target_state.grid_sync) and tiers.straight_line(module)
        return module

    def _cut(self, module, state) -> None:
        for name, rk in state.regions.items():
            if name not in state.cuts:
                state.cuts[name] = regions.cut(module.get_global(name), rk, self.tm.target_data)

    def shows_stage(self, stage, target_state) -> bool:
        """The regions snapshot of a job with a kernel with barriers (cut, or left as coroutines and why)."""
        return target_state is not None and any(f != FORM_THREAD_LOOP for f, _ in target_state.forms.values())

    def stage_header(self, stage, target_state) -> str:
        """Above the regions snapshot: each kernel's form, and why a kernel with barriers is not cut."""
        if stage is not stages.REGIONS or target_state is None:
            return ""
        out = []
        for name, (form, why) in target_state.forms.items():
            if form == FORM_REGIONS:
                out.append(regions.describe(target_state.regions[name],
                                            target_state.cuts.get(name) or regions.RegionCut(), name))
            elif form == FORM_COROUTINES:
                out.append(f"; {name}: coroutines, one per thread (not the region form: {why})\n")
            else:
                out.append(f"; {name}: {form} (no barriers: nothing to cut)\n")
        return "".join(out)

    def code_form(self, target_state, entry: str):
        """(form, reason) of kernel ``entry`` as lowered (regions.py), or None."""
        return target_state.forms.get(entry) if target_state is not None else None

    # ---- deferred codegen -------------------------------------------------------
    supports_cross_module_references = True  # one MCJIT engine: later modules link to earlier entries

    def device_launch(self, lc, node, marker, grid, block, args, argtypes) -> None:
        """Pack the child's parameter buffer and dims on the stack and call the runtime, which runs
        the child's grid launcher (the marker's address) to completion."""

        b = lc.builder
        params = lc.alloca(param_struct_type(argtypes), name="child.params")
        for k, a in enumerate(args):
            b.store(a, b.gep(params, [ir.Constant(i32, 0), ir.Constant(i32, k)], inbounds=True))
        dims = lc.alloca(ir.ArrayType(i32, 7), name="child.dims")
        depth = b.load(b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, CTX_DEPTH)], inbounds=True))
        for k, v in enumerate(list(grid) + list(block) + [b.add(depth, ir.Constant(i32, 1))]):
            b.store(v, b.gep(dims, [ir.Constant(i32, 0), ir.Constant(i32, k)], inbounds=True))
        runtime = b.load(b.gep(lc.thread_ctx, [ir.Constant(i32, 0), ir.Constant(i32, CTX_RUNTIME)], inbounds=True))
        job_id = markers.job_of(marker.callee.name)  # the marker carries the child's job id
        site = device_launch.register_site(self.launch_sites, self.tables_lock, job_id, lc.src.loc(node))
        callee = lc.module.globals.get(device_launch.SYMBOL)
        if callee is None:
            callee = ir.Function(lc.module, ir.FunctionType(ir.VoidType(), [I8P, I8P, ir.PointerType(i32), I8P, i64]),
                                 name=device_launch.SYMBOL)
        b.call(callee, [marker, b.bitcast(params, I8P), b.bitcast(dims, ir.PointerType(i32)), runtime,
                        ir.Constant(i64, site)])

    def deferred_entry_name(self, job) -> str:
        return job.entry + ".grid" if job.kind == "kernel" else job.entry

    def deferred_entry_type(self, job):
        if job.kind == "kernel":
            return LAUNCHER_TYPE
        return super().deferred_entry_type(job)

    def entry_address(self, job) -> int:
        """The loaded grid launcher of a kernel compiled by an earlier module."""
        with _engine_lock:
            return execution_engine().get_function_address(job.entry + ".grid")

    def entry_artifact(self, job) -> CpuArtifact:
        """What a launch of ``entry_address(job)`` reads: the earlier module's code is loaded already."""
        return CpuArtifact(object=b"", asm="", grid_sync=frozenset(), racecheck=False, initcheck=False,
                           launch_sites=self.launch_sites, print_formats=self.print_formats,
                           check_sites=self.check_sites)

    def entry_finished(self, mod, job) -> bool:
        if job.kind != "kernel":
            return True
        try:
            return not mod.get_function(job.entry + ".grid").is_declaration
        except NameError:
            return False

    # ---- pipeline -------------------------------------------------------------
    # -O2 for both passes: measured against -O3 on saxpy and the 512x512 tiled matmul, the same
    # run time (both vectorise) for a quarter less compile time.
    speed_level = 2

    def compilation_state(self) -> tiers.CompilationState:
        return tiers.CompilationState()

    def optimize(self, mod, jobs, compilation: tiers.CompilationState) -> None:
        if self.tiered and passes.open_log() is None:
            # tier 1 starts from this copy in the background (tiers.py); tier 0 takes -O1: it runs
            # as fast as tier 0 made of -O2 code (measured: saxpy, matmul_tiled), in a third of the time;
            # a module without loops and barriers, three passes (tiers.TIER0_STRAIGHT_PASSES)
            compilation.plan = tiers.Plan(mod.as_bitcode(), mod.name, self.speed_level, self.options.host_cpu)
            if jobs and all(module_state(j).straight for j in jobs):
                run_passes(self.tm, mod, tiers.TIER0_STRAIGHT_PASSES)
            else:
                run_pipeline(self.tm, mod, tiers.TIER0_SPEED_LEVEL)
            return
        run_pipeline(self.tm, mod, self.speed_level)

    def finish_ir(self, mod, job, compilation: tiers.CompilationState) -> list[str]:
        """Wrap a kernel entry in its grid launcher; make the kernel itself internal."""
        if job.kind != "kernel":
            return []
        state = module_state(job)
        rk = state.regions.get(job.entry)
        if rk is not None and job.entry not in state.cuts:
            raise AssertionError(f"{job.entry}: a kernel cut at its barriers reached finish without the regions stage")
        thread_exit = job.entry in state.thread_exit
        body = self.adjoints.linked(mod)  # a kdebug.adjoint wrapper: its body's barriers and shared memory
        coroutine = job.entry in state.coroutines
        shared_bytes, shared_align = state.shared_bytes, state.shared_align
        if body is not None:
            shared_bytes, shared_align = max(shared_bytes, body.shared_bytes), max(shared_align, body.shared_align)
            if body.coroutine and not coroutine:
                coroutine = True
                state.forms[job.entry] = (FORM_COROUTINES, WHY_COROUTINES)
                job.form = state.forms[job.entry]
        # A launcher whose kernel has the stopping check keeps the shuffled path even unshuffled: without
        # its out-of-line call LLVM sinks the block's context stores into the failed checks' blocks, keeping
        # their ~16 values live through the thread loop (measured: saxpy with memcheck ran 1.25x slower)
        shuffle = self.shuffle or (self.memcheck and not thread_exit and rk is None)
        region_launch = facts = None
        if rk is not None:
            frame = state.cuts[job.entry]
            facts = self._region_facts(job, state)
            # memcheck's checks on the thread index fold in a copy of the thread loops for blocks that fit
            limits = block_limits.block_limits(mod.get_function(job.entry), facts) if self.memcheck else None
            state.block_limits[job.entry] = limits
            region_launch = RegionLaunch(cuts=len(rk.sites), frame_bytes=frame.frame_bytes, votes=rk.votes,
                                         uniform_copy=frame.uniform_copy, narrow=self.options.narrow,
                                         warp_columns=frame.warp_columns,
                                         rounds=(frame.round_entry, tuple(r for _, r in rk.rounds))
                                         if rk.rounds else None, fresh=rk.fresh, block_limits=limits)
        spec = LauncherSpec(coroutine=coroutine, grid_sync=job.entry in state.grid_sync, shared_bytes=shared_bytes,
                            shared_align=shared_align, racecheck=self.racecheck, initcheck=self.initcheck,
                            thread_exit=thread_exit, lockstep=job.entry in state.lockstep, shuffle=shuffle,
                            regions=region_launch)
        plan = compilation.plan
        # Tier 0 (a plan made) has the shuffled path only where threads are shuffled: the sinking that path
        # stops is -O2's, which tier 0 does not run (measured: saxpy's tier 0 emit 0.6 ms shorter, its run
        # time unchanged). Tier 1 links the untiered compile's launcher, built on its background thread (once
        # per signature and options: launcher_module keeps it).
        # Nor has it the block-limited copy of a region-form launcher's blocks (block_limits.py): it would double
        # the code tier 0 generates, for checks only -O2 folds (measured: matmul_tiled's compile 0.20 s untiered
        # without the copy, 0.31 s with it).
        no_shuffle = shuffle and not self.shuffle and not coroutine
        no_limits = region_launch is not None and region_launch.block_limits is not None
        quick = plan is not None and (no_shuffle or no_limits)
        tier0 = spec
        if quick:
            tier0 = dataclasses.replace(spec, shuffle=shuffle and not no_shuffle, regions=dataclasses.replace(
                region_launch, block_limits=None) if no_limits else region_launch)
        launcher, bitcode = launcher_module(job.entry, job.argtypes, self, tier0)
        link_launcher(mod, job.entry, launcher)
        # after the launcher, as tier 1 links it (tiers.Plan.finished_module): the same module
        bounds = facts if rk is not None and self.options.narrow else None
        if bounds is not None:  # each region's bound in words
            state.thread_bounds[job.entry] = region_bounds.link_bounds(mod, facts)
        if plan is not None:  # tier 1 links the untiered compile's launcher (and bound function)
            plan.launchers.append((job.entry, functools.partial(_launcher_bitcode, job.entry, job.argtypes, self,
                                                                spec) if quick else bitcode))
            if bounds is not None:
                plan.bounds.append(bounds)
        return [job.entry + ".grid"]

    def _region_facts(self, job, state) -> region_bounds.Facts:
        """What the analyses of region-form kernel ``job.entry``'s optimised step function read of it: its bound
        function's (region_bounds.py; tier 1 makes its own from its code, from these facts) and its block
        limits' (block_limits.py)."""
        kernel_type = ir.FunctionType(ir.VoidType(), [CONTEXT_P] + [llvm_type(t) for t in job.argtypes])
        return region_bounds.Facts.of(job.entry, state.regions[job.entry], state.cuts[job.entry],
                                      self.tm.target_data, kernel_type)

    def finish_module(self, mod, jobs, compilation: tiers.CompilationState) -> None:
        """Internalise everything but the grid launchers, so LLVM may inline and drop it."""
        # launchers and device-job entries stay visible: later modules may refer to them
        keep = {j.entry + ".grid" if j.kind == "kernel" else j.entry for j in jobs}
        internalise(mod, keep)
        plan = compilation.plan
        if plan is not None:
            plan.keep = keep

    def emit(self, mod, jobs, compilation: tiers.CompilationState) -> CpuArtifact:
        # kernels with a grid barrier must run every block in one launcher call (runtime/cpu.py)
        grid_sync = frozenset(j.entry for j in jobs if j.entry in module_state(j).grid_sync)
        made = dict(grid_sync=grid_sync, racecheck=self.racecheck, initcheck=self.initcheck,
                    launch_sites=self.launch_sites, print_formats=self.print_formats, check_sites=self.check_sites)
        plan, compilation.plan = compilation.plan, None  # emit's is the last look: the Tiers keep it
        kernels = {j.id: j.entry + ".grid" for j in jobs if j.kind == "kernel"}
        if plan is not None and not (kernels and tiers.tierable(mod)):
            # nothing to launch, or globals that two copies would split: the optimised code now
            mod = plan.finished_module(llvm.get_global_context(), self.tm, _tier1_steps(locked=True))
            for j in jobs:  # what inspect_llvm shows: the code that runs
                if j.after_finish is not None and j.after_finish[0] is not None:
                    j.after_finish = (mod.clone(), j.after_finish[1])
            plan = None
        if plan is not None:
            run_pipeline(self.tm, mod, 0)  # the always-inliner and the coroutine lowering, nothing else
            return CpuArtifact(object=tiers.machine(0, self.options.host_cpu).emit_object(mod),
                               asm=HOST_ASM_NOT_RECORDED,
                               tiers=tiers.Tiers(plan, kernels, _tier1_steps(locked=False), load_object), **made)
        emit_pipeline(self.tm, mod, self.speed_level)
        # Machine code is generated once, as an object file that load hands to the JIT; the
        # assembly text costs a second code generation, so only sessions that show it ask for it.
        # Code generation changes the module it runs on (its IR passes: CodeGenPrepare...), so the
        # assembly is made from a faithful copy of the module the object file was made from.
        unchanged = pass_record.faithful_copy(mod) if self.record_host_asm else None
        return CpuArtifact(object=self.tm.emit_object(mod),
                           asm=self.tm.emit_assembly(unchanged) if unchanged is not None else
                           HOST_ASM_ON_DEMAND if self.host_asm_on_demand else HOST_ASM_NOT_RECORDED, **made)

    def load(self, artifact: CpuArtifact, jobs):
        names = {j.id: j.entry + ".grid" for j in jobs if j.kind == "kernel"}
        addresses = load_object(artifact.object, names.values())
        entries = {jid: addresses[name] for jid, name in names.items()}
        if artifact.tiers is not None:
            artifact.tiers.start(entries, jobs, self.tier_worker)
        return entries

    @property
    def tier_worker(self) -> tiers.Worker:
        """The background thread that compiles this target's tier 1 (tiers.py), made at its first tiered
        load; it ends at interpreter exit, or once this target is gone and what it queued is compiled."""
        with self.tables_lock:
            if self._tier_worker is None:
                self._tier_worker = tiers.Worker(owner=self)
            return self._tier_worker
