"""Structured (record) dtypes in kernels as numba-cuda 0.30.4 (tests/cudapy/test_record_dtype.py): arrays of
records, ``a[i].x`` / ``a[i]['x']`` reads and writes, subarray fields, record copies and record arguments."""
from __future__ import annotations

import runpy

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.lang import types as T

recordtype = np.dtype([("a", np.float64), ("b", np.int32), ("c", np.complex64), ("d", (np.uint8, 5))], align=True)
recordwitharray = np.dtype([("g", np.int32), ("h", np.float32, 2)], align=True)
recordwith2darray = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])


def set_a(ary, i, v):
    ary[i].a = v


def set_b(ary, i, v):
    ary[i].b = v


def set_c(ary, i, v):
    ary[i].c = v


def set_record(ary, i, j):
    ary[i] = ary[j]


def record_set_a(r, v):
    r.a = v


def record_read_b(r, arr):
    arr[0] = r.b


def record_write_array(r):
    r.g = 2
    r.h[0] = 3.0
    r.h[1] = 4.0


def record_write_2d_array(r):
    r.i = 3
    r.j[0, 0] = 5.0
    r.j[0, 1] = 6.0
    r.j[1, 0] = 7.0
    r.j[1, 1] = 8.0
    r.j[2, 0] = 9.0
    r.j[2, 1] = 10.0


def record_read_array(r, a):
    a[0] = r.h[0]
    a[1] = r.h[1]


@pytest.fixture
def sample1d():
    ary = np.recarray(3, dtype=recordtype)
    for i in range(ary.size):
        x = i + 1
        ary[i]["a"] = x / 2
        ary[i]["b"] = x
        ary[i]["c"] = x * 1j
        ary[i]["d"] = "%d" % x
    return ary


@pytest.mark.parametrize("pyfunc, value", [(set_a, 3.1415), (set_a, np.float32(3.0)), (set_b, 123),
                                           (set_b, 123.0), (set_c, 43j), (set_c, np.complex64(43j))])
def test_set_field_of_array_element(sample1d, pyfunc, value):
    """numba's _test_set_equal: the whole array matches the pure-Python recarray (no memory corruption)."""
    cfunc = cuda.jit()(pyfunc)
    for i in range(sample1d.size):
        got = sample1d.copy()
        expect = got.copy().view(np.recarray)
        cfunc[1, 1](got, i, value)
        pyfunc(expect, i, value)
        assert np.all(expect == got)


def test_set_record(sample1d):
    cfunc = cuda.jit()(set_record)
    for i, j in [(0, 1), (1, 2), (0, 2)]:
        expect = sample1d.copy()
        set_record(expect, i, j)
        got = sample1d.copy()
        cfunc[1, 1](got, i, j)
        assert got[i] == got[j] and np.all(expect == got)


def test_record_arguments_are_written_back(sample1d):
    rec = sample1d.copy()[0]
    cuda.jit()(record_set_a)[1, 1](rec, np.float64(1.5))
    assert rec["a"] == 1.5
    rec["b"] = 2
    arr = np.zeros(1, np.int32)
    cuda.jit()(record_read_b)[1, 1](rec, arr)
    assert arr[0] == 2


def test_record_write_1d_and_2d_subarrays():
    rec = np.recarray(1, dtype=recordwitharray)[0].copy()
    expected = rec.copy()
    cuda.jit()(record_write_array)[1, 1](rec)
    expected["g"] = 2
    expected["h"][0] = 3.0
    expected["h"][1] = 4.0
    np.testing.assert_equal(expected, rec)
    rec2 = np.recarray(1, dtype=recordwith2darray)[0].copy()
    expected2 = rec2.copy()
    cuda.jit()(record_write_2d_array)[1, 1](rec2)
    expected2["i"] = 3
    expected2["j"][:] = np.asarray([5.0, 6.0, 7.0, 8.0, 9.0, 10.0], np.float32).reshape(3, 2)
    np.testing.assert_equal(expected2, rec2)


def test_record_read_1d_subarray():
    rec = np.recarray(1, dtype=recordwitharray)[0].copy()
    rec["h"][0] = 4.0
    rec["h"][1] = 5.0
    arr = np.zeros(2, dtype=rec["h"].dtype)
    cuda.jit()(record_read_array)[1, 1](rec, arr)
    np.testing.assert_equal(rec["h"], arr)


