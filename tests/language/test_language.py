"""The kernel language of docs/guide/kernel-language.md, feature by feature, on the CPU backend."""
from __future__ import annotations

import math

import numpy as np
import pytest

import kdebug.cuda as kcuda
from kdebug import cuda
from kdebug.cuda import float32, float64, int32, int64, uint8
from kdebug.errors import KdebugError


# ---- thread indexing --------------------------------------------------------------------------

@cuda.jit
def _grid2(out, sizes):
    x, y = cuda.grid(2)
    gx, gy = cuda.gridsize(2)
    if x < out.shape[0] and y < out.shape[1]:
        out[x, y] = x * 100 + y
    if x == 0 and y == 0:
        sizes[0] = gx
        sizes[1] = gy


def test_grid_2d_and_gridsize():
    out = np.full((5, 7), -1, dtype=np.int64)
    sizes = np.zeros(2, dtype=np.int64)
    _grid2[(2, 3), (4, 3)](out, sizes)
    i, j = np.indices(out.shape)
    np.testing.assert_array_equal(out, i * 100 + j)
    assert list(sizes) == [8, 9]


@cuda.jit
def _indices3(out):
    tx, ty, tz = cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
    bx, by = cuda.blockIdx.x, cuda.blockIdx.y
    x = bx * cuda.blockDim.x + tx
    y = by * cuda.blockDim.y + ty
    out[x, y, tz] = cuda.gridDim.x * 1000 + cuda.gridDim.y * 100 + cuda.blockDim.z * 10 + tz


def test_threadidx_blockidx_blockdim_griddim_3d():
    out = np.zeros((4, 6, 2), dtype=np.int32)
    _indices3[(2, 3), (2, 2, 2)](out)
    expected = 2 * 1000 + 3 * 100 + 2 * 10 + np.arange(2)
    np.testing.assert_array_equal(out, np.broadcast_to(expected, out.shape))


@cuda.jit
def _grid1_stride(out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] += i


def test_grid_stride_loop_covers_every_element_once():
    out = np.zeros(1000, dtype=np.int64)
    _grid1_stride[3, 32](out)
    np.testing.assert_array_equal(out, np.arange(1000))


# ---- arrays -------------------------------------------------------------------------------

@cuda.jit
def _array_attrs(a2, a3, out):
    out[0] = a2.shape[0]
    out[1] = a2.shape[1]
    out[2] = a2.size
    out[3] = a2.ndim
    out[4] = len(a2)
    out[5] = a3.ndim
    out[6] = a3.size
    s = a3.shape
    out[7] = s[0] * 100 + s[1] * 10 + s[2]
    out[8] = len(s)
    idx = (1, 2, 3)
    out[9] = a3[idx]
    out[10] = a3[1, 2, 3]
    out[11] = a2[-1, -1]
    i = 1
    out[12] = s[i]


def test_array_shape_size_ndim_len_and_tuple_indexing():
    a2 = np.arange(12, dtype=np.float32).reshape(3, 4)
    a3 = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)
    out = np.zeros(13, dtype=np.int64)
    _array_attrs[1, 1](a2, a3, out)
    assert list(out) == [3, 4, 12, 2, 3, 3, 24, 234, 3, 23, 23, 11, 3]


@cuda.jit(device=True)
def _row_sum(row):
    s = 0.0
    for j in range(row.size):
        s += row[j]
    return s


@cuda.jit
def _rows(a, b3, sums):
    i = cuda.grid(1)
    if i < a.shape[0]:
        sums[i] = _row_sum(a[i])  # a row of a 2-D array is a 1-D array
        a[i][0] = -a[i][1]  # chained indexing reads and writes through the row
        plane = b3[i]
        plane[1][2] = len(plane) * 10 + plane.ndim
        b3[i, 2][3] = a[-1][2]


