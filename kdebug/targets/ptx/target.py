"""The PTX target: NVPTX through llvmlite, ptxas as its own stage, a loader (the gpu runtime's) to load.

Kernels keep the lowered signature while they are optimised; the finish pass
then gives every kernel job its *kernel entry* ``<entry>_kernel``: the
``ptx_kernel`` calling convention, parameters flattened to scalars (an array
becomes a ``ptr addrspace(1)`` and one i64 per dimension, a tuple its fields,
a boolean a byte) so that a host (pycuda) or a parent grid (the CUDA device
runtime) lays them out at natural alignment, and the lowered kernel body
made internal and always-inline. ``finish_module`` internalises everything
else, so emit's optimisation inlines each body into its kernel entry and drops
what no kernel uses (libdevice included).

Device-side launches use the CDP2 device runtime (``__cudaCDP2GetParameterBufferV2``
and ``__cudaCDP2LaunchDeviceV2``); PTX that calls it is assembled with
``ptxas -c`` and linked against ``libcudadevrt.a``.
"""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from kdebug import events as E
from kdebug import stages
from kdebug.settings import CompileOptions
from kdebug.errors import CompileError
from kdebug.frontend.lower import i8, i32, i64
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime.artifacts import PtxArtifact
from kdebug.stages import Stage
from kdebug.targets.base import Target, run_passes, run_pipeline
from kdebug.targets.printing import c_format
from kdebug.targets.ptx import ptxas as assembler
from kdebug.targets.ptx.abi import (I8P, build_kernel_entry, flat_param_types, flatten, kernel_name,
                                    param_offsets, param_size)
from kdebug.targets.ptx.arch import TRIPLE, arch_of, sm_number, target_machine
from kdebug.targets.ptx.ptxas import format_ptxas, ptx_function_text
from kdebug.targets.ptx import toolkit, warp

DIM3 = ir.LiteralStructType([i32, i32, i32])
CDP2_GET_BUFFER = "__cudaCDP2GetParameterBufferV2"
CDP2_LAUNCH = "__cudaCDP2LaunchDeviceV2"
CDP2_NAMES = (CDP2_GET_BUFFER, CDP2_LAUNCH)
_SREG = {"threadIdx": "tid", "blockDim": "ntid", "blockIdx": "ctaid", "gridDim": "nctaid"}


# LLVM math intrinsics NVPTX cannot select (or only approximately): libdevice has them exactly
_LIBDEVICE_INTRINSICS = ("sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2", "log10", "pow")
# fastmath=True: numba-cuda's float32 substitutions (numba/cuda/mathimpl.py), libdevice's approximations
# (__nv_fast_cosf: cos.approx.f32...); math.tanh is PTX's tanh.approx.f32 (numba: from sm_75), here from
# sm_80, whose PTX ISA (LLVM's default for it, 7.0) has the instruction; sm_75's default ISA, 6.3, does not
_FAST_LIBDEVICE = {"cos": "__nv_fast_cosf", "sin": "__nv_fast_sinf", "tan": "__nv_fast_tanf",
                   "exp": "__nv_fast_expf", "log": "__nv_fast_logf", "log2": "__nv_fast_log2f",
                   "log10": "__nv_fast_log10f", "pow": "__nv_fast_powf", "truediv": "__nv_fast_fdividef"}
TANH_APPROX_MIN_SM = 80
# NVVM's -ftz=1 (what fastmath=True gives a numba-cuda kernel): libdevice's __nvvm_reflect("__CUDA_FTZ")
# answers 1, so its functions take their flush-to-zero paths (cos.approx.ftz.f32, ex2.approx.ftz.f32...)
_REFLECT_FTZ = '!llvm.module.flags = !{!0}\n!0 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n'


# emit, after finish gave each kernel body its entry (alwaysinline): inline them, clean up the entry's
# parameter unpacking and drop what nothing uses. Not a second -O3 over code that optimize already ran
# -O3 on: a third of the time, and the same PTX for the sample kernels up to the order of a few
# instructions (benchmarks/README.md, "Start-up and compile_ptx")
POST_INLINE_PASSES = ("always_inliner", "sroa", "instruction_combine", "simplify_cfg", "new_gvn",
                      "instruction_combine", "simplify_cfg", "global_dead_code_eliminate")
CONST_MEMORY_LIMIT = 32 * 1024  # frozen arrays beyond this many bytes a module go to global memory


@dataclass
class PtxModuleState:
    """What the PTX target's lowering hooks record about one module."""
    const_bytes: int = 0  # frozen arrays placed in .const memory so far


