"""Block semantics on the CPU target: barriers as coroutines, the grid launchers, memcheck IR.

How a kernel runs depends on what typeinfer found in it (``tf.features``):

* barrier-free: the launcher is a plain loop over blocks and threads that calls
  the kernel, which is inlined into it and vectorised by LLVM;
* with ``syncthreads`` (or ``syncthreads_count/and/or``, or a grid barrier):
  the kernel is lowered as an LLVM switched-resume coroutine (``llvm.coro.*``),
  one per emulated thread. A barrier stores its site id in the thread's context
  and suspends; the launcher's block scheduler runs every thread of a block up
  to its next barrier, checks that all of them wait at the same barrier
  (else a divergent-barrier error), combines the votes of
  ``syncthreads_count/and/or`` and resumes them all. Device functions that
  contain barriers are lowered inline into the kernel, so that their barriers
  are suspend points of the kernel's coroutine. A grid barrier
  (``cuda.cg.this_grid().sync()``) makes the launcher keep every block of the
  grid alive at once.

Each launcher ``<entry>.grid(params, dims, first_block, end_block, runtime)``
is a small wrapper: it allocates the blocks' shared memory and the thread
contexts, calls ``_setjmp`` and then the launcher body. A failed bounds check
records the error in the runtime record and ``longjmp``s back to the wrapper,
which frees everything and returns: the launch stops, the process lives on.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.runtime import memcheck as M

i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P = ir.PointerType(i8)
VOID = ir.VoidType()

# The runtime record (kdebug/runtime/memcheck.py RuntimeRecord): field indices.
RUNTIME = ir.LiteralStructType([i32, i32, ir.ArrayType(i32, 3), ir.ArrayType(i32, 3), ir.ArrayType(i64, 3),
                                ir.ArrayType(i64, 3), ir.ArrayType(i32, 4), ir.PointerType(i32), i32, i32, i64])
RT_ERROR, RT_SITE, RT_CTAID, RT_TID, RT_INDEX, RT_EXTENT, RT_AUX, RT_PERM, RT_NPERM, RT_PERM_NT, RT_DYN_SHARED = range(11)
JMPBUF_BYTES = 512  # glibc's jmp_buf is 200 bytes on x86-64, 312 on aarch64
WARP_FLAG = 1 << 30  # a waiting thread's barrier field: site | WARP_FLAG for cuda.syncwarp()
WARP = 32


class TokenType(ir.Type):
    """LLVM's ``token`` type (llvmlite.ir has none)."""

    def _to_string(self) -> str:
        return "token"

    def __eq__(self, other) -> bool:
        return isinstance(other, TokenType)

    def __hash__(self) -> int:
        return hash("token")


TOKEN = TokenType()
TOKEN_NONE = ir.FormattedConstant(TOKEN, "none")


def _c(v, ty=i32):
    return ir.Constant(ty, v)


def declare(module: ir.Module, name: str, ret, args, attrs=()) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
        for a in attrs:
            set.add(fn.attributes, a)
    return fn


def ctx_field(b: ir.IRBuilder, ctx, field: int, k: int | None = None):
    idx = [_c(0), _c(field)] + ([] if k is None else [_c(k)])
    return b.gep(ctx, idx, inbounds=True)


def rt_field(b: ir.IRBuilder, rt, field: int, k: int | None = None):
    idx = [_c(0), _c(field)] + ([] if k is None else [_c(k)])
    return b.gep(rt, idx, inbounds=True)


def if_then(b: ir.IRBuilder, cond, likely: bool | None = None):
    cm = b.if_then(cond, likely=likely)
    return cm


# ---- the error record ---------------------------------------------------------------------
def emit_record_error(b: ir.IRBuilder, rt_i8, kind: int, site, ctaid, tid, index=(), extent=(), aux=()):
    """First error wins: cmpxchg error 0 -> kind; the winner writes the details."""
    rt = b.bitcast(rt_i8, ir.PointerType(RUNTIME))
    pair = b.cmpxchg(rt_field(b, rt, RT_ERROR), _c(0), _c(kind), "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1)):
        b.store(site, rt_field(b, rt, RT_SITE))
        for k in range(3):
            b.store(ctaid[k], rt_field(b, rt, RT_CTAID, k))
            b.store(tid[k], rt_field(b, rt, RT_TID, k))
        for k, v in enumerate(index):
            b.store(v, rt_field(b, rt, RT_INDEX, k))
        for k, v in enumerate(extent):
            b.store(v, rt_field(b, rt, RT_EXTENT, k))
        for k, v in enumerate(aux):
            b.store(v, rt_field(b, rt, RT_AUX, k))


def cond_value(b: ir.IRBuilder, cond, make, default):
    """``cond ? make() : default`` where make() may only run when cond holds (no allocas: loops call this)."""
    fn = b.function
    pre = b.block
    then = fn.append_basic_block("cv.then")
    merge = fn.append_basic_block("cv.merge")
    b.cbranch(cond, then, merge)
    b.position_at_end(then)
    v = make()
    then_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    phi = b.phi(default.type)
    phi.add_incoming(default, pre)
    phi.add_incoming(v, then_end)
    return phi


def error_flag(b: ir.IRBuilder, rt_i8):
    """True when the launch has failed (rt may be null)."""
    rt = b.bitcast(rt_i8, ir.PointerType(RUNTIME))
    has = b.icmp_unsigned("!=", rt_i8, ir.Constant(I8P, None))
    return cond_value(b, has, lambda: b.icmp_unsigned(
        "!=", b.load_atomic(rt_field(b, rt, RT_ERROR), "monotonic", 4), _c(0)), _c(0, i1))


def oob_function(module: ir.Module, context_p) -> ir.Function:
    """``kdebug.rt.oob(ctx, site, i0, i1, i2, e0, e1, e2)``: record an out-of-bounds access, stop the launcher."""
    name = "kdebug.rt.oob"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(VOID, [context_p, i32] + [i64] * 6), name=name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "noreturn", "nounwind"):
        fn.attributes.add(a)
    ctx, site = fn.args[0], fn.args[1]
    idx, ext = fn.args[2:5], fn.args[5:8]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    from kdebug.targets.cpu.target import CTX_RUNTIME, CTX_JMPBUF
    rt = b.load(ctx_field(b, ctx, CTX_RUNTIME))
    with b.if_then(b.icmp_unsigned("!=", rt, ir.Constant(I8P, None))):
        ctaid = [b.load(ctx_field(b, ctx, 2, k)) for k in range(3)]
        tid = [b.load(ctx_field(b, ctx, 0, k)) for k in range(3)]
        emit_record_error(b, rt, M.OUT_OF_BOUNDS, site, ctaid, tid, idx, ext)
    jb = b.load(ctx_field(b, ctx, CTX_JMPBUF))
    with b.if_then(b.icmp_unsigned("!=", jb, ir.Constant(I8P, None))):
        longjmp = declare(module, "longjmp", VOID, [I8P, i32], ("noreturn", "nounwind"))
        b.call(longjmp, [jb, _c(1)])
        b.unreachable()
    b.call(declare(module, "llvm.trap", VOID, [], ("noreturn", "nounwind")), [])
    b.unreachable()
    return fn


