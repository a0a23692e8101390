"""The grid launcher: the finish pass wraps each kernel in ``<entry>.grid``.

``void <entry>.grid(i8* params, i32* dims, i64 first_block, i64 end_block, i8* runtime)``
is a small wrapper: it allocates the blocks' shared memory and the thread
contexts, calls ``_setjmp`` and then the launcher body. A failed check records
the error in the runtime record and ``longjmp``s back to the wrapper, which
frees everything and returns: the launch stops, the process lives on.

The body depends on what typeinfer found in the kernel:

* barrier-free: a plain loop over blocks and threads that calls the kernel,
  which is inlined into it and vectorised by LLVM (``plain_blocks``);
* with barriers, in the region form (regions.py): a thread loop per region
  between barriers, the block scheduler's code where the threads do not agree
  (region_scheduler.py);
* with barriers otherwise: every thread a coroutine, run by the block scheduler
  (block_scheduler.py). A grid barrier makes it keep every block of the grid
  alive at once.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from kdebug.frontend.lower import llvm_type
from kdebug.lazy_dataclasses import dataclass
from kdebug.targets.cpu import progress_ir
from kdebug.targets.cpu.checks import sanitizers as sanitizer_ir
from kdebug.targets.cpu.forms.coroutines.scheduler import BlockScheduler
from kdebug.targets.cpu.forms.regions.bounds import ALIKE_SUFFIX, BOUND_SUFFIX, STRIDE_SUFFIX
from kdebug.targets.cpu.forms.regions.scheduler import SCHEDULER_SUFFIX, SMALL_BLOCKS_SUFFIX, region_blocks
from kdebug.targets.cpu.forms.coroutines.lockstep import LOCKSTEP_GROUP
from kdebug.targets.cpu.ir_helpers import Loop, cond_value, const, declare, each_thread, entry_alloca, field
from kdebug.targets.cpu.layout import (CONTEXT, CONTEXT_P, CTX_BARRIER, CTX_CORO, CTX_CTAID, CTX_DEPTH,
                                       CTX_DYN_BYTES, CTX_DYN_SHARED, CTX_FRAME, CTX_JMPBUF, CTX_NCTAID,
                                       CTX_NTID, CTX_RUNTIME, CTX_SHARED, CTX_TID, CTX_SAN_SHADOW, CTX_EPOCH,
                                       CTX_GRID_EPOCH, CTX_SEQ, CTX_SAN_TID, CTX_SAN_GID_BASE, CTX_SAN_NT,
                                       CTX_SAN_SHARED_BYTES, CTX_RAISED, CTX_FAIL_SLOTS, FAIL_SLOT_BYTES,
                                       SHADOW_BYTES, I8P, JMPBUF_BYTES,
                                       LAUNCHER_TYPE, RT_DYN_SHARED, RT_NPERM, RT_PERM, RT_PERM_NT, RUNTIME_P,
                                       SHARED_ALIGN, VOID, i8, i32, i64, param_struct_type)
from kdebug.targets.cpu.checks.memcheck import any_failed, error_flag, fail_slot_fields, first_failure_function


PLACEHOLDER_ENTRY = "kdebug.launcher.entry"  # the kernel's name in a cached launcher module
CACHE_SIZE = 64  # launcher modules kept (one per kernel signature and launcher specification)
_cache: collections.OrderedDict = collections.OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class RegionLaunch:
    """What the launcher body of a kernel in the region form reads of it (forms/regions/scheduler.py): what its
    lowering recorded (``cut.RegionLowering``), what the regions stage's cut added (``cut.RegionCut``) and the
    target's ``narrow`` option."""
    cuts: int  # the kernel's cuts (barriers, warp operations, a loop in rounds' two stops): regions but one
    frame_bytes: int  # the region frame of one block: the per-thread columns and the block-uniform entries
    votes: bool  # a syncthreads_count/and/or: the launcher sums the votes
    uniform_copy: tuple | None  # the updated uniform variables' entries, copied at a barrier (cut.RegionCut)
    narrow: bool  # each thread loop over the threads its region's bound lets in (bounds.py)
    warp_columns: tuple | None  # (operands, copies): the warp operations' columns' frame offsets
    rounds: tuple | None  # (the round counter's frame offset, (iteration region, ...)) of loops in rounds
    fresh: bool  # memcheck: a failed check ends its thread's step, reported after the thread loop
    # (x, y, z): the thread loops have a copy for blocks no larger, where memcheck's checks on the thread
    # index fold (block_limits.py); None: one copy
    block_limits: tuple | None = None


