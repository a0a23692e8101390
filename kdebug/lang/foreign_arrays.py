"""Arrays from elsewhere: ``cuda.as_cuda_array``/``is_cuda_array`` (the CUDA Array Interface) and the
``cuda.pinned``/``cuda.mapped`` context managers."""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from kdebug.lang import numba_settings, seam
from kdebug.lang.host import DeviceNDArray, _array_error
from kdebug.lang.streams import external_stream


def is_cuda_array(obj) -> bool:
    """True for objects exporting the CUDA Array Interface (numba's test)."""
    return hasattr(obj, "__cuda_array_interface__")


def as_cuda_array(obj, sync=True) -> DeviceNDArray:
    """A device array sharing ``obj``'s memory, from its ``__cuda_array_interface__`` (version 0-3)."""
    if not is_cuda_array(obj):
        raise TypeError("*obj* doesn't implement the cuda array interface.")
    if isinstance(obj, DeviceNDArray):
        return obj
    return from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj, sync=sync)


def from_cuda_array_interface(desc, owner=None, sync=True) -> DeviceNDArray:
    """numba's ``cuda.from_cuda_array_interface``: a device array over the memory a CUDA Array Interface
    dict (version 0-3) describes; ``owner`` is kept alive with it. A mask is numba's NotImplementedError.
    The dict's ``"stream"`` becomes the array's stream (``cuda.external_stream``), synchronised first when
    ``sync`` and ``config.CUDA_ARRAY_INTERFACE_SYNC`` say so, as numba does."""
    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    stream = _imported_stream(desc.get("stream"), sync)
    if seam.current().gpu_runtime() is not None:
        raise _array_error("as_cuda_array of foreign GPU memory is not supported by kdebug's gpu backend",
                           "pass the object's data through cuda.to_device(np.asarray(...))")
    shape, dtype = tuple(desc["shape"]), np.dtype(desc["typestr"])
    strides = desc.get("strides") or np.empty(shape, dtype).strides
    if any(st % dtype.itemsize for st in strides):
        raise _array_error(f"as_cuda_array: strides {tuple(strides)} are not multiples of the {dtype.itemsize}-byte "
                           "elements", "make a contiguous copy first")
    ptr, _readonly = desc["data"]
    # the bytes the elements span, from the lowest (a negative stride reaches below the data pointer)
    lo = sum(min((n - 1) * st, 0) for n, st in zip(shape, strides))
    hi = sum(max((n - 1) * st, 0) for n, st in zip(shape, strides)) + dtype.itemsize
    size = int(np.prod(shape))
    buffer = (ctypes.c_char * (hi - lo)).from_address(ptr + lo) if size else bytearray(dtype.itemsize)
    host = np.ndarray(shape, dtype, buffer=buffer, offset=-lo if size else 0, strides=strides if size else None)
    array = DeviceNDArray(shape, dtype, host)  # strided when the exporter's are: a view, typed 'A'
    array._owner = owner  # keep the exporter (and its memory) alive
    array.stream = stream
    return array


def _imported_stream(handle, sync: bool):
    """The stream a CUDA Array Interface names (0: none), synchronised as numba's import does."""
    if handle is None:
        return 0  # numba: no stream of numba's, not CUDA's default stream
    stream = external_stream(handle)
    if sync and numba_settings.setting("CUDA_ARRAY_INTERFACE_SYNC"):
        stream.synchronize()
    return stream


def imported_arrays(args) -> tuple:
    """A launch's arguments with each object that exports the CUDA Array Interface (and is no array of
    kdebug's or numpy's) as the device array over its memory, its stream synchronised: numba's launch
    imports them so (``auto_device``)."""
    return tuple(as_cuda_array(a) if is_cuda_array(a) and not isinstance(a, (DeviceNDArray, np.ndarray)) else a
                 for a in args)


@contextlib.contextmanager
def pinned(*arylist):
    """``with cuda.pinned(a, b):`` page-locks the arrays in numba; host memory serves as is here."""
    yield


@contextlib.contextmanager
def mapped(*arylist, stream=0, portable=False, wc=False):
    """``with cuda.mapped(a) as d:`` device arrays sharing the host arrays' memory (one, or a list)."""
    if seam.current().gpu_runtime() is not None:
        devs = [DeviceNDArray._on_device(np.ascontiguousarray(a), seam.current().gpu_runtime()) for a in arylist]
        yield devs[0] if len(devs) == 1 else devs
        for a, d in zip(arylist, devs):
            d.copy_to_host(a)
        return
    for a in arylist:
        if not (isinstance(a, np.ndarray) and a.flags.c_contiguous):
            raise _array_error("cuda.mapped takes C-contiguous numpy arrays", "pass np.ascontiguousarray(a)")
    devs = [DeviceNDArray(a.shape, a.dtype, a) for a in arylist]
    yield devs[0] if len(devs) == 1 else devs
