"""The cuda intrinsics: how each is typed and how it is lowered, registered by name.

Each entry is registered in ``kdebug/frontend/registry.py`` under the intrinsic's
name (``grid``, ``atomic.add``...). Typing functions get the TypeInferer and the
call node; lowering functions get the FunctionLowerer and the call node.
"""
from __future__ import annotations

import functools


from llvmlite import ir

from kdebug.errors import LoweringValueError
from kdebug.frontend.registry import REGISTRY, IntrinsicImpl, register, register_value
from kdebug.frontend.lower import llvm_type, mem_type
from kdebug.frontend.typeinfer import PyValue
from kdebug.lang import intrinsics as I
from kdebug.lang import types as T
from kdebug.lang.dispatcher import kernel_value
from kdebug.lazy_dataclasses import dataclass


def _ndim_arg(inferer, node, name) -> int:
    if len(node.args) != 1 or not (hasattr(node.args[0], "value") and node.args[0].value in (1, 2, 3)):
        raise inferer.error(node, f"cuda.{name}(n) takes a constant 1, 2 or 3", f"write cuda.{name}(1)")
    return node.args[0].value


@register("grid")
class Grid:
    """cuda.grid(n): the absolute thread position, blockIdx * blockDim + threadIdx, as int64."""

    @staticmethod
    def type(inferer, node):
        n = _ndim_arg(inferer, node, "grid")
        return T.int64 if n == 1 else T.Tuple((T.int64,) * n)

    @staticmethod
    def lower(lw, node):
        n = node.args[0].value
        b = lw.builder
        parts = []
        # Special registers are never negative and their products fit in 64 bits: zext and
        # nuw/nsw let LLVM prove the index >= 0, drop numba's negative-index wraparound and
        # vectorise x[i] as contiguous loads instead of gathers (benchmarks/README.md).
        for dim in "xyz"[:n]:
            tid = b.zext(lw.special_register("threadIdx", dim), ir.IntType(64))
            ctaid = b.zext(lw.special_register("blockIdx", dim), ir.IntType(64))
            ntid = b.zext(lw.special_register("blockDim", dim), ir.IntType(64))
            parts.append(b.add(b.mul(ctaid, ntid, flags=["nuw", "nsw"]), tid, flags=["nuw", "nsw"]))
        return _tuple(b, parts)


@register("gridsize")
class GridSize:
    """cuda.gridsize(n): the number of threads in the grid along each dimension, as int64."""

    @staticmethod
    def type(inferer, node):
        n = _ndim_arg(inferer, node, "gridsize")
        return T.int64 if n == 1 else T.Tuple((T.int64,) * n)

    @staticmethod
    def lower(lw, node):
        n = node.args[0].value
        b = lw.builder
        parts = []
        for dim in "xyz"[:n]:
            nctaid = b.zext(lw.special_register("gridDim", dim), ir.IntType(64))
            ntid = b.zext(lw.special_register("blockDim", dim), ir.IntType(64))
            parts.append(b.mul(nctaid, ntid, flags=["nuw", "nsw"]))
        return _tuple(b, parts)


@register("laneid")
class LaneIdCall:
    """``cuda.laneid()``: a mistake, said so."""

    @staticmethod
    def type(inferer, node):
        raise inferer.error(node, "cuda.laneid is a value, not a function", "write cuda.laneid without ()")

    lower = None


# ---- value intrinsics (read without a call) ----------------------------------------------------
@register_value("laneid")
class LaneId:
    """cuda.laneid: the thread's lane in its warp (linear thread index modulo 32)."""

    @staticmethod
    def type(inferer, node):
        return T.int32

    @staticmethod
    def lower(lw, node):
        return lw.builder.urem(_linear_tid(lw), ir.Constant(ir.IntType(32), 32))


def _linear_tid(lw):
    b = lw.builder
    reg = lw.special_register
    tx, ty, tz = (reg("threadIdx", d) for d in "xyz")
    bx, by = reg("blockDim", "x"), reg("blockDim", "y")
    return b.add(b.mul(b.add(b.mul(tz, by), ty), bx), tx)


