"""cuda.local.array / cuda.shared.array as numba-cuda 0.30.4 accepts them: ``alignment=``, numpy dtype
objects, dtype strings and record dtypes (tests/cudapy/test_array_alignment.py: test_array_alignment_1d,
test_array_alignment_2d, test_array_alignment_3d, test_invalid_aligments; tests/cudapy/test_localmem.py:
test_local_array, test_local_array_1_tuple, test_numpy_dtype, test_string_dtype, test_invalid_string_dtype;
tests/cudapy/test_sm.py: test_shared_recarray), with their expected values and error messages."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import TypingError
from kdebug.lang import types as T

# test_array_alignment.py's DTYPES: scalars, and records with and without alignment
DTYPES = [np.uint8, np.uint32, np.uint64]
for _align in (True, False):
    DTYPES += [np.dtype([("a", np.uint8), ("b", np.int32), ("c", np.float64)], align=_align),
               np.dtype([("a", np.uint32), ("b", np.uint8)], align=_align),
               np.dtype([("a", np.uint8), ("b", np.int32), ("c", np.float64), ("d", np.complex64),
                         ("e", (np.uint8, 5))], align=_align)]


def _address_kernel(shape, dtype, alignment):
    @cuda.jit
    def f(loc, shrd, which):
        i = cuda.grid(1)
        if which == 0:
            local_array = cuda.local.array(shape=shape, dtype=dtype, alignment=alignment)
            if i == 0:
                loc[0] = local_array.ctypes.data
        else:
            shared_array = cuda.shared.array(shape=shape, dtype=dtype, alignment=alignment)
            if i == 0:
                shrd[0] = shared_array.ctypes.data
    return f


@pytest.mark.parametrize("shape", [1, 8, 50, (2, 3), (2, 3, 4), (1, 4, 5)])
def test_array_alignment(shape):
    """test_array_alignment_1d/_2d/_3d: the array's address is a multiple of the alignment asked for
    (numba also reads the alignment from its LLVM IR, whose names are numba's own)."""
    for (which, _), dtype, alignment in itertools.product([(0, "local"), (1, "shared")], DTYPES, (16, 64, 256)):
        f = _address_kernel(shape, dtype, alignment)
        loc, shrd = np.zeros(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64)
        f[1, 1](loc, shrd, which)
        address = int(loc[0] if which == 0 else shrd[0])
        assert address != 0 and address % alignment == 0, (which, dtype, alignment, hex(address))


def test_shared_array_without_alignment_is_naturally_aligned():
    """Without alignment=, a shared array is at least at its element's ABI alignment (numba rounds it up to a
    power of 2, cudaimpl.py)."""
    for dtype in DTYPES:
        f = _address_kernel((2, 3), dtype, None)
        loc, shrd = np.zeros(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64)
        f[1, 1](loc, shrd, 1)
        assert int(shrd[0]) % np.dtype(dtype).alignment == 0


@pytest.mark.parametrize("which", ["local", "shared"])
@pytest.mark.parametrize("alignment,message", [(-1, "Alignment must be positive"), (0, "Alignment must be positive"),
                                               (3, "Alignment must be a power of 2"),
                                               (17, "Alignment must be a power of 2"),
                                               (33, "Alignment must be a power of 2"),
                                               (4, "Alignment must be a multiple of 8")])
def test_invalid_alignment_values(which, alignment, message):
    """test_invalid_aligments: an int that is not a valid alignment is numba's ValueError."""
    if which == "local":
        @cuda.jit
        def f(dest_array):
            a = cuda.local.array(shape=1, dtype=np.uint8, alignment=alignment)
            dest_array[0] = a.ctypes.data
    else:
        @cuda.jit
        def f(dest_array):
            a = cuda.shared.array(shape=50, dtype=np.uint64, alignment=alignment)
            dest_array[0] = a.ctypes.data
    with pytest.raises(ValueError, match=message) as info:
        f[1, 1](np.zeros(1, dtype=np.uint64))
    assert info.value.loc is not None and info.value.loc.line > 0


@pytest.mark.parametrize("which", ["local", "shared"])
@pytest.mark.parametrize("alignment", ["1.0", "1", "foo", 1.0, 1.5, 3.2])
def test_invalid_alignment_types(which, alignment):
    """test_invalid_aligments: an alignment that is not an int is numba's TypingError."""
    if which == "local":
        @cuda.jit
        def f(dest_array):
            a = cuda.local.array(shape=1, dtype=np.uint8, alignment=alignment)
            dest_array[0] = a.ctypes.data
    else:
        @cuda.jit
        def f(dest_array):
            a = cuda.shared.array(shape=1, dtype=np.uint8, alignment=alignment)
            dest_array[0] = a.ctypes.data
    with pytest.raises(TypingError, match=r"RequireLiteralValue:.*alignment must be a constant integer"):
        f[1, 1](np.zeros(1, dtype=np.uint64))


def test_alignment_none_and_positional():
    @cuda.jit
    def f(out):
        a = cuda.local.array(4, np.int32, None)
        b = cuda.shared.array(4, np.int32, 32)
        a[0] = 5
        b[0] = 7
        out[0] = a[0] + b[0]
        out[1] = b.ctypes.data % 32
    out = np.zeros(2, dtype=np.uint64)
    f[1, 1](out)
    assert list(out) == [12, 0]


def culocal(A, B):
    C = cuda.local.array(1000, dtype=np.int32)
    for i in range(C.shape[0]):
        C[i] = A[i]
    for i in range(C.shape[0]):
        B[i] = C[i]


def culocal1tuple(A, B):
    C = cuda.local.array((5,), dtype="int32")
    for i in range(C.shape[0]):
        C[i] = A[i]
    for i in range(C.shape[0]):
        B[i] = C[i]


def test_local_array_numpy_and_string_dtypes():
    """test_local_array, test_local_array_1_tuple, test_numpy_dtype, test_string_dtype."""
    k = cuda.jit("void(int32[:], int32[:])")(culocal)
    A = np.arange(1000, dtype="int32")
    B = np.zeros_like(A)
    k[1, 1](A, B)
    assert np.all(A == B)
    assert ".local" in k.inspect_asm((T.Array(T.int32, 1, "A"),) * 2)
    k1 = cuda.jit("void(int32[:], int32[:])")(culocal1tuple)
    A = np.arange(5, dtype="int32")
    B = np.zeros_like(A)
    k1[1, 1](A, B)
    assert np.all(A == B)


def test_invalid_string_dtype():
    """test_invalid_string_dtype: numba's TypingError 'Invalid NumPy dtype specified: 'int33''."""
    with pytest.raises(TypingError, match=r".*Invalid NumPy dtype specified: 'int33'.*"):
        @cuda.jit("void(int32[::1])")
        def f(x):
            l = cuda.local.array(10, dtype="int33")
            l[0] = x[0]
            x[0] = l[0]


def test_record_dtype_arrays():
    """test_sm.py test_shared_recarray's record shared array, and a local array of records (numba's
    test_localmem.py does the same with an extension type)."""
    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)

    @cuda.jit
    def f(out):
        s = cuda.shared.array(4, dtype=rec)
        l = cuda.local.array(3, dtype=rec)
        i = cuda.threadIdx.x
        s[i].a = i
        s[i].b = i * 0.5
        cuda.syncthreads()
        l[0].a = s[3 - i].a
        l[0].b = s[3 - i].b
        out[i].a = l[0].a
        out[i].b = l[0].b

    out = np.zeros(4, dtype=rec)
    f[1, 4](out)
    assert list(out["a"]) == [3, 2, 1, 0]
    assert list(out["b"]) == [1.5, 1.0, 0.5, 0.0]
