"""numba's typing of operators and literals, integer conversions, ``**`` and ``literal_unroll``, table-driven.

Expected types come from numba-cuda 0.30.4: ``typing/builtins.py`` (BinOp's cases: the integer NBEP's
``choose_result_int`` over int64/uint64, then ``(op, op, op)`` for float32 and float64, chosen by the
fewest unsafe conversions of ``typeconv/rules.py`` — int64 -> float64 is safe, int64 -> float32 unsafe;
BinOpPower adds ``float32 ** int -> float32``; UnaryOp gives ``choose_result_int(op)`` for integers), and
Python literals typed as numba types them (``2`` int64, ``2.0`` float64). Conversions lower as numba's
casts: an integer narrowed keeps its low bits, a float becomes an integer by truncation toward zero."""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.frontend.typeinfer import infer_function
from kdebug.lang import types as T

ARGS = {"f": T.float32, "d": T.float64, "i": T.int32, "u": T.uint32, "b": T.boolean, "s": T.int8,
        "q": T.int64, "w": T.uint64, "h": T.uint8}


def _module(tmp_path, source, name):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("expr,expected", [
    ("f * 2.0", "float64"), ("f * 2", "float64"), ("f + f", "float32"), ("f + d", "float64"),
    ("f * i", "float64"), ("f * s", "float32"),  # int8 -> float32 is safe; int32 -> float32 is not
    ("f / 2", "float64"), ("f / f", "float32"), ("i / i", "float64"), ("i / 2", "float64"),
    ("i + i", "int64"), ("s + s", "int64"), ("u + u", "uint64"), ("u + i", "int64"), ("w + q", "int64"),
    ("w + w", "uint64"), ("b + b", "int64"), ("h * 2", "int64"), ("i // 2", "int64"), ("f // 2.0", "float64"),
    ("f ** 2", "float32"), ("f ** i", "float32"), ("f ** q", "float32"), ("d ** i", "float64"),
    ("f ** 2.0", "float64"), ("f ** f", "float32"), ("i ** 2", "int64"), ("i ** f", "float64"),
    ("-u", "uint64"), ("-i", "int64"), ("-f", "float32"), ("-b", "int64"), ("abs(i)", "int32"),
    ("abs(f)", "float32"), ("min(f, 2.0)", "float64"), ("max(i, u)", "int64"), ("round(f)", "int64"),
    ("math.sqrt(f)", "float32"), ("math.sqrt(i)", "float64"), ("math.pow(f, i)", "float32"),
    ("i << 2", "int64"), ("h & h", "uint64"), ("b & b", "boolean"), ("not i", "boolean"), ("i < f", "boolean"),
])
def test_operator_and_literal_types_are_numbas(tmp_path, expr, expected):
    names = list(ARGS)
    mod = _module(tmp_path, f"import math\n\ndef f({', '.join(names)}):\n    r = {expr}\n", "typing_probe")
    tf = infer_function(mod.f, tuple(ARGS.values()), "device")
    assert str(tf.locals["r"]) == expected


@cuda.jit
def conversions(q, x, out_i32, out_u8, out_i8, out_u32, out_i64):
    out_i32[0] = cuda.int32(q[0])      # 3000000000 -> wraps
    out_i32[1] = cuda.int32(x[0])      # -3.7 -> -3
    out_i32[2] = cuda.int32(x[1])      # 3.7 -> 3
    out_i32[3] = int(x[0])             # int() is int64, stored into int32
    out_u8[0] = cuda.uint8(q[1])       # 300 -> 44
    out_u8[1] = q[2]                   # -1 stored into uint8 -> 255
    out_i8[0] = cuda.int8(q[3])        # 200 -> -56
    out_u32[0] = cuda.uint32(q[2])     # -1 -> 4294967295
    out_i64[0] = cuda.int64(x[2])      # 1e10 + 0.5 -> 10000000000
    out_i64[1] = cuda.int64(q[0] * q[0])  # int64 arithmetic wraps
    out_i64[2] = cuda.int16(q[4])      # 70000 -> 4464


