"""numpy ufuncs called in kernels, as numba-cuda compiles them: on scalars a math call, on arrays an
elementwise loop in the calling thread writing the output array (``np.sin(x, out)``).

Each (ufunc, argument kinds) becomes a small device function written in the kernel language and
compiled like any other; its source is registered in linecache so errors and the Source view show it.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from kdebug.lang import types as T
from kdebug.lang.generated import make_function
from kdebug.lang.dispatcher import Dispatcher

# the element operation of each ufunc, on a (and b); numba's loops for these ufuncs (numba/np/ufunc_db)
UFUNC_EXPR = {
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b", "true_divide": "a / b",
    "floor_divide": "a // b", "remainder": "a % b", "mod": "a % b", "power": "a ** b", "negative": "-a",
    "positive": "+a", "absolute": "abs(a)", "fabs": "math.fabs(a)",
    # maximum/minimum return a NaN operand (the first when both are), fmax/fmin the other one (npyfuncs.py)
    "maximum": "a if a != a or a >= b else b", "minimum": "a if a != a or a <= b else b",
    "fmax": "a if b != b or a >= b else b", "fmin": "a if b != b or a <= b else b",
    "greater": "a > b", "greater_equal": "a >= b", "less": "a < b",
    "less_equal": "a <= b", "equal": "a == b", "not_equal": "a != b", "square": "a * a",
    "reciprocal": "1 / a", "sign": "(a > 0) - (a < 0)", "deg2rad": "math.radians(a)", "rad2deg": "math.degrees(a)",
    "radians": "math.radians(a)", "degrees": "math.degrees(a)", "arctan2": "math.atan2(a, b)",
    "hypot": "math.hypot(a, b)", "copysign": "math.copysign(a, b)", "fmod": "math.fmod(a, b)",
    "floor": "math.floor(a) + 0.0", "ceil": "math.ceil(a) + 0.0", "trunc": "math.trunc(a) + 0.0",
    "isnan": "math.isnan(a)", "isinf": "math.isinf(a)", "isfinite": "math.isfinite(a)",
    "logical_and": "bool(a) and bool(b)", "logical_or": "bool(a) or bool(b)", "logical_xor": "bool(a) != bool(b)",
    "logical_not": "not bool(a)", "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b",
    "invert": "~a",
}
for _np, _math in [("sqrt", "sqrt"), ("exp", "exp"), ("expm1", "expm1"), ("log", "log"), ("log2", "log2"),
                   ("log10", "log10"), ("log1p", "log1p"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
                   ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
                   ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")]:
    UFUNC_EXPR[_np] = f"math.{_math}(a)"

# the loops numba's ufunc_db gives complex operands where they differ from the real ones (npyfuncs.py):
# cmath's functions, numpy's lexicographic order, a NaN being any NaN part
COMPLEX_EXPR = {
    "log2": "complex_log2(a)", "greater": "complex_greater(a, b)", "greater_equal": "complex_greater(a, b, True)",
    "less": "complex_greater(b, a)", "less_equal": "complex_greater(b, a, True)",
    "maximum": "a if cmath.isnan(a) or (not cmath.isnan(b) and complex_greater(a, b, True)) else b",
    "minimum": "a if cmath.isnan(a) or (not cmath.isnan(b) and complex_greater(b, a, True)) else b",
    "fmax": "a if cmath.isnan(b) or (not cmath.isnan(a) and complex_greater(a, b, True)) else b",
    "fmin": "a if cmath.isnan(b) or (not cmath.isnan(a) and complex_greater(b, a, True)) else b",
    "isnan": "cmath.isnan(a)", "isinf": "cmath.isinf(a)", "isfinite": "cmath.isfinite(a)",
}
for _np in ("sqrt", "exp", "log", "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh"):
    COMPLEX_EXPR[_np] = f"cmath.{_np}(a)"
for _np in ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"):
    COMPLEX_EXPR[_np] = f"cmath.a{_np[3:]}(a)"

# a signed integer compared with a uint64: numpy's exact 'qQ->?' loops (numba's int_signed_unsigned_cmp),
# where Python's operators would compare the two as float64
SIGNED_UNSIGNED_EXPR = {
    "greater": "a >= 0 and uint64(a) > b", "greater_equal": "a >= 0 and uint64(a) >= b",
    "less": "a < 0 or uint64(a) < b", "less_equal": "a < 0 or uint64(a) <= b",
    "equal": "a >= 0 and uint64(a) == b", "not_equal": "a < 0 or uint64(a) != b",
}
UNSIGNED_SIGNED_EXPR = {
    "greater": "b < 0 or a > uint64(b)", "greater_equal": "b < 0 or a >= uint64(b)",
    "less": "b >= 0 and a < uint64(b)", "less_equal": "b >= 0 and a <= uint64(b)",
    "equal": "b >= 0 and a == uint64(b)", "not_equal": "b < 0 or a != uint64(b)",
}


def _complex_greater(a, b, or_equal=False):
    """numpy's a > b (a >= b with or_equal) of complex numbers: by real part, then by imaginary part
    (the CGT and CGE macros of numpy's loops.c.src, which numba's np_complex_gt_impl copies)."""
    if a.real > b.real and a.imag == a.imag and b.imag == b.imag:
        return True
    if or_equal:
        return a.real == b.real and a.imag >= b.imag
    return a.real == b.real and a.imag > b.imag


def _complex_log2(z):
    """numpy's log2 of a complex number: log(z) with both parts scaled by log2(e) (np_complex_log2_impl;
    multiplying by a complex log2(e) would make log2(0)'s imaginary part -inf * 0, NaN)."""
    r = cmath.log(z)
    return complex(r.real * LOG2E, r.imag * LOG2E)


