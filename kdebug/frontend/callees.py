"""The callees that are values, not code of the kernel's: builtins, casts, print, ``operator``, ``math``,
``cmath``, vector constructors and numpy ufuncs, each registered with its typing and its lowering in
``kdebug/frontend/registry.py`` (device functions, launches and pointers: ``device_calls.py``; cuda
intrinsics: ``intrinsics*.py``).

A typing function gets the TypeInferer, the call node and the callee; a lowering function the
FunctionLowerer, the call node and the callee. Most type the arguments first, in order, as numba does.
"""
from __future__ import annotations

import ast
import cmath
import math
import types
import warnings

import numpy as np
from llvmlite import ir

from kdebug.errors import NumbaWarning
from kdebug.frontend import complex_numbers as C, round_impl, ufuncs
from kdebug.frontend import strings as S, vectors as V
from kdebug.frontend.desugar import loop_iter_error
from kdebug.frontend.math_extra import EXTRA_MATH, OPERATOR_FUNCTIONS, lower_math, math_type, operator_expression
from kdebug.frontend.registry import register_callee
from kdebug.lang import intrinsics as I
from kdebug.lang import types as T
from kdebug.lang.extern import ExternFunction
from kdebug.lang.vector_types import constructors as vector_constructors

i1, i64 = ir.IntType(1), ir.IntType(64)


def _argtypes(inferer, node) -> list:
    return [inferer.expr(a) for a in node.args]


def _arguments(lw, node):
    """The call's argument values and their types, lowered in order."""
    return [lw.expr(a) for a in node.args], [lw.type_of(a) for a in node.args]


# ---- casts: int(x), float(x), bool(x), float32(x), np.float32(x) ---------------------------------
_CAST_TYPES = {int: T.int64, float: T.float64, bool: T.boolean}
SCALAR_TYPES = (T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64, T.float16, T.float32,
                T.float64, T.complex64, T.complex128, T.boolean)


def type_builtin_cast(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) != 1 or not isinstance(argts[0], T.Scalar):
        raise inferer.error(node, f"{fn.__name__}() takes one number here", f"write {fn.__name__}(x)")
    if fn is not bool:
        C.check_real(inferer, node.args[0], argts[0], f"{fn.__name__}()")
    return _CAST_TYPES[fn]


def type_scalar_cast(inferer, node, fn: T.Scalar) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) != 1 or not isinstance(argts[0], T.Scalar):
        raise inferer.error(node, f"{fn}(x) casts one number", f"write {fn}(value)")
    if not fn.is_complex:
        C.check_real(inferer, node.args[0], argts[0], f"{fn}()")
    return fn


def lower_cast(lw, node, fn):
    args, argts = _arguments(lw, node)
    return lw.cast(args[0], argts[0], lw.type_of(node))


for _fn in _CAST_TYPES:
    register_callee("casts", f"{_fn.__name__}()", type_builtin_cast, lower_cast, keys=[_fn])
for _t in SCALAR_TYPES:  # numba's float32(x); np.float32(x) resolves to float32 in classify
    register_callee("casts", f"{_t}()", type_scalar_cast, lower_cast, keys=[_t])
register_callee("casts", "datetime64[unit]() and timedelta64[unit]()", type_scalar_cast, lower_cast, kind=T.Scalar)