def test_integer_conversions_truncate_as_numba():
    q = np.array([3000000000, 300, -1, 200, 70000], np.int64)
    x = np.array([-3.7, 3.7, 1e10 + 0.5])
    o = [np.zeros(4, np.int32), np.zeros(2, np.uint8), np.zeros(1, np.int8), np.zeros(1, np.uint32),
         np.zeros(3, np.int64)]
    conversions[1, 1](q, x, *o)
    wrap = (3000000000 * 3000000000 + 2**63) % 2**64 - 2**63
    assert list(o[0]) == [np.int64(3000000000).astype(np.int32), -3, 3, -3]
    assert list(o[1]) == [44, 255] and list(o[2]) == [-56] and list(o[3]) == [4294967295]
    assert list(o[4]) == [10000000000, wrap, np.int64(70000).astype(np.int16)]


def _int_power(x, n, ftype):
    """numba's int_power_impl in plain Python, each product rounded to ``ftype``."""
    r, a, invert = ftype(1), ftype(x), n < 0
    e = -n if invert else n
    while e:
        if e & 1:
            r = ftype(r * a)
        e >>= 1
        a = ftype(a * a)
    return ftype(ftype(1) / r) if invert else r


@cuda.jit
def powers(x, n, o32, d, o64):
    for k in range(n.size):
        o32[k] = x[k] ** n[k]
        o64[k] = d[k] ** n[k]
    o32[n.size] = x[0] ** 3
    o64[n.size] = d[0] ** -3


def test_float_to_an_integer_power_is_repeated_squaring_in_the_floats_type():
    rng = np.random.default_rng(3)
    x = (rng.random(64) * 2 + 0.5).astype(np.float32)
    d = rng.random(64) * 2 + 0.5
    n = rng.integers(-40, 40, 64)
    o32 = np.zeros(65, np.float32)
    o64 = np.zeros(65)
    powers[1, 1](x, n, o32, d, o64)
    assert list(o32[:64]) == [_int_power(a, int(k), np.float32) for a, k in zip(x, n)]
    assert list(o64[:64]) == [_int_power(a, int(k), np.float64) for a, k in zip(d, n)]
    assert o32[64] == _int_power(x[0], 3, np.float32) and o64[64] == _int_power(d[0], -3, np.float64)


def test_literal_unroll_runs_the_body_per_element_type(tmp_path):
    mod = _module(tmp_path, """
from kdebug import cuda
from kdebug.numba import literal_unroll


@cuda.jit
def k(out, t):
    s = 0.0
    for x in literal_unroll((1, 2.5, True)):
        y = x * 2          # int64, float64, int64 in the three copies
        s += y
    out[0] = s
    n = 0
    for v in literal_unroll(t):
        if v == 3:
            continue
        if v > 100:
            break
        n += v
    out[1] = n
    for a in literal_unroll((out, 7)):
        out[2] += 1
""", "unroll_probe")
    out = np.zeros(3)
    mod.k[1, 1](out, (1, 3, 2.5, 200, 4))
    assert list(out) == [2 * 1 + 2 * 2.5 + 2 * True, 1 + 2.5, 2]


def test_loop_over_a_tuple_of_mixed_types_asks_for_literal_unroll(tmp_path):
    mod = _module(tmp_path, """
from kdebug import cuda


@cuda.jit
def k(out):
    for x in (1, 2.5):
        out[0] += x
""", "mixed_probe")
    with pytest.raises(CompileError, match=r"cannot iterate over Tuple\(int64, float64\), a tuple of mixed types") \
            as err:
        mod.k[1, 1](np.zeros(1))
    assert err.value.loc.line == 7 and "literal_unroll" in str(err.value)


def test_literal_unroll_of_an_array_or_uniform_tuple_is_a_loop(tmp_path):
    mod = _module(tmp_path, """
from kdebug import cuda
from kdebug.numba import literal_unroll


@cuda.jit
def k(a, out):
    for x in literal_unroll(a):
        out[0] += x
    for x in literal_unroll((1, 2, 3)):
        out[1] += x
""", "uniform_probe")
    out = np.zeros(2)
    mod.k[1, 1](np.arange(5.0), out)
    assert list(out) == [10.0, 6.0]
    assert math.isclose(out[0], 10.0)
