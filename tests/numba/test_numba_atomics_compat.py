"""cuda.atomic.* as numba-cuda 0.30.4's tests/cudapy/test_atomics.py uses them.

- Kernels ``exec``'d from one template text with another ``{func}`` (its gen_atomic_extreme_funcs: four
  functions named ``atomic`` at line 2 of "<string>", for cuda.atomic.max, min, nanmax, nanmin) are four
  kernels: kdebug read every one's source from the newest text, so max ran nanmin's code.
- An N-D atomic takes a tuple index whose numbers numba casts to intp (cudaimpl's atomics lower through
  api_util.normalize_indices): ``(tx, uint64(ty))`` unified with ``(tx % 4, uint64(ty) % 8)`` is
  Tuple(int64, float64) there (NumPy's promotion of uint64 and int64) and still indexes one element.
- A tuple of integer constants passed to a device function (``(4, 8)``) is a tuple of literals, so the
  callee may use it as a shared array's shape, as numba's literal arguments.
"""
from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import float64, int32, uint32, uint64
from kdebug.driver.job import function_key
from kdebug.errors import CompileError
from kdebug.frontend import source_registry
from kdebug.frontend.source import function_text

TEMPLATE = dedent("""
def atomic(res, ary):
    tx = cuda.threadIdx.x
    {func}(res, 0, ary[tx])
""")


def _exec_kernel(func: str):
    """``TEMPLATE`` exec'd for ``func`` as test_atomics.py's gen_atomic_extreme_funcs does, while kdebug
    records exec'd text (as ``kdebug run`` does for a script)."""
    namespace: dict = {}
    with source_registry.recording():
        exec(TEMPLATE.format(func=func), {"cuda": cuda}, namespace)
    return namespace["atomic"]


def test_kernels_execd_from_one_template_keep_their_own_source_and_code():
    funcs = ("cuda.atomic.max", "cuda.atomic.min", "cuda.atomic.nanmax", "cuda.atomic.nanmin")
    kernels = {f: _exec_kernel(f) for f in funcs}
    for f, k in kernels.items():
        assert k.__code__.co_filename == "<string>" and k.__code__.co_firstlineno == 2
        assert function_text(k) == TEMPLATE.format(func=f).lstrip("\n")  # its own text, not the newest
    ary = np.array([3, -5, 7, 1], dtype=np.int32)
    got = {}
    for f, k in kernels.items():
        res = np.zeros(1, dtype=np.int32)
        cuda.jit(k)[1, 4](res, ary)
        got[f] = int(res[0])
    # ary[idx] = max(ary[idx], val) for each value, from 0 (numba-cuda's stubs.atomic.max / min docstrings)
    assert got == {"cuda.atomic.max": 7, "cuda.atomic.min": -5, "cuda.atomic.nanmax": 7, "cuda.atomic.nanmin": -5}


def test_execd_kernels_with_one_name_and_line_get_separate_job_keys():
    kmax, kmin = _exec_kernel("cuda.atomic.add"), _exec_kernel("cuda.atomic.sub")
    dmax, dmin = cuda.jit(kmax), cuda.jit(kmin)
    argtypes = (int32[::1], int32[::1])
    kmax_key = function_key(dmax, argtypes, "cpu", "kernel")
    kmin_key = function_key(dmin, argtypes, "cpu", "kernel")
    assert kmax_key.split("#")[1].split(".")[0] != kmin_key.split("#")[1].split(".")[0]  # two texts, two hashes
    res, ary = np.zeros(1, np.int32), np.array([1, 2, 3, 4], np.int32)
    dmax[1, 4](res, ary)
    assert res[0] == 10
    dmin[1, 4](res, ary)
    assert res[0] == 0


