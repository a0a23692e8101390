"""complex64 and complex128 in kernels, typed and lowered as numba-cuda does (numba/cuda/cpython/numbers.py).

A complex value is the LLVM struct ``{float, float}`` (``{double, double}``), the layout of numpy's
complex dtypes, so arrays of them are plain arrays of that struct. ``+ - *``, comparisons, ``abs``,
``.real``, ``.imag`` and ``.conjugate()`` are lowered here; ``/``, ``**`` and the ``cmath`` functions are
device functions written in the kernel language (kdebug/frontend/cmath_impl.py). As in numba,
``complex(x, y)`` is complex128, ``cmath.f(z)`` has ``z``'s type, and complex numbers do not convert to
real ones (take ``.real`` or ``abs``).
"""
from __future__ import annotations

import ast
import math

from llvmlite import ir

from kdebug.frontend import cmath_impl
from kdebug.lang import types as T
from kdebug.lazy_dataclasses import dataclass


@dataclass(frozen=True)
class NumberMethod(T.Type):
    """``z.conjugate`` before it is called."""

    receiver: T.Scalar
    method: str

    def __str__(self) -> str:
        return f"method<{self.receiver}.{self.method}>"


# ---- typing ---------------------------------------------------------------------------------
def attribute_type(inferer, node, t: T.Scalar) -> T.Type:
    """``.real``, ``.imag`` and ``.conjugate`` of a number (numba has them for real numbers too)."""
    if node.attr in ("real", "imag"):
        return t.underlying_float
    if node.attr == "conjugate":
        return NumberMethod(t, "conjugate")
    raise inferer.error(node, f"{t} has no attribute {node.attr!r}", "numbers have .real, .imag and .conjugate()")


def method_call_type(inferer, node, m: NumberMethod) -> T.Type:
    if node.args or node.keywords:
        raise inferer.error(node, f"{m.method}() takes no arguments", f"write z.{m.method}()")
    return m.receiver


def check_binop(inferer, node, op, a: T.Scalar, b: T.Scalar) -> None:
    """numba has no //, % or bitwise operators on complex numbers."""
    if not (a.is_complex or b.is_complex):
        return
    if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
        raise inferer.error(node, f"unsupported operand types for {type(op).__name__}: {a} and {b}",
                            "complex numbers take + - * / **")
    if isinstance(op, (ast.Div, ast.Pow)):
        inferer.tf.features.add("raise")  # complex division by zero raises ZeroDivisionError, as numba


def check_compare(inferer, node, op, a: T.Scalar, b: T.Scalar) -> None:
    if (a.is_complex or b.is_complex) and not isinstance(op, (ast.Eq, ast.NotEq)):
        raise inferer.error(node, f"complex numbers cannot be ordered ({a} and {b})", "compare them with == or !=")


def check_real(inferer, node, t: T.Type, what: str) -> None:
    """Where numba takes real numbers only: casts to them, math functions, min/max, round, print."""
    if isinstance(t, T.Scalar) and t.is_complex:
        raise inferer.error(node, f"{what} does not take complex numbers ({t})",
                            "take the real part (z.real), the imaginary part (z.imag) or abs(z)")


def complex_call_type(inferer, node, argts) -> T.Type:
    """``complex(x)`` / ``complex(x, y)``: complex128, as numba types the builtin."""
    if not 1 <= len(argts) <= 2 or not all(isinstance(t, T.Scalar) for t in argts):
        raise inferer.error(node, "complex() takes one or two numbers here", "write complex(re, im)")
    if len(argts) == 2:
        for a, t in zip(node.args, argts):
            check_real(inferer, a, t, "complex(re, im)")
    return T.complex128


CMATH_UNARY = {"exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"}
CMATH_PREDICATE = {"isnan", "isinf", "isfinite"}
CMATH_NAMES = CMATH_UNARY | CMATH_PREDICATE | {"phase", "polar", "rect"}


def cmath_call_type(inferer, node, name: str, argts) -> T.Type:
    """numba-cuda's cmath signatures (typing/cmathdecl.py): complex arguments (real ones for rect)."""
    if name not in CMATH_NAMES:
        raise inferer.error(node, f"cmath.{name} is not supported in kernels",
                            "supported: " + ", ".join(f"cmath.{n}" for n in sorted(CMATH_NAMES)))
    want = 2 if name in ("rect",) or (name == "log" and len(argts) == 2) else 1
    if len(argts) != want or not all(isinstance(t, T.Scalar) for t in argts):
        raise inferer.error(node, f"cmath.{name} takes {want} number(s) here", f"write cmath.{name}(z)")
    if name == "rect":
        for a, t in zip(node.args, argts):
            check_real(inferer, a, t, "cmath.rect")
        argts = [_unify_all([t if t.is_float else T.float64 for t in argts])] * 2
    else:
        for a, t in zip(node.args, argts):
            if not t.is_complex:  # numba-cuda: "TODO: support non-complex arguments"
                raise inferer.error(a, f"cmath.{name} takes a complex number in kernels, not {t}",
                                    f"pass complex(x) or use math.{name} for real numbers"
                                    if hasattr(math, name) else "pass complex(x)")
        argts = [_unify_all(argts)] * len(argts)
    impl = cmath_impl.function("log_base" if name == "log" and len(argts) == 2 else name, argts[0])
    restype = inferer.device_call(node, impl, list(argts))
    if name in CMATH_PREDICATE:
        return T.boolean
    if name in ("phase", "polar", "rect"):
        return restype
    return argts[0]


