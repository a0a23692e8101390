"""memcheck in the CPU target's IR: bounds checks, and the runtime record's error path.

In a barrier-free kernel with a loop a failed check records the access in its thread's slot
(conditional stores), sets the context's ``failed`` flag and ends the thread: the
thread loop keeps no early exit, so LLVM still vectorises it. After the loop the
launcher tests the flag; ``kdebug.rt.first_failure`` then claims the runtime
record (kdebug/runtime/memcheck.py reads it) for the block's first failed thread,
and the launch stops. Elsewhere (straight-line kernels, device functions, kernels with
barriers, the sanitizers' instrumented code) a failed check calls the cold ``kdebug.rt.oob`` (one
definition per process: ``runtime_module``), which claims the record at once and leaves the launcher with ``longjmp``. A kernel in the region form
(forms/regions/cut.py, ``fresh_checks``) records a failed check in its thread's slot with the site's
``FRESH`` bit and ends the thread's step; its launcher reports the first such thread in thread order
after each thread loop (forms/regions/scheduler.py), so the thread loops keep no early exit either.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.ir_helpers import cond_value, const, declare, field
from kdebug.targets.cpu.layout import (CONTEXT_P, CTX_CTAID, CTX_FAIL_SLOTS, CTX_JMPBUF, CTX_NTID, CTX_RUNTIME,
                                       CTX_TID, I8P, RT_AUX, RT_CTAID, RT_ERROR, RT_EXTENT, RT_INDEX, RT_SITE, RT_TID,
                                       RUNTIME_P, VOID, i1, i32, i64)


FRESH = 1 << 30  # a failure slot's site: a failed check that ended its thread's step (region form), reported
# after the thread loop; without it, a failure a loop in rounds holds back until the region after the loop
FAILED_STEP = -1  # the barrier field a region-form thread leaves when a failed check ended its step

FAILED_CHECK_BLOCK = "oob"  # the name of a failed check's block (block_limits.py finds the checks by it)


def emit_record_error(b: ir.IRBuilder, rt_i8, kind, site, ctaid, tid, index=(), extent=(), aux=()):
    """First error wins: cmpxchg error 0 -> kind; the winner writes the details."""
    rt = b.bitcast(rt_i8, RUNTIME_P)
    kind = kind if isinstance(kind, ir.Value) else const(kind)
    pair = b.cmpxchg(field(b, rt, RT_ERROR), const(0), kind, "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1)):
        b.store(site, field(b, rt, RT_SITE))
        for k in range(3):
            b.store(ctaid[k], field(b, rt, RT_CTAID, k))
            b.store(tid[k], field(b, rt, RT_TID, k))
        for k, v in enumerate(index):
            b.store(v, field(b, rt, RT_INDEX, k))
        for k, v in enumerate(extent):
            b.store(v, field(b, rt, RT_EXTENT, k))
        for k, v in enumerate(aux):
            b.store(v, field(b, rt, RT_AUX, k))


def error_flag(b: ir.IRBuilder, rt_i8):
    """True when the launch has failed (rt may be null)."""
    rt = b.bitcast(rt_i8, RUNTIME_P)
    has = b.icmp_unsigned("!=", rt_i8, ir.Constant(I8P, None))
    return cond_value(b, has, lambda: b.icmp_unsigned(
        "!=", b.load_atomic(field(b, rt, RT_ERROR), "monotonic", 4), const(0)), const(0, i1))


def thread_position(b: ir.IRBuilder, ctx):
    """(blockIdx, threadIdx) of a thread context, three i32 each."""
    ctaid = [b.load(field(b, ctx, CTX_CTAID, k)) for k in range(3)]
    tid = [b.load(field(b, ctx, CTX_TID, k)) for k in range(3)]
    return ctaid, tid


OOB = "kdebug.rt.oob"
OOB_ATTRIBUTES = ("cold", "noreturn", "nounwind")
# what LLVM inferred of the context argument when each module had the definition: the function only reads the
# context and keeps no pointer to it. Declared, so that the kernel's own code is optimised as it was.
OOB_CONTEXT_ATTRIBUTES = ("captures(none)", "readonly")


def _oob_context_attributes(fn: ir.Function) -> ir.Function:
    for a in OOB_CONTEXT_ATTRIBUTES:
        set.add(fn.args[0].attributes, a)  # llvmlite's list of parameter attributes lacks readonly
    return fn


def oob_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.oob(ctx, site, i0, i1, i2, e0, e1, e2)``, declared in ``module``: record an out-of-bounds
    access, stop the launcher. Defined once per process, in the CPU target's runtime module
    (``runtime_module``, loaded with the JIT engine: target.py's ``execution_engine``), not in every
    kernel's module: the same function each time, which every compile with memcheck printed, parsed,
    optimised and generated code for (its machine code was a sixth of saxpy's tier 0)."""
    fn = module.globals.get(OOB)
    return fn if fn is not None else _oob_context_attributes(declare(module, OOB, VOID, [CONTEXT_P, i32] + [i64] * 6,
                                                                     OOB_ATTRIBUTES))