def test_the_recorded_text_whose_code_is_the_functions_is_chosen():
    """Of several texts defining ``k`` on line 1, ``find_lines`` gives the one ``k`` was compiled from,
    whichever was recorded last; where one text defines it, that one (no compile)."""
    texts = [f"def k(a):\n    a[0] = {v}\n" for v in ("1", "2.5", "a[1]")]
    functions = []
    for text in texts:
        namespace: dict = {}
        exec(compile(text, "<atomics-compat>", "exec"), namespace)
        source_registry.remember("<atomics-compat>", text)
        functions.append(namespace["k"])
    for text, fn in zip(texts, functions):
        lines, first = source_registry.find_lines(fn)
        assert "".join(lines) == text and first == 1


@cuda.jit(device=True)
def atomic_binary_2dim_shared(ary, op2, ary_dtype, ary_shape, binop_func, y_cast_func, neg_idx):
    """numba-cuda's tests/cudapy/test_atomics.py helper, as written there."""
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    sm = cuda.shared.array(ary_shape, ary_dtype)
    sm[tx, ty] = ary[tx, ty]
    cuda.syncthreads()
    bin = (tx, y_cast_func(ty))
    if neg_idx:
        bin = (bin[0] % ary_shape[0], bin[1] % ary_shape[1])
    binop_func(sm, bin, op2)
    cuda.syncthreads()
    ary[tx, ty] = sm[tx, ty]


@cuda.jit(device=True)
def atomic_binary_2dim_global(ary, op2, binop_func, y_cast_func, neg_idx):
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bin = (tx, y_cast_func(ty))
    if neg_idx:
        bin = (bin[0] % ary.shape[0], bin[1] % ary.shape[1])
    binop_func(ary, bin, op2)


@cuda.jit(device=True)
def cast_none(num):
    return num


@cuda.jit(device=True)
def cast_to_uint64(num):
    return uint64(num)


@pytest.mark.parametrize("cast", [cast_none, cast_to_uint64], ids=["int", "uint64"])
def test_a_tuple_index_and_a_literal_tuple_shape_through_a_helper(cast):
    """test_atomic_add2 / add3: the shape ``(4, 8)`` reaches cuda.shared.array through a parameter; with
    uint64(ty) the index is Tuple(int64, float64) (numba's unification of uint64 and int64)."""
    @cuda.jit("void(uint32[:,:])")
    def add2(ary):
        atomic_binary_2dim_shared(ary, 1, uint32, (4, 8), cuda.atomic.add, cast, False)

    ary = np.arange(32, dtype=np.uint32).reshape(4, 8)
    orig = ary.copy()
    add2[1, (4, 8)](ary)
    np.testing.assert_array_equal(ary, orig + 1)


def test_a_tuple_index_on_a_global_array_with_a_float_element():
    @cuda.jit("void(float64[:,:])")
    def sub_global(ary):
        atomic_binary_2dim_global(ary, 1.5, cuda.atomic.sub, cast_to_uint64, False)

    ary = np.full((4, 8), 10.0)
    sub_global[1, (4, 8)](ary)
    np.testing.assert_array_equal(ary, np.full((4, 8), 8.5))


def test_tuple_indices_on_three_dimensional_arrays():
    @cuda.jit
    def count(out):
        i, j, k = cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
        cuda.atomic.add(out, (i % 2, j % 2, k % 2), 1)
        cuda.atomic.max(out, (i % 2, j % 2, uint64(k % 2)), 0)  # mixed element types: one element each

    out = np.zeros((2, 2, 2), dtype=np.int64)
    count[1, (4, 4, 2)](out)
    np.testing.assert_array_equal(out, np.full((2, 2, 2), 4))


def test_a_float_index_is_cast_to_intp_and_wraps_as_numbas():
    """numba's 1-D atomic signature takes ``types.intp``: the float index is cast, and get_item_pointer's
    wraparound makes -1.0 the last element."""
    @cuda.jit
    def k(ary):
        cuda.atomic.add(ary, 2.0, 5)
        cuda.atomic.add(ary, -1.0, 7)

    ary = np.zeros(4, dtype=np.int32)
    k[1, 1](ary)
    np.testing.assert_array_equal(ary, [0, 0, 5, 7])


