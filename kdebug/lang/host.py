"""Host-side arrays and memory API: numba.cuda's to_device, device_array, copy_to_host..."""
from __future__ import annotations

import numpy as np

from kdebug.lang import types as T


class DeviceNDArray:
    """An array in device memory. On the CPU backend the device is host memory.

    Always C-contiguous. Element reads and writes from the host work, as in numba.
    """

    def __init__(self, shape, dtype, buffer: np.ndarray | None = None) -> None:
        dtype = np.dtype(dtype)
        if T.from_dtype(dtype) is None:
            raise TypeError(f"kdebug device arrays hold int8..int64, uint8..uint64, float32, float64 or bool, "
                            f"not {dtype}")
        self._host = buffer if buffer is not None else np.empty(shape, dtype=dtype)
        self._owner = None  # a backend may attach real device memory here

    # numpy-like attributes
    shape = property(lambda self: self._host.shape)
    dtype = property(lambda self: self._host.dtype)
    ndim = property(lambda self: self._host.ndim)
    size = property(lambda self: self._host.size)
    nbytes = property(lambda self: self._host.nbytes)
    strides = property(lambda self: self._host.strides)

    def __len__(self) -> int:
        return len(self._host)

    def __repr__(self) -> str:
        return f"<kdebug DeviceNDArray shape={self.shape} dtype={self.dtype}>"

    def device_address(self) -> int:
        return self._host.ctypes.data

    def copy_to_host(self, ary: np.ndarray | None = None, stream=0) -> np.ndarray:
        if ary is None:
            return self._host.copy()
        if ary.shape != self.shape:
            raise ValueError(f"copy_to_host: shapes differ ({ary.shape} vs {self.shape})")
        np.copyto(ary, self._host)
        return ary

    def copy_to_device(self, ary, stream=0) -> None:
        src = ary._host if isinstance(ary, DeviceNDArray) else np.asarray(ary)
        if src.shape != self.shape:
            raise ValueError(f"copy_to_device: shapes differ ({src.shape} vs {self.shape})")
        np.copyto(self._host, src, casting="unsafe")

    def __getitem__(self, index):
        value = self._host[index]
        if isinstance(value, np.ndarray):
            return DeviceNDArray(value.shape, value.dtype, np.ascontiguousarray(value).copy())
        return value

    def __setitem__(self, index, value) -> None:
        self._host[index] = value

    def is_c_contiguous(self) -> bool:
        return True

    def reshape(self, *shape):
        return DeviceNDArray(None, self.dtype, self._host.reshape(*shape))

    def ravel(self):
        return DeviceNDArray(None, self.dtype, self._host.ravel())


def to_device(obj, stream=0, copy=True, to=None) -> DeviceNDArray:
    if to is not None:
        to.copy_to_device(obj)
        return to
    arr = np.ascontiguousarray(obj)
    return DeviceNDArray(arr.shape, arr.dtype, arr.copy())


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0) -> DeviceNDArray:
    dtype = dtype.np_dtype if isinstance(dtype, T.Scalar) else dtype
    return DeviceNDArray(shape, dtype)


def device_array_like(ary, stream=0) -> DeviceNDArray:
    return DeviceNDArray(ary.shape, ary.dtype)


def pinned_array(shape, dtype=np.float64, strides=None, order="C") -> np.ndarray:
    return np.empty(shape, dtype=dtype)


mapped_array = managed_array = pinned_array
