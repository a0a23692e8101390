"""numba's types and signatures under kdebug: signature values and strings, aliases, CPointer arguments."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import types
from kdebug.lang.signature import parse_signature


def test_signatures_are_values_as_in_numba():
    sig = types.void(types.float32[:], types.int32)
    assert sig.return_type == types.void and sig.args == (types.float32[:], types.int32)
    sig2 = types.float64(types.float64, types.float64)
    assert sig2.return_type is types.float64 and sig2.args == (types.float64, types.float64)
    assert str(sig2) == "float64(float64, float64)"
    assert types.float32(1.5) == np.float32(1.5) and isinstance(types.float32(1.5), np.float32)


@pytest.mark.parametrize("text, args", [
    ("void(double[:], float_, intc, uintc)", (types.float64[:], types.float32, types.int32, types.uint32)),
    ("void(f4[::1], f8[:, ::1], i8, u1)", (types.float32[::1], types.float64[:, ::1], types.int64, types.uint8)),
    ("void(int_, uint, short, ushort, char, uchar)", (types.int64, types.uint64, types.int16, types.uint16,
                                                    types.int8, types.uint8)),
    ("void(longlong, ulonglong, size_t, ssize_t)", (types.int64, types.uint64, types.uint64, types.int64)),
])
def test_signature_strings_take_every_numba_alias(text, args):
    assert parse_signature(text).argtypes == args


def test_a_signature_value_compiles_eagerly_and_checks_launches():
    @cuda.jit(types.void(types.float32[:], types.float32))
    def scale(a, s):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= s

    a = np.arange(8, dtype=np.float32)
    assert list(scale.overloads) == [(types.float32[:], types.float32)]
    scale[1, 8](a, 2.0)
    np.testing.assert_equal(a, np.arange(8) * 2)


def test_cpointer_arguments_index_like_arrays():
    """numba's test_cpointer doc example, checked: the kernel adds one through a raw device pointer."""
    sig = types.void(types.CPointer(types.uint8), types.uint32)

    @cuda.jit(sig)
    def add_one(x, n):
        i = cuda.grid(1)
        if i < n:
            x[i] += 1

    x = cuda.to_device(np.arange(10, dtype=np.uint8))
    ptr = x.__cuda_array_interface__["data"][0]
    add_one[1, 32](ptr, len(x))
    np.testing.assert_equal(x.copy_to_host(), np.arange(1, 11))
    add_one[1, 32](x, 3)  # an array passes its data pointer
    np.testing.assert_equal(x.copy_to_host()[:4], [2, 3, 4, 4])
    assert str(types.CPointer(types.float32)) == "float32*"


def test_cuda_array_interface_of_device_arrays():
    d = cuda.to_device(np.zeros((2, 3), dtype=np.float32))
    cai = d.__cuda_array_interface__
    assert cai["shape"] == (2, 3) and cai["typestr"] == "<f4" and cai["version"] == 3 and cai["strides"] is None
    assert cai["data"] == (d.device_address(), False)


def test_cpointer_kernels_compile_to_ptx():
    def add_one(x, n):
        i = cuda.grid(1)
        if i < n:
            x[i] += 1

    ptx, _ = cuda.compile_ptx(add_one, types.void(types.CPointer(types.uint8), types.uint32))
    assert ".param .u64 .ptr .global" in ptx and "ld.global.b8" in ptx and "st.global.b8" in ptx


def test_types_repr_as_numbas():
    """numba-cuda 0.30.4: a scalar type's repr is its name (types/cuda_abstract.py, Type.__repr__);
    Array's is ``Array(dtype, ndim, 'layout', readonly, aligned=True)`` (types/cuda_npytypes.py)."""
    from kdebug.cuda import float32, int64
    from kdebug.lang.types import Array
    assert repr(float32) == "float32" and repr(int64) == "int64"
    assert repr(float32[::1]) == "Array(float32, 1, 'C', False, aligned=True)"
    assert repr(Array(float32, 2, "A", readonly=True)) == "Array(float32, 2, 'A', True, aligned=True)"
    assert repr([(float32[:], int64)]) == "[(Array(float32, 1, 'A', False, aligned=True), int64)]"
