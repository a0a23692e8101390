"""numpy ufuncs called in kernels, as numba-cuda compiles them: on scalars a math call, on arrays an
elementwise loop in the calling thread writing the output array (``np.sin(x, out)``).

Each (ufunc, argument kinds) becomes a small device function written in the kernel language and
compiled like any other; its source is registered in linecache so errors and the Source view show it.
"""
from __future__ import annotations

import math

import numpy as np

from kdebug.lang import types as T
from kdebug.lang.generated import make_function
from kdebug.lang.dispatcher import Dispatcher

# the element operation of each ufunc, on a (and b); numba's loops for these ufuncs (numba/np/ufunc_db)
UFUNC_EXPR = {
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b", "true_divide": "a / b",
    "floor_divide": "a // b", "remainder": "a % b", "mod": "a % b", "power": "a ** b", "negative": "-a",
    "positive": "+a", "absolute": "abs(a)", "fabs": "math.fabs(a)", "maximum": "max(a, b)", "minimum": "min(a, b)",
    "fmax": "max(a, b)", "fmin": "min(a, b)", "greater": "a > b", "greater_equal": "a >= b", "less": "a < b",
    "less_equal": "a <= b", "equal": "a == b", "not_equal": "a != b", "square": "a * a",
    "reciprocal": "1 / a", "sign": "(a > 0) - (a < 0)", "deg2rad": "math.radians(a)", "rad2deg": "math.degrees(a)",
    "radians": "math.radians(a)", "degrees": "math.degrees(a)", "arctan2": "math.atan2(a, b)",
    "hypot": "math.hypot(a, b)", "copysign": "math.copysign(a, b)", "fmod": "math.fmod(a, b)",
    "floor": "math.floor(a) + 0.0", "ceil": "math.ceil(a) + 0.0", "trunc": "math.trunc(a) + 0.0",
    "isnan": "math.isnan(a)", "isinf": "math.isinf(a)", "isfinite": "math.isfinite(a)",
}
for _np, _math in [("sqrt", "sqrt"), ("exp", "exp"), ("expm1", "expm1"), ("log", "log"), ("log2", "log2"),
                   ("log10", "log10"), ("log1p", "log1p"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
                   ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
                   ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")]:
    UFUNC_EXPR[_np] = f"math.{_math}(a)"

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
    key = (ufunc.__name__, kinds)
    if key not in _functions:
        _functions[key] = Dispatcher(_build(ufunc.__name__, nin, kinds), device=True)
    return _functions[key]


def _build(name: str, nin: int, kinds: tuple):
    params = ["a", "b"][:nin]
    if len(kinds) == nin:  # scalars in, the value out
        body = [f"    return {UFUNC_EXPR[name]}"]
        args = params
    else:
        ndim = kinds[-1]
        idx = ", ".join(f"i{d}" for d in range(ndim))
        body = [f"    {'    ' * d}for i{d} in range(out.shape[{d}]):" for d in range(ndim)]
        pad = "    " * (ndim + 1)
        for p, k in zip(params, kinds):
            body.append(f"{pad}{p} = {p}_[{idx}]" if k else f"{pad}{p} = {p}_")
        body.append(f"{pad}out[{idx}] = {UFUNC_EXPR[name]}")
        args = [p + "_" for p in params] + ["out"]
    fname = f"np_{name}"
    text = "\n".join([f"def {fname}({', '.join(args)}):"] + body) + "\n"
    return make_function(fname, text, {"math": math}, f"np.{name} in a kernel")