def define_oob(module: ir.Module) -> ir.Function:
    """The definition of ``kdebug.rt.oob`` (``oob_function``) in ``module``."""
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i32] + [i64] * 6), name=OOB)
    for a in ("noinline",) + OOB_ATTRIBUTES:
        fn.attributes.add(a)
    _oob_context_attributes(fn)
    ctx, site = fn.args[0], fn.args[1]
    idx, ext = fn.args[2:5], fn.args[5:8]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    rt = b.load(field(b, ctx, CTX_RUNTIME))
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        ctaid, tid = thread_position(b, ctx)
        emit_record_error(b, rt, M.OUT_OF_BOUNDS, site, ctaid, tid, idx, ext)
    jb = b.load(field(b, ctx, CTX_JMPBUF))
    with b.if_then(b.icmp_unsigned("!=", jb, ir.Constant(I8P, None))):
        longjmp = declare(module, "longjmp", VOID, [I8P, i32], ("noreturn", "nounwind"))
        b.call(longjmp, [jb, const(1)])
        b.unreachable()
    b.call(declare(module, "llvm.trap", VOID, [], ("noreturn", "nounwind")), [])
    b.unreachable()
    return fn


def runtime_module() -> ir.Module:
    """The runtime functions the CPU target's kernels call, for the process's JIT engine: ``kdebug.rt.oob``."""
    module = ir.Module(name="kdebug.rt")
    define_oob(module)
    return module


def emit_bounds_check(lc, node, arr_t, indices, extents, access: str, thread_exit: bool = False,
                      on_fail=None) -> None:
    """``idx <u extent`` for every dimension. On failure, with ``thread_exit`` (see ``ends_thread``):
    record the access and end the thread; with ``on_fail(b, site, index, extent)`` (a lockstep run,
    lockstep.py): that, three of each; otherwise report and stop the launcher."""
    b = lc.builder
    if lc.thread_ctx is None:
        return
    ok = None
    for k, e in zip(indices, extents):
        c = b.icmp_unsigned("<", k, e)
        ok = c if ok is None else b.and_(ok, c)
    base = node.value
    array = base.id if isinstance(base, ast.Name) else ast.unparse(base)
    # an update (a[i] += x) loads before it stores: its first bad access is the read, which is what
    # compute-sanitizer reports on a GPU ("Invalid __global__ read")
    access = "read" if access == "update" else access
    site = lc.state.check_sites.add(M.Site("access", lc.tf.name, lc.src.loc(node), array, lc.memory_space(node),
                                  access, arr_t.ndim, function_kind=lc.tf.kind, debug=lc.debug))
    fail = lc.new_block(FAILED_CHECK_BLOCK)
    cont = lc.new_block("inbounds")
    br = b.cbranch(ok, cont, fail)
    br.set_weights([1 << 20, 1])
    b.position_at_end(fail)
    idx = list(indices) + [const(0, i64)] * (3 - len(indices))
    ext = list(extents) + [const(1, i64)] * (3 - len(extents))
    if on_fail is not None:
        on_fail(b, site, idx, ext)
    elif thread_exit:
        record_in_slot(b, lc.thread_ctx, site, indices, extents)
        b.branch(lc.function_exit)  # the thread's run of the kernel ends
    else:
        b.call(oob_function(lc.module), [lc.thread_ctx, const(site)] + idx + ext)
        b.unreachable()
    b.position_at_end(cont)


def ends_thread(lc) -> bool:
    """Whether a failed check in the code being lowered may simply end its thread: a barrier-free
    kernel's own code (there, leaving the kernel ends the thread; a coroutine must reach its final
    suspend, an out-of-line device function would return to its caller)."""
    return (lc.tf is lc.function_tf and lc.tf.kind == "kernel" and "barrier" not in lc.function_tf.features
            and lc.function_exit is not None)


def has_loop(tree) -> bool:
    """Whether a kernel's source has a loop: per-thread work a vectorised thread loop pays back.
    (Measured on saxpy, 2^24 floats, one core: a straight-line kernel gains nothing from vectorising,
    being memory-bound, while the vectorisable checks double its compile time; a 32-step polynomial
    per element runs 5x faster with them.)"""
    return any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree))


