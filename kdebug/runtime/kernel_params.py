"""The host's side of the kernel parameter convention: a kernel entry's flat parameters at natural
alignment, packed by the gpu runtime for a launch (the PTX target's abi.py builds the entry that
reads them, and lays out a device-side launch's buffer with the same offsets)."""
from __future__ import annotations

import numpy as np

from kdebug.lang import types as T


def as_parts(t: T.Type) -> T.Type:
    """A complex number is passed as its two parts, a tuple of floats (the same LLVM struct); an enum
    member as its value."""
    if isinstance(t, T.EnumMember):
        return as_parts(t.dtype)
    return T.Tuple((t.underlying_float,) * 2) if isinstance(t, T.Scalar) and t.is_complex else t


def flat_param_dtypes(t: T.Type) -> list[np.dtype]:
    """A kernel-language argument's flat parameters as the host packs them (pointers as uint64)."""
    t = as_parts(t)
    if isinstance(t, T.Scalar):
        return [np.dtype(np.uint8)] if t.is_bool else [t.np_dtype]
    if isinstance(t, T.Array):  # data, shape, and a strided array's strides in elements
        return [np.dtype(np.uint64)] + [np.dtype(np.int64)] * (t.ndim * (2 if t.strided else 1))
    if isinstance(t, T.Tuple):
        return [d for x in t.types for d in flat_param_dtypes(x)]
    if isinstance(t, (T.FunctionPointer, T.CPointer)):
        return [np.dtype(np.uint64)]
    raise TypeError(f"cannot pass {t} to a kernel")


def param_offsets(sizes) -> tuple[list[int], int]:
    """Each parameter at its natural alignment, as CUDA lays out a kernel's parameter buffer."""
    offsets, off = [], 0
    for size in sizes:
        off = (off + size - 1) // size * size
        offsets.append(off)
        off += size
    return offsets, off


def element_strides(value) -> tuple:
    """A host or device array's strides in elements, as a strided kernel argument carries them (the
    dispatcher refuses strides that are not a multiple of the item size)."""
    itemsize = value.dtype.itemsize
    return tuple(s // itemsize for s in value.strides)