def _target_hook(lw, node, name, what):
    """The target's hook ``name`` (declared on kdebug/targets/base.py's Target), given the lowering
    context: call it with the hook's other arguments. A located error where the target does not
    implement it."""
    if not lw.target.implements(name):
        raise lw.src.error(node, f"{what} is not supported on the {lw.target.name} target yet",
                           "run it on the CPU backend (--backend cpu)")
    return functools.partial(getattr(lw.target, name), lw.hook_context)


def _no_args(inferer, node, name):
    if node.args or node.keywords:
        raise inferer.error(node, f"cuda.{name}() takes no arguments", f"write cuda.{name}()")


# ---- barriers ------------------------------------------------------------------------------------
@register("syncthreads")
class SyncThreads:
    """cuda.syncthreads(): every thread of the block waits here until all have arrived."""

    @staticmethod
    def type(inferer, node):
        _no_args(inferer, node, "syncthreads")
        inferer.tf.features.add("barrier")
        return T.void

    @staticmethod
    def lower(lw, node):
        _target_hook(lw, node, "barrier", "cuda.syncthreads()")(node, "cuda.syncthreads()")


def _vote_typer(name):
    def type_(inferer, node):
        if len(node.args) != 1 or node.keywords:
            raise inferer.error(node, f"cuda.{name}(predicate) takes one argument", f"write cuda.{name}(x > 0)")
        t = inferer.expr(node.args[0])
        if not isinstance(t, T.Scalar):
            raise inferer.error(node.args[0], f"the predicate of cuda.{name} must be a number or boolean, not {t}",
                                "pass a comparison such as x > 0")
        inferer.tf.features.add("barrier")
        return T.int32
    return type_


def _vote_lowerer(name):
    def lower(lw, node):
        b = lw.builder
        arg = node.args[0]
        pred = lw.truth(lw.expr(arg), lw.type_of(arg))
        if name == "syncthreads_and":  # count the false votes: threads that exited do not vote (PTX bar.red.and)
            pred = b.not_(pred)
        vote = b.zext(pred, ir.IntType(32))
        count = _target_hook(lw, node, "barrier", f"cuda.{name}()")(node, f"cuda.{name}()", vote)
        if name == "syncthreads_count":
            return count
        zero = ir.Constant(ir.IntType(32), 0)
        if name == "syncthreads_or":
            return b.zext(b.icmp_unsigned("!=", count, zero), ir.IntType(32))
        return b.zext(b.icmp_unsigned("==", count, zero), ir.IntType(32))
    return lower


for _name in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
    REGISTRY[_name] = IntrinsicImpl(_vote_typer(_name), _vote_lowerer(_name))


@dataclass(frozen=True)
class GridGroup(T.Tuple):
    """The value of ``cuda.cg.this_grid()``: an empty tuple whose ``.sync()`` is the grid barrier,
    so that ``g = cuda.cg.this_grid(); g.sync()`` works as in numba."""

    types: tuple = ()

    def __str__(self) -> str:
        return "GridGroup"

    def attribute_type(self, inferer, node):
        if node.attr == "sync":
            return PyValue(_GRID_SYNC)
        hint = {"size": "the grid's thread count is cuda.gridsize(1) (a tuple from cuda.gridsize(2) or (3))",
                "thread_rank": "a thread's rank in the grid is cuda.grid(1) (a tuple from cuda.grid(2) or (3))",
                "num_threads": "the grid's thread count is cuda.gridsize(1)"}.get(
                    node.attr, "a grid group is only synchronised: g.sync()")
        raise inferer.error(node, f"the grid group has no attribute {node.attr!r}: numba-cuda 0.30.4's GridGroup "
                            "has only .sync()", hint)


@register("cg.this_grid")
class ThisGrid:
    """cuda.cg.this_grid(): the grid group (only its ``.sync()`` is supported)."""

    @staticmethod
    def type(inferer, node):
        _no_args(inferer, node, "cg.this_grid")
        inferer.tf.features.add("grid_group")  # a cooperative kernel, as numba marks one (cudadevrt linked)
        return GridGroup()

    @staticmethod
    def lower(lw, node):
        return ir.Constant(ir.LiteralStructType([]), [])


def _grid_sync_intrinsic():
    return I._GridGroup.sync


_GRID_SYNC = _grid_sync_intrinsic()