def fail_slot_fields(b: ir.IRBuilder, slots, nt):
    """The failure slots of a block's ``nt`` threads, one array per field, so that a vectorised thread
    loop's (masked) stores to them are contiguous: sites (i32; 0 while the thread has not failed),
    then index 0..2 and extent 0..2 (i64 each). The launcher allocates FAIL_SLOT_BYTES a thread."""
    sites = b.bitcast(slots, ir.PointerType(i32))
    sites_bytes = b.and_(b.add(b.mul(nt, const(4, i64)), const(7, i64)), const(-8, i64))
    wide = b.bitcast(b.gep(slots, [sites_bytes], inbounds=True), ir.PointerType(i64))
    index = [b.gep(wide, [b.mul(nt, const(k, i64))], inbounds=True) for k in range(3)]
    extent = [b.gep(wide, [b.mul(nt, const(3 + k, i64))], inbounds=True) for k in range(3)]
    return sites, index, extent


def record_in_slot(b: ir.IRBuilder, ctx, site: int, indices, extents) -> None:
    """The failed access into the thread's slots: site, index and extent per dimension."""
    tid = [b.zext(b.load(field(b, ctx, CTX_TID, k)), i64) for k in range(3)]
    ntid = [b.zext(b.load(field(b, ctx, CTX_NTID, k)), i64) for k in range(3)]
    t = b.add(tid[0], b.mul(ntid[0], b.add(tid[1], b.mul(ntid[1], tid[2]))))
    nt = b.mul(b.mul(ntid[0], ntid[1]), ntid[2])
    sites, index, extent = fail_slot_fields(b, b.load(field(b, ctx, CTX_FAIL_SLOTS)), nt)
    b.store(const(site), b.gep(sites, [t], inbounds=True))
    for k, (v, e) in enumerate(zip(indices, extents)):
        b.store(v, b.gep(index[k], [t], inbounds=True))
        b.store(e, b.gep(extent[k], [t], inbounds=True))


def any_failed(b: ir.IRBuilder, slots, nt, mask: int | None = None):
    """Whether any of the block's ``nt`` threads recorded a failed access: an or over the sites (a loop
    LLVM vectorises; the thread loop itself keeps no flag, whose update it would not vectorise); with
    ``mask``, a failure whose site has those bits (``FRESH``)."""
    sites = fail_slot_fields(b, slots, nt)[0]
    fn = b.function
    pre = b.block
    head, body, done = (fn.append_basic_block(f"anyfail.{n}") for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(i64, "t")
    acc = b.phi(i32, "acc")
    t.add_incoming(const(0, i64), pre)
    acc.add_incoming(const(0), pre)
    b.cbranch(b.icmp_unsigned("<", t, nt), body, done)
    b.position_at_end(body)
    acc.add_incoming(b.or_(acc, b.load(b.gep(sites, [t], inbounds=True))), body)
    t.add_incoming(b.add(t, const(1, i64), flags=["nuw"]), body)
    b.branch(head)
    b.position_at_end(done)
    if mask is not None:
        acc = b.and_(acc, const(mask))
    return b.icmp_unsigned("!=", acc, const(0))


def first_failure_function(module: ir.Module, fresh: bool = False) -> ir.Function:
    """``kdebug.rt.first_failure(ctx, nt)``: claim the runtime record for the block's first thread (in
    thread order) whose slot holds a failed access; ``fresh``: a failure with the ``FRESH`` bit (the
    record gets the site without it)."""
    name = "kdebug.rt.first_fresh_failure" if fresh else "kdebug.rt.first_failure"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [CONTEXT_P, i64]), name=name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "nounwind"):
        fn.attributes.add(a)
    ctx, nt = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    head, body, found, done = (fn.append_basic_block(n) for n in ("scan", "slot", "found", "done"))
    rt = b.load(field(b, ctx, CTX_RUNTIME))
    sites, index, extent = fail_slot_fields(b, b.load(field(b, ctx, CTX_FAIL_SLOTS)), nt)
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(i64, "t")
    t.add_incoming(const(0, i64), entry)
    b.cbranch(b.icmp_unsigned("<", t, nt), body, done)
    b.position_at_end(body)
    site = b.load(b.gep(sites, [t], inbounds=True))
    t.add_incoming(b.add(t, const(1, i64)), body)
    if fresh:
        hit = b.icmp_unsigned("!=", b.and_(site, const(FRESH)), const(0))
        site = b.and_(site, const(~FRESH))
        b.cbranch(hit, found, head)
    else:
        b.cbranch(b.icmp_unsigned("!=", site, const(0)), found, head)
    b.position_at_end(found)
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        bx, by = (b.load(field(b, ctx, CTX_NTID, k)) for k in range(2))
        t32 = b.trunc(t, i32)
        tid = [b.urem(t32, bx), b.urem(b.udiv(t32, bx), by), b.udiv(t32, b.mul(bx, by))]
        ctaid = [b.load(field(b, ctx, CTX_CTAID, k)) for k in range(3)]
        idx = [b.load(b.gep(p, [t], inbounds=True)) for p in index]
        ext = [b.load(b.gep(p, [t], inbounds=True)) for p in extent]
        emit_record_error(b, rt, M.OUT_OF_BOUNDS, site, ctaid, tid, idx, ext)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