LOG2E = 1.0 / math.log(2)
_complex_greater = Dispatcher(_complex_greater, device=True)
_complex_log2 = Dispatcher(_complex_log2, device=True)

_functions: dict[tuple, object] = {}


def supported(ufunc) -> bool:
    return isinstance(ufunc, np.ufunc) and ufunc.__name__ in UFUNC_EXPR


def arguments(node) -> list:
    """The call's argument nodes, the output array last (positional, or ``out=``)."""
    return list(node.args) + [kw.value for kw in node.keywords if kw.arg == "out"]


def check_call(inferer, node, ufunc, argts) -> None:
    """numba's rules for a ufunc in a kernel: nin inputs, an output array when an input is an array."""
    name, nin = ufunc.__name__, ufunc.nin
    if any(kw.arg != "out" for kw in node.keywords):
        bad = next(kw for kw in node.keywords if kw.arg != "out")
        raise inferer.error(bad.value, f"np.{name} in a kernel takes only the out= keyword",
                            f"write np.{name}({', '.join('xy'[:nin])}, out)")
    if not nin <= len(argts) <= nin + 1:
        raise inferer.error(node, f"np.{name} takes {nin} input(s) and an optional output array, "
                                  f"not {len(argts)} argument(s)", f"write np.{name}({', '.join('xy'[:nin])}, out)")
    for a, t in zip(arguments(node), argts):
        if not isinstance(t, (T.Scalar, T.Array)):
            raise inferer.error(a, f"np.{name} takes numbers and arrays, not {t}", "pass arrays or numbers")
    ins, out = argts[:nin], argts[nin:]
    if out and not isinstance(out[0], T.Array):
        raise inferer.error(arguments(node)[nin], f"the output of np.{name} must be an array, not {out[0]}",
                            "pass an array of the inputs' shape")
    ndims = {t.ndim for t in argts if isinstance(t, T.Array)}
    if len(ndims) > 1:
        raise inferer.error(node, f"np.{name}'s arrays have different dimensions ({sorted(ndims)})",
                            "pass arrays of one shape (or numbers, which apply to every element)")
    if any(isinstance(t, T.Array) for t in ins) and not out:
        raise inferer.error(node, f"np.{name} on arrays needs an output array in a kernel (kernels cannot "
                                  f"allocate arrays)", f"pass one: np.{name}({', '.join('xy'[:nin])}, out)")


def device_function(ufunc, argts: tuple):
    """The device function computing ``ufunc`` for these argument types (one per ufunc and kinds)."""

    nin = ufunc.nin
    kinds = tuple(t.ndim if isinstance(t, T.Array) else 0 for t in argts)
    dtypes = [t.dtype if isinstance(t, T.Array) else t for t in argts[:nin]]
    expr = _loop_table(ufunc.__name__, dtypes)[ufunc.__name__]
    key = (ufunc.__name__, kinds, expr)
    if key not in _functions:
        _functions[key] = Dispatcher(_build(ufunc.__name__, expr, nin, kinds), device=True)
    return _functions[key]


def _loop_table(name: str, dtypes: list) -> dict:
    """The table whose expression computes ``name`` on inputs of these dtypes (as numba's ufunc_db picks
    the loop by the inputs' types)."""
    if name in COMPLEX_EXPR and any(getattr(t, "is_complex", False) for t in dtypes):
        return COMPLEX_EXPR
    if name in SIGNED_UNSIGNED_EXPR and len(dtypes) == 2 and all(getattr(t, "is_int", False) for t in dtypes):
        a, b = dtypes
        if a.signed and not b.signed and b.bits == 64:
            return SIGNED_UNSIGNED_EXPR
        if not a.signed and a.bits == 64 and b.signed:
            return UNSIGNED_SIGNED_EXPR
    return UFUNC_EXPR


def _build(name: str, expr: str, nin: int, kinds: tuple):
    params = ["a", "b"][:nin]
    if len(kinds) == nin:  # scalars in, the value out
        body = [f"    return {expr}"]
        args = params
    else:
        ndim = kinds[-1]
        idx = ", ".join(f"i{d}" for d in range(ndim))
        body = [f"    {'    ' * d}for i{d} in range(out.shape[{d}]):" for d in range(ndim)]
        pad = "    " * (ndim + 1)
        for p, k in zip(params, kinds):
            body.append(f"{pad}{p} = {p}_[{idx}]" if k else f"{pad}{p} = {p}_")
        body.append(f"{pad}out[{idx}] = {expr}")
        args = [p + "_" for p in params] + ["out"]
    fname = f"np_{name}"
    text = "\n".join([f"def {fname}({', '.join(args)}):"] + body) + "\n"
    namespace = {"math": math, "cmath": cmath, "complex_greater": _complex_greater,
                 "complex_log2": _complex_log2, "uint64": T.uint64}
    return make_function(fname, text, namespace, f"np.{name} in a kernel")
