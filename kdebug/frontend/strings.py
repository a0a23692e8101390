"""Strings in kernels as numba-cuda 0.30.4 has them (numba/cuda/cpython/charseq.py, printimpl.py).

Two types: a str or bytes constant (``T.StringConstant``: a literal or a module global, a compile-time
value with nothing at run time) and an element or record field of a string dtype (``T.CharSeq``: numba's
``CharSeq`` for ``S<n>`` and ``UnicodeCharSeq`` for ``U<n>``, its ``n`` character codes zero-padded).
What kernels do with them, as numba:

- ``a[i] = "XYZ"`` / ``a[i] = b"XYZ"`` and ``rec["y"] = "ABC"``: the constant's codes, cut to the
  element's ``n`` and zero-padded (charseq.py's ``bytes_to_charseq`` / ``unicode_to_unicode_charseq``);
  ``a[i] = b[j]`` copies an element of the same type;
- ``== != < <= > >=`` between two of them of one kind (str with ``U``, bytes with ``S``): numba's
  ``charseq_eq`` / ``charseq_lt``..., which compare the codes up to each one's length (the index of its
  last non-zero code, plus one); kdebug compares the zero-padded codes, which gives the same answer;
- ``len(x)``: that length (numba's ``charseq_len``); of a constant, its length;
- ``print("text")`` of a str constant (numba's ``StringLiteral`` printing).

Anything else (indexing a string, ``+``, methods, a str and a bytes together, a string as a kernel
argument) is a located compile error naming what works."""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.lang import types as T

HINT = ("kernels store str/bytes constants into string arrays (dtype 'U<n>'/'S<n>'), compare them with "
        "== != < <= > >=, take their len() and print str constants")


def is_string(t) -> bool:
    return isinstance(t, (T.CharSeq, T.StringConstant))


def check_store(inferer, target, value_t, elem) -> None:
    """``a[i] = v`` / ``rec.f = v`` where the element or the value is a string."""
    if isinstance(elem, T.CharSeq) and isinstance(value_t, T.StringConstant) and value_t.unicode == elem.unicode:
        return
    if isinstance(elem, T.CharSeq) and value_t == elem:
        return
    if isinstance(elem, T.CharSeq):
        want = "a str constant" if elem.unicode else "a bytes constant (b'...')"
        raise inferer.error(target, f"cannot store {value_t} into an element of type {elem}",
                            f"store {want} or an element of the same dtype")
    raise inferer.error(target, f"cannot store {value_t} into an array of {elem}",
                        "strings go into arrays of a string dtype ('U<n>' or 'S<n>')")


def check_compare(inferer, node, op, a, b) -> None:
    if not (is_string(a) and is_string(b)):
        other = b if is_string(a) else a
        raise inferer.error(node, f"cannot compare a string with {other}", HINT)
    if a.unicode != b.unicode:
        raise inferer.error(node, f"cannot compare {a} with {b}: one is str, the other bytes",
                            "compare str with str (dtype 'U') and bytes with bytes (dtype 'S')")
    if not isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
        raise inferer.error(node, "strings in kernels compare with == != < <= > >= only", HINT)


def _codes(lw, value, t, n: int, bits: int) -> list:
    """``n`` codes of a string value as ``bits``-bit integers, zero-padded."""
    zero = ir.Constant(ir.IntType(bits), 0)
    if isinstance(t, T.StringConstant):
        codes = t.codes()[:n]
        return [ir.Constant(ir.IntType(bits), c) for c in codes] + [zero] * (n - len(codes))
    codes = [lw.builder.extract_value(value, k) for k in range(min(n, t.count))]
    return codes + [zero] * (n - len(codes))


def charseq_value(lw, value, vt, elem: T.CharSeq):
    """The element value a store writes: a constant's codes cut to the element and padded, or the element."""
    if vt == elem:
        return value
    return ir.Constant(ir.ArrayType(ir.IntType(elem.char_bits), elem.count),
                       [c.constant for c in _codes(lw, None, vt, elem.count, elem.char_bits)])


def _width(t) -> int:
    return t.count if isinstance(t, T.CharSeq) else len(t.codes())


def compare(lw, op, a, at, c, ct):
    """numba's charseq comparisons on the zero-padded codes: equal when every code is, ordered by the first
    code that differs (unsigned), as numba's loop up to min(len(a), len(b)) then len(a) < len(b)."""
    b = lw.builder
    n = max(_width(at), _width(ct), 1)
    bits = 32 if at.unicode else 8
    xs, ys = _codes(lw, a, at, n, bits), _codes(lw, c, ct, n, bits)
    if isinstance(at, T.StringConstant) and isinstance(ct, T.StringConstant):  # both known: fold it
        x, y = at.value, ct.value
        result = {ast.Eq: x == y, ast.NotEq: x != y, ast.Lt: x < y, ast.LtE: x <= y, ast.Gt: x > y,
                  ast.GtE: x >= y}[type(op)]
        return ir.Constant(ir.IntType(1), int(result))
    if isinstance(op, (ast.Eq, ast.NotEq)):
        same = ir.Constant(ir.IntType(1), 1)
        for x, y in zip(xs, ys):
            same = b.and_(same, b.icmp_unsigned("==", x, y))
        return same if isinstance(op, ast.Eq) else b.not_(same)
    if isinstance(op, (ast.Gt, ast.LtE)):  # a > c is c < a; a <= c is not (c < a)
        xs, ys = ys, xs
    less = ir.Constant(ir.IntType(1), 0)  # equal codes throughout: not less
    for x, y in reversed(list(zip(xs, ys))):
        less = b.select(b.icmp_unsigned("!=", x, y), b.icmp_unsigned("<", x, y), less)
    return b.not_(less) if isinstance(op, (ast.LtE, ast.GtE)) else less


def length(lw, value, t):
    """numba's ``charseq_len``: the index of the last non-zero code, plus one."""
    if isinstance(t, T.StringConstant):
        return ir.Constant(ir.IntType(64), len(t.value))
    b = lw.builder
    n = ir.Constant(ir.IntType(64), 0)
    for k in range(t.count):  # the last non-zero code wins
        code = b.extract_value(value, k)
        n = b.select(b.icmp_unsigned("!=", code, ir.Constant(code.type, 0)), ir.Constant(ir.IntType(64), k + 1), n)
    return n