def memory_space(lw, node) -> str:
    """global, shared or local: how the array variable accessed at ``node`` was made."""
    base = node.value
    if not isinstance(base, ast.Name):
        return "global"
    spaces = getattr(lw.tf, "_kdebug_spaces", None)
    if spaces is None:
        spaces = {}
        from kdebug.frontend.typeinfer import PyValue
        for n in ast.walk(lw.tf.source.tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                ft = lw.tf.types.get(n.value.func)
                val = getattr(ft, "value", None) if isinstance(ft, PyValue) else None
                name = getattr(val, "name", "")
                if name in ("shared.array", "local.array"):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            spaces[t.id] = name.split(".")[0]
        try:
            lw.tf._kdebug_spaces = spaces
        except AttributeError:
            pass
    return spaces.get(base.id, "global")


def emit_bounds_check(lw, node, arr_t, indices, extents, access: str | None = None) -> None:
    """``idx <u extent`` for every dimension; the cold path reports and stops the launcher."""
    from kdebug.targets.cpu.target import CONTEXT_P
    b = lw.builder
    if lw.ctx is None:
        return
    ok = None
    for k, e in zip(indices, extents):
        c = b.icmp_unsigned("<", k, e)
        ok = c if ok is None else b.and_(ok, c)
    base = node.value
    array = base.id if isinstance(base, ast.Name) else ast.unparse(base)
    access = access or getattr(node, "kdebug_access", None)
    if access is None:
        access = "write" if isinstance(getattr(node, "ctx", None), ast.Store) else "read"
    site = M.register_site(M.Site("access", lw.tf.name, lw.src.loc(node), array, memory_space(lw, node),
                                  access, arr_t.ndim, function_kind=lw.tf.kind))
    fail = lw.new_block("oob")
    cont = lw.new_block("inbounds")
    br = b.cbranch(ok, cont, fail)
    br.set_weights([1 << 20, 1])
    b.position_at_end(fail)
    idx = list(indices) + [_c(0, i64)] * (3 - len(indices))
    ext = list(extents) + [_c(1, i64)] * (3 - len(extents))
    b.call(oob_function(lw.module, CONTEXT_P), [lw.ctx, _c(site)] + idx + ext)
    b.unreachable()
    b.position_at_end(cont)


# ---- barriers: the kernel as a coroutine ---------------------------------------------------
class CoroState:
    def __init__(self, root) -> None:
        self.root = root
        self.id = None
        self.hdl = None
        self.cleanup = None  # block: free the frame
        self.ret = None  # block: coro.end, then the function's return


def coro_root(lw):
    return getattr(lw, "coro_root", lw)


def _begin_coroutine(lw) -> CoroState:
    """Make the kernel being lowered a coroutine (once): coro.id/begin at the top of its entry block."""
    from kdebug.targets.cpu.target import CTX_CORO
    root = coro_root(lw)
    st = getattr(root, "coro", None)
    if st is not None:
        return st
    st = root.coro = CoroState(root)
    m = root.module
    set.add(root.fn.attributes, "presplitcoroutine")
    pb = ir.IRBuilder(root.entry)
    first = next((ins for ins in root.entry.instructions if not isinstance(ins, ir.instructions.AllocaInstr)), None)
    if first is not None:
        pb.position_before(first)
    else:
        pb.position_at_end(root.entry)
    null = ir.Constant(I8P, None)
    coro_id = declare(m, "llvm.coro.id", TOKEN, [i32, I8P, I8P, I8P])
    coro_size = declare(m, "llvm.coro.size.i64", i64, [])
    coro_begin = declare(m, "llvm.coro.begin", I8P, [TOKEN, I8P])
    st.id = pb.call(coro_id, [_c(0), null, null, null], name="coro.id")
    size = pb.call(coro_size, [], name="coro.size")
    mem = pb.call(frame_function(m), [root.ctx, size], name="coro.mem")
    st.hdl = pb.call(coro_begin, [st.id, mem], name="coro.hdl")
    pb.store(st.hdl, ctx_field(pb, root.ctx, CTX_CORO))
    st.cleanup = root.fn.append_basic_block("coro.cleanup")
    st.ret = root.fn.append_basic_block("coro.ret")
    cb = ir.IRBuilder(st.cleanup)  # the frame's memory stays with the thread's context (the launcher frees it)
    coro_free = declare(m, "llvm.coro.free", I8P, [TOKEN, I8P])
    cb.call(coro_free, [st.id, st.hdl])
    cb.branch(st.ret)
    if lw.builder.block is root.entry:  # llvmlite's insertion point is an index: move it past the prologue
        lw.builder.position_at_end(root.entry)
    return st


def frame_function(module: ir.Module) -> ir.Function:
    """``kdebug.rt.frame(ctx, size)``: the memory for a thread's coroutine frame, kept in its context
    and reused by the next block that runs in the same context slot (no malloc per thread and block)."""
    from kdebug.targets.cpu.target import CONTEXT_P, CTX_FRAME, CTX_FRAME_CAP
    name = "kdebug.rt.frame"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I8P, [CONTEXT_P, i64]), name=name)
    fn.linkage = "internal"
    ctx, size = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    cap = b.load(ctx_field(b, ctx, CTX_FRAME_CAP))
    with b.if_then(b.icmp_unsigned("<", cap, size), likely=False):
        free = declare(module, "free", VOID, [I8P])
        malloc = declare(module, "malloc", I8P, [i64])
        b.call(free, [b.load(ctx_field(b, ctx, CTX_FRAME))])
        b.store(b.call(malloc, [size]), ctx_field(b, ctx, CTX_FRAME))
        b.store(size, ctx_field(b, ctx, CTX_FRAME_CAP))
    b.ret(b.load(ctx_field(b, ctx, CTX_FRAME)))
    return fn


