"""Iteration and values in kernels as numba allows them: for x in an array or tuple, enumerate, zip,
range objects in variables, tuple unpacking and returns; atomics numba takes (nanmax/nanmin on floats,
tuple indices on 2-3-D arrays, cas)."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError


@cuda.jit
def iterate(a, m, out):
    s = 0.0
    for x in a:
        s += x
    out[0] = s
    for i, x in enumerate(a):
        out[1] += i * x
    for i, x in enumerate(a, 10):
        out[2] += i * x
    for x, y in zip(a, a):
        out[3] += x * y
    for row in m:  # a 2-D array gives its rows
        for v in row:
            out[4] += v
    for i, (x, y) in enumerate(zip(a, m[0])):
        out[5] += i + x - y
    t = (1.0, 2.0, 4.0)
    for v in t:
        out[6] += v
    r = range(3, 10, 2)
    for i in r:
        out[7] += i
    for i in r:  # a range object is iterable again
        out[7] += i


def test_loops_over_arrays_tuples_enumerate_zip_and_range_objects():
    a = np.arange(1.0, 6.0)
    m = np.arange(15.0).reshape(3, 5)
    out = np.zeros(8)
    iterate[1, 1](a, m, out)
    x = list(a)
    assert out[0] == sum(x)
    assert out[1] == sum(i * v for i, v in enumerate(x))
    assert out[2] == sum(i * v for i, v in enumerate(x, 10))
    assert out[3] == sum(v * v for v in x)
    assert out[4] == m.sum()
    assert out[5] == sum(i + p - q for i, (p, q) in enumerate(zip(x, m[0])))
    assert out[6] == 7.0
    assert out[7] == 2 * sum(range(3, 10, 2))


@cuda.jit
def zip_shortest(a, b, out):
    n = 0
    for x, y in zip(a, b):
        n += 1
    out[0] = n


def test_zip_stops_at_the_shortest():
    out = np.zeros(1, np.int64)
    zip_shortest[1, 1](np.zeros(7), np.zeros(3), out)
    assert out[0] == 3


@cuda.jit(device=True)
def minmax(a):
    lo, hi = a[0], a[0]
    for x in a:
        lo, hi = min(lo, x), max(hi, x)
    return lo, hi


@cuda.jit
def tuples(a, out):
    lo, hi = minmax(a)
    out[0], out[1] = hi, lo
    pair = minmax(a)
    out[2] = pair[1] - pair[0]


def test_tuples_as_values_returns_and_unpacking():
    a = np.array([3.0, -1.0, 7.5, 2.0])
    out = np.zeros(3)
    tuples[1, 1](a, out)
    assert list(out) == [7.5, -1.0, 8.5]


def test_loop_over_a_number_is_a_located_error():
    @cuda.jit
    def k(out):
        for x in out[0]:
            out[0] = x
    with pytest.raises(CompileError, match=r"a for loop cannot iterate over float64") as err:
        k[1, 1](np.zeros(1))
    assert err.value.loc.line > 0


def test_range_object_with_changing_arguments_is_a_located_error():
    @cuda.jit
    def k(out, n):
        r = range(n)
        n += 1
        for i in r:
            out[0] += i
    with pytest.raises(CompileError, match=r"the range object 'r' depends on 'n', which changes"):
        k[1, 1](np.zeros(1), 3)


def test_unpacking_the_wrong_count_is_a_located_error():
    @cuda.jit
    def k(a):
        for i, x, y in enumerate(a):
            a[0] = x
    with pytest.raises(CompileError, match="unpacks 3 values from 2"):
        k[1, 1](np.zeros(3))


# ---- atomics --------------------------------------------------------------------------------------------
@cuda.jit
def float_minmax(a, v):
    cuda.atomic.max(a, 0, v[0])
    cuda.atomic.min(a, 1, v[0])
    cuda.atomic.nanmax(a, 2, v[0])
    cuda.atomic.nanmin(a, 3, v[0])


@pytest.mark.parametrize("stored,val,expected", [
    # numba-cuda's ___numba_atomic_*: max/min leave everything when a NaN is involved; nanmax/nanmin
    # ignore a NaN value and replace a stored NaN
    (np.nan, 1.0, [np.nan, np.nan, 1.0, 1.0]),
    (0.0, np.nan, [0.0, 0.0, 0.0, 0.0]),
    (0.0, 1.0, [1.0, 0.0, 1.0, 0.0]),
    (2.0, 1.0, [2.0, 1.0, 2.0, 1.0]),
    (-0.0, -np.inf, [-0.0, -np.inf, -0.0, -np.inf]),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_atomic_max_min_nanmax_nanmin(stored, val, expected, dtype):
    a = np.full(4, stored, dtype)
    float_minmax[1, 1](a, np.array([val], dtype))
    np.testing.assert_array_equal(a, np.array(expected, dtype))


@cuda.jit
def tuple_index_atomics(a2, a3, out):
    i = cuda.grid(1)
    cuda.atomic.add(a2, (i % 2, i % 3), 1)
    cuda.atomic.nanmax(a3, (0, i % 2, 1), i)
    out[i] = cuda.atomic.cas(a2, (0, 0), 1000, 1000)


def test_atomics_on_2d_and_3d_arrays_with_tuple_indices():
    a2 = np.zeros((2, 3), np.int64)
    a3 = np.zeros((1, 2, 2), np.int32)
    out = np.zeros(12, np.int64)
    tuple_index_atomics[1, 12](a2, a3, out)
    assert a2.sum() == 12 and a2[0, 0] == 2
    assert a3[0, 0, 1] == 10 and a3[0, 1, 1] == 11


# ---- slices: views that share memory, checked against their own shape ------------------------------------------
@cuda.jit
def slices(a, m, out):
    v = a[1:4]
    out[0] = len(v)
    out[1] = v[0] + v[2]
    w = a[-2:]
    out[2] = len(w) * 100 + w[1]
    out[3] = len(a[5:2])  # an empty range
    r = m[1, 1:]
    out[4] = len(r) * 100 + r[0]
    rows = m[1:3]
    out[5] = rows.shape[0] * 100 + rows[1, 2]
    s = 0.0
    for x in a[2:]:
        s += x
    out[6] = s
    out[7] = len(a[:100])  # clamped to the extent, as Python's
    v[0] = -1.0  # a view writes through to the array


def test_slices_are_views_with_pythons_bounds():
    a = np.arange(6.0)
    m = np.arange(12.0).reshape(3, 4)
    out = np.zeros(8)
    slices[1, 1](a, m, out)
    assert list(out) == [3, 1 + 3, 205, 0, 305, 210, 2 + 3 + 4 + 5, 6]
    assert a[1] == -1.0


def test_access_past_a_view_is_a_memcheck_error():
    from kdebug.errors import KernelRuntimeError

    @cuda.jit
    def k(a):
        v = a[1:3]
        v[2] = 1.0
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds write of global array 'v' .* index 2 is outside "
                                                 r"shape \(2,\)"):
        k[1, 1](np.zeros(6))


@pytest.mark.parametrize("body,message", [
    ("x = a[::0]", "slice step cannot be zero"),
    ("x = m[1, :, 2]", "a 2-D array takes at most 2 indices"),
    ("x = a[0.5:]", "slice bounds and steps must be an integer, not float64"),
    ("a[1:3] = 0.0", "assigning into an array slice is not supported"),
])
def test_slices_kernels_cannot_make_are_located_errors(tmp_path, body, message):
    import importlib.util
    path = tmp_path / "k.py"
    path.write_text("from kdebug import cuda\n\n@cuda.jit\ndef k(a, m):\n    " + body + "\n")
    spec = importlib.util.spec_from_file_location("slice_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(CompileError, match=message) as err:
        mod.k[1, 1](np.zeros(6), np.zeros((2, 3)))
    assert err.value.loc.line == 5


@cuda.jit
def range_indexing(a, lo, hi, out):
    j = 0
    for k in range(lo, hi):  # k < 0 wraps around, as numba's a[-1]; k >= 0 is a plain access
        out[j] = a[k] * 10 + k
        j += 1


@pytest.mark.parametrize("lo,hi", [(-3, 4), (0, 6), (-6, 0), (2, 2), (-2, -5), (-(2**63), -(2**63) + 3)])
def test_range_loops_index_like_numba_on_both_sides_of_zero(lo, hi):
    a = np.arange(6.0)
    n = max(0, min(hi - lo, 12))
    out = np.full(12, -1.0)
    if lo < -6:  # indices far below -len are out of bounds, for numba's wraparound too
        with pytest.raises(Exception, match="out-of-bounds read"):
            range_indexing[1, 1](a, lo, hi, out)
        return
    range_indexing[1, 1](a, lo, hi, out)
    assert list(out[:n]) == [a[k] * 10 + k for k in range(lo, hi)]


def test_an_index_past_the_end_in_a_range_loop_is_still_a_memcheck_error():
    from kdebug.errors import KernelRuntimeError
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds read of global array 'a' .* index 6 is outside "
                                                 r"shape \(6,\)"):
        range_indexing[1, 1](np.arange(6.0), 3, 7, np.zeros(12))
