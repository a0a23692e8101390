"""datetime64/timedelta64 arrays and values in kernels as numba-cuda 0.30.4 (tests/cudapy/test_datetime.py,
np/npdatetime.py: NaT propagates through arithmetic and compares unequal to everything)."""
from __future__ import annotations

import runpy

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError


def test_basic_datetime_kernel():
    @cuda.jit
    def foo(start, end, delta):
        for i in range(cuda.grid(1), delta.size, cuda.gridsize(1)):
            delta[i] = end[i] - start[i]

    arr1 = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    arr2 = arr1 + np.random.randint(0, 10000, arr1.size)
    delta = np.zeros_like(arr1, dtype="timedelta64[D]")
    foo[1, 32](arr1, arr2, delta)
    np.testing.assert_array_equal(delta, arr2 - arr1)
    assert delta.dtype == np.dtype("timedelta64[D]")


def test_scalar_datetime_kernel():
    @cuda.jit
    def foo(dates, target, delta, matches, outdelta):
        for i in range(cuda.grid(1), matches.size, cuda.gridsize(1)):
            matches[i] = dates[i] == target
            outdelta[i] = dates[i] - delta

    arr1 = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    target = arr1[5]
    delta = arr1[6] - arr1[5]
    matches = np.zeros_like(arr1, dtype=np.bool_)
    outdelta = np.zeros_like(arr1, dtype="datetime64[D]")
    foo[1, 32](arr1, target, delta, matches, outdelta)
    assert list(matches.nonzero()[0]) == [5]
    np.testing.assert_array_equal(outdelta, arr1 - delta)
    assert str(foo.signatures[0][1]) == "datetime64[D]" and str(foo.signatures[0][2]) == "timedelta64[D]"


def test_nat_propagates_and_compares_unequal():
    @cuda.jit
    def k(d, t, out_d, out_t, flags, ratio, n):
        out_d[0] = d[0] + t[0]
        out_t[0] = d[0] - d[1]
        out_t[1] = t[0] * 3
        out_t[2] = t[1] // 2
        out_t[3] = -t[1]
        ratio[0] = t[1] / t[0]
        n[0] = t[1] // t[0]
        flags[0] = d[0] == d[0]
        flags[1] = d[0] != d[0]
        flags[2] = d[1] < d[2]
        flags[3] = t[0] < t[1]

    nat_d, nat_t = np.datetime64("NaT", "s"), np.timedelta64("NaT", "s")
    for d, t in (([np.datetime64(100, "s"), np.datetime64(40, "s"), np.datetime64(70, "s")],
                  [np.timedelta64(4, "s"), np.timedelta64(10, "s")]),
                 ([nat_d, np.datetime64(40, "s"), nat_d], [nat_t, np.timedelta64(10, "s")])):
        d, t = np.array(d), np.array(t)
        out_d = np.zeros(1, "M8[s]")
        out_t = np.zeros(4, "m8[s]")
        flags = np.zeros(4, np.bool_)
        ratio = np.zeros(1)
        n = np.zeros(1, np.int64)
        k[1, 1](d, t, out_d, out_t, flags, ratio, n)
        with np.errstate(all="ignore"):
            want_t = [d[0] - d[1], t[0] * 3, t[1] // 2, -t[1]]
            np.testing.assert_array_equal(out_d, [d[0] + t[0]])
            np.testing.assert_array_equal(out_t, want_t)
            np.testing.assert_array_equal(ratio, [t[1] / t[0]])
        assert flags.tolist() == [d[0] == d[0], d[0] != d[0], bool(d[1] < d[2]), bool(t[0] < t[1])]
        if not np.isnat(t[0]):
            assert n[0] == t[1] // t[0]


@pytest.mark.parametrize("body, message", [
    ("out[0] = a[0] + a[0]", "unsupported operand types: datetime64[D] Add datetime64[D]"),
    ("out[0] = a[0] - b[0]", "kdebug computes with datetimes of one unit (D and s)"),
    ("out[0] = a[0] < 3", "cannot compare datetime64[D] with int64"),
    ("f[0] = a[0]", "cannot store datetime64[D] into an array of float64"),
])
def test_what_numba_rejects_is_a_located_error(body, message, tmp_path):
    path = tmp_path / "bad_dt.py"
    path.write_text(f"def k(a, b, out, f):\n    {body}\n")
    kern = cuda.jit(runpy.run_path(str(path))["k"])
    with pytest.raises(CompileError) as cm:
        kern[1, 1](np.zeros(1, "M8[D]"), np.zeros(1, "M8[s]"), np.zeros(1, "M8[D]"), np.zeros(1))
    assert message in str(cm.value) and f"{path}:2:" in str(cm.value)


def test_datetime_device_arrays():
    d = cuda.to_device(np.arange("2024-01-01", "2024-01-05", dtype="datetime64[D]"))

    @cuda.jit
    def shift(a, by):
        i = cuda.grid(1)
        a[i] = a[i] + by

    shift[1, 4](d, np.timedelta64(7, "D"))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange("2024-01-08", "2024-01-12", dtype="datetime64[D]"))
