"""The parts of ``math`` whose types are not "float in, float out" (numba-cuda's ``cudamath.py``):
``frexp``, ``ldexp``, ``modf``, ``remainder``, ``nextafter`` and ``pow`` with an integer exponent
(numba's ``powi``); the ``operator`` module's functions; ``fastmath`` flags.
"""
from __future__ import annotations

import ast
import operator

from llvmlite import ir

from kdebug.lang import types as T

i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)

# ---- typing ------------------------------------------------------------------------------------
EXTRA_MATH = {"frexp", "ldexp", "modf", "remainder", "nextafter"}


def _float_of(t: T.Scalar) -> T.Scalar:
    return t if t.is_float else T.float64


def math_type(inferer, node, name, argts):
    """The result type of the math functions above, or None for the others."""
    if name == "frexp" and len(argts) == 1:
        return T.Tuple((_float_of(argts[0]), T.int32))
    if name == "modf" and len(argts) == 1:
        f = _float_of(argts[0])
        return T.Tuple((f, f))
    if name == "ldexp" and len(argts) == 2:
        if not (argts[1].is_int or argts[1].is_bool):
            raise inferer.error(node.args[1], f"math.ldexp needs an integer exponent, not {argts[1]}",
                                "write math.ldexp(x, int32(n))")
        return _float_of(argts[0])
    if name in ("remainder", "nextafter") and len(argts) == 2:
        return _float_of(T.arith_result(*argts))
    if name == "pow" and len(argts) == 2 and argts[0].is_float and (argts[1].is_int or argts[1].is_bool):
        return argts[0]  # numba's math.pow(float, int32): powi keeps the float's precision
    return None


# ---- lowering ----------------------------------------------------------------------------------
def lower_math(lw, name, args, argts, rt):
    """IR for the functions math_type types, or None for the others."""
    b = lw.builder
    if name == "pow" and argts[0].is_float and (argts[1].is_int or argts[1].is_bool):
        n = lw.cast(args[1], argts[1], T.int32)
        return b.call(powi_function(lw.module, args[0].type), [args[0], n])
    if name not in EXTRA_MATH:
        return None
    ft = rt.types[0] if isinstance(rt, T.Tuple) else rt
    x = lw.cast(args[0], argts[0], ft)
    fty = x.type
    single = ft.bits == 32
    if name in ("remainder", "nextafter"):
        return lw.call_libm(name, [x, lw.cast(args[1], argts[1], ft)])
    if name == "ldexp":
        return _libm(lw, name, single, fty, [fty, i32], [x, lw.cast(args[1], argts[1], T.int32)])
    out_ty = i32 if name == "frexp" else fty
    slot = lw.alloca(out_ty, name=f"{name}.out")
    first = _libm(lw, name, single, fty, [fty, ir.PointerType(out_ty)], [x, slot])
    tup = ir.Constant(ir.LiteralStructType([fty, out_ty]), ir.Undefined)
    return b.insert_value(b.insert_value(tup, first, 0), b.load(slot), 1)


def _libm(lw, name, single, ret, params, vals):
    full = lw.target.libm_name(name, single)
    fn = lw.module.globals.get(full)
    if fn is None:
        fn = ir.Function(lw.module, ir.FunctionType(ret, params), name=full)
    return lw.builder.call(fn, vals)