def _suspend(lw, st: CoroState, final: bool):
    b = lw.builder
    m = lw.module
    suspend = declare(m, "llvm.coro.suspend", i8, [TOKEN, i1])
    s = b.call(suspend, [TOKEN_NONE, _c(int(final), i1)])
    cont = lw.new_block("coro.final" if final else "barrier.resume")
    sw = b.switch(s, st.ret)
    sw.add_case(_c(0, i8), cont)
    sw.add_case(_c(1, i8), st.cleanup)
    b.position_at_end(cont)
    if final:
        b.unreachable()


def _pin_locals(lw) -> None:
    """``x = opaque(x)`` for the scalar locals before a suspend point (x86-64 only, an empty inline asm).
    LLVM's coroutine split recomputes cheap arithmetic after a suspend instead of keeping its result
    (``acc += a[k] * b[k]`` over a tile: all the loaded operands go into the frame instead of one
    sum); a value that comes out of an asm statement is kept as it is."""
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    b = lw.builder
    seen = set()
    for lowerer in (lw, coro_root(lw)):
        for slot in lowerer.slots.values():
            ty = slot.type.pointee
            if id(slot) in seen or not isinstance(ty, (ir.IntType, ir.FloatType, ir.DoubleType)) or ty == i1:
                continue
            seen.add(id(slot))
            constraint = "=r,0" if isinstance(ty, ir.IntType) else "=x,0"
            asm = ir.InlineAsm(ir.FunctionType(ty, [ty]), "", constraint, side_effect=False)
            b.store(b.call(asm, [b.load(slot)]), slot)


def emit_barrier(lw, node, what: str, vote=None, grid: bool = False, warp: bool = False):
    """A block (or grid) barrier in the kernel being lowered; returns the vote count after it
    (syncthreads_count) when ``vote`` (an i32) is given."""
    from kdebug.targets.cpu.target import CTX_BARRIER, CTX_VOTE
    root = coro_root(lw)
    if root.tf.kind != "kernel":
        raise lw.src.error(node, f"{what} in a device function that is not inlined into a kernel",
                           "call the device function directly from a kernel (not through kdebug.deferred)")
    st = _begin_coroutine(lw)
    b = lw.builder
    kind = "grid barrier" if grid else "warp barrier" if warp else "barrier"
    site = M.register_site(M.Site(kind, lw.tf.name, lw.src.loc(node), what=what, function_kind=lw.tf.kind))
    _pin_locals(lw)
    b.store(_c(-site if grid else site | WARP_FLAG if warp else site), ctx_field(b, lw.ctx, CTX_BARRIER))
    b.store(vote if vote is not None else _c(0), ctx_field(b, lw.ctx, CTX_VOTE))
    _suspend(lw, st, final=False)
    return b.load(ctx_field(b, lw.ctx, CTX_VOTE))


def function_epilogue(lw) -> None:
    """In the kernel's exit block: a coroutine kernel ends at its final suspend point."""
    from kdebug.targets.cpu.target import CTX_BARRIER
    st = getattr(lw, "coro", None)
    if st is None or coro_root(lw) is not lw:
        return
    b = lw.builder
    b.store(_c(0), ctx_field(b, lw.ctx, CTX_BARRIER))
    _suspend(lw, st, final=True)
    b.position_at_end(st.ret)
    coro_end = declare(lw.module, "llvm.coro.end", VOID, [I8P, i1, TOKEN])
    b.call(coro_end, [st.hdl, _c(0, i1), TOKEN_NONE])
    lw.target.coroutine_kernels.add(lw.fn.name)