def test_rows_and_planes_of_arrays_are_views():
    a = np.arange(12.0).reshape(4, 3)
    b3 = np.zeros((4, 3, 4))
    sums = np.zeros(4)
    _rows[1, 4](a, b3, sums)
    np.testing.assert_array_equal(sums, np.arange(12.0).reshape(4, 3).sum(axis=1))
    assert list(a[:, 0]) == [-1, -4, -7, -10]
    assert (b3[:, 1, 2] == 32).all() and (b3[:, 2, 3] == 11).all()


@cuda.jit
def _bools(flags, out):
    i = cuda.grid(1)
    if i < flags.size:
        flags[i] = not flags[i]
        out[i] = flags[i]


def test_boolean_arrays():
    flags = np.array([True, False, True, False])
    out = np.zeros(4, dtype=np.uint8)
    _bools[1, 4](flags, out)
    assert flags.tolist() == [False, True, False, True]
    assert out.tolist() == [0, 1, 0, 1]


@cuda.jit
def _all_dtypes(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64):
    i8[0] += 1
    i16[0] += 1
    i32[0] += 1
    i64[0] += 1
    u8[0] += 1
    u16[0] += 1
    u32[0] += 1
    u64[0] += 1
    f32[0] += 0.5
    f64[0] += 0.5


def test_every_supported_dtype():
    names = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
    arrays = [np.full(1, 2, dtype=n) for n in names]
    _all_dtypes[1, 1](*arrays)
    for name, a in zip(names, arrays):
        assert a.dtype == np.dtype(name)
        assert a[0] == (2.5 if name.startswith("float") else 3)


# ---- arithmetic, casts and builtins -------------------------------------------------------------

@cuda.jit
def _builtins(x, out):
    out[0] = abs(-3)
    out[1] = abs(x)
    out[2] = min(3, 1.5, 2)
    out[3] = max(1, 2)
    out[4] = round(2.5)
    out[5] = round(3.5)
    out[6] = round(-0.5)
    out[7] = int(-2.7)
    out[8] = int(x)
    out[9] = float(7) / 2
    out[10] = bool(0.0) + bool(2)
    out[11] = max((4, 9, 2))
    out[12] = min(-1, x)


def test_abs_min_max_round_int_float_bool():
    out = np.zeros(13)
    _builtins[1, 1](-2.75, out)
    assert list(out) == [3, 2.75, 1.5, 2, 2, 4, 0, -2, -2, 3.5, 1, 9, -2.75]


@cuda.jit
def _numba_casts(x, out32, out64, outi):
    out32[0] = float32(x)
    out32[1] = float32(1) / float32(3)
    out64[0] = float64(float32(x))
    outi[0] = int32(x)
    outi[1] = int64(-x)
    outi[2] = uint8(300)
    outi[3] = int32(2**31 + 5)


def test_numba_type_casts():
    out32 = np.zeros(2, dtype=np.float32)
    out64 = np.zeros(1)
    outi = np.zeros(4, dtype=np.int64)
    _numba_casts[1, 1](1.1, out32, out64, outi)
    assert out32[0] == np.float32(1.1)
    assert out32[1] == np.float32(1) / np.float32(3)
    assert out64[0] == float(np.float32(1.1))
    assert list(outi) == [1, -1, 300 % 256, np.int64(2**31 + 5).astype(np.int32)]


@cuda.jit
def _numpy_scalar_casts(x, out):
    out[0] = np.float32(x) + np.int32(2)
    out[1] = np.int64(x)


def test_numpy_scalar_types_cast_like_numba_types():
    out = np.zeros(2)
    _numpy_scalar_casts[1, 1](1.25, out)
    assert list(out) == [3.25, 1]


@cuda.jit
def _integer_semantics(a, b, out_i, out_f):
    out_i[0] = a // b
    out_i[1] = a % b
    out_i[2] = -a // b
    out_i[3] = -a % b
    out_i[4] = a // -b
    out_i[5] = a % -b
    out_f[0] = a / b
    out_f[1] = 7.5 // 2
    out_f[2] = -7.5 % 2
    out_i[6] = 2 ** 10
    out_f[3] = 2.0 ** 0.5
    out_i[7] = a << 3
    out_i[8] = -a >> 1
    out_i[9] = a ^ b | 1 & b
    out_i[10] = ~a