def test_getitem_and_attribute_and_references_in_a_kernel():
    rec = np.dtype([("x", np.float64), ("n", np.int32), ("flag", np.bool_), ("y", np.float32)], align=True)

    @cuda.jit
    def k(r, out):
        i = cuda.grid(1)
        out[i] = r[i].x + r[i]["n"]
        r[i].n = i * 10
        r[i]["y"] += 1.5
        e = r[i]          # a reference: writes through it change the array
        e.x = -e.x
        if r[i].flag:
            out[i] += 100

    a = np.zeros(4, dtype=rec)
    a["x"], a["n"], a["flag"], a["y"] = [1, 2, 3, 4], [5, 6, 7, 8], [True, False, True, False], 0.5
    out = np.zeros(4)
    k[1, 4](a, out)
    np.testing.assert_array_equal(out, [106, 8, 110, 12])
    np.testing.assert_array_equal(a["x"], [-1, -2, -3, -4])
    np.testing.assert_array_equal(a["n"], [0, 10, 20, 30])
    np.testing.assert_array_equal(a["y"], [2.0] * 4)
    assert str(k.signatures[0][0].dtype) == ("Record(x[type=float64;offset=0],n[type=int32;offset=8],"
                                             "flag[type=boolean;offset=12],y[type=float32;offset=16];24;True)")


def test_misaligned_field_is_numbas_error():
    """numba-cuda's strict alignment (tests/cudapy/test_alignment.py: test_record_alignment_error): a packed
    record's float64 at offset 4 is 'Record(...).b of type float64 is not aligned'; aligned, it works
    (test_record_alignment)."""
    from kdebug.errors import TypingError
    from kdebug.numba.np.numpy_support import from_dtype

    def body(a):
        i = cuda.grid(1)
        a[i].a = a[i].b

    packed = np.dtype([("a", "int32"), ("b", "float64")])
    with pytest.raises(TypingError, match=r"\.b of type float64 is not aligned") as err:
        cuda.jit((from_dtype(packed)[:],))(body)
    assert err.value.loc is not None
    aligned = np.dtype([("a", "int32"), ("b", "float64")], align=True)
    k = cuda.jit((from_dtype(aligned)[:],))(body)
    a = np.recarray(3, dtype=aligned)
    for i in range(a.size):
        a[i].a, a[i].b = 0, (i + 1) * 123
    k[1, 3](a)
    assert np.all(a.a == a.b)


def test_record_arrays_on_the_host_and_memcheck():
    rec = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
    d = cuda.to_device(np.zeros(3, dtype=rec))

    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        a[i].s1 = i + 1

    k[1, 3](d)
    assert d.copy_to_host()["s1"].tolist() == [1, 2, 3]
    from kdebug.errors import KernelRuntimeError
    with pytest.raises(KernelRuntimeError, match="out-of-bounds read of global array 'a'"):
        k[1, 4](d)


@pytest.mark.parametrize("body, message", [
    ("out[0] = r[0].z", "has no field 'z'"),
    ("out[0] = r[0][k]", "a record is indexed with a constant field name"),
    ("r[0] = 1.0", "cannot store float64 into an array of Record("),
])
def test_bad_field_access_is_a_located_error(body, message, tmp_path):
    path = tmp_path / "bad_record.py"
    path.write_text(f"def k(r, out, k):\n    {body}\n")
    kern = cuda.jit(runpy.run_path(str(path))["k"])
    with pytest.raises(CompileError) as cm:
        kern[1, 1](np.zeros(2, dtype=[("x", "f8")]), np.zeros(1), 0)
    assert message in str(cm.value) and f"{path}:2:" in str(cm.value)


def test_from_dtype_of_structured_dtypes():
    assert isinstance(T.from_dtype(recordtype), T.Record)
    assert T.from_dtype(np.dtype([("o", "O")])) is None  # an object field: no kernel type
    assert isinstance(T.from_dtype(np.dtype([("s", "U3")])), T.Record)  # a string field: numba's UnicodeCharSeq
