"""datetime64 and timedelta64 in kernels, as numba-cuda (numba/cuda/np/npdatetime.py), for one unit.

A value is an int64 count of its unit; the most negative int64 is NaT, which arithmetic passes on and
which compares unequal to everything (``!=`` is true, every other comparison false). Typed as numba:
datetime - datetime is a timedelta, datetime +/- timedelta a datetime, timedelta +/- timedelta and
timedelta * or // integer a timedelta, timedelta / timedelta a float64 and timedelta // timedelta an
int64. Operands of different units are a located error here (numba converts them to the finer unit).
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.lang import types as T

NAT = -(1 << 63)
_i64 = ir.IntType(64)


def _td(t: T.Scalar) -> T.Scalar:
    return T.Scalar("timedelta", 64, t.unit)


def binop_type(inferer, node, op, a: T.Scalar, b: T.Scalar) -> T.Type | None:
    """The result type when a datetime64/timedelta64 is involved, else None."""
    if not (a.is_datetime or b.is_datetime):
        return None
    what = f"{a} {type(op).__name__} {b}"
    if a.is_datetime and b.is_datetime and a.unit != b.unit:
        raise inferer.error(node, f"{what}: kdebug computes with datetimes of one unit ({a.unit} and {b.unit})",
                            f"convert on the host first, e.g. arr.astype('datetime64[{a.unit}]')")
    ka, kb = a.kind, b.kind
    result = None
    if isinstance(op, ast.Sub) and ka == kb == "datetime":
        result = _td(a)
    elif isinstance(op, (ast.Add, ast.Sub)) and ka == "datetime" and kb == "timedelta":
        result = a
    elif isinstance(op, ast.Add) and ka == "timedelta" and kb == "datetime":
        result = b
    elif isinstance(op, (ast.Add, ast.Sub)) and ka == kb == "timedelta":
        result = a
    elif isinstance(op, ast.Mult) and ((ka == "timedelta" and b.is_int) or (a.is_int and kb == "timedelta")):
        result = a if ka == "timedelta" else b
    elif isinstance(op, ast.FloorDiv) and ka == "timedelta" and b.is_int:
        result = a
    elif isinstance(op, ast.Div) and ka == kb == "timedelta":
        result = T.float64
    elif isinstance(op, ast.FloorDiv) and ka == kb == "timedelta":
        result = T.int64
    if result is None:
        raise inferer.error(node, f"unsupported operand types: {what}",
                            "datetimes subtract to timedeltas; timedeltas add, subtract, and scale by integers")
    return result


def check_compare(inferer, node, a: T.Scalar, b: T.Scalar) -> None:
    if (a.is_datetime or b.is_datetime) and (a.kind != b.kind or a.unit != b.unit):
        raise inferer.error(node, f"cannot compare {a} with {b} in a kernel", "compare values of one type and unit")


def is_nat(lw, v):
    return lw.builder.icmp_signed("==", v, ir.Constant(_i64, NAT))


def binop(lw, op, x, at: T.Scalar, y, bt: T.Scalar, rt: T.Scalar):
    """NaT in gives NaT out (NaN for /); an integer operand is widened to int64."""
    b = lw.builder
    x = x if at.is_datetime else lw.cast(x, at, T.int64)
    y = y if bt.is_datetime else lw.cast(y, bt, T.int64)
    nat = None
    for v, t in ((x, at), (y, bt)):
        if t.is_datetime:
            nat = is_nat(lw, v) if nat is None else b.or_(nat, is_nat(lw, v))
    if isinstance(op, ast.Div):
        r = b.fdiv(b.sitofp(x, ir.DoubleType()), b.sitofp(y, ir.DoubleType()))
        return b.select(nat, ir.Constant(ir.DoubleType(), float("nan")), r)
    if isinstance(op, ast.FloorDiv):
        zero = b.icmp_signed("==", y, ir.Constant(_i64, 0))
        nat = b.or_(nat, zero)  # numba: a division by zero gives NaT (0 for timedelta // timedelta)
        r = lw.int_divmod(op, x, b.select(zero, ir.Constant(_i64, 1), y), True)
        if not rt.is_datetime:
            return b.select(nat, ir.Constant(_i64, 0), r)
    else:
        r = {ast.Add: b.add, ast.Sub: b.sub, ast.Mult: b.mul}[type(op)](x, y)
    return b.select(nat, ir.Constant(_i64, NAT), r)


def compare(lw, op, x, y):
    b = lw.builder
    sym = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[type(op)]
    nat = b.or_(is_nat(lw, x), is_nat(lw, y))
    return b.select(nat, ir.Constant(ir.IntType(1), int(sym == "!=")), b.icmp_signed(sym, x, y))