def _libdevice_module():
    path = toolkit.libdevice_path()
    if path is None:
        return None
    with open(path, "rb") as f:
        lib = llvm.parse_bitcode(f.read())
    # linkonce_odr: the linker copies only the functions a module uses
    for fn in lib.functions:
        if not fn.is_declaration:
            fn.linkage = "linkonce_odr"
    return lib


class PtxTarget(Target):
    name = "ptx"
    emit_language = "ptx"
    triple = TRIPLE
    supports_cross_module_references = False  # every module is loaded as its own CUmodule
    contracts_multiply_add = True  # as NVVM (-fma=1, numba-cuda's default): x * y + z is one fma.rn

    def __init__(self, options: CompileOptions | None = None, loader=None, ptxas: bool = True, bus=None) -> None:
        """Made from the frozen compile options (``kdebug/settings.py``): ``arch`` (None: the default
        architecture), ``ptx_per_job`` (the ``ptx`` stage gives every job its own PTX and ptxas report).
        ``loader(artifact, jobs) -> {job id: entry}`` loads PTX onto a GPU (the gpu runtime's); without
        one the target only compiles (compile_ptx, dump) and load returns no handles."""
        self.options = options if options is not None else CompileOptions(target="ptx")
        self.arch = arch_of(self.options.arch)
        self.ptx_per_job = self.options.ptx_per_job
        self.tm = target_machine(self.arch)
        self.data_layout = str(self.tm.target_data)
        self.loader = loader
        self.use_ptxas = ptxas
        self.bus = bus
        self._const_counter = 0
        self._externs: set[str] = set()  # names of cuda.declare_device functions this target declared
        self._ptxas_missing_said = False

    # ---- lowering time -------------------------------------------------------
    def module_state(self) -> PtxModuleState:
        return PtxModuleState()

    def context_type(self):
        return None  # the hardware has the special registers: no hidden parameter

    def special_register_of(self, inst, defs, ctx):
        if inst.opcode != "call":
            return None
        callee = list(inst.operands)[-1]
        m = re.fullmatch(r"llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.([xyz])", callee.name or "")
        reg = next((r for r, short in _SREG.items() if m is not None and short == m[1]), None)
        return (reg, m[2]) if reg is not None else None

    def special_register(self, lc, reg, dim):
        name = f"llvm.nvvm.read.ptx.sreg.{_SREG[reg]}.{dim}"
        fn = lc.module.globals.get(name)
        if fn is None:
            fn = ir.Function(lc.module, ir.FunctionType(i32, []), name=name)
        return lc.builder.call(fn, [])

    def raise_exception(self, lc, node, exc_class, exc_args) -> None:
        """The thread stops (PTX ``exit``), as a numba kernel without debug=True; the GPU does not report
        the exception to the host (the CPU backend does, with debug=True)."""
        lc.builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "exit;", "", side_effect=True), [])
        lc.builder.unreachable()

    def print_line(self, lc, node, items) -> None:
        """vprintf(format, args) as numba-cuda: the values in a local struct, floats as doubles, booleans as
        "True"/"False" strings."""
        b, m = lc.builder, lc.module
        fmt = c_format(items)
        values = []
        for t, v in (it for it in items if it[0] != "s"):
            if t.is_bool:
                values.append(b.select(v, self._cstring(lc, "True"), self._cstring(lc, "False")))
            elif t.is_float:
                values.append(b.fpext(v, ir.DoubleType()) if t.bits < 64 else v)
            else:
                values.append((b.sext if t.signed else b.zext)(v, i64) if v.type.width < 64 else v)
        struct_t = ir.LiteralStructType([v.type for v in values] or [i64])
        slot = lc.alloca(struct_t, name="printf.args")
        for k, v in enumerate(values):
            b.store(v, b.gep(slot, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)], inbounds=True))
        vprintf = m.globals.get("vprintf") or ir.Function(m, ir.FunctionType(ir.IntType(32), [I8P, I8P]), name="vprintf")
        b.call(vprintf, [self._cstring(lc, fmt), b.bitcast(slot, I8P)])

    def _cstring(self, lc, text: str) -> ir.Value:
        """A NUL-terminated constant string in global memory, as a generic i8*."""
        data = bytearray(text.encode()) + b"\0"
        name = f"printf.str.{abs(hash(text)) % 10**12}"
        gv = lc.module.globals.get(name)
        if gv is None:
            gv = ir.GlobalVariable(lc.module, ir.ArrayType(i8, len(data)), name=name, addrspace=1)
            gv.initializer = ir.Constant(ir.ArrayType(i8, len(data)), data)
            gv.global_constant = True
            gv.linkage = "internal"
        return lc.builder.addrspacecast(lc.builder.bitcast(gv, ir.PointerType(i8, addrspace=1)), I8P)

    def barrier(self, lc, node, what: str, vote=None, grid: bool = False):
        """``bar.sync 0``; with a vote, ``bar.red.popc`` returns how many threads voted 1."""
        if grid:
            raise lc.src.error(node, f"{what} is not supported on the ptx target (it needs a cooperative launch)",
                               "run it on the CPU backend (--backend cpu), or split the kernel in two launches")
        m = lc.module
        if vote is None:
            fn = m.globals.get("llvm.nvvm.barrier0") or ir.Function(m, ir.FunctionType(ir.VoidType(), []),
                                                                    name="llvm.nvvm.barrier0")
            lc.builder.call(fn, [])
            return None
        fn = m.globals.get("llvm.nvvm.barrier0.popc") or ir.Function(m, ir.FunctionType(i32, [i32]),
                                                                     name="llvm.nvvm.barrier0.popc")
        return lc.builder.call(fn, [vote])

    # ---- a kernel's adjoint (kdebug.adjoint): a barrier is a plain call here ----------------------
    def adjoint_barrier(self, b, ctx, site, line, vote, what):
        m = b.module
        if vote is None:
            fn = m.globals.get("llvm.nvvm.barrier0") or ir.Function(m, ir.FunctionType(ir.VoidType(), []),
                                                                    name="llvm.nvvm.barrier0")
            b.call(fn, [])
            return ir.Constant(i32, 0)
        fn = m.globals.get("llvm.nvvm.barrier0.popc") or ir.Function(m, ir.FunctionType(i32, [i32]),
                                                                     name="llvm.nvvm.barrier0.popc")
        return b.call(fn, [vote])

    def adjoint_shared(self, b, ctx, nbytes, align):
        self._const_counter += 1
        ty = ir.ArrayType(i8, max(int(nbytes), 1))
        gv = ir.GlobalVariable(b.module, ty, name=f"kdebug_shared_adjoint_{self._const_counter}", addrspace=3)
        gv.linkage = "internal"
        gv.align = align
        gv.initializer = ir.Constant(ty, ir.Undefined)
        return b.addrspacecast(gv, I8P)

    def warp_op(self, lc, node, op):
        """Shuffles, votes, matches, activemask and syncwarp: the llvm.nvvm intrinsics."""
        return warp.emit_warp_op(lc, node, op)

    def shared_memory(self, lc, nbytes: int, align: int = 16) -> ir.Value:
        """An i8* to ``nbytes`` of ``.shared`` memory (one addrspace(3) global per array)."""
        self._const_counter += 1
        ty = ir.ArrayType(i8, max(int(nbytes), 1))
        gv = ir.GlobalVariable(lc.module, ty, name=f"kdebug_shared_{lc.fn.name.replace('.', '_')}_{self._const_counter}",
                               addrspace=3)
        gv.linkage = "internal"
        gv.align = align
        gv.initializer = ir.Constant(ty, ir.Undefined)
        return lc.builder.addrspacecast(lc.builder.bitcast(gv, ir.PointerType(i8, addrspace=3)), I8P)

    def extern_function(self, lc, node, decl, fnty: ir.FunctionType) -> ir.Function:
        """A ``cuda.declare_device`` function: declared (``.extern .func``) for a link step with its files;
        the gpu backend, which does not link them, refuses it here."""
        if self.loader is not None:
            files = ", ".join(map(str, decl.link)) or "none given"
            raise lc.src.error(node, f"{decl.name} is declared with cuda.declare_device (link: {files}): kdebug's "
                                     f"gpu backend does not link external code into its modules",
                               "compile it for the ptx target (cuda.compile_ptx, kdebug dump --target ptx), or "
                               "write the function in Python with @cuda.jit(device=True)")
        self._externs.add(decl.name)
        existing = lc.module.globals.get(decl.name)
        if existing is not None:
            return existing
        return ir.Function(lc.module, fnty, name=decl.name)

    def libm_name(self, name: str, single: bool) -> str:
        return f"__nv_{name}f" if single else f"__nv_{name}"

    def approximate_math(self, name: str, single: bool) -> str | None:
        if not single:
            return None
        if name == "tanh":
            return "llvm.nvvm.tanh.approx.f32" if sm_number(self.arch) >= TANH_APPROX_MIN_SM else None
        return _FAST_LIBDEVICE.get(name)

    def frozen_array_pointer(self, lc, data: np.ndarray, elem_p: ir.Type) -> ir.Value:
        self._const_counter += 1
        # .const while this module's frozen arrays fit (64 KiB a module, and linked modules add up)
        used = lc.state.const_bytes
        space = 4 if used + data.nbytes <= CONST_MEMORY_LIMIT else 1
        if space == 4:
            lc.state.const_bytes = used + data.nbytes
        ty = ir.ArrayType(i8, max(data.nbytes, 1))
        gv = ir.GlobalVariable(lc.module, ty, name=f"kdebug_const_{lc.fn.name.replace('.', '_')}_{self._const_counter}",
                               addrspace=space)
        gv.global_constant = True
        gv.linkage = "internal"
        gv.align = 16
        gv.initializer = ir.Constant(ty, bytearray(data.tobytes() or b"\0"))
        return lc.builder.addrspacecast(lc.builder.bitcast(gv, ir.PointerType(elem_p.pointee, addrspace=space)), elem_p)

    # ---- deferred codegen -------------------------------------------------------
    def device_launch(self, lc, node, marker, grid, block, args, argtypes) -> None:
        """CDP2: ask the device runtime for the child's parameter buffer, fill it with the flat
        parameters at natural alignment (the kernel entry's layout), launch on the default stream."""
        b = lc.builder
        m = lc.module
        get_buf = m.globals.get(CDP2_GET_BUFFER) or ir.Function(
            m, ir.FunctionType(I8P, [I8P, DIM3, DIM3, i32]), name=CDP2_GET_BUFFER)
        launch = m.globals.get(CDP2_LAUNCH) or ir.Function(m, ir.FunctionType(i32, [I8P, I8P]), name=CDP2_LAUNCH)
        g = ir.Constant(DIM3, ir.Undefined)
        bl = ir.Constant(DIM3, ir.Undefined)
        for k in range(3):
            g = b.insert_value(g, grid[k], k)
            bl = b.insert_value(bl, block[k], k)
        buf = b.call(get_buf, [marker, g, bl, ir.Constant(i32, 0)], name="child.params")
        got = b.icmp_unsigned("!=", buf, ir.Constant(I8P, None))
        with b.if_then(got):
            flat = [p for t, a in zip(argtypes, args) for p in flatten(b, t, a)]
            offsets, _ = param_offsets([param_size(p.type) for p in flat])
            for value, off in zip(flat, offsets):
                slot = b.bitcast(b.gep(buf, [ir.Constant(i64, off)]), value.type.as_pointer())
                b.store(value, slot)
            b.call(launch, [buf, ir.Constant(I8P, None)])

    def deferred_entry_name(self, job) -> str:
        return kernel_name(job) if job.kind == "kernel" else job.entry

    def deferred_entry_type(self, job):
        if job.kind == "kernel":
            return ir.FunctionType(ir.VoidType(), [p for t in job.argtypes for p in flat_param_types(t)])
        return super().deferred_entry_type(job)

    def entry_finished(self, mod, job) -> bool:
        if job.kind != "kernel":
            return True
        try:
            return not mod.get_function(kernel_name(job)).is_declaration
        except NameError:
            return False

    # ---- pipeline -------------------------------------------------------------
    def link_runtime(self, mod, jobs) -> None:
        """Math through libdevice: LLVM intrinsics NVPTX cannot select become ``__nv_*`` calls,
        and libdevice is linked when anything calls into it; in flush-to-zero mode when the toplevel
        job (a kernel, or compile_ptx's device function) has ``fastmath=True``, as NVVM's ``-ftz=1``."""
        for fn in list(mod.functions):
            m = re.fullmatch(r"llvm\.(\w+)\.(f32|f64)", fn.name)
            if fn.is_declaration and m and m.group(1) in _LIBDEVICE_INTRINSICS:
                fn.name = self.libm_name(m.group(1), m.group(2) == "f32")
        wanted = sorted(fn.name for fn in mod.functions if fn.is_declaration and fn.name.startswith("__nv_"))
        if not wanted:
            return
        lib = _libdevice_module()
        if lib is None:
            raise CompileError(f"the kernel needs libdevice for {', '.join(wanted)}, and libdevice.10.bc was not found",
                               hint="install the CUDA toolkit (nvvm/libdevice) and set CUDA_HOME, "
                                    "or set KDEBUG_LIBDEVICE to the file")
        lib.triple, lib.data_layout = mod.triple, mod.data_layout
        mod.link_in(lib)
        if jobs and getattr(jobs[0].job.function, "options", {}).get("fastmath"):
            mod.link_in(llvm.parse_assembly(_REFLECT_FTZ))

    def optimize(self, mod, jobs, compilation) -> None:
        run_pipeline(self.tm, mod, 3)

    def finish_ir(self, mod, job, compilation) -> list[str]:
        """A kernel job gets its kernel entry (ptx_kernel, flat parameters); its body becomes internal."""
        if job.kind != "kernel":
            return []
        mod.link_in(llvm.parse_assembly(str(build_kernel_entry(job, self, lineinfo=self.options.lineinfo))))
        body = mod.get_function(job.entry)
        body.linkage = "internal"
        body.add_function_attribute("alwaysinline")
        return [kernel_name(job)]

    def finish_module(self, mod, jobs, compilation) -> None:
        """Only kernel entries (and a device job's entry, for compile_ptx) stay visible."""
        keep = {self.deferred_entry_name(j) for j in jobs if j.kind == "kernel" or j.parent is None}
        for fn in mod.functions:
            if not fn.is_declaration and fn.name not in keep:
                fn.linkage = "internal"
        for gv in mod.global_variables:
            if not gv.is_declaration:
                gv.linkage = "internal"

    def validate(self, mod, jobs) -> None:
        mod.verify()
        for fn in mod.functions:
            if fn.is_declaration and not fn.name.startswith("llvm.") and fn.name not in CDP2_NAMES + ("vprintf",) \
                    and fn.name not in self._externs:
                raise CompileError(f"the GPU has no {fn.name}: nothing in libdevice or the device runtime defines it",
                                   hint="use math functions, cuda intrinsics and device functions only")

    def emit(self, mod, jobs, compilation):
        run_passes(self.tm, mod, POST_INLINE_PASSES)
        ptx = self.tm.emit_assembly(mod)
        # external functions (cuda.declare_device) and the device runtime resolve at a link step
        relocatable = any(name in ptx for name in CDP2_NAMES) or any(n in ptx for n in self._externs)
        # ptxas runs only when its report or cubin is asked for (ptxas_report)
        return PtxArtifact(ptx=ptx, arch=self.arch, needs_cudadevrt=relocatable,
                           # where the loader finds libcudadevrt.a to link it with (None: no toolkit)
                           cudadevrt_dir=toolkit.cuda_libdir() if relocatable else None,
                           kernels={j.id: kernel_name(j) for j in jobs if j.kind == "kernel"})

    def ptxas_report(self, artifact: PtxArtifact) -> dict | None:
        """ptxas's report (registers, stack, spills, the cubin) of an emitted module: assembled on the
        first request and kept in the artifact, since it takes most of a compile_ptx's time. None when
        this target does not assemble (``ptxas=False``)."""
        if not self.use_ptxas:
            return None
        if artifact.ptxas is None:
            artifact.ptxas = assembler.run_ptxas(artifact.ptx, artifact.arch, artifact.needs_cudadevrt)
            if not artifact.ptxas["available"]:
                self._say_ptxas_missing()
        return artifact.ptxas

    def stages(self) -> tuple[Stage, ...]:
        return (stages.PTX,) * self.ptx_per_job + (stages.PTXAS,) * self.use_ptxas

    def run_stage(self, stage: Stage, artifact: PtxArtifact, jobs) -> dict:
        """``ptx``: the module's PTX for the toplevel, each other job's own functions from it;
        ``ptxas``: assemble it and report (to the toplevel, or to every job with ``ptx_per_job``)."""
        top, ptx = jobs[0], artifact.ptx
        if stage == stages.PTX:
            return {j.id: ptx if j is top else ptx_function_text(ptx, self.deferred_entry_name(j)) or ptx
                    for j in jobs}
        text = format_ptxas(self.ptxas_report(artifact))
        return {j.id: text for j in (jobs if self.ptx_per_job else jobs[:1])}

    def _say_ptxas_missing(self) -> None:
        if self._ptxas_missing_said or self.bus is None:
            return
        self._ptxas_missing_said = True
        self.bus.emit(E.Diagnostic(severity="note", category="compile",
                                   message="ptxas is not on PATH: PTX is emitted but not assembled "
                                           "(no register, stack or spill report)",
                                   text="note: ptxas is not on PATH; install the CUDA toolkit or set CUDA_HOME "
                                        "to assemble PTX and see registers, stack and spills"))

    def load(self, artifact, jobs):
        if self.loader is None:
            return {j.id: None for j in jobs}
        return self.loader(artifact, jobs)
