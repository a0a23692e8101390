"""The kernel parameter convention: a kernel entry's flat parameters at natural alignment, as a
host (pycuda) or a parent grid (the CUDA device runtime) lays them out. The host's side, the
parameters' dtypes and offsets, lives with the gpu runtime that packs them
(kdebug/runtime/kernel_params.py)."""
from __future__ import annotations

from llvmlite import ir

from kdebug.frontend.debug_info import Locations, module_debug_info
from kdebug.frontend.lower import i8, i64, llvm_type, mem_type
from kdebug.lang import types as T
from kdebug.runtime.kernel_params import as_parts, flat_param_dtypes, param_offsets  # noqa: F401 - the target's too


I8P = ir.PointerType(i8)


def kernel_name(job) -> str:
    """The PTX entry of a kernel job (the finish pass creates it)."""
    return f"{job.entry}_kernel"


def flat_param_types(t: T.Type) -> list[ir.Type]:
    """The kernel entry's parameters for one kernel-language argument."""
    t = as_parts(t)
    if isinstance(t, T.Scalar):
        return [i8] if t.is_bool else [llvm_type(t)]
    if isinstance(t, T.Array):  # data, shape, and a strided array's strides in elements
        return [ir.PointerType(mem_type(t.dtype), addrspace=1)] + [i64] * (t.ndim * _dims(t))
    if isinstance(t, T.Tuple):
        return [p for x in t.types for p in flat_param_types(x)]
    if isinstance(t, T.FunctionPointer):
        return [I8P]
    if isinstance(t, T.CPointer):  # a raw device address: global memory
        return [ir.PointerType(mem_type(t.dtype), addrspace=1)]
    raise TypeError(f"cannot pass {t} to a kernel")


def _dims(t: T.Array) -> int:
    """The arrays of i64 in an array's struct: the shape, and a strided array's strides."""
    return 2 if t.strided else 1


def _rebuild(b: ir.IRBuilder, t: T.Type, params) -> ir.Value:
    """The lowered body's argument value from the kernel entry's flat parameters."""
    t = as_parts(t)
    if isinstance(t, T.Scalar):
        p = next(params)
        return b.trunc(p, ir.IntType(1)) if t.is_bool else p
    if isinstance(t, T.Array):
        data = b.addrspacecast(next(params), ir.PointerType(mem_type(t.dtype)))
        v = b.insert_value(ir.Constant(llvm_type(t), ir.Undefined), data, 0)
        for part in range(1, 1 + _dims(t)):
            for k in range(t.ndim):
                v = b.insert_value(v, next(params), [part, k])
        return v
    if isinstance(t, T.CPointer):
        return b.addrspacecast(next(params), ir.PointerType(mem_type(t.dtype)))
    if isinstance(t, T.Tuple):
        v = ir.Constant(llvm_type(t), ir.Undefined)
        for k, x in enumerate(t.types):
            v = b.insert_value(v, _rebuild(b, x, params), k)
        return v
    return next(params)


def flatten(b: ir.IRBuilder, t: T.Type, v) -> list[ir.Value]:
    """A lowered value as the kernel entry's flat parameters (for device-side launches)."""
    t = as_parts(t)
    if isinstance(t, T.Scalar):
        return [b.zext(v, i8)] if t.is_bool else [v]
    if isinstance(t, T.Array):
        data = b.extract_value(v, 0)
        out = [b.addrspacecast(data, ir.PointerType(mem_type(t.dtype), addrspace=1))]
        return out + [b.extract_value(v, [part, k]) for part in range(1, 1 + _dims(t)) for k in range(t.ndim)]
    if isinstance(t, T.Tuple):
        return [p for k, x in enumerate(t.types) for p in flatten(b, x, b.extract_value(v, k))]
    return [v]


def build_kernel_entry(job, target: "PtxTarget", lineinfo: bool = False) -> ir.Module:
    """``define ptx_kernel void @<entry>_kernel(<flat params>)`` calling the lowered body. ``lineinfo``
    (the body has ``!dbg`` locations): the entry gets a subprogram of its own at the kernel's ``def``
    line and its instructions that location, so that the body inlined into it keeps its lines
    (``inlinedAt`` the call) and NVPTX writes ``.loc`` lines for the entry; without it the inlined
    locations would name a subprogram that is not the function's, and NVPTX writes none."""
    m = ir.Module(name=kernel_name(job))
    m.triple, m.data_layout = target.triple, target.data_layout
    body_t = ir.FunctionType(ir.VoidType(), [llvm_type(t) for t in job.argtypes])
    body = ir.Function(m, body_t, name=job.entry)
    fn = ir.Function(m, target.deferred_entry_type(job), name=kernel_name(job))
    fn.calling_convention = "ptx_kernel"
    names = iter(_param_names(job))
    for a in fn.args:
        a.name = next(names)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    src = getattr(getattr(job, "typed", None), "source", None)
    if lineinfo and src is not None and getattr(src, "file", None):
        info = module_debug_info(m, src.file)  # a compile unit of its own: linking keeps both
        scope = info.subprogram(kernel_name(job), src.file, src.first_line + src.tree.lineno - 1)
        fn.set_metadata("dbg", scope)
        b.debug_metadata = Locations(info, scope, src.first_line, src.indent).at(src.tree)
    params = iter(fn.args)
    b.call(body, [_rebuild(b, t, params) for t in job.argtypes])
    b.ret_void()
    return m


def _param_names(job) -> list[str]:
    try:
        names = job.job.function.argnames
    except AttributeError:
        names = [f"a{k}" for k in range(len(job.argtypes))]
    out = []
    for name, t in zip(names, job.argtypes):
        n = len(flat_param_types(t))
        if isinstance(t, T.Array):
            out += [f"{name}.data"] + [f"{name}.shape{k}" for k in range(t.ndim)]
            out += [f"{name}.strides{k}" for k in range(t.ndim)] if t.strided else []
        else:
            out += [name] if n == 1 else [f"{name}.{k}" for k in range(n)]
    return out


def param_size(ty: ir.Type) -> int:
    if isinstance(ty, ir.PointerType):
        return 8
    if isinstance(ty, ir.IntType):
        return max(ty.width // 8, 1)
    if isinstance(ty, ir.HalfType):
        return 2
    if isinstance(ty, ir.FloatType):
        return 4
    if isinstance(ty, ir.DoubleType):
        return 8
    raise TypeError(f"no parameter size for {ty}")