@dataclass(frozen=True)
class LauncherSpec:
    """Everything ``<entry>.grid`` depends on besides the kernel's signature, made once by finish_ir (target.py):
    the launcher cache's key (``launcher_module``) and ``build_grid_launcher``'s input.
    ``coroutine``: every thread a coroutine, run by the block scheduler; ``grid_sync``: a grid barrier (every
    block of the grid alive at once); ``shared_bytes``, ``shared_align``: each block's static shared memory and
    its alignment (the largest a shared array of the module asks for, at least 64); ``racecheck``,
    ``initcheck``: the sanitizers' shadow memory; ``thread_exit``: the kernel's failed checks end their thread
    (memcheck_ir.py), and the launcher gives it failure slots and reports from them; ``lockstep``: the kernel
    has lockstep loops (lockstep.py); ``shuffle``: a barrier-free kernel's launcher also has the
    ``--shuffle-threads`` path (an out-of-line call of the kernel in a loop of its own: a sixth of a small
    kernel's emit time, so it is built only where it is asked for or pays, target.py's finish_ir);
    ``regions``: the region form's part, None for the other forms."""
    coroutine: bool
    grid_sync: bool
    shared_bytes: int
    shared_align: int = SHARED_ALIGN
    racecheck: bool = False
    initcheck: bool = False
    thread_exit: bool = False
    lockstep: bool = False
    shuffle: bool = True
    regions: RegionLaunch | None = None


def launcher_module(entry: str, argtypes, target, spec: LauncherSpec) -> tuple[llvm.ModuleRef, bytes]:
    """``build_grid_launcher``'s module as LLVM has it, ready for ``link_in``, and the bitcode it was
    cloned from (its kernel named ``PLACEHOLDER_ENTRY``: ``name_entry`` renames it). The module depends
    on the kernel's name only through three function names, so it is built and parsed once per process
    for each signature and specification, and cloned and renamed for each kernel (measured: saxpy's
    launcher takes ~2 ms to build and parse, matmul_tiled's ~13, a clone ~0.2 and ~1)."""
    if spec.coroutine and not spec.shuffle:  # the block scheduler always reads the shuffle table: one launcher
        spec = dataclasses.replace(spec, shuffle=True)
    key = (tuple(argtypes), target.triple, target.data_layout, spec)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is None:
            base = llvm.parse_assembly(str(build_grid_launcher(PLACEHOLDER_ENTRY, argtypes, target, spec)))
            hit = _cache[key] = (base, base.as_bitcode())
            if len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
        else:
            _cache.move_to_end(key)
        mod = hit[0].clone()
    name_entry(mod, entry)
    return mod, hit[1]


def name_entry(mod, entry: str) -> None:
    """Give a cached launcher module's kernel declaration, launcher and body their kernel's name."""
    for suffix in ("", ".grid", ".grid.body"):
        mod.get_function(PLACEHOLDER_ENTRY + suffix).name = entry + suffix
    # a region-form kernel's launcher asks these (region_bounds.py) and has its block scheduler apart
    for suffix in (BOUND_SUFFIX, STRIDE_SUFFIX, ALIKE_SUFFIX, SCHEDULER_SUFFIX, SMALL_BLOCKS_SUFFIX):
        try:
            mod.get_function(PLACEHOLDER_ENTRY + suffix).name = entry + suffix
        except NameError:
            pass