def inline_call(lw, node, callee_tf, vals):
    """Lower a device function's body into the caller (used for functions that contain barriers)."""
    from kdebug.frontend.lower import FunctionLowerer, llvm_type
    from kdebug.lang import types as T

    il = FunctionLowerer.__new__(FunctionLowerer)
    il.__dict__.update(lw.__dict__)
    il.tf, il.src = callee_tf, callee_tf.source
    il.slots, il.loops = {}, []
    il.coro_root = coro_root(lw)
    for name, t in callee_tf.locals.items():
        il.slots[name] = il.alloca(llvm_type(t), name=name)
    for name, t, v in zip(callee_tf.argnames, callee_tf.argtypes, vals):
        il.builder.store(il.cast(v, t, callee_tf.locals[name]), il.slots[name])
    il.exit = il.new_block(f"inline.{callee_tf.name}.exit")
    if callee_tf.restype != T.void:
        il.retslot = il.alloca(llvm_type(callee_tf.restype), name="inline.retval")
    il.body(callee_tf.source.tree.body)
    il.branch(il.exit)
    il.builder.position_at_end(il.exit)
    lw.counter = il.counter
    if callee_tf.restype == T.void:
        return None
    return il.builder.load(il.retslot)


# ---- grid launchers ---------------------------------------------------------------------------
class _Loop:
    """``for (v = start; v < stop; v++)`` with an i64/i32 phi; the body is built inside ``with``."""

    def __init__(self, b: ir.IRBuilder, start, stop, name: str) -> None:
        self.b, self.start, self.stop, self.name = b, start, stop, name

    def __enter__(self):
        b = self.b
        pre = b.block
        fn = b.function
        self.head = fn.append_basic_block(f"{self.name}.head")
        self.body = fn.append_basic_block(f"{self.name}.body")
        self.end = fn.append_basic_block(f"{self.name}.end")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.iv = b.phi(self.start.type, name=self.name)
        self.iv.add_incoming(self.start, pre)
        b.cbranch(b.icmp_signed("<", self.iv, self.stop), self.body, self.end)
        b.position_at_end(self.body)
        return self.iv

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        b = self.b
        nxt = b.add(self.iv, ir.Constant(self.iv.type, 1), flags=["nsw", "nuw"])
        self.iv.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.end)
        return False


