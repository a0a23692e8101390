"""First-class functions and compile-time arguments of device functions as numba-cuda 0.30.4: device
functions, intrinsics (cuda.atomic.add, math.sin) and types passed to a device function, which is compiled
for them (tests/cudapy/test_atomics.py's atomic_binary_1dim_shared(ary, idx, op2, ary_dtype, ary_nelements,
binop_func, cast_func, ...) called with uint32, 32, cuda.atomic.add); an integer constant argument used as
a shared array's shape is typed as its literal, as numba's IntegerLiteral."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import float64, uint32
from kdebug.errors import CompileError


@cuda.jit(device=True)
def apply(op, x, y):
    return op(x, y)


@cuda.jit(device=True)
def plus(a, b):
    return a + b


@cuda.jit(device=True)
def times(a, b):
    return a * b


@cuda.jit(device=True)
def unary(f, x):
    return f(x)


def test_device_functions_and_intrinsics_as_arguments():
    @cuda.jit
    def k(out):
        out[0] = apply(plus, 2.0, 3.0)
        out[1] = apply(times, 2.0, 3.0)
        out[2] = unary(math.sin, 0.5)
        out[3] = unary(math.sqrt, 2.0)

    out = np.zeros(4)
    k[1, 1](out)
    np.testing.assert_array_equal(out, [5.0, 6.0, math.sin(0.5), math.sqrt(2.0)])


@cuda.jit(device=True)
def atomic_binary_1dim_shared(ary, idx, op2, ary_dtype, ary_nelements, binop_func, cast_func, initializer,
                              neg_idx):
    """numba-cuda's tests/cudapy/test_atomics.py helper, as written there."""
    tid = cuda.threadIdx.x
    sm = cuda.shared.array(ary_nelements, ary_dtype)
    sm[tid] = initializer
    cuda.syncthreads()
    bin = cast_func(idx[tid] % ary_nelements)
    if neg_idx:
        bin = bin - ary_nelements
    binop_func(sm, bin, op2)
    cuda.syncthreads()
    ary[tid] = sm[tid]


@cuda.jit(device=True)
def atomic_cast_none(num):
    return num


def test_atomics_helper_of_numbas_tests_with_a_type_an_intrinsic_and_a_literal_size():
    """test_atomics.py's test_atomic_add: ary = np.random.randint(0, 32, 32) as uint32; the result is the
    histogram of ary % 32 (numba's expected: gold[ary % 32] += 1)."""
    @cuda.jit
    def atomic_add(ary):
        atomic_binary_1dim_shared(ary, ary, 1, uint32, 32, cuda.atomic.add, atomic_cast_none, 0, False)

    @cuda.jit
    def atomic_add_negative(ary):
        atomic_binary_1dim_shared(ary, ary, 1, uint32, 32, cuda.atomic.add, atomic_cast_none, 0, True)

    rng = np.random.default_rng(3)
    for kernel in (atomic_add, atomic_add_negative):
        ary = rng.integers(0, 32, 32).astype(np.uint32)
        orig = ary.copy()
        kernel[1, 32](ary)
        gold = np.zeros(32, dtype=np.uint32)
        for i in range(orig.size):
            gold[orig[i] % 32] += 1
        np.testing.assert_array_equal(ary, gold)


def test_a_literal_size_specialises_and_a_variable_size_is_still_an_error():
    @cuda.jit(device=True)
    def block_total(ary, n, dtype):
        sm = cuda.shared.array(n, dtype)
        t = cuda.threadIdx.x
        sm[t] = ary[t]
        cuda.syncthreads()
        if t == 0:
            acc = dtype(0)
            for i in range(n):
                acc = plus(acc, sm[i])
            ary[0] = acc

    a, b = np.arange(16.0), np.arange(32.0)

    @cuda.jit
    def sums16(a):
        block_total(a, 16, float64)

    @cuda.jit
    def sums32(b):
        block_total(b, 32, float64)

    sums16[1, 16](a)
    sums32[1, 32](b)
    assert a[0] == sum(range(16)) and b[0] == sum(range(32))

    @cuda.jit
    def variable(a, n):
        block_total(a, n, float64)

    with pytest.raises(CompileError, match="compile-time constants"):
        variable[1, 16](np.arange(16.0), 16)