# ``<entry>.grid.body``'s parameters (``LauncherBody`` names them); a function the body calls with them first
# and arguments of its own after them (the region form's ``<entry>.grid.scheduler``) has a LauncherBody too
BODY_PARAM_TYPES = [I8P, ir.PointerType(i32), i64, i64, I8P, I8P, I8P, CONTEXT_P, i64, i64, I8P, I8P, I8P]
BODY_PARAMS = len(BODY_PARAM_TYPES)


def build_grid_launcher(entry: str, argtypes, target, spec: LauncherSpec) -> ir.Module:
    """The module holding ``<entry>.grid`` (and its body), which calls the kernel ``entry``, as ``spec`` says
    (``LauncherSpec``)."""
    m = ir.Module(name=entry + ".grid")
    m.triple, m.data_layout = target.triple, target.data_layout
    kernel = ir.Function(m, ir.FunctionType(VOID, [CONTEXT_P] + [llvm_type(t) for t in argtypes]), name=entry)
    body_ty = ir.FunctionType(VOID, BODY_PARAM_TYPES)
    body = ir.Function(m, body_ty, name=entry + ".grid.body")
    body.linkage = "internal"
    body.attributes.add("noinline")
    # the blocks' shared memory, the thread contexts: the launcher's own allocations, which no argument of
    # the kernel can reach (so LLVM may reorder a thread loop's shared-memory accesses past the user's arrays')
    body.args[6].add_attribute("noalias")
    body.args[7].add_attribute("noalias")
    body.args[11].add_attribute("noalias")  # the failure slots: the launcher's own allocation
    body.args[12].add_attribute("noalias")  # the region frame: the same
    shared_align = max(spec.shared_align, SHARED_ALIGN)
    shared_stride = (spec.shared_bytes + shared_align - 1) // shared_align * shared_align
    ctx_bytes = target.tm.target_data.get_abi_size(_binding_type(CONTEXT))
    sanitize = (spec.racecheck, spec.initcheck) if spec.racecheck or spec.initcheck else None
    _build_wrapper(m, body, ctx_bytes, spec.coroutine, spec.grid_sync, shared_stride, sanitize, spec.thread_exit,
                   spec.lockstep, spec.regions.frame_bytes if spec.regions is not None else None, shared_align)
    lb = LauncherBody(body, kernel, argtypes, shared_stride, sanitize, spec.thread_exit,
                      spec.shuffle or spec.coroutine)
    if spec.regions is not None:
        kty = kernel.ftype
        lb.bound = ir.Function(m, ir.FunctionType(i64, [kty.args[0], i32] + list(kty.args[1:])),
                               name=entry + BOUND_SUFFIX)
        lb.stride = ir.Function(m, lb.bound.ftype, name=entry + STRIDE_SUFFIX)
        lb.alike = ir.Function(m, ir.FunctionType(ir.IntType(1), [i32]), name=entry + ALIKE_SUFFIX)
        region_blocks(lb, spec.regions)
    elif spec.coroutine:
        BlockScheduler(lb, spec.grid_sync, spec.lockstep).build()
    else:
        plain_blocks(lb)
    lb.b.position_at_end(lb.stop)
    lb.b.ret_void()
    return m


