"""numba.np.numpy_support and numba.cuda.np.numpy_support under ``--numba``: between numpy dtypes and
numba types, as numba-cuda 0.30.4's ``numba/cuda/np/numpy_support.py`` (``from_dtype``, ``as_dtype``,
``as_struct_dtype``, ``from_struct_dtype``, ``strides_from_shape``, ``is_contiguous``, ``is_fortran``,
``map_layout``, ``is_array``, ``numpy_version``, ``carray``/``farray`` on the host)."""
from __future__ import annotations

import numpy as np

from kdebug.lang import types as _T
from kdebug.lang.missing import missing_name
from kdebug.numba.errors import NumbaNotImplementedError

numpy_version = tuple(map(int, np.__version__.split(".")[:2]))  # (major, minor), as numba's


def from_dtype(dtype):
    """The numba type of a numpy dtype (a scalar, a datetime of a unit, a record); numba's
    ``NumbaNotImplementedError`` for a dtype numba has no type for."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise NumbaNotImplementedError(f"{dtype!r}") from None
    t = _T.from_dtype(dtype)
    if t is None:
        raise NumbaNotImplementedError(f"unsupported dtype: {dtype}")
    return t


def as_dtype(nbtype):
    """The numpy dtype of a numba type; ``NumbaNotImplementedError`` (numba's message) where there is none."""
    if isinstance(nbtype, _T.Record):
        return as_struct_dtype(nbtype)
    if isinstance(nbtype, _T.Scalar):
        return nbtype.np_dtype
    raise NumbaNotImplementedError(f"{nbtype} cannot be represented as a NumPy dtype")


def as_struct_dtype(rec):
    """A record type's structured dtype (numba asserts the argument is a Record)."""
    assert isinstance(rec, _T.Record)
    return rec.dtype


def from_struct_dtype(dtype):
    """The Record type of a structured dtype (numba: ``TypeError`` unless it is one)."""
    dtype = np.dtype(dtype)
    if dtype.fields is None:
        raise TypeError("expecting a structured dtype")
    return from_dtype(dtype)


def strides_from_shape(*, shape, itemsize, c_contiguous, f_contiguous):
    """The byte strides of a contiguous array of ``shape`` (numba's keyword-only helper: C order unless
    only ``f_contiguous``; a shape that is both, as numba, gets the Fortran strides)."""
    if not shape:
        return ()
    assert c_contiguous or f_contiguous, "either c_contiguous or f_contiguous or both must be True"
    limits = slice(1, None) if c_contiguous and not f_contiguous else slice(None, -1)
    dims = list(shape[limits])
    if c_contiguous:
        dims.reverse()
    strides = [itemsize]
    for n in dims:
        strides.append(strides[-1] * n)
    if f_contiguous:
        return tuple(strides)
    return tuple(strides[::-1])


def is_contiguous(dims, strides, itemsize):
    """Whether (dims, strides, itemsize) is C layout, numba's test: dimensions of 0 or 1 do not count."""
    nd = len(dims)
    inner = nd - 1
    while inner > -1 and dims[inner] <= 1:
        inner -= 1
    if inner < 0:
        return True
    if itemsize != strides[inner]:
        return False
    outer = 0
    while outer < inner and dims[outer] <= 1:
        outer += 1
    for ax in range(inner, outer, -1):
        if strides[ax] * dims[ax] != strides[ax - 1]:
            return False
    return True


def is_fortran(dims, strides, itemsize):
    """Whether (dims, strides, itemsize) is Fortran layout, numba's test."""
    nd = len(dims)
    first = 0
    while first < nd and dims[first] <= 1:
        first += 1
    if first >= nd:
        return True
    if itemsize != strides[first]:
        return False
    last = nd - 1
    while last > first and dims[last] <= 1:
        last -= 1
    for ax in range(first, last):
        if strides[ax] * dims[ax] != strides[ax + 1]:
            return False
    return True


def map_layout(val):
    """numba's layout letter of an array: 'C', 'F' or 'A'."""
    if val.flags["C_CONTIGUOUS"]:
        return "C"
    if val.flags["F_CONTIGUOUS"]:
        return "F"
    return "A"


def is_array(val):
    return isinstance(val, np.ndarray)


def map_arrayscalar_type(val):
    """The numba type of a numpy scalar."""
    return from_dtype(val.dtype if isinstance(val, np.generic) else np.dtype(val))


def carray(ptr, shape, dtype=None):
    """On the host: a C-ordered numpy array over ``ptr`` (an address or a ctypes pointer), as numba's
    ``carray`` in object mode; in kernels kdebug does not provide it."""
    import ctypes
    if dtype is None:
        raise TypeError("carray(): a dtype is needed when the pointer is an address")
    dtype = np.dtype(as_dtype(dtype) if isinstance(dtype, _T.Type) else dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    address = ctypes.cast(ptr, ctypes.c_void_p).value if not isinstance(ptr, int) else ptr
    count = int(np.prod(shape)) if shape else 1
    buffer = (ctypes.c_byte * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


def farray(ptr, shape, dtype=None):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return carray(ptr, shape[::-1], dtype).T


def __getattr__(name):
    return missing_name(__name__, name, 2)