def _unify_all(ts):
    r = ts[0]
    for t in ts[1:]:
        r = T.unify(r, t)
    return r


# ---- lowering -------------------------------------------------------------------------------
def parts(lw, v):
    b = lw.builder
    return b.extract_value(v, 0), b.extract_value(v, 1)


def make(lw, t: T.Scalar, re, im):
    b = lw.builder
    v = ir.Constant(lw.llvm_type(t), ir.Undefined)
    return b.insert_value(b.insert_value(v, re, 0), im, 1)


def cast(lw, v, src: T.Scalar, dst: T.Scalar):
    """Casts to and between complex types (a real number gets a zero imaginary part)."""
    f = dst.underlying_float
    if src.is_complex:
        re, im = parts(lw, v)
        return make(lw, dst, lw.cast(re, src.underlying_float, f), lw.cast(im, src.underlying_float, f))
    return make(lw, dst, lw.cast(v, src, f), ir.Constant(lw.llvm_type(f), 0.0))


def truth(lw, v):
    b = lw.builder
    re, im = parts(lw, v)
    zero = ir.Constant(re.type, 0.0)
    return b.or_(b.fcmp_unordered("!=", re, zero), b.fcmp_unordered("!=", im, zero))


def binop(lw, op, x, y, t: T.Scalar, node):
    """``x op y`` with both already of complex type ``t``."""
    b = lw.builder
    a, bi = parts(lw, x)
    c, d = parts(lw, y)
    if isinstance(op, ast.Add):
        return make(lw, t, b.fadd(a, c), b.fadd(bi, d))
    if isinstance(op, ast.Sub):
        return make(lw, t, b.fsub(a, c), b.fsub(bi, d))
    if isinstance(op, ast.Mult):  # numba's complex_mul_impl: (ac - bd) + (ad + bc)j
        return make(lw, t, b.fsub(b.fmul(a, c), b.fmul(bi, d)), b.fadd(b.fmul(a, d), b.fmul(bi, c)))
    callee_tf = lw.tf.callees[node]  # cmath_impl's complex_div or complex_pow, typed by typeinfer
    v = lw.device_call(node, None, [x, y], [t, t], callee_tf)
    return lw.cast(v, callee_tf.restype, t)


def helper_for(op):
    """The device function typeinfer types for a complex ``/`` or ``**`` (None for the inline operators)."""
    if isinstance(op, (ast.Div, ast.Pow)):
        return cmath_impl.helper("complex_div" if isinstance(op, ast.Div) else "complex_pow")
    return None


def compare(lw, op, x, y):
    b = lw.builder
    a, bi = parts(lw, x)
    c, d = parts(lw, y)
    if isinstance(op, ast.Eq):
        return b.and_(b.fcmp_ordered("==", a, c), b.fcmp_ordered("==", bi, d))
    return b.or_(b.fcmp_unordered("!=", a, c), b.fcmp_unordered("!=", bi, d))


def negate(lw, v, t):
    b = lw.builder
    re, im = parts(lw, v)
    return make(lw, t, b.fneg(re), b.fneg(im))


def absolute(lw, v):
    re, im = parts(lw, v)
    return lw.call_libm("hypot", [re, im])


def attribute(lw, node, v, t: T.Scalar):
    """``.real`` / ``.imag`` of a number."""
    if t.is_complex:
        return lw.builder.extract_value(v, 0 if node.attr == "real" else 1)
    if node.attr == "real":
        return v
    return ir.Constant(lw.llvm_type(t), 0.0 if t.is_float else 0) if not t.is_bool else ir.Constant(ir.IntType(1), 0)


def conjugate(lw, node, m: NumberMethod):
    v = lw.expr(node.func.value)
    if not m.receiver.is_complex:
        return v
    re, im = parts(lw, v)
    return make(lw, m.receiver, re, lw.builder.fneg(im))


def complex_call(lw, node, args, argts):
    """``complex(x)`` / ``complex(re, im)`` as complex128."""
    if len(args) == 1:
        return lw.cast(args[0], argts[0], T.complex128)
    return make(lw, T.complex128, lw.cast(args[0], argts[0], T.float64), lw.cast(args[1], argts[1], T.float64))


def cmath_call(lw, node, args, argts):
    callee_tf = lw.tf.callees[node]
    v = lw.device_call(node, None, args, argts, callee_tf)
    rt = lw.type_of(node)
    return v if rt == callee_tf.restype else lw.cast(v, callee_tf.restype, rt)