def _build_wrapper(m, body, ctx_bytes: int, coroutine: bool, grid_sync: bool, shared_stride: int,
                   sanitize, thread_exit: bool, lockstep: bool = False, region_frame: int | None = None,
                   shared_align: int = SHARED_ALIGN) -> None:
    """``<entry>.grid``: memory, setjmp, body, free. ``sanitize``: (racecheck, initcheck) or None;
    ``region_frame``: the bytes of a region-form kernel's per-thread columns (its threads' contexts too)."""
    fn = ir.Function(m, LAUNCHER_TYPE, name=body.name[:-len(".body")])
    params, dims, first, last, runtime = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    calloc = declare(m, "calloc", I8P, [i64, i64])
    free = declare(m, "free", VOID, [I8P])
    setjmp = declare(m, "_setjmp", i32, [I8P], ("returns_twice",))
    d = [b.zext(b.load(b.gep(dims, [const(k)])), i64) for k in range(6)]
    nt = b.mul(b.mul(d[3], d[4]), d[5])
    # blocks alive at once: the grid (grid barrier), a few (lockstep loops run across them), or one
    group = b.sub(last, first) if grid_sync else const(LOCKSTEP_GROUP if lockstep else 1, i64)
    group = b.select(b.icmp_signed("<", group, const(1, i64)), const(1, i64), group)
    # dynamic shared memory (k[grid, block, stream, nbytes]): from the runtime record, for host launches
    rtp = b.bitcast(runtime, RUNTIME_P)
    host = b.and_(b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None)),
                  b.icmp_signed("==", b.load(b.gep(dims, [const(6)])), const(0)))
    dyn = cond_value(b, host, lambda: b.load(field(b, rtp, RT_DYN_SHARED)), const(0, i64))
    dyn_stride = b.and_(b.add(dyn, const(shared_align - 1, i64)), const(-shared_align, i64))
    stride = b.add(const(shared_stride, i64), dyn_stride)
    allocated = b.call(calloc, [b.add(b.mul(group, stride), const(shared_align, i64)), const(1, i64)])
    # every block's shared memory starts at a multiple of shared_align (calloc's own is 16)
    aligned = b.and_(b.add(b.ptrtoint(allocated, i64), const(shared_align - 1, i64)), const(-shared_align, i64))
    shared = b.inttoptr(aligned, I8P)
    nctx = b.mul(group, nt) if coroutine or region_frame is not None else const(1, i64)
    ctxs = b.bitcast(b.call(calloc, [b.add(nctx, const(1, i64)), const(ctx_bytes, i64)]), CONTEXT_P)
    # a barrier-free kernel's failed checks record into one slot per thread (memcheck_ir.py)
    slots = b.call(calloc, [nt, const(FAIL_SLOT_BYTES, i64)]) if thread_exit else ir.Constant(I8P, None)
    frame = ir.Constant(I8P, None)
    if region_frame is not None:
        frame = b.call(calloc, [const(max(region_frame, 64), i64), const(1, i64)])
    shadow = ir.Constant(I8P, None)
    if sanitize:  # a shadow entry per byte of every block's shared memory
        shadow = b.call(calloc, [b.mul(b.mul(group, stride), const(SHADOW_BYTES, i64)), const(1, i64)])
    jb = b.alloca(ir.ArrayType(i8, JMPBUF_BYTES), name="jmpbuf")
    jb.align = 16
    jbp = b.bitcast(jb, I8P)
    r = b.call(setjmp, [jbp])
    with b.if_then(b.icmp_signed("==", r, const(0))):
        progress_ir.note_block(b, runtime, first)  # here, not in the body: the body's code stays as it was
        b.call(body, [params, dims, first, last, runtime, jbp, shared, ctxs, stride, dyn, shadow, slots, frame])
        if sanitize:  # a host launch's global hazards, once every block ran
            host = b.and_(b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None)),
                          b.icmp_signed("==", b.load(b.gep(dims, [const(6)])), const(0)))
            with b.if_then(host):
                b.call(sanitizer_ir.launch_end_function(m, sanitize[0]), [runtime, nt])
    if coroutine:  # the threads' coroutine frames (also after a failed check stopped the body)
        with Loop(b, const(0, i64), nctx, "free") as k:
            b.call(free, [b.load(field(b, b.gep(ctxs, [k]), CTX_FRAME))])
    b.call(free, [allocated])
    if region_frame is not None:
        b.call(free, [frame])
    if thread_exit:
        b.call(free, [slots])
    if sanitize:
        b.call(free, [shadow])
    b.call(free, [b.bitcast(ctxs, I8P)])
    b.ret_void()


def _binding_type(ty):
    """An llvmlite.binding TypeRef for an ir type (for its ABI size)."""
    mod = llvm.parse_assembly(f"@x = external global {ty}")
    return mod.get_global_variable("x").global_value_type