def test_compare_and_swap_on_a_slice_and_cas_with_a_grid_tuple():
    """test_atomic_compare_and_swap and test_atomic_cas_2dim: compare_and_swap swaps element 0 of
    ``res[gid:]``; cas takes cuda.grid(2) as the index; both return the old value."""
    @cuda.jit
    def cas_slice(res, old, ary, fill_val):
        gid = cuda.grid(1)
        if gid < res.size:
            old[gid] = cuda.atomic.compare_and_swap(res[gid:], fill_val, ary[gid])

    @cuda.jit
    def cas_2dim(res, old, ary, fill_val):
        gid = cuda.grid(2)
        if gid[0] < res.shape[0] and gid[1] < res.shape[1]:
            old[gid] = cuda.atomic.cas(res, gid, fill_val, ary[gid])

    fill = np.int32(-1)
    res = np.array([-1, 3, -1, 5], dtype=np.int32)
    ary = np.array([10, 11, 12, 13], dtype=np.int32)
    old = np.zeros(4, dtype=np.int32)
    cas_slice[1, 4](res, old, ary, fill)
    np.testing.assert_array_equal(res, [10, 3, 12, 5])
    np.testing.assert_array_equal(old, [-1, 3, -1, 5])

    res2 = np.array([[-1, 2], [3, -1]], dtype=np.int64)
    ary2 = np.array([[7, 8], [9, 6]], dtype=np.int64)
    old2 = np.zeros((2, 2), dtype=np.int64)
    cas_2dim[1, (2, 2)](res2, old2, ary2, np.int64(-1))
    np.testing.assert_array_equal(res2, [[7, 2], [3, 6]])
    np.testing.assert_array_equal(old2, [[-1, 2], [3, -1]])


def test_an_index_numba_cannot_cast_is_still_a_located_error():
    @cuda.jit
    def short(out):
        cuda.atomic.add(out, (0,), 1)

    with pytest.raises(CompileError, match=r"the index of cuda.atomic.add on a 2-D array must be a tuple of "
                                           r"2 integers, not ") as err:
        short[1, 1](np.zeros((2, 2), dtype=np.int32))
    assert err.value.loc is not None and err.value.loc.line > 0

    @cuda.jit
    def complex_index(out):
        cuda.atomic.add(out, 1j, 1)

    with pytest.raises(CompileError, match="must be an integer, not complex128"):
        complex_index[1, 1](np.zeros(2, dtype=np.int32))


def test_literal_tuple_arguments_still_leave_a_variable_shape_an_error():
    @cuda.jit(device=True)
    def fill(ary, shape):
        sm = cuda.shared.array(shape, float64)
        sm[0, 0] = 1.0
        ary[0] = sm[0, 0]

    @cuda.jit
    def variable(ary, n):
        fill(ary, (n, 2))

    with pytest.raises(CompileError, match="compile-time constants"):
        variable[1, 1](np.zeros(1), 2)


def test_execd_text_keeps_its_callers_future_flags():
    """Recording an exec'd text compiled it with kdebug's own ``from __future__ import annotations``: under
    ``kdebug run`` an exec'd ``def f(x: int)`` had the annotation ``'int'``. A caller without the flag
    (compiled here with ``dont_inherit``) gets ``int``, through ``exec`` and ``compile`` alike."""
    namespace: dict = {}
    caller = compile("def run(ns):\n"
                     "    exec('def f(x: int): pass', ns)\n"
                     "    exec(compile('def g(x: int): pass', '<g>', 'exec'), ns)\n", "<caller>", "exec",
                     dont_inherit=True)
    exec(caller, namespace)
    with source_registry.recording():
        namespace["run"](namespace)
    assert namespace["f"].__annotations__ == {"x": int} and namespace["g"].__annotations__ == {"x": int}
    assert "".join(source_registry.find_lines(namespace["f"])[0]) == "def f(x: int): pass"