def build_grid_launcher(entry: str, argtypes, target, coroutine: bool, grid_sync: bool,
                        shared_bytes: int) -> ir.Module:
    """``void <entry>.grid(i8* params, i32* dims, i64 first_block, i64 end_block, i8* runtime)``."""
    from kdebug.frontend.lower import llvm_type
    from kdebug.targets.cpu.target import CONTEXT, CONTEXT_P, LAUNCHER_TYPE, param_struct_type

    m = ir.Module(name=entry + ".grid")
    m.triple, m.data_layout = target.triple, target.data_layout
    arg_lltypes = [llvm_type(t) for t in argtypes]
    kernel = ir.Function(m, ir.FunctionType(VOID, [CONTEXT_P] + arg_lltypes), name=entry)
    body_ty = ir.FunctionType(VOID, [I8P, ir.PointerType(i32), i64, i64, I8P, I8P, I8P, CONTEXT_P, i64, i64])
    body = ir.Function(m, body_ty, name=entry + ".grid.body")
    body.linkage = "internal"
    body.attributes.add("noinline")
    shared_stride = (shared_bytes + 63) // 64 * 64

    # the wrapper: memory, setjmp, body, free
    fn = ir.Function(m, LAUNCHER_TYPE, name=entry + ".grid")
    params, dims, first, last, runtime = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    calloc = declare(m, "calloc", I8P, [i64, i64])
    free = declare(m, "free", VOID, [I8P])
    setjmp = declare(m, "_setjmp", i32, [I8P], ("returns_twice",))
    d = [b.zext(b.load(b.gep(dims, [_c(k)])), i64) for k in range(6)]
    nt = b.mul(b.mul(d[3], d[4]), d[5])
    group = b.sub(last, first) if grid_sync else _c(1, i64)
    group = b.select(b.icmp_signed("<", group, _c(1, i64)), _c(1, i64), group)
    # dynamic shared memory (k[grid, block, stream, nbytes]): from the runtime record, for host launches
    rtp = b.bitcast(runtime, ir.PointerType(RUNTIME))
    host = b.and_(b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None)),
                  b.icmp_signed("==", b.load(b.gep(dims, [_c(6)])), _c(0)))
    dyn = cond_value(b, host, lambda: b.load(rt_field(b, rtp, RT_DYN_SHARED)), _c(0, i64))
    dyn_stride = b.and_(b.add(dyn, _c(63, i64)), _c(-64, i64))
    stride = b.add(_c(shared_stride, i64), dyn_stride)
    shared = b.call(calloc, [b.add(b.mul(group, stride), _c(64, i64)), _c(1, i64)])
    nctx = b.mul(group, nt) if coroutine else _c(1, i64)
    ctx_size = _c(target.tm.target_data.get_abi_size(_binding_type(CONTEXT)), i64)
    ctxs = b.bitcast(b.call(calloc, [b.add(nctx, _c(1, i64)), ctx_size]), CONTEXT_P)
    jb = b.alloca(ir.ArrayType(i8, JMPBUF_BYTES), name="jmpbuf")
    jb.align = 16
    jbp = b.bitcast(jb, I8P)
    r = b.call(setjmp, [jbp])
    with b.if_then(b.icmp_signed("==", r, _c(0))):
        b.call(body, [params, dims, first, last, runtime, jbp, shared, ctxs, stride, dyn])
    if coroutine:  # the threads' coroutine frames (also after a failed check stopped the body)
        from kdebug.targets.cpu.target import CTX_FRAME
        with _Loop(b, _c(0, i64), nctx, "free") as k:
            b.call(free, [b.load(ctx_field(b, b.gep(ctxs, [k]), CTX_FRAME))])
    b.call(free, [shared])
    b.call(free, [b.bitcast(ctxs, I8P)])
    b.ret_void()

    # the body
    params, dims, first, last, runtime, jbp, shared, ctxs, stride, dyn = body.args
    b = ir.IRBuilder(body.append_basic_block("entry"))
    pstruct = b.bitcast(params, ir.PointerType(param_struct_type(argtypes)))
    args = [b.load(b.gep(pstruct, [_c(0), _c(k)], inbounds=True)) for k in range(len(argtypes))]
    d = [b.load(b.gep(dims, [_c(k)])) for k in range(7)]
    bx, by, bz = d[3], d[4], d[5]
    nt32 = b.mul(b.mul(bx, by), bz)
    nt = b.zext(nt32, i64)
    # shuffle: a permutation table in the runtime record, used when it was made for this block size
    rt = b.bitcast(runtime, ir.PointerType(RUNTIME))
    has_rt = b.icmp_unsigned("!=", runtime, ir.Constant(I8P, None))
    perm_slot = b.alloca(ir.PointerType(i32), name="perm")
    nperm_slot = b.alloca(i64, name="nperm")
    b.store(ir.Constant(ir.PointerType(i32), None), perm_slot)
    b.store(_c(1, i64), nperm_slot)
    with b.if_then(has_rt):
        p = b.load(rt_field(b, rt, RT_PERM))
        pnt = b.load(rt_field(b, rt, RT_PERM_NT))
        with b.if_then(b.icmp_unsigned("==", pnt, nt32)):
            b.store(p, perm_slot)
            b.store(b.zext(b.load(rt_field(b, rt, RT_NPERM)), i64), nperm_slot)
    perm = b.load(perm_slot)
    nperm = b.load(nperm_slot)
    use_perm = b.icmp_unsigned("!=", perm, ir.Constant(ir.PointerType(i32), None))
    gx64, gy64 = b.zext(d[0], i64), b.zext(d[1], i64)
    bxy = b.mul(bx, by)

    def init_ctx(c, blk, t32, shared_ptr):
        for k in range(3):
            b.store(d[3 + k], ctx_field(b, c, 1, k))
            b.store(d[k], ctx_field(b, c, 3, k))
        cx = b.trunc(b.urem(blk, gx64), i32)
        rest = b.udiv(blk, gx64)
        for k, v in enumerate((cx, b.trunc(b.urem(rest, gy64), i32), b.trunc(b.udiv(rest, gy64), i32))):
            b.store(v, ctx_field(b, c, 2, k))
        from kdebug.targets.cpu.target import (CTX_RUNTIME, CTX_DEPTH, CTX_SHARED, CTX_JMPBUF, CTX_CORO, CTX_BARRIER,
                                        CTX_DYN_SHARED, CTX_DYN_BYTES)
        b.store(runtime, ctx_field(b, c, CTX_RUNTIME))
        b.store(d[6], ctx_field(b, c, CTX_DEPTH))
        b.store(shared_ptr, ctx_field(b, c, CTX_SHARED))
        b.store(b.gep(shared_ptr, [_c(shared_stride, i64)]), ctx_field(b, c, CTX_DYN_SHARED))
        b.store(dyn, ctx_field(b, c, CTX_DYN_BYTES))
        b.store(jbp, ctx_field(b, c, CTX_JMPBUF))
        b.store(ir.Constant(I8P, None), ctx_field(b, c, CTX_CORO))
        b.store(_c(0), ctx_field(b, c, CTX_BARRIER))
        if t32 is not None:
            set_tid(c, t32)

    def set_tid(c, t32):
        b.store(b.urem(t32, bx), ctx_field(b, c, 0, 0))
        b.store(b.urem(b.udiv(t32, bx), by), ctx_field(b, c, 0, 1))
        b.store(b.udiv(t32, bxy), ctx_field(b, c, 0, 2))

    def order(blk, k, phase):
        """The k-th thread to run in this phase: k, or the shuffled one."""
        sel = b.urem(b.add(blk, b.mul(phase, _c(7, i64))), nperm)
        return cond_value(b, use_perm, lambda: b.load(b.gep(perm, [b.add(b.mul(sel, nt), k)])),
                          b.trunc(k, i32))

    stop = body.append_basic_block("stop")
    if not coroutine:
        _plain_body(b, body, kernel, args, ctxs, first, last, shared, bx, by, bz, nt, use_perm,
                    init_ctx, set_tid, order, runtime, stop)
    else:
        _coroutine_body(b, body, kernel, args, ctxs, first, last, shared, stride, nt, nt32, grid_sync,
                        init_ctx, order, runtime, stop, d)
    b.position_at_end(stop)
    b.ret_void()
    return m