class LauncherBody:
    """The launcher body's prologue and the values both kinds of body use: the kernel's arguments,
    the launch dimensions, the thread contexts, the shuffle table, and the ``stop`` block."""

    def __init__(self, fn: ir.Function, kernel: ir.Function, argtypes, shared_stride: int, sanitize=None,
                 thread_exit: bool = False, shuffle: bool = True) -> None:
        self.fn, self.kernel, self.argtypes, self.shared_stride = fn, kernel, argtypes, shared_stride
        self.shuffle = shuffle  # the threads may run in a shuffled order (the table is read)
        self.sanitize = sanitize  # (racecheck, initcheck) or None
        self.thread_exit = thread_exit  # failed checks end their thread and leave a failure slot
        (params, dims, self.first, self.last, self.runtime, self.jbp, self.shared, self.ctxs, self.stride,
         self.dyn, self.san_shadow, self.fail_slots, self.frame) = fn.args[:BODY_PARAMS]  # then a function's own
        self.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
        pstruct = b.bitcast(params, ir.PointerType(param_struct_type(argtypes)))
        self.args = [b.load(b.gep(pstruct, [const(0), const(k)], inbounds=True)) for k in range(len(argtypes))]
        self.dims = [b.load(b.gep(dims, [const(k)])) for k in range(7)]  # gx gy gz bx by bz depth
        self._read_sizes(self.dims)
        if shuffle:
            self._load_shuffle_table()
        self.stop = fn.append_basic_block("stop")

    def on(self, fn: ir.Function) -> "LauncherBody":
        """A LauncherBody of ``fn``, a function of this module whose first parameters are the body's, the
        same kernel and launch (its own prologue: the arguments, the dimensions, the shuffle table)."""
        lb = LauncherBody(fn, self.kernel, self.argtypes, self.shared_stride, self.sanitize, self.thread_exit,
                          self.shuffle)
        # the region form's
        lb.bound, lb.stride, lb.alike = (getattr(self, n, None) for n in ("bound", "stride", "alike"))
        return lb

    def _load_shuffle_table(self) -> None:
        """--shuffle-threads: a permutation table in the runtime record, used when made for this block size."""
        b = self.b
        rt = b.bitcast(self.runtime, RUNTIME_P)
        perm_slot = b.alloca(ir.PointerType(i32), name="perm")
        nperm_slot = b.alloca(i64, name="nperm")
        b.store(ir.Constant(ir.PointerType(i32), None), perm_slot)
        b.store(const(1, i64), nperm_slot)
        with b.if_then(b.icmp_unsigned("!=", self.runtime, ir.Constant(I8P, None))):
            p = b.load(field(b, rt, RT_PERM))
            pnt = b.load(field(b, rt, RT_PERM_NT))
            with b.if_then(b.icmp_unsigned("==", pnt, self.nt32)):
                b.store(p, perm_slot)
                b.store(b.zext(b.load(field(b, rt, RT_NPERM)), i64), nperm_slot)
        self.perm = b.load(perm_slot)
        self.nperm = b.load(nperm_slot)
        self.use_perm = b.icmp_unsigned("!=", self.perm, ir.Constant(ir.PointerType(i32), None))

    def _read_sizes(self, dims) -> None:
        """The launch's dimensions (gx gy gz bx by bz depth), the block's sizes and its number of threads."""
        b = self.b
        self.dims = dims
        self.bx, self.by, self.bz = dims[3:6]
        self.nt32 = b.mul(b.mul(self.bx, self.by), self.bz)
        self.nt = b.zext(self.nt32, i64)

    @contextlib.contextmanager
    def within(self, limits):
        """While code is built for blocks no larger than ``limits`` (x, y, z), the block's sizes are read as
        ``umin(size, limit)``: the same values there, which LLVM knows to be at most the limits wherever they
        are used (the thread loops' bounds, the context's ``blockDim``). Only where the sizes fit the limits:
        the code built meanwhile must run for such launches alone."""
        b = self.b
        saved = self.dims, self.bx, self.by, self.bz, self.nt32, self.nt
        umin = b.module.declare_intrinsic("llvm.umin", [i32], ir.FunctionType(i32, [i32, i32]))
        assume = b.module.declare_intrinsic("llvm.assume", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(1)]))
        dims = list(self.dims)
        for k, limit in enumerate(limits):
            # and the sizes themselves, where something reads them rather than these values (measured: without
            # it, Harris's reduction #4 kept its loads' checks, 1.9-2.1 ns an element against 1.1)
            b.call(assume, [b.icmp_unsigned("<=", dims[3 + k], const(limit))])
            dims[3 + k] = b.call(umin, [dims[3 + k], const(limit)])
        self._read_sizes(dims)
        try:
            yield
        finally:
            self.dims, self.bx, self.by, self.bz, self.nt32, self.nt = saved

    def block_shadow(self, bi):
        """The shadow entries of the ``bi``-th block slot's shared memory."""
        b = self.b
        return b.gep(self.san_shadow, [b.mul(b.mul(bi, self.stride), const(SHADOW_BYTES, i64))])

    def end_block(self, c) -> None:
        """After a block's last thread: the sanitizers evict (and clear) its shared-memory entries."""
        if self.sanitize:
            self.b.call(sanitizer_ir.block_end_function(self.b.module, self.sanitize[0]), [c, self.stride])

    def init_ctx(self, c, blk, t32, shared_ptr, shadow_ptr=None) -> None:
        """Fill thread context ``c`` for block number ``blk`` (and thread ``t32`` unless None)."""
        b, d = self.b, self.dims
        for k in range(3):
            b.store(d[3 + k], field(b, c, CTX_NTID, k))
            b.store(d[k], field(b, c, CTX_NCTAID, k))
        gx64, gy64 = b.zext(d[0], i64), b.zext(d[1], i64)
        cx = b.trunc(b.urem(blk, gx64), i32)
        rest = b.udiv(blk, gx64)
        for k, v in enumerate((cx, b.trunc(b.urem(rest, gy64), i32), b.trunc(b.udiv(rest, gy64), i32))):
            b.store(v, field(b, c, CTX_CTAID, k))
        b.store(self.runtime, field(b, c, CTX_RUNTIME))
        b.store(d[6], field(b, c, CTX_DEPTH))
        b.store(shared_ptr, field(b, c, CTX_SHARED))
        b.store(b.gep(shared_ptr, [const(self.shared_stride, i64)]), field(b, c, CTX_DYN_SHARED))
        b.store(self.dyn, field(b, c, CTX_DYN_BYTES))
        b.store(self.jbp, field(b, c, CTX_JMPBUF))
        b.store(ir.Constant(I8P, None), field(b, c, CTX_CORO))
        b.store(const(0), field(b, c, CTX_BARRIER))
        b.store(const(0), field(b, c, CTX_RAISED))
        b.store(self.fail_slots, field(b, c, CTX_FAIL_SLOTS))
        if self.sanitize:
            b.store(shadow_ptr, field(b, c, CTX_SAN_SHADOW))
            b.store(const(1), field(b, c, CTX_EPOCH))
            b.store(const(0), field(b, c, CTX_GRID_EPOCH))
            b.store(const(0), field(b, c, CTX_SEQ))
            b.store(b.mul(blk, self.nt), field(b, c, CTX_SAN_GID_BASE))
            b.store(self.nt, field(b, c, CTX_SAN_NT))
            b.store(self.stride, field(b, c, CTX_SAN_SHARED_BYTES))
        if t32 is not None:
            self.set_tid(c, t32)

    def set_tid(self, c, t32) -> None:
        """threadIdx of linear thread number ``t32``."""
        b = self.b
        b.store(b.urem(t32, self.bx), field(b, c, CTX_TID, 0))
        b.store(b.urem(b.udiv(t32, self.bx), self.by), field(b, c, CTX_TID, 1))
        b.store(b.udiv(t32, b.mul(self.bx, self.by)), field(b, c, CTX_TID, 2))
        if self.sanitize:
            b.store(b.add(t32, const(1)), field(b, c, CTX_SAN_TID))

    def order(self, blk, k, phase):
        """The k-th thread to run in this phase: k, or the shuffled one."""
        b = self.b
        if not self.shuffle:
            return b.trunc(k, i32)
        sel = b.urem(b.add(blk, b.mul(phase, const(7, i64))), self.nperm)
        return cond_value(b, self.use_perm, lambda: b.load(b.gep(self.perm, [b.add(b.mul(sel, self.nt), k)])),
                          b.trunc(k, i32))