# ---- builtins: abs, min, max, round, len, complex -----------------------------------------------
def type_len(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if getattr(node, "kdebug_loop_iter", None) is not None and not isinstance(argts[0], (T.Array, T.Tuple)):
        raise loop_iter_error(inferer, node, argts[0])
    if len(argts) == 1 and S.is_string(argts[0]):  # numba's charseq_len / len of a str constant
        return T.int64
    if len(argts) != 1 or not isinstance(argts[0], (T.Array, T.Tuple)):
        raise inferer.error(node, "len() takes one array, tuple or string", "write len(a)")
    return T.int64


def lower_len(lw, node, fn):
    args, argts = _arguments(lw, node)
    if isinstance(argts[0], T.Tuple):
        return ir.Constant(i64, len(argts[0].types))
    if S.is_string(argts[0]):
        return S.length(lw, args[0], argts[0])
    return lw.builder.extract_value(args[0], [1, 0])


def type_abs(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) != 1 or not isinstance(argts[0], T.Scalar):
        raise inferer.error(node, "abs() takes one number", "write abs(x)")
    t = argts[0]
    return T.int64 if t.is_bool else t.underlying_float if t.is_complex else t


def lower_abs(lw, node, fn):
    args, argts = _arguments(lw, node)
    if argts[0].is_complex:
        return C.absolute(lw, args[0])
    rt = lw.type_of(node)
    v = lw.cast(args[0], argts[0], rt)
    if rt.is_float:
        return lw.call_intrinsic("llvm.fabs", [v])
    if not rt.signed:
        return v
    b = lw.builder
    return b.select(b.icmp_signed("<", v, ir.Constant(v.type, 0)), b.neg(v), v)


def type_minmax(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) == 1 and isinstance(argts[0], T.Tuple):
        argts = list(argts[0].types)
    if len(argts) < 2 or not all(isinstance(t, T.Scalar) for t in argts):
        raise inferer.error(node, f"{fn.__name__}() takes two or more numbers here", f"write {fn.__name__}(a, b)")
    for t in argts:
        C.check_real(inferer, node, t, f"{fn.__name__}()")
    r = argts[0]
    for t in argts[1:]:
        r = T.unify(r, t)
    return r


def lower_minmax(lw, node, fn):
    args, argts = _arguments(lw, node)
    rt = lw.type_of(node)
    b = lw.builder
    if len(argts) == 1:
        tup, tt = args[0], argts[0]
        args = [b.extract_value(tup, k) for k in range(len(tt.types))]
        argts = list(tt.types)
    is_min = fn is min
    vals = [lw.cast(a, t, rt) for a, t in zip(args, argts)]
    if len(vals) == 2 and all(t in (T.float32, T.float64) for t in argts):
        # numba-cuda's max(f, f)/min(f, f): libdevice's fmax/fmin (a NaN gives the other operand), which
        # are LLVM's maxnum/minnum: PTX max.f32/min.f64..., the C library's fmax on the CPU
        return lw.call_intrinsic("llvm.minnum" if is_min else "llvm.maxnum", vals)
    acc = vals[0]
    for v in vals[1:]:
        if rt.is_float:
            # Python semantics: min(a, b) keeps a unless b is strictly smaller
            better = b.fcmp_ordered("<" if is_min else ">", v, acc)
        elif rt.is_bool or not rt.signed:
            better = b.icmp_unsigned("<" if is_min else ">", v, acc)
        else:
            better = b.icmp_signed("<" if is_min else ">", v, acc)
        acc = b.select(better, v, acc)
    return acc


def type_round(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) == 2 and all(isinstance(t, T.Scalar) for t in argts):  # numba: (f4, intp) -> f4, (f8, intp) -> f8
        C.check_real(inferer, node, argts[0], "round()")
        if not (argts[1].is_int or argts[1].is_bool):
            raise inferer.error(node.args[1], f"round()'s ndigits is an integer, not {argts[1]}", "write round(x, 2)")
        x_t = argts[0] if argts[0].is_float and argts[0].bits >= 32 else T.float64
        inferer.device_call(node, round_impl.round_ndigits, [T.float64, T.int64])
        return x_t
    if len(argts) != 1 or not isinstance(argts[0], T.Scalar):
        raise inferer.error(node, "round() takes a number and, optionally, the digits to keep",
                            "write round(x) or round(x, ndigits)")
    C.check_real(inferer, node, argts[0], "round()")
    return T.int64


def lower_round(lw, node, fn):
    args, argts = _arguments(lw, node)
    if len(args) == 2:  # round_impl's round_ndigits, typed by typeinfer
        callee_tf = lw.tf.callees[node]
        v = lw.device_call(node, None, args, argts, callee_tf)
        return lw.cast(v, callee_tf.restype, lw.type_of(node))
    v = lw.cast(args[0], argts[0], T.float64) if not argts[0].is_float else args[0]
    return lw.cast(lw.call_intrinsic("llvm.roundeven", [v]), T.float64 if v.type == ir.DoubleType() else T.float32,
                   lw.type_of(node))


def type_complex(inferer, node, fn) -> T.Type:
    return C.complex_call_type(inferer, node, _argtypes(inferer, node))


def lower_complex(lw, node, fn):
    return C.complex_call(lw, node, *_arguments(lw, node))


def type_tuple(inferer, node, fn) -> T.Type:
    """numba's ``tuple(t)`` of a tuple: the tuple itself; ``tuple()``: the empty tuple."""
    argts = _argtypes(inferer, node)
    if node.keywords or len(argts) > 1 or (argts and not isinstance(argts[0], T.Tuple)):
        got = ", ".join(map(str, argts)) or "keywords"
        raise inferer.error(node, f"tuple() in a kernel takes a tuple (or nothing), not {got}",
                            "write the tuple itself, e.g. for v in (a, b, c)")
    return argts[0] if argts else T.Tuple(())


def lower_tuple(lw, node, fn):
    args, argts = _arguments(lw, node)
    if args:
        return args[0]
    return ir.Constant(ir.LiteralStructType([]), None)


def refuse_range(inferer, node, fn):
    _argtypes(inferer, node)
    raise inferer.error(node, "range() can only be used as the iterable of a for loop", "write for i in range(n)")


register_callee("builtins", "len()", type_len, lower_len, keys=[len])
register_callee("builtins", "abs()", type_abs, lower_abs, keys=[abs])
register_callee("builtins", "min()", type_minmax, lower_minmax, keys=[min])
register_callee("builtins", "max()", type_minmax, lower_minmax, keys=[max])
register_callee("builtins", "round()", type_round, lower_round, keys=[round])
register_callee("builtins", "complex()", type_complex, lower_complex, keys=[complex])
register_callee("builtins", "tuple()", type_tuple, lower_tuple, keys=[tuple])
register_callee("refused", "range() outside a for loop", refuse_range, None, keys=[range])


# ---- print ---------------------------------------------------------------------------------------
PRINT_ITEM_LIMIT = 32  # CUDA's vprintf formats at most 32 values (numba-cuda's printimpl.py)
_warned_in: dict = {}  # file: the warnings registry of its print() calls (warnings.warn_explicit's)


def _dim3(t) -> str | None:
    """``cuda.threadIdx`` (blockIdx, blockDim, gridDim) as a value: its name, else None."""
    value = getattr(t, "value", None)
    return value.name if isinstance(value, I.Dim3Intrinsic) else None


def _type_print_item(inferer, node, t) -> None:
    """One printable value as numba-cuda's ``print_item``: a number, a boolean, a str constant, cuda.threadIdx
    (and its kin) or a tuple of these."""
    if isinstance(t, T.StringConstant) and t.unicode:  # a str constant through a variable or a global
        return
    if _dim3(t) is not None:
        return
    if isinstance(t, T.Tuple) and not isinstance(t, T.NamedTuple):
        for element in t.types:
            _type_print_item(inferer, node, element)
        return
    if not isinstance(t, T.Scalar):
        raise inferer.error(node, f"print() in a kernel prints numbers, booleans and string constants, not {t}",
                            "print the elements one by one, e.g. print(a[i]); tuples of numbers print too")
    C.check_real(inferer, node, t, "print() in a kernel (numba-cuda's printf)")


def type_print(inferer, node, fn) -> T.Type:
    """print(x, "text", i, (a, b)) as numba-cuda: numbers, booleans, string constants, cuda.threadIdx and
    tuples of them, one line per thread. More than 32 items: numba's warning, and the line is the format."""
    if node.keywords:
        raise inferer.error(node.keywords[0].value, "print() in a kernel takes no keywords (sep=, end=, file=)",
                            "print values separated by spaces, as numba does")
    for a in node.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            continue
        _type_print_item(inferer, a, inferer.expr(a))
    if len(node.args) > PRINT_ITEM_LIMIT:
        loc = inferer.src.loc(node)  # numba's warning, at the call in the kernel's source
        # a NumbaWarning made here, not by warn_explicit from the class: under --numba=cuda-only it is numba's too;
        # the registry: once per call, though it is typed again
        warnings.warn_explicit(NumbaWarning(f"CUDA print() cannot print more than {PRINT_ITEM_LIMIT} items. The raw "
                                            "format string will be emitted by the kernel instead."), NumbaWarning,
                               loc.file, loc.line, registry=_warned_in.setdefault(loc.file, {}))
    inferer.tf.features.add("print")
    return T.void


_PRINTF_SPECS = {"i": "%lld", "u": "%llu", "f": "%f", "b": "%s"}


def _print_pieces(lw, t, value, pieces: list) -> None:
    """Add one value's pieces: ("s", text) or (scalar type, value), written one after the other."""
    dim3 = _dim3(t)
    if dim3 is not None:
        pieces.append(("s", "("))
        for k, dim in enumerate("xyz"):
            pieces += [("s", ", ")] if k else []
            pieces.append((T.int32, lw.special_register(dim3, dim)))
        pieces.append(("s", ")"))
    elif isinstance(t, T.StringConstant):
        pieces.append(("s", t.value))
    elif isinstance(t, T.Tuple):
        pieces.append(("s", "("))
        for k, element in enumerate(t.types):
            pieces += [("s", ", ")] if k else []
            _print_pieces(lw, element, lw.builder.extract_value(value, k), pieces)
        pieces.append(("s", ",)" if len(t.types) == 1 else ")"))
    else:
        pieces.append((t, value))


def _numba_format(t) -> str:
    """The printf format numba-cuda gives a value of type ``t`` (strings are ``%s`` arguments there)."""
    if _dim3(t) is not None:
        return "(%d, %d, %d)"
    if isinstance(t, T.StringConstant):
        return "%s"
    if isinstance(t, T.Tuple):
        inner = ", ".join(_numba_format(e) for e in t.types)
        return f"({inner},)" if len(t.types) == 1 else f"({inner})"
    return _PRINTF_SPECS["b" if t.is_bool else "f" if t.is_float else "i" if t.signed else "u"]


def lower_print(lw, node, fn):
    """The target prints one line of pieces written one after the other: ("s", text) for constant text,
    else (scalar type, value); the items of the call are separated by spaces, tuples written as Python
    writes them. More than 32 items: the line is numba's format string itself, as CUDA's vprintf prints it."""
    if len(node.args) > PRINT_ITEM_LIMIT:
        for a in node.args:  # evaluated all the same, as numba does
            if not (isinstance(a, ast.Constant) and isinstance(a.value, str)) and _dim3(lw.type_of(a)) is None:
                lw.expr(a)
        formats = ["%s" if isinstance(a, ast.Constant) and isinstance(a.value, str) else _numba_format(lw.type_of(a))
                   for a in node.args]
        lw.target.print_line(lw.hook_context, node, [("s", " ".join(formats))])
        return None
    pieces = []
    for k, a in enumerate(node.args):
        pieces += [("s", " ")] if k else []
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            pieces.append(("s", a.value))
            continue
        t = lw.type_of(a)
        _print_pieces(lw, t, None if _dim3(t) is not None else lw.expr(a), pieces)
    lw.target.print_line(lw.hook_context, node, pieces)
    return None


register_callee("print", "print()", type_print, lower_print, keys=[print], keywords=True)


# ---- the operator module: operator.add(a, b) is a + b ---------------------------------------------
def type_operator(inferer, node, fn) -> T.Type:
    _argtypes(inferer, node)
    return inferer.expr(operator_expression(inferer, node, fn))


def lower_operator(lw, node, fn):
    return lw.expr(node.kdebug_operator)  # the expression typing made and kept on the call node


for _fn in OPERATOR_FUNCTIONS:
    register_callee("operator", f"operator.{_fn.__name__}", type_operator, lower_operator, keys=[_fn])


# ---- math ----------------------------------------------------------------------------------------
MATH_UNARY_FLOAT = {"sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                    "asinh", "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10",
                    "fabs", "erf", "erfc", "gamma", "lgamma", "radians", "degrees"}
MATH_BINARY_FLOAT = {"pow", "atan2", "hypot", "fmod", "copysign"}
MATH_TO_INT = {"floor", "ceil", "trunc"}
MATH_PREDICATE = {"isnan", "isinf", "isfinite"}
MATH_NAMES = MATH_UNARY_FLOAT | MATH_BINARY_FLOAT | MATH_TO_INT | MATH_PREDICATE | EXTRA_MATH | {"fma", "exp2"}
_LLVM_MATH = {"sqrt", "sin", "cos", "exp", "log", "log2", "log10", "fabs", "floor", "ceil", "trunc", "exp2"}
_LIBM_RENAME = {"gamma": "tgamma"}


def type_math(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    name = fn.__name__
    for t in argts:
        if not isinstance(t, T.Scalar):
            raise inferer.error(node, f"math.{name} takes numbers, got {t}", "pass scalar values")
        C.check_real(inferer, node, t, f"math.{name}")
    extra = math_type(inferer, node, name, argts)
    if extra is not None:
        return extra
    if name in MATH_UNARY_FLOAT and len(argts) == 1:
        t = argts[0]
        return t if t.is_float else T.float64
    if name in MATH_BINARY_FLOAT and len(argts) == 2:
        r = T.arith_result(*argts)
        return r if r.is_float else T.float64
    if name == "fma" and len(argts) == 3:
        r = T.arith_result(T.arith_result(argts[0], argts[1]), argts[2])
        return r if r.is_float else T.float64
    if name in MATH_TO_INT and len(argts) == 1:
        return T.float16 if argts[0] == T.float16 else T.int64  # numba-cuda's fp16 overloads: htrunc...
    if name in MATH_PREDICATE and len(argts) == 1:
        return T.boolean
    if name in ("exp2",) and len(argts) == 1:
        return argts[0] if argts[0].is_float else T.float64
    raise inferer.error(node, f"math.{name} with {len(argts)} argument(s) is not supported in kernels",
                        "supported: " + ", ".join(sorted(MATH_UNARY_FLOAT | MATH_BINARY_FLOAT | MATH_TO_INT
                                                         | MATH_PREDICATE | EXTRA_MATH)))


def lower_math_call(lw, node, fn):
    args, argts = _arguments(lw, node)
    return math_call(lw, fn.__name__, args, argts, lw.type_of(node))


def math_call(lw, name, args, argts, rt):
    b = lw.builder
    if T.float16 in argts and rt in (T.float16, T.int64):
        # half precision: computed in float32 and rounded once (numba-cuda's h* functions, within an ulp)
        wide = [T.float32 if t == T.float16 else t for t in argts]
        inner = T.float32 if rt == T.float16 else rt
        v = math_call(lw, name, [lw.cast(a, t, w) for a, t, w in zip(args, argts, wide)], wide, inner)
        return lw.cast(v, inner, rt)
    extra = lower_math(lw, name, args, argts, rt)
    if extra is not None:
        return extra
    if name in MATH_PREDICATE:
        t = argts[0]
        if not t.is_float:
            return ir.Constant(i1, int(name == "isfinite"))
        v = args[0]
        if name == "isnan":
            return b.fcmp_unordered("uno", v, v)
        absv = lw.call_intrinsic("llvm.fabs", [v])
        inf = ir.Constant(v.type, math.inf)
        return b.fcmp_ordered("==", absv, inf) if name == "isinf" else b.fcmp_ordered("<", absv, inf)
    if name in MATH_TO_INT:
        t = argts[0]
        if not t.is_float:
            return lw.cast(args[0], t, rt)
        return lw.cast(lw.call_intrinsic(f"llvm.{name}", [args[0]]), t, rt)
    ft = rt if rt.is_float else T.float64
    vals = [lw.cast(a, t, ft) for a, t in zip(args, argts)]
    if name == "radians":
        return b.fmul(vals[0], ir.Constant(vals[0].type, math.pi / 180))
    if name == "degrees":
        return b.fmul(vals[0], ir.Constant(vals[0].type, 180 / math.pi))
    approx = lw.target.approximate_math(name, ft == T.float32) if lw.fastmath else None
    if approx is not None:  # fastmath=True: the target's approximation (libdevice's __nv_fast_cosf...)
        return lw.call_declared(approx, vals)
    if name in _LLVM_MATH or name in ("fma", "copysign", "pow"):
        return lw.call_intrinsic(f"llvm.{name}", vals)
    return lw.call_libm(_LIBM_RENAME.get(name, name), vals)


def _module_functions(module) -> dict:
    """The functions of ``module`` under their own names (math.sqrt, or sqrt imported from math)."""
    return {name: v for name, v in vars(module).items() if callable(v) and getattr(v, "__name__", None) == name}


for _name, _fn in sorted(_module_functions(math).items()):
    # the ones kdebug has no code for are refused by the same typing (it names the supported ones)
    family = "math" if _name in MATH_NAMES else "refused"
    register_callee(family, f"math.{_name}", type_math, lower_math_call if family == "math" else None, keys=[_fn])


# ---- cmath: device functions written in the kernel language (cmath_impl.py) ------------------------
def type_cmath(inferer, node, fn) -> T.Type:
    return C.cmath_call_type(inferer, node, fn.__name__, _argtypes(inferer, node))


def lower_cmath(lw, node, fn):
    return C.cmath_call(lw, node, *_arguments(lw, node))


for _name, _fn in sorted(_module_functions(cmath).items()):
    family = "cmath" if _name in C.CMATH_NAMES else "refused"
    register_callee(family, f"cmath.{_name}", type_cmath, lower_cmath if family == "cmath" else None, keys=[_fn])


# ---- z.conjugate() -------------------------------------------------------------------------------
def lower_conjugate(lw, node, m):
    return C.conjugate(lw, node, m)


register_callee("number methods", "z.conjugate()", C.method_call_type, lower_conjugate, callee_type=C.NumberMethod,
                keywords=True)


# ---- vector constructors: cuda.float32x4(...) ------------------------------------------------------
def type_vector(inferer, node, fn) -> T.Type:
    return V.constructor_type(inferer, node, fn, _argtypes(inferer, node))


def lower_vector(lw, node, fn):
    return V.lower_constructor(lw, node, *_arguments(lw, node))


for _ctor in vector_constructors.values():  # an alias (cuda.float4) is the same object
    register_callee("vector constructors", f"cuda.{_ctor.__name__}", type_vector, lower_vector, keys=[_ctor])


# ---- numpy ufuncs: a device function the ufuncs module writes (numba's semantics) -------------------
def type_ufunc(inferer, node, ufunc) -> T.Type:
    """np.sin(x), np.add(x, y, out)."""
    argts = [inferer.expr(a) for a in ufuncs.arguments(node)]
    ufuncs.check_call(inferer, node, ufunc, argts)
    return inferer.device_call(node, ufuncs.device_function(ufunc, tuple(argts)), argts)


def lower_ufunc(lw, node, ufunc):
    nodes = ufuncs.arguments(node)
    argts = [lw.type_of(a) for a in nodes]
    return lw.device_call(node, ufuncs.device_function(ufunc, tuple(argts)), [lw.expr(a) for a in nodes], argts)


for _ufunc in {getattr(np, n) for n in ufuncs.UFUNC_EXPR if ufuncs.supported(getattr(np, n, None))}:
    register_callee("ufuncs", f"np.{_ufunc.__name__}", type_ufunc, lower_ufunc, keys=[_ufunc], keywords=True)


# ---- modules -------------------------------------------------------------------------------------
def refuse_module(inferer, node, fn):
    _argtypes(inferer, node)
    raise inferer.error(node, "a module cannot be called", "call one of its functions")


register_callee("refused", "a module", refuse_module, None, kind=types.ModuleType)


# ---- cuda.declare_device: functions defined outside Python (kdebug/lang/extern.py) -----------------
def type_extern_call(inferer, node, fn) -> T.Type:
    argts = _argtypes(inferer, node)
    if len(argts) != len(fn.sig.args):
        raise inferer.error(node, f"{fn.name} is declared with {len(fn.sig.args)} argument(s) ({fn.sig}); "
                                  f"{len(argts)} given", "pass one value per declared argument")
    for a, t, want in zip(node.args, argts, fn.sig.args):
        if not isinstance(want, T.Scalar) or not isinstance(t, T.Scalar):
            raise inferer.error(a, f"{fn.name} takes {want} here: kdebug passes numbers to declared device "
                                   f"functions, not {t}", "pass numbers (numba's ABI for arrays is not provided)")
    if fn.sig.restype is not T.void and not isinstance(fn.sig.restype, T.Scalar):
        raise inferer.error(node, f"{fn.name} returns {fn.sig.restype}: kdebug's declared device functions "
                                  "return numbers", "declare it returning a number or void")
    return fn.sig.restype


def lower_extern_call(lw, node, fn):
    b = lw.builder
    args = [lw.cast(lw.expr(a), lw.type_of(a), want) for a, want in zip(node.args, fn.sig.args)]
    void = fn.sig.restype is T.void
    ret = ir.VoidType() if void else lw.llvm_type(fn.sig.restype)
    params = [a.type for a in args]
    if fn.abi == "c":
        callee = lw.target.extern_function(lw.hook_context, node, fn, ir.FunctionType(ret, params))
        value = b.call(callee, args)
        return None if void else value
    # numba's ABI: int status = name(restype *ret, args...)
    slot_t = ir.IntType(8) if void else ret
    callee = lw.target.extern_function(lw.hook_context, node, fn,
                                       ir.FunctionType(ir.IntType(32), [ir.PointerType(slot_t)] + params))
    slot = lw.alloca(slot_t)
    b.call(callee, [slot] + args)
    return None if void else b.load(slot)


register_callee("extern", "cuda.declare_device functions", type_extern_call, lower_extern_call, kind=ExternFunction)