@register("cg.this_grid.sync")
class GridSync:
    """cuda.cg.this_grid().sync(): every thread of the grid waits until all have arrived."""

    @staticmethod
    def type(inferer, node):
        _no_args(inferer, node, "cg.this_grid().sync")
        inferer.tf.features.update(("barrier", "grid_sync"))
        return T.void

    @staticmethod
    def lower(lw, node):
        _target_hook(lw, node, "barrier", "cuda.cg.this_grid().sync()")(
            node, "cuda.cg.this_grid().sync()", None, True)


def _fence_typer(name):
    def type_(inferer, node):
        _no_args(inferer, node, name)
        return T.void
    return type_


def _fence_lower(lw, node):
    lw.builder.fence("seq_cst")


for _name in ("threadfence", "threadfence_block", "threadfence_system"):
    REGISTRY[_name] = IntrinsicImpl(_fence_typer(_name), _fence_lower)


# ---- shared and local arrays -------------------------------------------------------------------
def _static_value(inferer, node):
    """A compile-time value: literals, module globals, closure constants, attributes of modules,
    tuples and arithmetic of those."""
    import ast
    import operator
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        local = inferer.tf.locals.get(node.id)
        if isinstance(local, T.IntLiteral) and node.id not in inferer.assigned:
            return local.literal  # a parameter given a constant (numba's literal argument)
        if isinstance(local, T.Tuple) and local.types and all(isinstance(e, T.IntLiteral) for e in local.types) \
                and node.id not in inferer.assigned:
            return tuple(e.literal for e in local.types)  # a parameter given a tuple of constants
        if local is not None and type(local).__name__ == "PyValue" and node.id not in inferer.assigned:
            return local.value  # a compile-time argument: a type (dtype) or another Python object
        if node.id in inferer.tf.locals or node.id in inferer.assigned:
            raise inferer.error(node, f"{node.id!r} is a variable; the shape and dtype of an array must be "
                                      f"compile-time constants", "use a literal, a module global or a closure constant")
        return inferer.global_value(node.id, node)
    if isinstance(node, ast.Attribute):
        base = _static_value(inferer, node.value)
        if not hasattr(base, node.attr):
            raise inferer.error(node, f"{node.attr!r} is not defined here", "use a module global or a literal")
        return kernel_value(getattr(base, node.attr))
    if isinstance(node, ast.Tuple):
        return tuple(_static_value(inferer, e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _static_value(inferer, node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
    if isinstance(node, ast.BinOp) and type(node.op) in ops:
        left, right = _static_value(inferer, node.left), _static_value(inferer, node.right)
        if isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(right, int) and right > 256:
            raise inferer.error(node, f"{right} is too large an exponent for an array size", "use a smaller size")
        try:
            return ops[type(node.op)](left, right)
        except (TypeError, ZeroDivisionError, ValueError) as exc:
            raise inferer.error(node, f"cannot evaluate this array size: {exc}", "use integer constants") from None
    raise inferer.error(node, "the shape and dtype of an array must be compile-time constants",
                        "use a literal, a module global or a closure constant, e.g. (TPB, TPB)")


def _dtype_of(value):
    import numpy as np
    if isinstance(value, T.Scalar):
        return value
    try:
        return T.from_dtype(np.dtype(value))
    except TypeError:
        return None


def _array_args(inferer, node, name):
    """The shape, dtype and alignment nodes of ``cuda.<name>(shape, dtype, alignment=None)``."""
    params = ("shape", "dtype", "alignment")
    kw = {k.arg: k.value for k in node.keywords}
    given = dict(zip(params, node.args))
    if len(node.args) > 3 or set(kw) - set(params) or set(kw) & set(given):
        raise inferer.error(node, f"cuda.{name}(shape, dtype, alignment=None) takes a shape, a dtype and "
                                  f"an optional alignment", f"write cuda.{name}((16, 16), float32)")
    given.update(kw)
    if given.get("shape") is None or given.get("dtype") is None:
        raise inferer.error(node, f"cuda.{name}(shape, dtype) takes a shape and a dtype",
                            f"write cuda.{name}((16, 16), float32)")
    return given["shape"], given["dtype"], given.get("alignment")


def _array_alignment(inferer, node, align_node):
    """numba-cuda's ``alignment=``: None, or a constant int that is positive, a power of 2 and a multiple
    of a pointer's size (cudadecl.py's typing, then cudaimpl.py's ``_validate_alignment``, whose
    ValueErrors numba raises as they are)."""
    import numpy as np
    if align_node is None:
        return None
    value = _static_value(inferer, align_node)
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise inferer.error(align_node, f"RequireLiteralValue: alignment must be a constant integer, not {value!r}",
                            "write e.g. alignment=16")
    value = int(value)
    problem = ("Alignment must be positive" if value <= 0 else
               "Alignment must be a power of 2" if value & (value - 1) else
               f"Alignment must be a multiple of {POINTER_SIZE}" if value % POINTER_SIZE else None)
    if problem is not None:
        raise inferer.src.error(align_node, f"{problem} (alignment={value})", "write e.g. alignment=16",
                                cls=LoweringValueError)
    if value > MAX_ALIGNMENT:
        raise inferer.error(align_node, f"alignment={value} is larger than kdebug places arrays at "
                                        f"({MAX_ALIGNMENT} bytes)", f"use an alignment of at most {MAX_ALIGNMENT}")
    return value


def _array_type(inferer, node, name):
    import numpy as np
    shape_node, dtype_node, align_node = _array_args(inferer, node, name)
    shape = _static_value(inferer, shape_node)
    shape = shape if isinstance(shape, tuple) else (shape,)
    if not 1 <= len(shape) <= 3 or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                                          for n in shape):
        raise inferer.error(shape_node, f"the shape of cuda.{name} must be an int or a tuple of 1 to 3 ints, "
                                        f"not {shape!r}", "write e.g. (16, 16)")
    dyn = name == "shared.array" and len(shape) == 1 and shape[0] == 0
    if any(n <= 0 for n in shape) and not dyn:
        raise inferer.error(shape_node, f"the shape {shape!r} of cuda.{name} has a dimension <= 0",
                            "every dimension must be at least 1")
    dtype_value = _static_value(inferer, dtype_node)
    if isinstance(dtype_value, str):
        try:
            np.dtype(dtype_value)
        except TypeError:  # numba's parse_dtype (typing/npydecl.py)
            raise inferer.error(dtype_node, f"Invalid NumPy dtype specified: '{dtype_value}'",
                                "write a numpy dtype name, e.g. 'int32'") from None
    dtype = _dtype_of(dtype_value)
    if dtype is None:
        raise inferer.error(dtype_node, f"cuda.{name} needs a numeric dtype", "write e.g. float32 or int32")
    alignment = _array_alignment(inferer, node, align_node)
    nbytes = _nelems(shape) * _itemsize(dtype)
    inferer.tf.arrays[node] = (name, shape, nbytes, alignment)  # lowering reads the shape here
    _check_size_limit(inferer, node, name, nbytes)
    return shape, dtype


def _itemsize(dtype) -> int:
    if isinstance(dtype, T.Record):
        return dtype.size
    return max(1, dtype.bits // 8)


def _natural_alignment(dtype) -> int:
    """numba-cuda's alignment of a shared array without ``alignment=``: its element's ABI alignment rounded
    up to a power of 2 (cudaimpl.py); kdebug's floor stays 16 bytes, as before."""
    import numpy as np
    try:
        abi = np.dtype(dtype.np_dtype).alignment
    except Exception:  # a type numpy has no dtype for (a vector type): its size
        abi = _itemsize(dtype)
    return max(16, 1 << (max(abi, 1) - 1).bit_length())


POINTER_SIZE = 8
# the largest alignment= kdebug honours: the CPU backend's block shared memory and the stack are aligned
# to it (numba-cuda's own tests ask for at most 256)
MAX_ALIGNMENT = 4096


# A GPU's limits (every architecture numba-cuda targets): static shared memory per block, local per thread.
MAX_STATIC_SHARED_BYTES = 48 * 1024
MAX_LOCAL_BYTES = 512 * 1024


def _check_size_limit(inferer, node, name, nbytes):
    if name == "local.array" and nbytes > MAX_LOCAL_BYTES:
        raise inferer.error(node, f"this cuda.local.array takes {nbytes} bytes; a GPU thread has at most "
                                  f"{MAX_LOCAL_BYTES // 1024} KiB of local memory", "make it smaller, or use a global array")
    if name == "shared.array":
        # summed over this function's shared arrays, once each however often typing visits them
        total = sum(n for kind, _, n, _ in inferer.tf.arrays.values() if kind == "shared.array")
        if total > MAX_STATIC_SHARED_BYTES:
            raise inferer.error(node, f"static shared memory reaches {total} bytes here; a block has at most "
                                      f"{MAX_STATIC_SHARED_BYTES} bytes (48 KiB)",
                                "make the shared arrays smaller, or use dynamic shared memory (shape 0 and "
                                "k[grid, block, stream, nbytes])")


def _array_value(lw, ptr, shape, dtype):
    b = lw.builder
    if getattr(ptr.type, "addrspace", 0):  # e.g. a target's shared address space: arrays hold generic pointers
        ptr = b.addrspacecast(ptr, ir.PointerType(ptr.type.pointee))
    arr_t = T.Array(dtype, len(shape), "C")
    arr = ir.Constant(llvm_type(arr_t), ir.Undefined)
    arr = b.insert_value(arr, b.bitcast(ptr, ir.PointerType(mem_type(dtype))), 0)
    for k, n in enumerate(shape):
        arr = b.insert_value(arr, ir.Constant(ir.IntType(64), int(n)), [1, k])
    return arr


def _nelems(shape):
    n = 1
    for x in shape:
        n *= int(x)
    return n


@register("shared.array")
class SharedArray:
    """cuda.shared.array(shape, dtype): an array shared by the threads of a block, private to the block."""

    @staticmethod
    def type(inferer, node):
        shape, dtype = _array_type(inferer, node, "shared.array")
        inferer.tf.features.add("shared")
        return T.Array(dtype, len(shape), "C")

    @staticmethod
    def lower(lw, node):
        tf_t = lw.type_of(node)
        shape = _static_shape(lw, node)
        itemsize = _itemsize(tf_t.dtype)
        if shape == (0,):  # dynamic: the launch's shared_bytes, k[grid, block, stream, nbytes]
            base, nbytes = _target_hook(lw, node, "dynamic_shared_memory", "dynamic shared memory")()
            arr = _array_value(lw, base, (0,), tf_t.dtype)
            n = lw.builder.udiv(nbytes, ir.Constant(ir.IntType(64), itemsize))
            return lw.builder.insert_value(arr, n, [1, 0])
        nbytes = _nelems(shape) * itemsize
        align = lw.tf.arrays[node][3] or _natural_alignment(tf_t.dtype)
        ptr = _target_hook(lw, node, "shared_memory", "cuda.shared.array")(nbytes, align)
        return _array_value(lw, ptr, shape, tf_t.dtype)


def _static_shape(lw, node):
    """The constant shape type inference found for this array call."""
    return lw.tf.arrays[node][1]


@register("local.array")
class LocalArray:
    """cuda.local.array(shape, dtype): an array private to each thread."""

    @staticmethod
    def type(inferer, node):
        shape, dtype = _array_type(inferer, node, "local.array")
        return T.Array(dtype, len(shape), "C")

    @staticmethod
    def lower(lw, node):
        tf_t = lw.type_of(node)
        shape = _static_shape(lw, node)
        slot = lw.alloca(ir.ArrayType(mem_type(tf_t.dtype), _nelems(shape)), name="local.array")
        slot.align = lw.tf.arrays[node][3] or 16
        return _array_value(lw, slot, shape, tf_t.dtype)


@register("const.array_like")
class ConstArrayLike:
    """cuda.const.array_like(arr): a module-level (or closure) array as constant memory. kdebug freezes such
    arrays at compile time already, so this is the array itself (PTX places it in .const)."""

    @staticmethod
    def type(inferer, node):
        if len(node.args) != 1 or node.keywords:
            raise inferer.error(node, "cuda.const.array_like takes one array", "write cuda.const.array_like(ARR)")
        t = inferer.expr(node.args[0])
        if not isinstance(t, T.Array) or node.args[0] not in inferer.tf.consts:
            raise inferer.error(node.args[0], "cuda.const.array_like takes an array defined outside the kernel "
                                              "(a module global or a closure variable)",
                                "define the array at module level and pass its name")
        return t

    @staticmethod
    def lower(lw, node):
        return lw.expr(node.args[0])


# ---- atomics ---------------------------------------------------------------------------------------
_ATOMIC_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")
_ATOMIC_ARGS = {"add": 3, "sub": 3, "max": 3, "min": 3, "nanmax": 3, "nanmin": 3, "exch": 3, "and_": 3, "or_": 3,
                "xor": 3, "inc": 3, "dec": 3, "cas": 4, "compare_and_swap": 3}


def _atomic_typer(op):
    def type_(inferer, node):
        full = f"atomic.{op}"
        nargs = _ATOMIC_ARGS[op]
        if len(node.args) != nargs or node.keywords:
            usage = {"cas": "cuda.atomic.cas(ary, idx, old, val)",
                     "compare_and_swap": "cuda.atomic.compare_and_swap(ary, old, val)"}.get(
                op, f"cuda.atomic.{op}(ary, idx, val)")
            raise inferer.error(node, f"cuda.{full} takes {nargs} arguments", f"write {usage}")
        arr_t = inferer.expr(node.args[0])
        if not isinstance(arr_t, T.Array):
            raise inferer.error(node.args[0], f"cuda.{full} works on an array, not {arr_t}",
                                "pass a global or shared array and an index")
        if arr_t.readonly:  # a write that would silently vanish
            raise inferer.readonly_error(node, node.args[0], arr_t)
        if str(arr_t.dtype) not in _ATOMIC_TYPES:
            raise inferer.error(node.args[0], f"cuda.{full} does not support arrays of {arr_t.dtype}",
                                "use int32, uint32, int64, uint64, float32 or float64")
        if op in ("and_", "or_", "xor", "inc", "dec") and not arr_t.dtype.is_int:
            raise inferer.error(node.args[0], f"cuda.{full} needs an integer array, not {arr_t.dtype}",
                                "use an int32, uint32, int64 or uint64 array")
        if op == "compare_and_swap":
            if arr_t.ndim != 1:
                raise inferer.error(node.args[0], "cuda.atomic.compare_and_swap works on a 1-D array (element 0)",
                                    "use cuda.atomic.cas(ary, idx, old, val)")
            values = node.args[1:]
        else:
            idx = node.args[1]
            it = inferer.expr(idx)
            # numba-cuda's atomic templates take any index and its lowering (api_util.normalize_indices)
            # casts each number to intp: a float, as a (tx, ty % n) that unified to Tuple(int64, float64)
            ok_scalar = _atomic_index_number(it)
            ok_tuple = isinstance(it, T.Tuple) and len(it.types) == arr_t.ndim and all(
                _atomic_index_number(x) for x in it.types)
            if arr_t.ndim == 1 and not ok_scalar or arr_t.ndim > 1 and not ok_tuple:
                raise inferer.error(idx, f"the index of cuda.{full} on a {arr_t.ndim}-D array must be "
                                         + ("an integer" if arr_t.ndim == 1 else f"a tuple of {arr_t.ndim} integers")
                                         + f", not {it}", "index one element, e.g. (i, j) for a 2-D array")
            values = node.args[2:]
        for v in values:
            vt = inferer.expr(v)
            if not isinstance(vt, T.Scalar):
                raise inferer.error(v, f"cuda.{full} needs a number, not {vt}", "pass a scalar value")
        inferer.tf.features.add("atomic")
        return arr_t.dtype
    return type_


def _atomic_index_number(t) -> bool:
    """Whether ``t`` may index an atomic's element: a number numba casts to intp (not a complex)."""
    return isinstance(t, T.Scalar) and (t.is_int or t.is_bool or t.is_float)


def _atomic_pointer(lw, node, op):
    """The checked element pointer of ``ary[idx]`` for an atomic (bounds-checked like any access)."""
    import ast
    if op == "compare_and_swap":
        idx = ast.Constant(0)
        lw.tf.types[idx] = T.int64
    else:
        idx = node.args[1]
    sub = ast.Subscript(value=node.args[0], slice=idx, ctx=ast.Store())
    ast.copy_location(sub, node)
    return lw.element_pointer(sub, "atomic")


def _cas_loop(lw, ptr, compute):
    """old = *ptr; do { new = compute(old) } while (!cmpxchg(ptr, old, new)); returns old."""
    b = lw.builder
    ty = ptr.type.pointee
    is_float = isinstance(ty, (ir.FloatType, ir.DoubleType))
    ity = ir.IntType(32 if isinstance(ty, ir.FloatType) else 64) if is_float else ty
    iptr = b.bitcast(ptr, ir.PointerType(ity)) if is_float else ptr
    pre = b.block
    init = b.load_atomic(iptr, "monotonic", ity.width // 8)
    loop = lw.new_block("atomic.loop")
    done = lw.new_block("atomic.done")
    b.branch(loop)
    b.position_at_end(loop)
    old_i = b.phi(ity)
    old_i.add_incoming(init, pre)
    old = b.bitcast(old_i, ty) if is_float else old_i
    new = compute(old)
    new_i = b.bitcast(new, ity) if is_float else new
    pair = b.cmpxchg(iptr, old_i, new_i, "monotonic", "monotonic")
    old_i.add_incoming(b.extract_value(pair, 0), b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return old


def _float_minmax(b, op, old, val):
    """numba-cuda's ___numba_atomic_*_{max,min,nanmax,nanmin}: max/min store nothing when either value is
    NaN; nanmax/nanmin ignore a NaN ``val`` and replace a stored NaN."""
    if op in ("max", "min"):
        better = b.fcmp_ordered(">" if op == "max" else "<", val, old)
    else:
        ordered_val = b.fcmp_ordered("ord", val, val)
        better = b.and_(ordered_val, b.fcmp_unordered("<" if op == "nanmax" else ">", old, val))
    return b.select(better, val, old)


def _atomic_lowerer(op):
    def lower(lw, node):
        b = lw.builder
        arr_t = lw.type_of(node.args[0])
        dt = arr_t.dtype
        ptr, _ = _atomic_pointer(lw, node, op)
        vals = node.args[2:] if op != "compare_and_swap" else node.args[1:]
        v = [lw.cast(lw.expr(a), lw.type_of(a), dt) for a in vals]
        if op in ("cas", "compare_and_swap"):
            if dt.is_float:
                ity = ir.IntType(dt.bits)
                iptr = b.bitcast(ptr, ir.PointerType(ity))
                pair = b.cmpxchg(iptr, b.bitcast(v[0], ity), b.bitcast(v[1], ity), "monotonic", "monotonic")
                return b.bitcast(b.extract_value(pair, 0), ptr.type.pointee)
            pair = b.cmpxchg(ptr, v[0], v[1], "monotonic", "monotonic")
            return b.extract_value(pair, 0)
        val = v[0]
        if dt.is_float:
            if op in ("add", "sub"):
                return b.atomic_rmw("fadd" if op == "add" else "fsub", ptr, val, "monotonic")
            if op == "exch":
                return _cas_loop(lw, ptr, lambda old: val)
            if op in ("max", "min", "nanmax", "nanmin"):
                return _cas_loop(lw, ptr, lambda old: _float_minmax(b, op, old, val))
        signed = dt.signed
        rmw = {"add": "add", "sub": "sub", "exch": "xchg", "and_": "and", "or_": "or", "xor": "xor",
               "max": "max" if signed else "umax", "min": "min" if signed else "umin",
               "nanmax": "max" if signed else "umax", "nanmin": "min" if signed else "umin"}
        if op in rmw:
            return b.atomic_rmw(rmw[op], ptr, val, "monotonic")
        one, zero = ir.Constant(val.type, 1), ir.Constant(val.type, 0)
        if op == "inc":  # numba: old >= val ? 0 : old + 1 (unsigned compare)
            return _cas_loop(lw, ptr, lambda old: b.select(b.icmp_unsigned(">=", old, val), zero, b.add(old, one)))
        # dec: (old == 0 or old > val) ? val : old - 1
        return _cas_loop(lw, ptr, lambda old: b.select(
            b.or_(b.icmp_unsigned("==", old, zero), b.icmp_unsigned(">", old, val)), val, b.sub(old, one)))
    return lower


for _op in _ATOMIC_ARGS:
    REGISTRY[f"atomic.{_op}"] = IntrinsicImpl(_atomic_typer(_op), _atomic_lowerer(_op))


def _tuple(b, parts):
    if len(parts) == 1:
        return parts[0]
    ty = ir.LiteralStructType([p.type for p in parts])
    tup = ir.Constant(ty, ir.Undefined)
    for k, p in enumerate(parts):
        tup = b.insert_value(tup, p, k)
    return tup