def test_division_and_modulo_follow_python_signs():
    out_i = np.zeros(11, dtype=np.int64)
    out_f = np.zeros(4)
    _integer_semantics[1, 1](7, 2, out_i, out_f)
    assert list(out_i) == [7 // 2, 7 % 2, -7 // 2, -7 % 2, 7 // -2, 7 % -2, 1024, 56, -7 >> 1,
                           7 ^ 2 | 1 & 2, ~7]
    assert list(out_f) == [3.5, 3.0, 0.5, 2.0 ** 0.5]


@cuda.jit
def _float_divmod(a, b, out):
    out[0] = a // b
    out[1] = a % b


@pytest.mark.parametrize("a,b", [(1.0, 0.1), (-1.0, 0.1), (5.5, -2.0), (-7.25, 2.0), (0.0, -3.0), (-0.0, 3.0),
                                 (1e300, 1e-300), (7.0, 7.0), (-0.3, 0.1)])
def test_float_floor_division_and_modulo_match_python(a, b):
    out = np.zeros(2)
    _float_divmod[1, 1](a, b, out)
    assert out[0] == a // b and out[1] == a % b
    assert np.signbit(out[0]) == np.signbit(a // b) and np.signbit(out[1]) == np.signbit(a % b)


def test_division_by_zero_does_not_raise():
    """numba on a GPU raises nothing: integer x // 0 and x % 0 give 0, floats give inf and nan."""
    out_f = np.zeros(2)
    _float_divmod[1, 1](1.5, 0.0, out_f)
    assert out_f[0] == np.inf and np.isnan(out_f[1])
    out_i = np.zeros(2, dtype=np.int64)
    _float_divmod[1, 1](7, 0, out_i)
    assert list(out_i) == [0, 0]


@cuda.jit
def _int_divmod_arrays(xs, ys, quotients, remainders):
    i = cuda.grid(1)
    if i < xs.size:
        quotients[i] = xs[i] // ys[i]
        remainders[i] = xs[i] % ys[i]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_integer_division_by_a_power_of_two_known_only_at_run_time_follows_python(dtype):
    """A divisor that is a power of two at run time takes a mask and a shift (lower.int_divmod): the same
    Python rounding toward -inf for negative dividends, the same 0 for a zero divisor, the division's
    path for every other divisor (negative powers of two included)."""
    info = np.iinfo(dtype)
    bits = info.bits
    xs = [0, 1, 7, 8, 9, 255, 1023, info.max, info.max - 5]
    ys = [1, 2, 4, 8, 64, 1 << (bits - 2), 1 << (bits - 1), 3, 6, 12, 0]
    if info.min < 0:
        xs += [-1, -7, -8, -9, -1024, info.min, info.min + 3]
        ys = [y for y in ys if y <= info.max] + [-1, -2, -4, -3, info.min]
    pairs = [(x, y) for x in xs for y in ys]
    x_arr = np.array([x for x, _ in pairs], dtype=dtype)
    y_arr = np.array([y for _, y in pairs], dtype=dtype)
    q, r = np.zeros_like(x_arr), np.zeros_like(x_arr)
    _int_divmod_arrays[(len(pairs) + 127) // 128, 128](x_arr, y_arr, q, r)

    def wrap(v):  # the integer type's two's complement
        v &= (1 << bits) - 1
        return v - (1 << bits) if info.min < 0 and v >= 1 << (bits - 1) else v
    expected_q = [0 if y == 0 else -x if y == -1 else wrap(x // y) for x, y in pairs]  # x // -1 is -x, wrapped
    expected_r = [0 if y in (0, -1) else x % y for x, y in pairs]
    got = list(zip(pairs, q.tolist(), r.tolist()))
    assert [g for g, want_q, want_r in zip(got, expected_q, expected_r) if (g[1], g[2]) != (wrap(want_q), want_r)] == []


@cuda.jit
def _int_pow(x, n, out):
    out[0] = x ** n
    out[1] = 2 ** -1  # a literal negative exponent types as an integer too


@pytest.mark.parametrize("x,n,expected", [(2, 10, 1024), (-3, 3, -27), (5, 0, 1), (2, -1, 0), (1, -5, 1), (-1, -3, -1),
                                          (-1, -4, 1), (0, -2, -2**63)])
def test_integer_power_follows_numba(x, n, expected):
    """numba types int ** int as an integer: a negative exponent gives 0 unless the base is 1 or -1."""
    out = np.zeros(2, dtype=np.int64)
    _int_pow[1, 1](x, n, out)
    assert out[0] == expected and out[1] == 0


@cuda.jit
def _mixed_tuple(out):
    t = (1, 2.5, 3)
    out[0] = t[-1] + t[-2]
    out[1] = t[+0]


def test_negative_constant_index_of_a_mixed_tuple():
    out = np.zeros(2)
    _mixed_tuple[1, 1](out)
    assert list(out) == [5.5, 1]


@cuda.jit
def _int32_widening(a, b, out):
    out[0] = a * b  # int32 * int32 is int64 in numba: no 32-bit overflow


def test_integer_arithmetic_widens_to_64_bits():
    out = np.zeros(1, dtype=np.int64)
    _int32_widening[1, 1](np.int32(100000), np.int32(100000), out)
    assert out[0] == 10**10


@cuda.jit
def _math_functions(x, out):
    out[0] = math.sqrt(x)
    out[1] = math.sin(x)
    out[2] = math.cos(x)
    out[3] = math.exp(x)
    out[4] = math.log(x)
    out[5] = math.floor(-x)
    out[6] = math.ceil(x)
    out[7] = math.pow(x, 3)
    out[8] = math.atan2(x, 2.0)
    out[9] = math.hypot(3.0, 4.0)
    out[10] = math.tanh(x)
    out[11] = math.isnan(x)
    out[12] = math.isinf(math.inf)
    out[13] = math.pi
    out[14] = math.fabs(-x)
    out[15] = math.log10(x)
    out[16] = math.trunc(-x)
    out[17] = math.erf(x)
    out[18] = math.copysign(x, -1.0)
    out[19] = math.fmod(-7.0, x)


def test_math_functions_match_python():
    x = 2.5
    out = np.zeros(20)
    _math_functions[1, 1](x, out)
    expected = [math.sqrt(x), math.sin(x), math.cos(x), math.exp(x), math.log(x), math.floor(-x), math.ceil(x),
                math.pow(x, 3), math.atan2(x, 2.0), math.hypot(3.0, 4.0), math.tanh(x), 0, 1, math.pi,
                math.fabs(-x), math.log10(x), math.trunc(-x), math.erf(x), math.copysign(x, -1.0),
                math.fmod(-7.0, x)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@cuda.jit
def _math_float32(x, out):
    out[0] = math.sqrt(x)
    out[1] = math.sin(x)


def test_math_on_float32_stays_float32():
    out = np.zeros(2, dtype=np.float32)
    _math_float32[1, 1](np.float32(2.0), out)
    np.testing.assert_allclose(out, [np.sqrt(np.float32(2)), np.sin(np.float32(2))], rtol=1e-6)
    (sig,) = [k for k in _math_float32.inspect_llvm()]
    assert str(sig[0]) == "float32"


# ---- control flow ---------------------------------------------------------------------------------

@cuda.jit
def _control(n, out):
    # while with break and continue
    i = 0
    total = 0
    while True:
        i += 1
        if i % 2 == 0:
            continue
        if i > n:
            break
        total += i
    out[0] = total
    # for with negative step, break and continue
    acc = 0
    for j in range(10, 0, -3):
        if j == 4:
            continue
        acc += j
    out[1] = acc
    for k in range(100):
        if k * k > n:
            out[2] = k
            break
    # chained comparisons
    out[3] = 1 < n <= 9
    out[4] = 0 < n < 3
    # conditional expression
    out[5] = 5 if n > 1000 else 7
    # if / elif / else
    if n < 0:
        out[6] = -1
    elif n == 9:
        out[6] = 9
    else:
        out[6] = 1
    # a loop that never runs
    for q in range(5, 0):
        out[7] = 1
    # a range with a step only known at run time
    step = -2 if n > 0 else 2
    cnt = 0
    for r in range(n, -n, step):
        cnt += 1
    out[8] = cnt


def test_while_for_break_continue_chained_compare_ifexp():
    out = np.zeros(9, dtype=np.int64)
    _control[1, 1](9, out)
    total = sum(i for i in range(1, 10) if i % 2)
    assert list(out) == [total, 10 + 7 + 1, 4, 1, 0, 7, 9, 0, len(range(9, -9, -2))]


@cuda.jit(device=True)
def _touch(a, v):
    a[0] += 1
    return v


@cuda.jit
def _short_circuit(a, out):
    out[0] = (False and _touch(a, True)) or (True or _touch(a, True))
    out[1] = (0 and 5) + (3 or 9)
    out[2] = (2.5 and 0) or 4


def test_and_or_short_circuit():
    a = np.zeros(1, dtype=np.int64)
    out = np.zeros(3)
    _short_circuit[1, 1](a, out)
    assert a[0] == 0, "the right-hand sides must not run"
    assert list(out) == [1, 3, 4]


@cuda.jit
def _unify(flag, out):
    x = 0
    if flag:
        x = 1.5
    out[0] = x
    y = int32(1)
    if flag:
        y = int64(2**40)
    out[1] = y


def test_variable_types_unify_across_branches():
    out = np.zeros(2)
    _unify[1, 1](True, out)
    assert list(out) == [1.5, 2**40]
    _unify[1, 1](False, out)
    assert list(out) == [0, 1]
    listing = _unify.compile((cuda.boolean, cuda.types.Array(float64, 1, "C"))).record.typed.listing()
    assert "x: float64" in listing and "y: int64" in listing


# ---- device functions -------------------------------------------------------------------------

@cuda.jit(device=True)
def _sum_and_product(a, b):
    return a + b, a * b


@cuda.jit(device=True)
def _clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@cuda.jit(device=True)
def _nested(x):
    s, p = _sum_and_product(x, 2)
    return _clamp(s * p, 0, 50)


@cuda.jit
def _use_device_functions(xs, sums, products, nested):
    i = cuda.grid(1)
    if i < xs.size:
        s, p = _sum_and_product(xs[i], 3)
        sums[i] = s
        products[i] = p
        nested[i] = _nested(xs[i])


def test_device_functions_returning_values_and_tuples():
    xs = np.arange(-3, 7, dtype=np.int64)
    sums, products, nested = (np.zeros_like(xs) for _ in range(3))
    _use_device_functions[1, 32](xs, sums, products, nested)
    np.testing.assert_array_equal(sums, xs + 3)
    np.testing.assert_array_equal(products, xs * 3)
    np.testing.assert_array_equal(nested, np.clip((xs + 2) * (xs * 2), 0, 50))


# ---- globals, closures, captured arrays ------------------------------------------------------------

SCALE = 3
TABLE = np.array([10.0, 20.0, 30.0])
BUFFER = cuda.to_device(np.zeros(4, dtype=np.int64))
OFFSETS = (1, 2, 3)


@cuda.jit
def _use_globals(out):
    out[0] = SCALE * 2
    out[1] = TABLE[1]
    out[2] = OFFSETS[2]
    out[3] = BUFFER[0]


def test_globals_are_frozen_at_compile_time():
    global SCALE
    out = np.zeros(4)
    _use_globals[1, 1](out)
    assert list(out[:3]) == [6, 20, 3]
    old = SCALE
    try:
        SCALE = 100
        TABLE[1] = -1.0
        _use_globals[1, 1](out)
        assert list(out[:3]) == [6, 20, 3], "globals and global numpy arrays are constants"
    finally:
        SCALE = old
        TABLE[1] = 20.0


def test_module_level_device_arrays_are_captured_by_reference():
    out = np.zeros(4)
    BUFFER[0] = 5
    _use_globals[1, 1](out)
    assert out[3] == 5
    BUFFER[0] = 42
    _use_globals[1, 1](out)
    assert out[3] == 42, "a device array global is memory, read at run time"
    BUFFER[0] = 0


def test_a_kernel_redefined_in_a_loop_freezes_the_global_at_its_own_compile(tmp_path):
    """numba: every @cuda.jit makes a new dispatcher, compiled (and its globals frozen) on its first launch."""
    import importlib.util

    path = tmp_path / "redefined_kernels.py"
    path.write_text("import numpy as np\n"
                    "from kdebug import cuda\n"
                    "out = np.zeros(3)\n"
                    "for c in range(3):\n"
                    "    @cuda.jit\n"
                    "    def k(a, j):\n"
                    "        a[j] = c\n"
                    "    k[1, 1](out, c)\n")
    spec = importlib.util.spec_from_file_location("redefined_kernels", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert list(module.out) == [0, 1, 2]


def _make_kernel(factor, table):
    @cuda.jit
    def scaled(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = i * factor + table[i % 2]

    return scaled


def test_closure_variables_are_frozen():
    k2 = _make_kernel(2, np.array([0, 100]))
    k5 = _make_kernel(5.5, np.array([1, 1]))
    a, b = np.zeros(4), np.zeros(4)
    k2[1, 4](a)
    k5[1, 4](b)
    assert list(a) == [0, 102, 4, 106]
    assert list(b) == [1, 6.5, 12, 17.5]


def test_closure_constant():
    k = _make_kernel(3, np.array([5, 7]))
    a = np.zeros(4)
    k[1, 4](a)
    assert list(a) == [5, 10, 11, 16]


# ---- compilation and launch APIs ------------------------------------------------------------------

@cuda.jit("void(float32[:], int32)")
def _eager(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = i * 0.5


def test_eager_compilation_with_a_signature():
    from kdebug.session.live import get_session
    # the eager compile happened at import time, in another session; this one compiles on first use
    a = np.zeros(8, dtype=np.float32)
    _eager[1, 8](a, 5)
    np.testing.assert_array_equal(a, [0, 0.5, 1, 1.5, 2, 0, 0, 0])
    (types,) = get_session().compiled_for(_eager).keys()
    assert types == (float32[:], int32)
    # an int64 scalar is converted to the declared int32
    _eager[1, 8](a, np.int64(8))
    assert a[7] == 3.5


def test_eager_signature_compiles_at_decoration():
    from kdebug.session.live import get_session
    session = get_session()
    before = len(session.driver.records)

    @cuda.jit("void(float64[:, :])")
    def eager2(a):
        a[0, 0] = 1

    assert len(session.driver.records) == before + 1
    assert session.driver.records[max(session.driver.records)].name == "eager2"


def test_four_item_launch_configuration():
    a = np.zeros(8, dtype=np.float32)
    _eager[1, 8, 0, 0](a, 8)
    assert a[2] == 1.0


def test_forall():
    a = np.zeros(1000, dtype=np.float32)
    _eager.forall(1000)(a, 1000)
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32) * 0.5)


@cuda.jit
def _add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


def test_device_arrays_to_device_copy_to_host_and_back():
    host = np.arange(10, dtype=np.float64)
    d = cuda.to_device(host)
    assert isinstance(d, kcuda.DeviceNDArray) and cuda.is_cuda_array(d)
    assert d.shape == (10,) and d.dtype == np.float64 and d.size == 10 and len(d) == 10
    _add_one[1, 16](d)
    np.testing.assert_array_equal(host, np.arange(10)), "to_device copies"
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10) + 1)
    dst = np.zeros(10)
    assert d.copy_to_host(dst) is dst
    np.testing.assert_array_equal(dst, np.arange(10) + 1)
    d.copy_to_device(np.full(10, 7.0))
    _add_one[1, 16](d)
    np.testing.assert_array_equal(d.copy_to_host(), np.full(10, 8.0))
    # element access from the host
    assert d[3] == 8.0
    d[3] = -1
    assert d.copy_to_host()[3] == -1


def test_contiguous_slices_of_device_arrays_are_views():
    d = cuda.to_device(np.zeros((4, 5)))
    _add_one[1, 8](d[1])
    _add_one[1, 16](d[2:4].ravel())
    expected = np.zeros((4, 5))
    expected[1:] = 1
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    d[0][2] = 7.0  # host writes through a row view too
    assert d[0, 2] == 7.0


def test_device_array_and_device_array_like():
    d = cuda.device_array((3, 4), dtype=np.int32)
    assert d.shape == (3, 4) and d.dtype == np.int32
    d.copy_to_device(np.zeros((3, 4), dtype=np.int32))
    like = cuda.device_array_like(np.zeros((2, 5), dtype=np.float32))
    assert like.shape == (2, 5) and like.dtype == np.float32
    d2 = cuda.device_array(6, dtype=float32)
    assert d2.dtype == np.float32
    d2.copy_to_device(np.zeros(6, dtype=np.float32))
    _add_one[1, 8](d2)
    np.testing.assert_array_equal(d2.copy_to_host(), np.ones(6))


def test_numpy_arrays_are_copied_in_and_back():
    a = np.zeros(5)
    _add_one[1, 8](a)
    np.testing.assert_array_equal(a, np.ones(5))


def test_non_contiguous_numpy_arrays_are_written_through_their_strides():
    base = np.zeros(10)
    view = base[::2]
    assert not view.flags.c_contiguous
    _add_one[1, 8](view)
    np.testing.assert_array_equal(base, [1, 0] * 5)
    t = np.zeros((3, 4)).T  # Fortran order
    _fill_2d[1, (4, 3)](t)
    np.testing.assert_array_equal(t, np.arange(4)[:, None] * 10 + np.arange(3))


@cuda.jit
def _fill_2d(a):
    i, j = cuda.threadIdx.x, cuda.threadIdx.y
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] = i * 10 + j


def test_non_contiguous_array_to_device():
    base = np.arange(12, dtype=np.int64)
    d = cuda.to_device(base[1::3])
    np.testing.assert_array_equal(d.copy_to_host(), [1, 4, 7, 10])


def test_scalar_arguments_of_every_kind():
    out = np.zeros(4)
    _scalars[1, 1](True, 3, 2.5, np.float32(0.25), out)
    assert list(out) == [1, 3, 2.5, 0.25]


@cuda.jit
def _scalars(b, i, f, f32, out):
    out[0] = b
    out[1] = i
    out[2] = f
    out[3] = f32


@cuda.jit
def _tuple_arg(t, out):
    out[0] = t[0] + t[1]


def test_tuple_argument():
    out = np.zeros(1)
    _tuple_arg[1, 1]((2, 3.5), out)
    assert out[0] == 5.5


def test_compiled_kernels_are_cached_per_signature():
    from kdebug.session.live import get_session
    a, b = np.zeros(4), np.zeros(4, dtype=np.int32)
    _add_one[1, 4](a)
    _add_one[1, 4](a)
    _add_one[1, 4](b)
    assert len(get_session().compiled_for(_add_one)) == 2
    assert list(a) == [2] * 4 and list(b) == [1] * 4


def test_kernel_can_be_relaunched_after_an_error():
    with pytest.raises(KdebugError):
        _add_one[0, 1](np.zeros(1))
    a = np.zeros(2)
    _add_one[1, 2](a)
    assert list(a) == [1, 1]


def test_range_loops_near_the_integer_limit_end():
    """The trip count is computed once: a counter near 2**63 - 1 must not wrap into an endless loop."""
    @cuda.jit
    def edge(out, s):
        n = 0
        for i in range(9223372036854775800, 9223372036854775807, 3):
            n += 1
        out[0] = n
        m = 0
        for j in range(-9223372036854775801, -9223372036854775807 - 1, s):
            m += 1
        out[1] = m

    out = np.zeros(2, dtype=np.int64)
    edge[1, 1](out, -2)
    assert out.tolist() == [3, 4]
