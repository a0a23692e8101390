"""Strings in kernels as numba-cuda 0.30.4 has them: str/bytes constants stored into string arrays and record
fields (tests/cudapy/test_const_string.py: test_assign_const_unicode_string, test_assign_const_byte_string,
test_assign_const_string_in_record, test_assign_const_bytes_in_record, with their expected values), comparisons
and len() of string elements with numba's charseq.py semantics (charseq_eq, charseq_lt..., charseq_len: Python's
results on the same strings), print of str constants (tests/cudapy/test_print.py: test_string), and a located
compile error for what kdebug's strings do not do."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError, LaunchError

GREETING = "hello"


def test_assign_const_unicode_string():
    @cuda.jit
    def str_assign(arr):
        i = cuda.grid(1)
        if i < len(arr):
            arr[i] = "XYZ"

    arr = np.zeros(9, dtype="<U12")
    str_assign[1, 8](arr)
    expected = np.zeros_like(arr)
    expected[:-1] = "XYZ"
    np.testing.assert_equal(arr, expected)


def test_assign_const_byte_string():
    @cuda.jit
    def bytes_assign(arr):
        i = cuda.grid(1)
        if i < len(arr):
            arr[i] = b"XYZ"

    arr = np.zeros(9, dtype="S12")
    bytes_assign[1, 8](arr)
    expected = np.zeros_like(arr)
    expected[:-1] = b"XYZ"
    np.testing.assert_equal(arr, expected)


@pytest.mark.parametrize("value,xtype", [("ABC", np.int32), (b"ABC", np.float32)])
def test_assign_const_string_in_record(value, xtype):
    """test_assign_const_string_in_record / test_assign_const_bytes_in_record."""
    other = "XYZ" if isinstance(value, str) else b"XYZ"
    dt = np.dtype([("x", xtype), ("y", np.dtype("<U12" if isinstance(value, str) else "S12"))])

    @cuda.jit
    def f(a):
        a[0]["x"] = 1
        a[0]["y"] = value
        a[1]["x"] = 2
        a[1]["y"] = other

    a = np.zeros(2, dt)
    f[1, 1](a)
    np.testing.assert_array_equal(np.asarray([(1, value), (2, other)], dtype=dt), a)


def test_constant_longer_than_the_element_is_cut():
    """charseq.py's casts copy min(len, n) codes."""
    @cuda.jit
    def f(u, s):
        u[0] = "ABCDEFG"
        s[0] = b"ABCDEFG"
        u[1] = u[0]

    u, s = np.zeros(2, "U4"), np.zeros(1, "S3")
    f[1, 1](u, s)
    assert list(u) == ["ABCD", "ABCD"] and list(s) == [b"ABC"]


STRINGS = ["abc", "ab", "abd", "", "abcd", "b", "é€x"]


def test_comparisons_and_len_as_numba():
    @cuda.jit
    def cmp(a, out):
        i = cuda.grid(1)
        out[i, 0] = a[i] == "abc"
        out[i, 1] = a[i] != "abc"
        out[i, 2] = a[i] < "abc"
        out[i, 3] = a[i] <= "abc"
        out[i, 4] = a[i] > "ab"
        out[i, 5] = a[i] >= "ab"
        out[i, 6] = len(a[i])
        out[i, 7] = a[i] > a[0]
        out[i, 8] = "abc" < a[i]

    a = np.array(STRINGS, dtype="U4")
    out = np.zeros((len(a), 9), np.int64)
    cmp[1, len(a)](a, out)
    want = [[x == "abc", x != "abc", x < "abc", x <= "abc", x > "ab", x >= "ab", len(x), x > a[0], "abc" < x]
            for x in a]
    assert out.tolist() == np.array(want, dtype=np.int64).tolist()


def test_bytes_comparisons_and_constants():
    @cuda.jit
    def cmp(a, out):
        i = cuda.grid(1)
        out[i, 0] = a[i] == b"ab"
        out[i, 1] = a[i] < b"b"
        out[i, 2] = len(a[i])
        out[i, 3] = "x" == "x"  # two constants: folded
        out[i, 4] = GREETING != "hello"
        out[i, 5] = len(GREETING)

    a = np.array([b"ab", b"a", b"abc", b""], dtype="S3")
    out = np.zeros((4, 6), np.int64)
    cmp[1, 4](cuda.to_device(a), out)
    assert out.tolist() == [[x == b"ab", x < b"b", len(x), 1, 0, 5] for x in a]


def test_print_of_string_constants(capfd):
    @cuda.jit
    def p():
        s = "lit"
        print(s, GREETING, cuda.threadIdx.x)

    p[1, 2]()
    cuda.synchronize()
    assert capfd.readouterr().out.splitlines()[-2:] == ["lit hello 0", "lit hello 1"]


def store_int(a, out):
    a[0] = 5


def store_bytes_into_unicode(a, out):
    a[0] = b"x"


def store_string_into_ints(a, out):
    out[0] = a[0]


def compare_str_with_bytes(a, out):
    out[0] = a[0] == b"x"


def compare_str_with_int(a, out):
    out[0] = a[0] == 1


def index_a_string(a, out):
    s = "abc"
    out[0] = s[0]


@pytest.mark.parametrize("fn,message", [
    (store_int, "cannot store int64 into an element of type [unichr x 4]"),
    (store_bytes_into_unicode, "cannot store Literal[bytes](b'x') into an element of type [unichr x 4]"),
    (store_string_into_ints, "cannot store [unichr x 4] into an array of int64"),
    (compare_str_with_bytes, "one is str, the other bytes"),
    (compare_str_with_int, "cannot compare a string with int64"),
    (index_a_string, "cannot index a value of type Literal[str](abc)"),
])
def test_refused_with_a_located_error(fn, message):
    with pytest.raises(CompileError) as info:
        cuda.jit(fn)[1, 1](np.zeros(1, "U4"), np.zeros(1, np.int64))
    assert message in str(info.value)
    assert info.value.loc is not None and info.value.loc.line > fn.__code__.co_firstlineno  # in the body


def test_string_argument_is_refused():
    @cuda.jit
    def k(s, out):
        out[0] = len(s)

    with pytest.raises(LaunchError, match="is a str, which kernels cannot take"):
        k[1, 1]("abc", np.zeros(1, np.int64))
