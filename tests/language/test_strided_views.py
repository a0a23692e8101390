"""Non-contiguous array views in kernels (``a[:, j]``, ``a[::2]``, ``m[1:3, 1:]``): numba's typing of basic
indexing (numba-cuda 0.30.4, typing/arraydecl.py ``get_array_index_type``: a view of a C array stays 'C'
only when every index but the last given is an integer and the last is an integer or a slice without a
step), Python's slice bounds, values against numpy, memcheck on the view."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kdebug
from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from kdebug.frontend.typeinfer import infer_function
from kdebug.lang import types as T
from kdebug.session.live import get_session

C1 = T.Array(T.float64, 1, "C")
C2 = T.Array(T.float64, 2, "C")
C3 = T.Array(T.float64, 3, "C")


def _function(tmp_path, source: str):
    """A function defined in a file (the type inferer reads its source)."""
    import importlib.util
    path = tmp_path / "view_probe.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"view_probe_{abs(hash(source))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def _typed(tmp_path, expr: str, argtype):
    return infer_function(_function(tmp_path, f"def f(a):\n    v = {expr}\n"), (argtype,), "kernel").locals["v"]


# expression, argument, numba's type of the view (its repr)
@pytest.mark.parametrize("expr,arg,expected", [
    ("a[1:3]", C1, "Array(float64, 1, 'C', False, aligned=True)"),
    ("a[::2]", C1, "Array(float64, 1, 'A', False, aligned=True)"),
    ("a[::-1]", C1, "Array(float64, 1, 'A', False, aligned=True)"),
    ("a[1:5:1]", C1, "Array(float64, 1, 'A', False, aligned=True)"),  # a given step is has_step
    ("a[:, 1]", C2, "Array(float64, 1, 'A', False, aligned=True)"),
    ("a[1, :]", C2, "Array(float64, 1, 'C', False, aligned=True)"),
    ("a[1]", C2, "Array(float64, 1, 'C', False, aligned=True)"),
    ("a[1:3]", C2, "Array(float64, 2, 'C', False, aligned=True)"),
    ("a[1:3, :]", C2, "Array(float64, 2, 'A', False, aligned=True)"),
    ("a[:, 1:3]", C2, "Array(float64, 2, 'A', False, aligned=True)"),
    ("a[1, 2:]", C3, "Array(float64, 2, 'C', False, aligned=True)"),  # rows 2.. of plane 1: contiguous
    ("a[1, 2]", C3, "Array(float64, 1, 'C', False, aligned=True)"),
    ("a[:, 1][::2]", C2, "Array(float64, 1, 'A', False, aligned=True)"),
    ("a[:, 1][1:]", C2, "Array(float64, 1, 'A', False, aligned=True)"),  # a view of an 'A' array stays 'A'
    ("a[::2][1]", C2, "Array(float64, 1, 'A', False, aligned=True)"),
    ("a[:, 1, 2]", C3, "Array(float64, 1, 'A', False, aligned=True)"),
])
def test_view_types_are_numbas(tmp_path, expr, arg, expected):
    assert repr(_typed(tmp_path, expr, arg)) == expected


def test_a_variable_holding_a_c_and_a_strided_view_is_strided(tmp_path):
    f = _function(tmp_path, "def f(m, g):\n    v = m[0]\n    if g:\n        v = m[:, 0]\n")
    t = infer_function(f, (C2, T.int64), "kernel").locals["v"]
    assert t.strided and repr(t) == "Array(float64, 1, 'A', False, aligned=True)"


@cuda.jit
def views(m, a, out):
    c = m[:, 1]
    out[0] = len(c)
    s = 0.0
    for x in c:
        s += x
    out[1] = s
    r = a[::2]
    out[2] = r.shape[0]
    out[3] = r[1]
    out[4] = a[::-1][0]
    out[5] = len(a[5:1:-2])
    out[6] = a[5:1:-2][1]
    sub = m[1:3, 1:]
    out[7] = sub[1, 2]
    out[8] = sub.shape[1]
    out[9] = m[::2, ::3][1, 1]
    out[10] = c[::2][1]
    out[11] = len(a[100::-3])
    out[12] = a[-1:-8:-3][2]
    out[13] = len(a[3:3]) + len(a[5:2]) + len(a[2:5:-1])
    c[0] = -5.0  # writes through to m[0, 1]
    a[1::3][1] = -7.0  # a[4]


def test_view_values_are_numpys():
    m = np.arange(20.0).reshape(4, 5)
    a = np.arange(10.0)
    m0, a0 = m.copy(), a.copy()
    out = np.zeros(14)
    views[1, 1](m, a, out)
    c = m0[:, 1]
    expected = [4, c.sum(), 5, a0[::2][1], a0[::-1][0], len(a0[5:1:-2]), a0[5:1:-2][1], m0[1:3, 1:][1, 2], 4,
                m0[::2, ::3][1, 1], c[::2][1], len(a0[100::-3]), a0[-1:-8:-3][2], 0]
    assert list(out) == expected
    assert m[0, 1] == -5.0 and a[4] == -7.0
    m0[0, 1], a0[4] = -5.0, -7.0
    assert (m == m0).all() and (a == a0).all()


@cuda.jit(device=True)
def total(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i]
    return s


@cuda.jit
def pass_views(m, out, flag):
    v = m[0]
    if flag:
        v = m[:, 0]  # v holds a C row or a strided column: numba's C-to-A unification
    out[0] = total(v)
    out[1] = total(m[:, 2])
    out[2] = total(m[1, :])
    out[3] = m[:, 1].strides[0] + m[::2, ::3].strides[1] * 100
    out[4] = m.strides[0]


def test_views_pass_to_device_functions_and_unify():
    m = np.arange(12.0).reshape(3, 4)
    out = np.zeros(5)
    pass_views[1, 1](m, out, 1)
    assert list(out) == [m[:, 0].sum(), m[:, 2].sum(), m[1].sum(), m[:, 1].strides[0] + m[::2, ::3].strides[1] * 100,
                         m.strides[0]]
    pass_views[1, 1](m, out, 0)
    assert out[0] == m[0].sum()


@cuda.jit
def strided_1d(a, lo, hi, step, out, n):
    v = a[lo:hi:step]
    n[0] = len(v)
    for i in range(len(v)):
        out[i] = v[i]


@cuda.jit
def strided_2d(m, lo, hi, step, j, out, n):
    v = m[lo:hi:step, j]
    w = m[j, lo:hi:step]
    n[0] = len(v)
    n[1] = len(w)
    for i in range(len(v)):
        out[0, i] = v[i]
    for i in range(len(w)):
        out[1, i] = w[i]


bound = st.integers(-14, 14)


@settings(max_examples=100, deadline=None)
@given(lo=bound, hi=bound, step=st.integers(-5, 5).filter(bool))
def test_run_time_slices_match_python(lo, hi, step):
    a = np.arange(10.0) * 3 + 1
    out = np.full(12, np.nan)
    n = np.zeros(1, np.int64)
    strided_1d[1, 1](a, lo, hi, step, out, n)
    expected = a[lo:hi:step]
    assert n[0] == len(expected) and list(out[:n[0]]) == list(expected)
    m = np.arange(100.0).reshape(10, 10)
    out2 = np.full((2, 12), np.nan)
    n2 = np.zeros(2, np.int64)
    strided_2d[1, 1](m, lo, hi, step, 7, out2, n2)
    col, row = m[lo:hi:step, 7], m[7, lo:hi:step]
    assert list(n2) == [len(col), len(row)]
    assert list(out2[0, :len(col)]) == list(col) and list(out2[1, :len(row)]) == list(row)


@pytest.mark.parametrize("body,message", [
    ("v = m[:, 1]\n    v[4] = 1.0", r"out-of-bounds write of global array 'v' .* index 4 is outside shape \(4,\)"),
    ("v = m[::2]\n    x = v[2, 0]", r"out-of-bounds read of global array 'v' .* index \(2, 0\) is outside shape \(2, 5\)"),
    ("v = m[1:, ::2]\n    v[0, 3] = 1.0", r"write of global array 'v' .* index \(0, 3\) is outside shape \(3, 3\)"),
    ("v = m[:, 5]", r"out-of-bounds read of global array 'm' .* index \(0, 5\) is outside shape \(4, 5\)"),
])
def test_access_outside_a_view_is_a_located_memcheck_error(tmp_path, body, message):
    import importlib.util
    path = tmp_path / "views_oob.py"
    path.write_text("from kdebug import cuda\n\n@cuda.jit\ndef k(m):\n    " + body + "\n")
    spec = importlib.util.spec_from_file_location("views_oob", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelRuntimeError, match=message) as err:
        mod.k[1, 1](np.zeros((4, 5)))
    assert err.value.loc.line == 5 + body.count("\n")


@cuda.jit
def column_per_thread(m):
    c = m[:, cuda.threadIdx.x]
    for i in range(len(c)):
        c[i] = i * 10 + cuda.threadIdx.x


def test_columns_written_by_their_threads_are_race_free():
    kdebug.set_options(racecheck=True)
    try:
        session = get_session()
        before = len(session.hazards)
        m = np.zeros((6, 8))
        column_per_thread[1, 8](m)
        assert session.hazards[before:] == []
    finally:
        kdebug.set_options(racecheck=False)
    assert (m == np.arange(6)[:, None] * 10 + np.arange(8)[None, :]).all()


def test_strided_views_compile_to_ptx():
    from kdebug.targets import ptx as P
    ptx, _ = cuda.compile_ptx(column_per_thread, "void(float64[:, ::1])")
    assert ".visible .entry column_per_thread" in ptx and "st.global" in ptx
    if P.cuda_tool("ptxas") is not None:
        report = P.run_ptxas(ptx, "sm_90", False)
        assert report["ok"], report["log"]


# ---- host-side views passed to kernels ---------------------------------------------------------------------
@cuda.jit
def add_hundred(v):
    for i in range(len(v)):
        v[i] += 100


def test_strided_numpy_arrays_and_device_views_passed_to_kernels_write_through():
    m = np.arange(12.0).reshape(3, 4)
    add_hundred[1, 1](m[:, 1])  # a numpy view: passed with its strides
    assert list(m[:, 1]) == [101, 105, 109] and m[0, 0] == 0
    d = cuda.to_device(np.arange(12.0).reshape(3, 4))
    col = d[:, 1]
    assert not col.is_c_contiguous() and col.__cuda_array_interface__["strides"] == (32,)
    add_hundred[1, 1](col)  # a device-array view shares d's memory, as numba's
    add_hundred[1, 1](d[::2, 3])
    host = d.copy_to_host()
    assert list(host[:, 1]) == [101, 105, 109] and list(host[:, 3]) == [103, 7, 111]
    assert list(col.copy_to_host()) == [101, 105, 109]
    assert d.is_c_contiguous() and d.__cuda_array_interface__["strides"] is None


# numba-cuda 0.30.4's typeof of host arrays (typing/typeof.py _typeof_ndarray: np/numpy_support.py map_layout,
# 'C' if C-contiguous, else 'F' if F-contiguous, else 'A'; read-only when not writeable), as its typeof prints them
@pytest.mark.parametrize("make,expected", [
    ("np.zeros(10)", "Array(float64, 1, 'C', False, aligned=True)"),
    ("np.zeros(10)[::2]", "Array(float64, 1, 'A', False, aligned=True)"),
    ("np.zeros((3, 4))[:, 1]", "Array(float64, 1, 'A', False, aligned=True)"),
    ("np.zeros((3, 4)).T", "Array(float64, 2, 'F', False, aligned=True)"),
    ("np.zeros((2, 10), order='F')", "Array(float64, 2, 'F', False, aligned=True)"),
    ("np.zeros(10, order='F')", "Array(float64, 1, 'C', False, aligned=True)"),
    ("np.zeros((5, 5), order='F')[:, 2]", "Array(float64, 1, 'C', False, aligned=True)"),
    ("np.zeros((5, 5))[2, :]", "Array(float64, 1, 'C', False, aligned=True)"),
    ("np.zeros(10)[::-1]", "Array(float64, 1, 'A', False, aligned=True)"),
    ("np.broadcast_to(np.zeros(3), (4, 3))", "Array(float64, 2, 'A', True, aligned=True)"),
    ("np.zeros((4, 6), np.int32)[::2, 1:]", "Array(int32, 2, 'A', False, aligned=True)"),
    ("np.zeros((2, 3, 4), np.float32)[:, :, 0]", "Array(float32, 2, 'A', False, aligned=True)"),
    ("cuda.to_device(np.zeros((5, 5)))[:, 2]", "Array(float64, 1, 'A', False, aligned=True)"),
    ("cuda.to_device(np.zeros((5, 5)))[2, :]", "Array(float64, 1, 'C', False, aligned=True)"),
])
def test_host_arrays_are_typed_with_numbas_layout(make, expected):
    @cuda.jit
    def first(a, out):
        out[0] = a.ndim

    arr = eval(make, {"np": np, "cuda": cuda})
    out = np.zeros(1, np.int64)
    first[1, 1](arr, out)
    assert [repr(s[0]) for s in first.signatures] == [expected] and out[0] == arr.ndim


@cuda.jit
def strides_and_writes(a, out):
    out[0] = a.strides[0]
    for i in range(a.shape[0]):
        a[i] = a[i] * 10 + i


@cuda.jit
def strides_and_writes_2d(a, out):
    out[0], out[1] = a.strides
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] * 10 + i * a.shape[1] + j


@pytest.mark.parametrize("base,view", [
    ("np.arange(10.0)", lambda b: b[::2]),
    ("np.arange(10.0)", lambda b: b[::-3]),
    ("np.arange(12.0).reshape(3, 4)", lambda b: b[:, 1]),
    ("np.arange(12.0).reshape(3, 4)", lambda b: b.T),
    ("np.arange(24.0).reshape(4, 6)", lambda b: b[::2, 1::2]),
    ("np.arange(24.0).reshape(2, 3, 4)", lambda b: b[:, :, 3]),
    ("np.arange(24.0).reshape(4, 6)", lambda b: b[::-1, 2:]),
])
def test_a_strided_host_array_is_passed_with_its_strides_and_written_in_place(base, view):
    """The kernel indexes the caller's view through its strides (its .strides are numpy's, in bytes, as
    numba's), writes land on the view's elements, and the rest of the base array is untouched."""
    b = eval(base, {"np": np})
    v = view(b)
    expected_base = b.copy()
    ev = view(expected_base)
    flat = np.arange(ev.size).reshape(ev.shape)
    ev[...] = ev * 10 + flat
    out = np.zeros(3, np.int64)
    (strides_and_writes if v.ndim == 1 else strides_and_writes_2d)[1, 1](v, out)
    assert tuple(out[:v.ndim]) == v.strides
    np.testing.assert_array_equal(b, expected_base)


@cuda.jit
def read_past_the_view(a, i):
    a[i] = 1.0


def test_memcheck_checks_a_strided_argument_against_the_views_shape():
    base = np.zeros(20)
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds write of global array 'a' .* index 5 is outside "
                                                 r"shape \(5,\)") as err:
        read_past_the_view[1, 1](base[::4], 5)  # base[20] would be past the base, base[::4][5] past the view
    assert err.value.loc.line == read_past_the_view.py_func.__code__.co_firstlineno + 2
    assert not base.any()


def test_strides_that_split_elements_are_a_located_launch_error():
    from kdebug.errors import LaunchError
    packed = np.zeros(4, dtype=np.dtype([("x", np.float64), ("n", np.int32)]))  # 12-byte records
    with pytest.raises(LaunchError, match=r"strides \(12,\), not multiples of its 8-byte elements") as err:
        strides_and_writes[1, 1](packed["x"], np.zeros(3, np.int64))
    assert err.value.loc is not None and err.value.loc.line > 0 and "ascontiguousarray" in err.value.hint


def test_a_declared_any_layout_signature_takes_strided_arrays_and_a_c_one_does_not():
    from kdebug.errors import LaunchError
    any_layout = cuda.jit("void(float64[:])")(add_hundred.py_func)
    m = np.zeros((3, 4))
    any_layout[1, 1](m[:, 2])  # numba: 'A' takes any strides
    assert list(m[:, 2]) == [100] * 3 and m.sum() == 300
    c_layout = cuda.jit("void(float64[::1])")(add_hundred.py_func)
    with pytest.raises(LaunchError, match=r"compiled for \(none\(float64\[::1\]\)\) and cannot take \(float64\[:\]\)"):
        c_layout[1, 1](m[:, 2])


def test_inspect_types_shows_the_strided_and_fortran_layouts(capsys):
    @cuda.jit
    def touch(a):
        a[0, 0] = 1.0

    touch[1, 1](np.zeros((3, 4))[::2])
    touch[1, 1](np.zeros((3, 4)).T)
    touch.inspect_types()
    text = capsys.readouterr().out
    assert "touch (float64[:, :])" in text and "touch (float64[::1, :])" in text
    assert len(touch.signatures) == 2


def test_racecheck_watches_a_strided_argument():
    kdebug.set_options(racecheck=True)
    try:
        session = get_session()
        before = len(session.hazards)
        m = np.zeros((6, 8))
        column_per_thread[1, 6](m.T)  # thread t writes column t of m.T (row t of m): no race
        assert session.hazards[before:] == []
        assert (m.T == np.arange(8)[:, None] * 10 + np.arange(6)[None, :]).all()
        racy[1, 4](m[::2, 1])
        found = session.hazards[before:]
        assert [(h.kind, h.array, h.index) for h in found] == [("write-after-write", "v", (1,))]
    finally:
        kdebug.set_options(racecheck=False)


@cuda.jit
def racy(v):
    v[1] = cuda.threadIdx.x


@pytest.mark.parametrize("spelled,expected", [  # numba-cuda 0.30.4's types.float64[...] reprs
    ("float64[::1, :]", "Array(float64, 2, 'F', False, aligned=True)"),
    ("float64[:, ::1]", "Array(float64, 2, 'C', False, aligned=True)"),
    ("float64[::1]", "Array(float64, 1, 'C', False, aligned=True)"),
    ("float64[:, :]", "Array(float64, 2, 'A', False, aligned=True)"),
    ("float32[::1, :, :]", "Array(float32, 3, 'F', False, aligned=True)"),
])
def test_array_types_spelled_as_numba(spelled, expected):
    assert repr(eval(spelled, {"float64": cuda.float64, "float32": cuda.float32})) == expected


def test_a_declared_fortran_signature_indexes_fortran_arrays_and_refuses_c_ones():
    from kdebug.errors import LaunchError
    k = cuda.jit("void(float64[::1, :], int64[::1])")(strides_and_writes_2d.py_func)
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    out = np.zeros(3, np.int64)
    k[1, 1](f, out)
    assert tuple(out[:2]) == f.strides == (8, 16)
    np.testing.assert_array_equal(f, np.arange(6.0).reshape(2, 3) * 11)
    with pytest.raises(LaunchError, match="cannot take"):
        k[1, 1](np.zeros((2, 3)), out)