def plain_blocks(lb: LauncherBody) -> None:
    """Blocks one after the other; in each, the threads in order (a loop LLVM vectorises) or shuffled."""
    b = lb.b
    ctx = entry_alloca(b, CONTEXT, "ctx")  # a private alloca: LLVM forwards its fields and vectorises the loop
    if b.block is lb.fn.entry_basic_block:  # still in the entry block (no shuffle table read): the alloca
        b.position_at_end(b.block)  # went in above the builder's place, which llvmlite does not move
    with Loop(b, lb.first, lb.last, "block") as blk:
        lb.init_ctx(ctx, blk, None, lb.shared, lb.block_shadow(const(0, i64)) if lb.sanitize else None)
        if lb.shuffle:
            with b.if_else(lb.use_perm) as (shuffled, ordered):
                with shuffled:
                    _shuffled_threads(lb, ctx, blk)
                with ordered:
                    _threads_in_order(lb, ctx)
        else:
            _threads_in_order(lb, ctx)
        lb.end_block(ctx)
        nxt = lb.fn.append_basic_block("block.next")
        b.cbranch(error_flag(b, lb.runtime), lb.stop, nxt)
        b.position_at_end(nxt)
    b.branch(lb.stop)


def _threads_in_order(lb: LauncherBody, ctx) -> None:
    """The ordered threads of one block, then the report of the first failed one."""
    _ordered_threads(lb, ctx)
    if lb.thread_exit:  # a scan of the slots after the loop, not a flag set inside it:
        # LLVM does not vectorise the loop with that flag's conditional update (measured)
        _report_failed_thread(lb, ctx, any_failed(lb.b, lb.fail_slots, lb.nt))


