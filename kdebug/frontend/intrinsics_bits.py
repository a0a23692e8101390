"""Bit, integer and arithmetic intrinsics: ``cuda.popc/brev/clz/ffs/fma/cbrt/selp`` and numba's
``cuda.libdevice`` integer functions (``hadd``, ``rhadd``, ``mul24``, ``mulhi``, ``mul64hi``, ``sad``
and their unsigned ``u*`` forms).

Types follow numba-cuda's ``cudadecl.py`` and ``libdevicefuncs.py``; the lowering uses LLVM's
bit-manipulation intrinsics, which both the CPU and the NVPTX backends select (``popc``, ``clz``,
``brev``, ``bfind``-free ``ffs``), so every target computes the same bits.
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.frontend.registry import REGISTRY, IntrinsicImpl
from kdebug.lang import types as T

_INTS = (T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64)


def _args(inferer, node, name, n, usage):
    if len(node.args) != n or node.keywords:
        raise inferer.error(node, f"cuda.{name} takes {n} argument{'s' if n > 1 else ''}", f"write {usage}")
    return [inferer.expr(a) for a in node.args]


def _int_arg(inferer, node, t, name, usage):
    if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
        raise inferer.error(node, f"cuda.{name} takes an integer, not {t}", f"write {usage}")
    return T.int8 if t.is_bool else t


def _intrinsic(lw, name, ret, args):
    m = lw.module
    fn = m.globals.get(name)
    if fn is None:
        fn = ir.Function(m, ir.FunctionType(ret, [a.type for a in args]), name=name)
    return lw.builder.call(fn, args)


def _unary_int(name, result, lower_bits):
    """A one-integer intrinsic; ``result(t)`` is its numba result type, ``lower_bits(lw, v, t)`` the IR."""
    usage = f"cuda.{name}(x)"

    def type_(inferer, node):
        t = _int_arg(inferer, node.args[0] if node.args else node, _args(inferer, node, name, 1, usage)[0],
                     name, usage)
        return result(t)

    def lower(lw, node):
        arg = node.args[0]
        at = lw.type_of(arg)
        src = T.int8 if at.is_bool else at
        v = lw.cast(lw.expr(arg), at, src)
        return lower_bits(lw, v, src)
    REGISTRY[name] = IntrinsicImpl(type_, lower)


def _popc(lw, v, t):
    return _intrinsic(lw, f"llvm.ctpop.i{t.bits}", v.type, [v])


def _clz(lw, v, t):
    return _intrinsic(lw, f"llvm.ctlz.i{t.bits}", v.type, [v, ir.Constant(ir.IntType(1), 0)])


def _brev_type(t):
    return T.uint64 if t.bits == 64 else T.uint32


def _brev(lw, v, t):
    dst = _brev_type(t)
    v = lw.cast(v, t, dst)
    return _intrinsic(lw, f"llvm.bitreverse.i{dst.bits}", v.type, [v])


def _ffs(lw, v, t):
    """numba's __nv_ffs/__nv_ffsll: the 1-based position of the lowest set bit, 0 for 0 (small
    integers widen to 32 bits first, as numba converts them to int32)."""
    b = lw.builder
    wide = T.Scalar(t.kind, 64 if t.bits == 64 else 32)
    v = lw.cast(v, t, wide)
    tz = _intrinsic(lw, f"llvm.cttz.i{wide.bits}", v.type, [v, ir.Constant(ir.IntType(1), 0)])
    pos = b.add(tz, ir.Constant(v.type, 1))
    pos = b.select(b.icmp_unsigned("==", v, ir.Constant(v.type, 0)), ir.Constant(v.type, 0), pos)
    return b.trunc(pos, ir.IntType(32)) if wide.bits == 64 else pos


_unary_int("popc", lambda t: t, _popc)
_unary_int("clz", lambda t: t, _clz)
_unary_int("brev", _brev_type, _brev)
_unary_int("ffs", lambda t: T.uint32, _ffs)


# ---- floating point ------------------------------------------------------------------------
def _float_type(inferer, node, ts, name, usage):
    r = None
    for a, t in zip(node.args, ts):
        if not isinstance(t, T.Scalar):
            raise inferer.error(a, f"cuda.{name} takes numbers, not {t}", f"write {usage}")
        r = t if r is None else T.arith_result(r, t)
    # numba's cases are float32 and float64 only: integers convert to float64
    return r if r.is_float else T.float64


def _fma_type(inferer, node):
    usage = "cuda.fma(a, b, c)"
    return _float_type(inferer, node, _args(inferer, node, "fma", 3, usage), "fma", usage)


def _fma_lower(lw, node):
    rt = lw.type_of(node)
    vals = [lw.cast(lw.expr(a), lw.type_of(a), rt) for a in node.args]
    return lw.call_intrinsic("llvm.fma", vals)


def _cbrt_type(inferer, node):
    usage = "cuda.cbrt(x)"
    return _float_type(inferer, node, _args(inferer, node, "cbrt", 1, usage), "cbrt", usage)


def _cbrt_lower(lw, node):
    rt = lw.type_of(node)
    return lw.call_libm("cbrt", [lw.cast(lw.expr(node.args[0]), lw.type_of(node.args[0]), rt)])


REGISTRY["fma"] = IntrinsicImpl(_fma_type, _fma_lower)
REGISTRY["cbrt"] = IntrinsicImpl(_cbrt_type, _cbrt_lower)

_SELP_TYPES = (T.float64, T.float32, T.int16, T.uint16, T.int32, T.uint32, T.int64, T.uint64)


def _selp_type(inferer, node):
    test, a, b = _args(inferer, node, "selp", 3, "cuda.selp(cond, a, b)")
    if not isinstance(test, T.Scalar):
        raise inferer.error(node.args[0], f"the condition of cuda.selp must be a number or boolean, not {test}",
                            "pass a comparison such as x > 0")
    if a != b or a not in _SELP_TYPES:
        raise inferer.error(node, f"cuda.selp needs two values of one type among float32/64, (u)int16/32/64; "
                                  f"got {a} and {b}", "convert both, e.g. cuda.selp(c, int32(a), int32(b))")
    return a


def _selp_lower(lw, node):
    test = lw.truth(lw.expr(node.args[0]), lw.type_of(node.args[0]))
    return lw.builder.select(test, lw.expr(node.args[1]), lw.expr(node.args[2]))


REGISTRY["selp"] = IntrinsicImpl(_selp_type, _selp_lower)


# ---- numba.cuda.libdevice integer functions -------------------------------------------------
# name: (argument type, result type, arity)
_LIBDEVICE_INT = {
    "hadd": (T.int32, T.int32, 2), "uhadd": (T.uint32, T.uint32, 2),
    "rhadd": (T.int32, T.int32, 2), "urhadd": (T.uint32, T.uint32, 2),
    "mul24": (T.int32, T.int32, 2), "umul24": (T.uint32, T.uint32, 2),
    "mulhi": (T.int32, T.int32, 2), "umulhi": (T.uint32, T.uint32, 2),
    "mul64hi": (T.int64, T.int64, 2), "umul64hi": (T.uint64, T.uint64, 2),
    "sad": (T.int32, T.uint32, 3), "usad": (T.uint32, T.uint32, 3),
}


def _libdevice_typer(name):
    argt, rest, n = _LIBDEVICE_INT[name]

    def type_(inferer, node):
        usage = f"cuda.libdevice.{name}({', '.join('xyz'[:n])})"
        for a, t in zip(node.args, _args(inferer, node, f"libdevice.{name}", n, usage)):
            if not (isinstance(t, T.Scalar) and (t.is_int or t.is_bool)):
                raise inferer.error(a, f"cuda.libdevice.{name} takes integers, not {t}", f"write {usage}")
        return rest
    return type_


def _wide_product_high(lw, x, y, bits, signed):
    """The high ``bits`` bits of the 2*bits-bit product."""
    b = lw.builder
    wide = ir.IntType(2 * bits)
    ext = b.sext if signed else b.zext
    p = b.mul(ext(x, wide), ext(y, wide))
    return b.trunc(b.lshr(p, ir.Constant(wide, bits)), ir.IntType(bits))


def _libdevice_lowerer(name):
    argt, rest, n = _LIBDEVICE_INT[name]
    signed = argt.signed

    def lower(lw, node):
        b = lw.builder
        v = [lw.cast(lw.expr(a), lw.type_of(a), argt) for a in node.args]
        bits = argt.bits
        wide = ir.IntType(2 * bits)
        ext = b.sext if signed else b.zext
        base = name.lstrip("u") if name != "umul24" else "mul24"
        if base in ("hadd", "rhadd"):  # (x + y [+ 1]) >> 1 without overflow: in twice the width
            s = b.add(ext(v[0], wide), ext(v[1], wide))
            if base == "rhadd":
                s = b.add(s, ir.Constant(wide, 1))
            s = b.ashr(s, ir.Constant(wide, 1)) if signed else b.lshr(s, ir.Constant(wide, 1))
            return b.trunc(s, ir.IntType(bits))
        if base == "mul24" or name == "umul24":  # the low 32 bits of the product of the low 24 bits
            sh = ir.Constant(ir.IntType(32), 8)
            lo = [b.ashr(b.shl(x, sh), sh) if signed else b.and_(x, ir.Constant(ir.IntType(32), 0xFFFFFF))
                  for x in v]
            return b.mul(lo[0], lo[1])
        if base in ("mulhi", "mul64hi"):
            return _wide_product_high(lw, v[0], v[1], bits, signed)
        # sad / usad: |x - y| + z
        x, y = (ext(a, wide) for a in v[:2])
        d = b.sub(x, y)
        d = b.select(b.icmp_signed("<", d, ir.Constant(wide, 0)), b.neg(d), d)
        return b.add(b.trunc(d, ir.IntType(32)), v[2])
    return lower


for _name in _LIBDEVICE_INT:
    REGISTRY[f"libdevice.{_name}"] = IntrinsicImpl(_libdevice_typer(_name), _libdevice_lowerer(_name))

LIBDEVICE_NAMES = list(_LIBDEVICE_INT)