def test_what_is_not_first_class_is_located():
    @cuda.jit
    def bad(out):
        out[0] = unary(math, 1.0)  # a module is no function

    with pytest.raises(CompileError) as err:
        bad[1, 1](np.zeros(1))
    assert "cannot pass" in str(err.value) and err.value.loc.line > 0


def test_first_class_arguments_compile_for_the_ptx_target():
    def k(out):
        out[0] = apply(plus, 2.0, 3.0) + unary(math.sin, 0.5)

    ptx, _ = cuda.compile_ptx(k, "void(float64[::1])")
    assert ".entry" in ptx


def test_a_kernel_called_from_a_kernel_runs_as_a_device_function():
    """numba-cuda 0.30.4: CUDADispatcher.get_call_template compiles a @cuda.jit function called from
    device code with compile_device (tests/cudapy/test_inline.py calls set_zero(a), a @cuda.jit function,
    from call_set_zero, and expects a == [0, 1])."""
    @cuda.jit
    def set_zero(a):
        a[0] = 0

    @cuda.jit("void(int32[::1])")
    def call_set_zero(a):
        set_zero(a)

    a = np.arange(2, dtype=np.int32)
    call_set_zero[1, 2](a)
    np.testing.assert_array_equal(a, [0, 1])
    set_zero[1, 1](a := np.ones(1, np.int32))  # and it is still a kernel of its own
    assert a[0] == 0


def test_tuple_arguments_as_numba_types_them():
    """numba-cuda 0.30.4 tests/cudapy/test_array_args.py: test_unituple, test_tuple, test_namedunituple,
    test_namedtuple, test_empty_tuple, test_tuple_of_empty_tuples, test_tuple_of_tuples,
    test_tuple_of_tuples_and_scalars, with their expected values."""
    from collections import namedtuple

    from kdebug.lang import types as T

    @cuda.jit
    def lengths(r, x):
        r[0] = len(x)

    r = np.ones(1, dtype=np.int64)
    lengths[1, 1](r, ())
    assert r[0] == 0

    @cuda.jit
    def nested(r, x):
        r[0] = len(x)
        r[1] = len(x[0])
        r[2] = len(x[1])
        r[3] = len(x[2])
        r[4] = x[1][0]
        r[5] = x[1][1]
        r[6] = x[2][0]
        r[7] = x[2][1]
        r[8] = x[2][2]

    r = np.ones(9, dtype=np.int64)
    nested[1, 1](r, ((), (5, 6), (8, 9, 10)))
    np.testing.assert_array_equal(r, [3, 0, 2, 3, 5, 6, 8, 9, 10])

    Point = namedtuple("Point", ("x", "y"))
    Mixed = namedtuple("Mixed", ("x", "y", "z"))

    @cuda.jit
    def fields(r1, r2, p, m):
        r1[0] = p.x
        r1[1] = p.y
        r2[0] = m.x
        r2[1] = m.y
        r2[2] = m.z

    r1, r2 = np.zeros(2, np.int64), np.zeros(3, np.float64)
    fields[1, 1](r1, r2, Point(1, 2), Mixed(1, 2, 2.3))
    np.testing.assert_array_equal(r1, [1, 2])
    np.testing.assert_array_equal(r2, [1, 2, 2.3])
    assert str(T.typeof(Point(1, 2))) == "Point(int64 x 2)"
    assert str(T.typeof(Mixed(1, 2, 2.3))) == "Mixed(int64, int64, float64)"
    assert str(T.typeof((1, 2.5))) == "Tuple(int64, float64)" and str(T.typeof((1, 2))) == "UniTuple(int64 x 2)"