def ealloca(b: ir.IRBuilder, ty, name: str = ""):
    """An alloca at the top of the function's entry block (never inside a loop)."""
    entry = b.function.entry_basic_block
    eb = ir.IRBuilder(entry)
    if entry.instructions:
        eb.position_before(entry.instructions[0])
    return eb.alloca(ty, name=name)


def _binding_type(ty):
    """An llvmlite.binding TypeRef for an ir type (for its ABI size)."""
    import llvmlite.binding as llvm
    mod = llvm.parse_assembly(f"@x = external global {ty}")
    return mod.get_global_variable("x").global_value_type


def _plain_body(b, fn, kernel, args, ctxs, first, last, shared, bx, by, bz, nt, use_perm, init_ctx, set_tid,
                order, runtime, stop):
    """Blocks one after the other; in each, the threads in order (a loop LLVM vectorises) or shuffled."""
    from kdebug.targets.cpu.target import CONTEXT
    ctx = ealloca(b, CONTEXT, "ctx")  # a private alloca: LLVM forwards its fields and vectorises the loop
    with _Loop(b, first, last, "block") as blk:
        init_ctx(ctx, blk, None, shared)
        with b.if_else(use_perm) as (shuffled, ordered):
            with shuffled:
                with _Loop(b, _c(0, i64), nt, "k") as k:
                    set_tid(ctx, order(blk, k, _c(0, i64)))
                    b.call(kernel, [ctx] + args)
            with ordered:
                with _Loop(b, _c(0), bz, "tz") as tz:
                    b.store(tz, ctx_field(b, ctx, 0, 2))
                    with _Loop(b, _c(0), by, "ty") as ty:
                        b.store(ty, ctx_field(b, ctx, 0, 1))
                        with _Loop(b, _c(0), bx, "tx") as tx:
                            b.store(tx, ctx_field(b, ctx, 0, 0))
                            b.call(kernel, [ctx] + args)
        nxt = fn.append_basic_block("block.next")
        b.cbranch(error_flag(b, runtime), stop, nxt)
        b.position_at_end(nxt)
    b.branch(stop)