def powi_function(module: ir.Module, fty) -> ir.Function:
    """``x ** n`` for an int32 ``n`` by repeated squaring (``1 / x ** -n`` for n < 0), as libdevice's
    ``__nv_powi``: the same IR on every target, and no compiler-runtime helper to link."""
    name = f"kdebug.powi.{'f32' if isinstance(fty, ir.FloatType) else 'f64'}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(fty, [fty, i32]), name=name)
    fn.linkage = "internal"
    x, n = fn.args
    entry, loop, body, done = (fn.append_basic_block(s) for s in ("entry", "loop", "body", "done"))
    b = ir.IRBuilder(entry)
    neg = b.icmp_signed("<", n, ir.Constant(i32, 0))
    # |n| in 32 bits: -INT_MIN wraps to itself, which is right as an unsigned magnitude
    mag = b.select(neg, b.neg(n), n)
    b.branch(loop)
    b.position_at_end(loop)
    acc, cur, e = b.phi(fty), b.phi(fty), b.phi(i32)
    acc.add_incoming(ir.Constant(fty, 1.0), entry)
    cur.add_incoming(x, entry)
    e.add_incoming(mag, entry)
    b.cbranch(b.icmp_unsigned(">", e, ir.Constant(i32, 0)), body, done)
    b.position_at_end(body)
    acc2 = b.select(b.trunc(e, i1), b.fmul(acc, cur), acc)
    acc.add_incoming(acc2, body)
    cur.add_incoming(b.fmul(cur, cur), body)
    e.add_incoming(b.lshr(e, ir.Constant(i32, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(b.select(neg, b.fdiv(ir.Constant(fty, 1.0), acc), acc))
    return fn


def int_power_function(module: ir.Module, fty) -> ir.Function:
    """``x ** n`` of a float and an int64 as numba's ``int_power_impl``: repeated squaring in the float's
    type (``1 / x ** -n`` for n < 0), and ``pow(x, float(n))`` when ``|n| > 0x10000``."""
    name = f"kdebug.int_power.{'f32' if isinstance(fty, ir.FloatType) else 'f64'}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(fty, [fty, i64]), name=name)
    fn.linkage = "internal"
    x, n = fn.args
    entry, generic, loop, body, done = (fn.append_basic_block(s) for s in ("entry", "generic", "loop", "body",
                                                                            "done"))
    b = ir.IRBuilder(entry)
    neg = b.icmp_signed("<", n, ir.Constant(i64, 0))
    mag = b.select(neg, b.neg(n), n)
    b.cbranch(b.icmp_unsigned(">", mag, ir.Constant(i64, 0x10000)), generic, loop)
    b.position_at_end(generic)
    suffix = "f32" if isinstance(fty, ir.FloatType) else "f64"
    pow_fn = module.globals.get(f"llvm.pow.{suffix}") or ir.Function(
        module, ir.FunctionType(fty, [fty, fty]), name=f"llvm.pow.{suffix}")
    b.ret(b.call(pow_fn, [x, b.sitofp(n, fty)]))
    b.position_at_end(loop)
    acc, cur, e = b.phi(fty), b.phi(fty), b.phi(i64)
    acc.add_incoming(ir.Constant(fty, 1.0), entry)
    cur.add_incoming(x, entry)
    e.add_incoming(mag, entry)
    b.cbranch(b.icmp_unsigned(">", e, ir.Constant(i64, 0)), body, done)
    b.position_at_end(body)
    acc.add_incoming(b.select(b.trunc(e, i1), b.fmul(acc, cur), acc), body)
    cur.add_incoming(b.fmul(cur, cur), body)
    e.add_incoming(b.lshr(e, ir.Constant(i64, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(b.select(neg, b.fdiv(ir.Constant(fty, 1.0), acc), acc))
    return fn


# ---- the operator module -------------------------------------------------------------------------
_BINARY = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult, operator.truediv: ast.Div,
           operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod, operator.pow: ast.Pow,
           operator.lshift: ast.LShift, operator.rshift: ast.RShift, operator.and_: ast.BitAnd,
           operator.or_: ast.BitOr, operator.xor: ast.BitXor}
_COMPARE = {operator.eq: ast.Eq, operator.ne: ast.NotEq, operator.lt: ast.Lt, operator.le: ast.LtE,
            operator.gt: ast.Gt, operator.ge: ast.GtE}
_UNARY = {operator.neg: ast.USub, operator.pos: ast.UAdd, operator.not_: ast.Not, operator.invert: ast.Invert}
OPERATOR_FUNCTIONS = set(_BINARY) | set(_COMPARE) | set(_UNARY)


def is_operator_function(value) -> bool:
    try:
        return value in OPERATOR_FUNCTIONS
    except TypeError:  # unhashable
        return False


def operator_expression(inferer, node, fn):
    """``operator.add(a, b)`` as the expression ``a + b`` (kept on the call node, which lowering reads)."""
    cached = getattr(node, "kdebug_operator", None)
    if cached is not None:
        return cached
    nargs = 1 if fn in _UNARY else 2
    if len(node.args) != nargs or node.keywords:
        raise inferer.error(node, f"operator.{fn.__name__} takes {nargs} argument{'s' if nargs > 1 else ''}",
                            f"write operator.{fn.__name__}({', '.join('ab'[:nargs])})")
    if fn in _BINARY:
        expr = ast.BinOp(left=node.args[0], op=_BINARY[fn](), right=node.args[1])
    elif fn in _COMPARE:
        expr = ast.Compare(left=node.args[0], ops=[_COMPARE[fn]()], comparators=[node.args[1]])
    else:
        expr = ast.UnaryOp(op=_UNARY[fn](), operand=node.args[0])
    ast.copy_location(expr, node)
    node.kdebug_operator = expr
    return expr


# ---- fastmath ------------------------------------------------------------------------------------
_FLOAT_OPS = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg"}


def apply_fastmath(fn: ir.Function) -> None:
    """``@cuda.jit(fastmath=True)``: LLVM's ``fast`` flags on every floating-point operation, compare
    and math call of the function (numba sets the same flags), so the IR shows what may be reordered."""
    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opname in _FLOAT_OPS or ins.opname == "fcmp":
                if "fast" not in ins.flags:
                    ins.flags = list(ins.flags) + ["fast"]
            elif isinstance(ins, ir.CallInstr) and isinstance(ins.type, (ir.FloatType, ir.DoubleType)):
                ins.fastmath.add("fast")


_CONTRACTED_OPS = {"fadd", "fsub", "fmul"}


def allow_contraction(fn: ir.Function) -> None:
    """LLVM's ``contract`` flag on every float add, subtract and multiply of the function: the code
    generator may fuse a multiply and an add into one fma (a target whose compiler does, NVVM's -fma=1)."""
    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opname in _CONTRACTED_OPS and "contract" not in ins.flags:
                ins.flags = list(ins.flags) + ["contract"]