def _shuffled_threads(lb: LauncherBody, ctx, blk) -> None:
    """--shuffle-threads: the block's threads in the permutation's order; the first failed check stops
    the block at once (the first in the order the threads ran)."""
    b = lb.b
    sites = fail_slot_fields(b, lb.fail_slots, lb.nt)[0] if lb.thread_exit else None
    with Loop(b, const(0, i64), lb.nt, "k") as k:
        t = lb.order(blk, k, const(0, i64))
        lb.set_tid(ctx, t)
        if lb.sanitize:
            b.store(const(0), field(b, ctx, CTX_SEQ))
        # one out-of-line call: a shuffled order (a debugging aid) needs no vectorised
        # copy of the kernel, and inlining it here would make emit optimise it again
        b.call(lb.kernel, [ctx] + lb.args, attrs=("noinline",))
        if lb.thread_exit:
            failed = b.icmp_unsigned("!=", b.load(b.gep(sites, [b.zext(t, i64)], inbounds=True)), const(0))
            _report_failed_thread(lb, ctx, failed)


def _ordered_threads(lb: LauncherBody, ctx) -> None:
    """The block's threads in order: x fastest, the innermost loop the one LLVM vectorises."""
    b = lb.b
    with each_thread(b, ctx, (lb.bx, lb.by, lb.bz), CTX_TID) as (tz, ty, tx):
        if lb.sanitize:
            b.store(const(0), field(b, ctx, CTX_SEQ))
            t = b.add(tx, b.mul(lb.bx, b.add(ty, b.mul(lb.by, tz))))
            b.store(b.add(t, const(1)), field(b, ctx, CTX_SAN_TID))
        b.call(lb.kernel, [ctx] + lb.args)


def _report_failed_thread(lb: LauncherBody, ctx, failed) -> None:
    """After threads ran: if a check failed, the runtime record gets the first failed thread's access
    (memcheck_ir.first_failure_function) and the launcher stops."""
    b = lb.b
    with b.if_then(failed, likely=False):
        b.call(first_failure_function(b.module), [ctx, lb.nt])
        b.branch(lb.stop)
        b.position_at_end(lb.fn.append_basic_block("failed.after"))