def _coroutine_body(b, fn, kernel, args, ctxs, first, last, shared, shared_stride, nt, nt32, grid_sync,
                    init_ctx, order, runtime, stop, d):
    """The block scheduler: every thread a coroutine, run up to its next barrier, then checked and resumed."""
    from kdebug.targets.cpu.target import CTX_CORO, CTX_BARRIER, CTX_VOTE
    m = b.module
    resume = declare(m, "llvm.coro.resume", VOID, [I8P])
    destroy = declare(m, "llvm.coro.destroy", VOID, [I8P])
    null = ir.Constant(I8P, None)
    phase = ealloca(b, i64, name="phase")
    b.store(_c(0, i64), phase)
    fail = fn.append_basic_block("fail")
    group = b.sub(last, first) if grid_sync else _c(1, i64)

    def thread_ctx(bi, t32):
        return b.gep(ctxs, [b.add(b.mul(bi, nt), b.zext(t32, i64))])

    def destroy_all(count):
        with _Loop(b, _c(0, i64), b.mul(count, nt), "destroy") as k:
            slot = ctx_field(b, b.gep(ctxs, [k]), CTX_CORO)
            h = b.load(slot)
            with b.if_then(b.icmp_unsigned("!=", h, null)):
                b.call(destroy, [h])
                b.store(null, slot)

    def record(kind, c, site, aux):
        ctaid = [b.load(ctx_field(b, c, 2, k)) for k in range(3)]
        tid = [b.load(ctx_field(b, c, 0, k)) for k in range(3)]
        with b.if_then(b.icmp_unsigned("!=", runtime, null)):
            emit_record_error(b, runtime, kind, site, ctaid, tid, aux=aux)

    gsize_slot = ealloca(b, i64, name="gsize")
    # groups of blocks: one block at a time, or the whole grid when it has a grid barrier
    g0_slot = ealloca(b, i64, name="g0")
    b.store(first, g0_slot)
    ghead = fn.append_basic_block("group.head")
    gbody = fn.append_basic_block("group.body")
    b.branch(ghead)
    b.position_at_end(ghead)
    g0 = b.load(g0_slot)
    b.cbranch(b.icmp_signed("<", g0, last), gbody, stop)
    b.position_at_end(gbody)
    rem = b.sub(last, g0)
    gsize = b.select(b.icmp_signed("<", rem, group), rem, group)
    b.store(gsize, gsize_slot)
    # start every thread: it runs to its first barrier or to its end
    with _Loop(b, _c(0, i64), gsize, "start.b") as bi:
        blk = b.add(g0, bi)
        sh = b.gep(shared, [b.mul(bi, shared_stride)])
        with _Loop(b, _c(0, i64), nt, "start.k") as k:
            t = order(blk, k, _c(0, i64))
            c = thread_ctx(bi, t)
            init_ctx(c, blk, t, sh)
            b.call(kernel, [c] + args)
    ghead2 = fn.append_basic_block("grid.phase")
    b.branch(ghead2)
    b.position_at_end(ghead2)
    # per block: resume block barriers until the block is done or waits at the grid barrier
    ndone_blocks = ealloca(b, i64, name="ndone.blocks")
    ngrid_blocks = ealloca(b, i64, name="ngrid.blocks")
    gsite = ealloca(b, i32, name="grid.site")
    gfirst_done = ealloca(b, i64, name="grid.first.done")
    b.store(_c(0, i64), ndone_blocks)
    b.store(_c(0, i64), ngrid_blocks)
    b.store(_c(0), gsite)
    b.store(_c(-1, i64), gfirst_done)
    ndone = ealloca(b, i32, name="ndone")
    ngrid = ealloca(b, i32, name="ngrid")
    site0 = ealloca(b, i32, name="site0")
    odd = ealloca(b, i32, name="odd")  # first thread whose state differs from thread at site0
    first_done = ealloca(b, i32, name="first.done")
    nwarp = ealloca(b, i32, name="nwarp")
    wsite = ealloca(b, i32, name="warp.site")
    wcount = ealloca(b, i32, name="warp.count")
    wodd = ealloca(b, i32, name="warp.odd")
    votes = ealloca(b, i32, name="votes")
    with _Loop(b, _c(0, i64), gsize, "sched.b") as bi:
        blk = b.add(g0, bi)
        scan = fn.append_basic_block("scan")
        decide = fn.append_basic_block("decide")
        b.branch(scan)
        b.position_at_end(scan)

        def reset():
            for slot, v in ((ndone, 0), (ngrid, 0), (nwarp, 0), (site0, 0), (odd, -1), (first_done, -1),
                            (votes, 0)):
                b.store(_c(v), slot)

        def accumulate(t, c):
            """Count thread t's state after it ran: finished, or waiting at which barrier."""
            w = b.load(ctx_field(b, c, CTX_BARRIER))
            with b.if_else(b.icmp_signed("==", w, _c(0))) as (is_done, waiting):
                with is_done:
                    b.store(b.add(b.load(ndone), _c(1)), ndone)
                    with b.if_then(b.icmp_signed("<", b.load(first_done), _c(0))):
                        b.store(t, first_done)
                with waiting:
                    with b.if_then(b.icmp_signed(">=", w, _c(WARP_FLAG))):
                        b.store(b.add(b.load(nwarp), _c(1)), nwarp)
                    b.store(b.add(b.load(votes), b.load(ctx_field(b, c, CTX_VOTE))), votes)
                    with b.if_then(b.icmp_signed("<", w, _c(0))):
                        b.store(b.add(b.load(ngrid), _c(1)), ngrid)
                    s0 = b.load(site0)
                    with b.if_else(b.icmp_signed("==", s0, _c(0))) as (first_w, later_w):
                        with first_w:
                            b.store(w, site0)
                        with later_w:
                            with b.if_then(b.and_(b.icmp_signed("!=", w, s0),
                                                  b.icmp_signed("<", b.load(odd), _c(0)))):
                                b.store(t, odd)

        reset()
        with _Loop(b, _c(0), nt32, "scan.t") as t:
            accumulate(t, thread_ctx(bi, t))
        b.branch(decide)
        b.position_at_end(decide)
        n_done, n_grid = b.load(ndone), b.load(ngrid)
        s0 = b.load(site0)
        o = b.load(odd)
        all_done = b.icmp_signed("==", n_done, nt32)
        next_block = fn.append_basic_block("sched.next")
        check = fn.append_basic_block("sched.check")
        with b.if_then(all_done):
            b.store(b.add(b.load(ndone_blocks), _c(1, i64)), ndone_blocks)
            with b.if_then(b.icmp_signed("<", b.load(gfirst_done), _c(0, i64))):
                b.store(bi, gfirst_done)
        warps = fn.append_basic_block("sched.warps")
        b.cbranch(all_done, next_block, warps)
        b.position_at_end(warps)
        # warp barriers first: a warp whose threads all wait at one cuda.syncwarp() goes on
        warp_pass = fn.append_basic_block("sched.warppass")
        b.cbranch(b.icmp_signed(">", b.load(nwarp), _c(0)), warp_pass, check)
        b.position_at_end(warp_pass)
        nwarps = b.udiv(b.add(nt32, _c(WARP - 1)), _c(WARP))
        with _Loop(b, _c(0), nwarps, "warp") as wi:
            lo = b.mul(wi, _c(WARP))
            hi = b.select(b.icmp_signed("<", b.add(lo, _c(WARP)), nt32), b.add(lo, _c(WARP)), nt32)
            b.store(_c(0), wsite)
            b.store(_c(0), wcount)
            b.store(_c(-1), wodd)
            with _Loop(b, lo, hi, "warp.scan") as t:
                w = b.load(ctx_field(b, thread_ctx(bi, t), CTX_BARRIER))
                with b.if_else(b.icmp_signed(">=", w, _c(WARP_FLAG))) as (yes, no):
                    with yes:
                        b.store(b.add(b.load(wcount), _c(1)), wcount)
                        with b.if_then(b.icmp_signed("==", b.load(wsite), _c(0))):
                            b.store(w, wsite)
                        with b.if_then(b.and_(b.icmp_signed("!=", w, b.load(wsite)),
                                              b.icmp_signed("<", b.load(wodd), _c(0)))):
                            b.store(t, wodd)
                    with no:
                        with b.if_then(b.icmp_signed("<", b.load(wodd), _c(0))):
                            b.store(t, wodd)
            cnt = b.load(wcount)
            with b.if_then(b.icmp_signed(">", cnt, _c(0))):
                with b.if_else(b.icmp_signed(">=", b.load(wodd), _c(0))) as (diverged, together):
                    with diverged:
                        oc = thread_ctx(bi, b.load(wodd))
                        other = b.load(ctx_field(b, oc, CTX_BARRIER))
                        other_site = b.select(b.icmp_signed(">=", other, _c(WARP_FLAG)),
                                              b.sub(other, _c(WARP_FLAG)),
                                              b.select(b.icmp_signed("<", other, _c(0)), b.neg(other), other))
                        record(M.DIVERGENT_WARP, oc, b.sub(b.load(wsite), _c(WARP_FLAG)),
                               [other_site, cnt, b.sub(hi, lo), wi])
                    with together:
                        with _Loop(b, lo, hi, "warp.resume") as t:
                            c = thread_ctx(bi, t)
                            b.store(_c(0), ctx_field(b, c, CTX_BARRIER))
                            b.call(resume, [b.load(ctx_field(b, c, CTX_CORO))])
        b.cbranch(error_flag(b, runtime), fail, scan)
        b.position_at_end(check)
        # mismatched barrier sites
        mism = fn.append_basic_block("sched.mismatch")
        nomism = fn.append_basic_block("sched.samesite")
        b.cbranch(b.icmp_signed(">=", o, _c(0)), mism, nomism)
        b.position_at_end(mism)
        oc = thread_ctx(bi, o)
        other = b.load(ctx_field(b, oc, CTX_BARRIER))
        abs_s0 = b.select(b.icmp_signed("<", s0, _c(0)), b.neg(s0), s0)
        abs_o = b.select(b.icmp_signed("<", other, _c(0)), b.neg(other), other)
        record(M.DIVERGENT_BARRIER, oc, abs_s0, [abs_o, b.sub(nt32, n_done), n_done, nt32])
        b.branch(fail)
        b.position_at_end(nomism)
        some_done = fn.append_basic_block("sched.somedone")
        none_done = fn.append_basic_block("sched.nonedone")
        b.cbranch(b.icmp_signed(">", n_done, _c(0)), some_done, none_done)
        b.position_at_end(some_done)
        dc = thread_ctx(bi, b.load(first_done))
        abs_s0 = b.select(b.icmp_signed("<", s0, _c(0)), b.neg(s0), s0)
        record(M.DIVERGENT_BARRIER, dc, abs_s0, [_c(0), b.sub(nt32, n_done), n_done, nt32])
        b.branch(fail)
        b.position_at_end(none_done)
        at_grid = fn.append_basic_block("sched.atgrid")
        at_block = fn.append_basic_block("sched.atblock")
        b.cbranch(b.icmp_signed(">", n_grid, _c(0)), at_grid, at_block)
        b.position_at_end(at_grid)  # the whole block waits at one grid barrier
        b.store(b.add(b.load(ngrid_blocks), _c(1, i64)), ngrid_blocks)
        b.store(s0, gsite)
        b.branch(next_block)
        b.position_at_end(at_block)  # the whole block waits at one barrier: vote, then resume
        ph = b.add(b.load(phase), _c(1, i64))
        b.store(ph, phase)
        total = b.load(votes)
        reset()  # the threads' new states are counted as they run: no separate scan
        with _Loop(b, _c(0, i64), nt, "resume.k") as k:
            t = order(blk, k, ph)
            c = thread_ctx(bi, t)
            b.store(_c(0), ctx_field(b, c, CTX_BARRIER))
            b.store(total, ctx_field(b, c, CTX_VOTE))
            b.call(resume, [b.load(ctx_field(b, c, CTX_CORO))])
            accumulate(t, c)
        b.cbranch(error_flag(b, runtime), fail, decide)
        b.position_at_end(next_block)
    # every block is done or waits at a grid barrier
    nd, ng = b.load(ndone_blocks), b.load(ngrid_blocks)
    group_done = fn.append_basic_block("group.done")
    grid_wait = fn.append_basic_block("grid.wait")
    b.cbranch(b.icmp_signed("==", ng, _c(0, i64)), group_done, grid_wait)
    b.position_at_end(grid_wait)
    mixed = fn.append_basic_block("grid.mixed")
    release = fn.append_basic_block("grid.release")
    b.cbranch(b.icmp_signed(">", nd, _c(0, i64)), mixed, release)
    b.position_at_end(mixed)
    dc = thread_ctx(b.load(gfirst_done), _c(0))
    s = b.load(gsite)
    record(M.DIVERGENT_GRID_BARRIER, dc, b.neg(s), [_c(0), b.trunc(b.mul(ng, nt), i32), b.trunc(nd, i32), nt32])
    b.branch(fail)
    b.position_at_end(release)
    ph = b.add(b.load(phase), _c(1, i64))
    b.store(ph, phase)
    with _Loop(b, _c(0, i64), gsize, "grel.b") as bi:
        blk = b.add(g0, bi)
        with _Loop(b, _c(0, i64), nt, "grel.k") as k:
            t = order(blk, k, ph)
            c = thread_ctx(bi, t)
            b.store(_c(0), ctx_field(b, c, CTX_BARRIER))
            b.call(resume, [b.load(ctx_field(b, c, CTX_CORO))])
    b.cbranch(error_flag(b, runtime), fail, ghead2)
    b.position_at_end(group_done)
    destroy_all(gsize)
    b.store(b.add(g0, gsize), g0_slot)
    b.cbranch(error_flag(b, runtime), stop, ghead)
    b.position_at_end(fail)
    destroy_all(b.load(gsize_slot))
    b.branch(stop)
