"""Host-side arrays and memory API: numba.cuda's to_device, device_array, copy_to_host..."""
from __future__ import annotations

import numpy as np

from kdebug.errors import ArrayError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.lang.location import caller_location


def _array_error(message: str, hint: str):
    return ArrayError(message, caller_location(), hint)


class DeviceNDArray:
    """An array in device memory. On the CPU backend the device is host memory.

    C-contiguous, except the views that slicing makes (``d[:, 1]``, ``d[::2]``): as numba's, those share
    ``d``'s memory (a base address, an offset, strides and a shape) and go to kernels with their strides,
    typed 'A'. Element reads and writes from the host work, as in numba.
    On the gpu backend ``_dev`` holds the device allocation and ``_mirror`` a host buffer of its bytes;
    ``_host`` is this array's view of the mirror (``_offset`` bytes in), synced through ``_synced()``.
    """

    def __init__(self, shape, dtype, buffer: np.ndarray | None = None, device=None) -> None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise _array_error(f"{dtype!r} is not a dtype", "use a numpy dtype such as np.float32") from None
        if T.from_dtype(dtype) is None:
            raise _array_error(f"kdebug device arrays hold int8..int64, uint8..uint64, float16..float64, complex64, "
                               f"complex128, bool, datetime64/timedelta64 with a unit, or records of these, not "
                               f"{dtype}", "convert first, e.g. a.astype(np.float32)")
        if buffer is None:
            try:
                buffer = np.empty(shape, dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise _array_error(f"cannot make a device array of shape {shape!r}: {exc}",
                                   "give the shape as a non-negative int or a tuple of them") from None
            except MemoryError:
                n = int(np.prod(shape, dtype=object)) * dtype.itemsize
                raise _array_error(f"cannot allocate a device array of shape {shape!r} ({dtype}): "
                                   f"{n / 2**30:.1f} GiB is more memory than there is",
                                   "allocate less, or process the data in pieces") from None
        self._host = buffer
        self._owner = None  # a backend may attach real device memory here
        self._dev = device  # the gpu runtime's DeviceBuffer, or None: the data is _host
        self._mirror = None  # with _dev: the allocation's bytes on the host, of which _host is a view
        self._offset = 0  # with _dev: the byte offset of _host's first element in the allocation
        self._address = None  # _host's data address, read once (numpy's .ctypes.data costs µs a launch)
        # initcheck: None when every element holds data the host gave; False while nothing wrote any
        # (cuda.device_array); else a uint8 per element, 1 once written (kernels set it too). Kept by the
        # array that owns the allocation (_root): a view's flags are its elements' flags in the root's.
        self._written = None
        self._root = self

    @classmethod
    def _on_device(cls, host: np.ndarray, runtime, copy: bool = True) -> "DeviceNDArray":
        """An array in the gpu runtime's memory, shaped and strided (and, with copy, filled) like ``host``
        (whose strides are non-negative: a C, F or other contiguous-or-gapped layout)."""
        nbytes = _span(host.shape, host.strides, host.itemsize)
        buf = runtime.allocate(max(nbytes, 1))
        mirror = np.empty(nbytes, np.uint8)
        view = np.ndarray(host.shape, host.dtype, buffer=mirror, strides=host.strides)
        if copy:
            view[...] = host
            buf.from_host(mirror)
        arr = cls(None, host.dtype, view, device=buf)
        arr._mirror = mirror
        return arr

    def _derived(self, host: np.ndarray) -> "DeviceNDArray":
        """A view of this array's memory: ``host`` is a view of ``_host`` (numba's ``gpu_data.view``)."""
        view = DeviceNDArray(None, host.dtype, host, device=self._dev)
        view._root = self._root
        if self._dev is not None:
            view._mirror = self._mirror
            view._offset = host.ctypes.data - self._mirror.ctypes.data if host.size else self._offset
        return view

    def _extent(self) -> tuple[int, int]:
        """The bytes of the allocation this array's elements span: [lo, hi) from its start."""
        lo = hi = 0
        for n, stride in zip(self._host.shape, self._host.strides):
            lo, hi = lo + min((n - 1) * stride, 0), hi + max((n - 1) * stride, 0)
        return self._offset + lo, self._offset + hi + self._host.itemsize if self._host.size else self._offset

    def _synced(self) -> np.ndarray:
        """The data as a host array (its bytes copied back from the device on the gpu backend)."""
        if self._dev is not None:
            self._dev.read(self._mirror, *self._extent())
        return self._host

    def _push(self) -> None:
        """The gpu backend: this array's bytes from the mirror to the device."""
        if self._dev is not None:
            self._dev.write(self._mirror, *self._extent())

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

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (version 3), as numba's DeviceNDArray gives it."""
        strides = None if self._host.flags.c_contiguous else self._host.strides  # numba: None when contiguous
        ptr = self.device_address() if self.size else 0  # numba: a zero-size array's pointer is 0
        # numba's "stream": the handle of the stream the array is bound to (device_array(..., stream=s), bind),
        # None for none: a consumer synchronises it (launches and copies here are synchronous anyway)
        stream = self.stream
        return {"shape": self.shape, "strides": strides, "data": (ptr, False), "typestr": self.dtype.str,
                "stream": int(stream) if stream != 0 else None, "version": 3}

    def device_address(self) -> int:
        if self._dev is not None:
            return self._dev.ptr + self._offset
        if self._address is None:
            self._address = self._host.ctypes.data
        return self._address

    @property
    def flags(self) -> dict:
        """numba's ``flags``: a dict of ``C_CONTIGUOUS`` and ``F_CONTIGUOUS`` (a copy)."""
        f = self._host.flags
        return {"C_CONTIGUOUS": bool(f.c_contiguous), "F_CONTIGUOUS": bool(f.f_contiguous)}

    @property
    def stream(self):
        """The stream bound to the array (numba's ``stream``, 0 unless ``bind`` gave one)."""
        return self.__dict__.get("_stream", 0)

    @stream.setter
    def stream(self, value) -> None:
        self.__dict__["_stream"] = value

    def bind(self, stream=0) -> "DeviceNDArray":
        """numba's ``bind``: a copy of the array object (the same memory) with ``stream`` as its default."""
        clone = self._derived(self._host)
        clone.stream = stream
        return clone

    @property
    def gpu_data(self) -> "_DeviceMemory":
        """numba's ``gpu_data``: the memory the array lives in (its address, size and ctypes pointer)."""
        lo, hi = self._extent()  # from the allocation's start; the first element is at _offset
        return _DeviceMemory(self.device_address() + lo - self._offset, hi - lo)

    @property
    def device_ctypes_pointer(self):
        import ctypes
        return ctypes.c_void_p(self.device_address())

    def copy_to_host(self, ary: np.ndarray | None = None, stream=0) -> np.ndarray:
        if ary is None:
            return np.array(self._synced(), order="K", copy=True)  # with the device array's order
        if not isinstance(ary, np.ndarray):
            raise _array_error(f"copy_to_host copies into a numpy array, not a {type(ary).__name__}",
                               "call d.copy_to_host() to get a new array, or pass np.empty(d.shape, d.dtype)")
        if ary.shape != self.shape:
            raise _array_error(f"copy_to_host: shapes differ ({ary.shape} vs {self.shape})",
                               "pass a host array of the device array's shape, or none to get a new one")
        np.copyto(ary, self._synced())
        return ary

    def copy_to_device(self, ary, stream=0) -> None:
        src = ary._synced() if isinstance(ary, DeviceNDArray) else np.asarray(ary)
        if src.shape != self.shape:
            raise _array_error(f"copy_to_device: shapes differ ({src.shape} vs {self.shape})",
                               "copy an array of the device array's shape")
        if self._dev is not None:
            self._synced()  # the bytes between a view's elements stay the device's
        np.copyto(self._host, src, casting="unsafe")
        self._mark_written()
        self._push()

    def __getitem__(self, index):
        value = self._host[index]
        if isinstance(value, np.ndarray) and np.may_share_memory(value, self._host):
            # a view, as in numba: the same memory at an offset, with its strides; kernels write through it
            return self._derived(value)
        value = self._synced()[index]  # an element, or a copy (an index array)
        if isinstance(value, np.ndarray):
            value = np.ascontiguousarray(value).copy()
            if self._dev is not None:
                return DeviceNDArray._on_device(value, _gpu_runtime() or _NoRuntime.fail())
            return DeviceNDArray(value.shape, value.dtype, value)
        return value

    def __setitem__(self, index, value) -> None:
        host = self._synced()
        host[index] = value
        self._mark_written(index)
        self._push()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def is_c_contiguous(self) -> bool:
        return bool(self._host.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._host.flags.f_contiguous)

    def _root_flags(self):
        """The allocation's per-element written flags (flat, in the root's C order), made on first use;
        None when every element is written."""
        root = self._root
        if root._written is False:  # one flag per element slot of the allocation's extent (gaps included)
            lo, hi = root._extent()
            root._written = np.zeros((hi - lo) // root._host.itemsize, dtype=np.uint8)
        return root._written

    def _element_offset(self, address: int) -> int | None:
        """The root's flat element index at ``address``, or None where this array's elements do not sit
        on the root's element grid (a view as another dtype)."""
        itemsize = self._root._host.itemsize
        offset = address - self._root._host.ctypes.data
        if self._host.itemsize != itemsize or offset % itemsize or any(s % itemsize for s in self._host.strides):
            return None
        return offset // itemsize

    def _flags_shaped(self):
        """This array's written flags with its own shape and strides (a view into the root's), or None:
        all written, or no element grid in common with the root."""
        flags = self._root_flags()
        if flags is None:
            return None
        first = self._element_offset(self._host.ctypes.data)
        if first is None:
            return None
        steps = tuple(s // self._host.itemsize for s in self._host.strides)
        return np.lib.stride_tricks.as_strided(flags[first:], shape=self.shape, strides=steps)

    def _mark_written(self, index=Ellipsis) -> None:
        """The host wrote ``self[index]``: initcheck counts those elements as initialised, in every view
        of the allocation (a copy into ``d[0:5]`` initialises ``d``'s first five)."""
        root = self._root
        if root._written is None:
            return
        if self is root and index is Ellipsis:
            root._written = None
            return
        shaped = self._flags_shaped()
        if shaped is None:  # a view as another dtype: the whole allocation counts as written
            root._written = None
        else:
            shaped[index] = 1

    def _written_map(self):
        """initcheck's written flags for a launch: one uint8 per element from this array's lowest address
        over its extent (the region the sanitizer checks), sharing the root's memory so that kernels'
        writes count for every view; None when all are written."""
        flags = self._root_flags()
        if flags is None or self is self._root:
            return flags
        lo, hi = self._extent()
        base = self._host.ctypes.data - self._offset  # _extent is from the allocation's start on a GPU
        start = self._element_offset(base + lo)
        if start is None:
            return None
        return flags[start:start + (hi - lo) // self._host.itemsize]

    def _view(self, host):
        """A reshaped view: the same allocation and the same written flags."""
        return self._derived(host)

    def reshape(self, *shape, order="C"):  # views share the device allocation
        if order != "C":
            raise _array_error(f"reshape(order={order!r}): kdebug device arrays are C-ordered", "use order='C'")
        new = self._host.reshape(*shape)
        if new.size > 1 and not np.may_share_memory(new, self._host):
            raise NotImplementedError("reshape would require copy")  # numba's dummyarray, for a strided view
        return self._view(new)

    def ravel(self, order="C", stream=0):
        if order != "C":
            raise _array_error(f"ravel(order={order!r}): kdebug device arrays are C-ordered", "use order='C'")
        if not self._host.flags.c_contiguous:
            raise NotImplementedError("ravel on non-contiguous array")  # numba's dummyarray
        return self._view(self._host.ravel())

    def split(self, section: int, stream=0) -> list["DeviceNDArray"]:
        """numba's split: a 1-D array as views of ``section`` elements each (the last may be shorter)."""
        if self.ndim != 1:
            raise _array_error(f"split needs a 1-D array, not {self.ndim}-D", "ravel() it first")
        return [self[i:i + section] for i in range(0, self.size, section)]

    def view(self, dtype) -> "DeviceNDArray":
        """The same memory as another dtype (the last dimension rescaled), as numpy's view."""
        dtype = dtype.np_dtype if isinstance(dtype, T.Scalar) else np.dtype(dtype)
        try:
            return self._derived(self._host.view(dtype))
        except ValueError as exc:
            raise _array_error(f"cannot view {self.dtype} as {dtype}: {exc}", "pick a dtype whose size divides "
                               "the last dimension's bytes") from None

    @property
    def T(self) -> "DeviceNDArray":
        return self.transpose()

    def transpose(self, axes=None) -> "DeviceNDArray":
        """The transposed array: a copy, as numba's (which runs its transpose kernel)."""
        data = np.ascontiguousarray(np.transpose(self._synced(), axes))
        if self._dev is not None:
            return DeviceNDArray._on_device(data, _gpu_runtime() or _NoRuntime.fail())
        return DeviceNDArray(data.shape, data.dtype, data)


T.register_device_array(DeviceNDArray)


def _gpu_runtime():
    """The session's gpu runtime when kernels run on a GPU, else None (device memory is host memory)."""
    return seam.current().gpu_runtime()


class _NoRuntime:
    @staticmethod
    def fail():
        raise RuntimeError("this device array lives on a GPU, but the session no longer runs on one")


def to_device(obj, stream=0, copy=True, to=None) -> DeviceNDArray:
    """numba's to_device: numpy arrays, and anything numpy makes an array of (lists, scalars)."""
    if to is not None:
        to.copy_to_device(obj)
        return to
    arr = np.ascontiguousarray(obj) if np.ndim(obj) else np.asarray(obj)
    gpu = _gpu_runtime()
    if gpu is not None:
        device = DeviceNDArray._on_device(arr, gpu)
    else:
        device = DeviceNDArray(arr.shape, arr.dtype, arr.copy())
    if stream is not None and stream != 0:  # numba binds the stream to the array it makes
        device.stream = stream
    return device


class _DeviceMemory:
    """numba's ``gpu_data`` (a MemoryPointer): where an array's memory is, and how big it is."""

    def __init__(self, address: int, size: int) -> None:
        import ctypes
        self.device_pointer_value = address
        self.handle = ctypes.c_void_p(address)
        self.device_ctypes_pointer = self.handle
        self.size = size

    def __repr__(self) -> str:
        return f"<kdebug device memory at {self.device_pointer_value:#x}, {self.size} bytes>"


def _span(shape, strides, itemsize: int) -> int:
    """The bytes an array of ``shape`` and non-negative ``strides`` spans from its first element."""
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def _shape_and_strides(shape, dtype, strides, order) -> tuple[tuple, tuple]:
    """numba's ``prepare_shape_strides_dtype``: strides given, else those of ``order`` ('C' or 'F')."""
    if isinstance(shape, (float, np.floating)):
        raise TypeError("shape must be an integer or tuple of integers")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if isinstance(strides, (int, np.integer)):
        return shape, (int(strides),)
    if strides:
        return shape, tuple(int(s) for s in strides)
    if order not in ("C", "F"):
        raise ValueError("must be either C/F order")
    steps, step = [0] * len(shape), dtype.itemsize
    for d in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        steps[d] = step
        step *= shape[d]
    return shape, tuple(steps)


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0) -> DeviceNDArray:
    """numba's device_array: uninitialised device memory of ``shape`` in C or F order, or with ``strides``
    (in bytes, non-negative)."""
    dtype = dtype.np_dtype if isinstance(dtype, T.Scalar) else dtype
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise _array_error(f"{dtype!r} is not a dtype", "use a numpy dtype such as np.float32") from None
    given = shape
    shape, strides = _shape_and_strides(shape, dtype, strides, order)
    if any(n < 0 for n in shape):
        raise _array_error(f"cannot make a device array of shape {given!r}: negative dimensions are not allowed",
                           "give the shape as a non-negative int or a tuple of them")
    if any(s < 0 for s in strides) or len(strides) != len(shape):
        raise _array_error(f"strides {strides} for shape {shape}: device arrays take one non-negative stride "
                           "per dimension", "give strides in bytes, one per dimension, or order='C'/'F'")
    try:
        host = np.ndarray(shape, dtype, buffer=np.empty(_span(shape, strides, dtype.itemsize), np.uint8),
                          strides=strides)
    except (TypeError, ValueError) as exc:
        raise _array_error(f"cannot make a device array of shape {shape} and strides {strides}: {exc}",
                           "give the shape as non-negative ints, strides as multiples of the item size, or "
                           "order='C'/'F'") from None
    except MemoryError:
        n = _span(shape, strides, dtype.itemsize)
        raise _array_error(f"cannot allocate a device array of shape {shape!r} ({dtype}): "
                           f"{n / 2**30:.1f} GiB is more memory than there is",
                           "allocate less, or process the data in pieces") from None
    gpu = _gpu_runtime()
    if gpu is not None:
        arr = DeviceNDArray._on_device(host, gpu, copy=False)
    else:
        arr = DeviceNDArray(shape, dtype, host)
        arr._written = False  # uninitialised, as on a GPU (initcheck reports reads of it)
    arr.stream = stream if stream is not None else 0
    return arr


def _contiguous_strides_like_array(ary):
    """numba's: None when the default order's strides make a contiguous array like ``ary``, else strides
    for a new contiguous array whose dimensions are laid out in ``ary``'s stride order."""
    flags = ary.flags
    c, f = (flags["C_CONTIGUOUS"], flags["F_CONTIGUOUS"]) if isinstance(flags, dict) else \
        (flags.c_contiguous, flags.f_contiguous)
    if c or f or ary.ndim <= 1:
        return None
    strides, stride = [0] * ary.ndim, ary.dtype.itemsize
    for i, _ in sorted(enumerate(ary.strides), key=lambda x: x[1]):
        strides[i] = stride
        stride *= ary.shape[i]
    return tuple(strides)


def _order_like_array(ary) -> str:
    flags = ary.flags
    c, f = (flags["C_CONTIGUOUS"], flags["F_CONTIGUOUS"]) if isinstance(flags, dict) else \
        (flags.c_contiguous, flags.f_contiguous)
    return "F" if f and not c else "C"


def device_array_like(ary, stream=0) -> DeviceNDArray:
    """numba's device_array_like: the shape, dtype and order (or stride order) of ``ary``."""
    return device_array(ary.shape, ary.dtype, _contiguous_strides_like_array(ary), _order_like_array(ary), stream)


def pinned_array(shape, dtype=np.float64, strides=None, order="C") -> np.ndarray:
    """Page-locked host memory in numba; host memory that kernels take directly here."""
    dtype = dtype.np_dtype if isinstance(dtype, T.Scalar) else dtype
    return np.empty(shape, dtype=dtype, order=order)


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False, wc=False):
    """Host memory the device reads and writes directly: a numpy array kernels take (and write) as is."""
    return pinned_array(shape, dtype, strides, order)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0, attach_global=True):
    """Unified memory in numba: here a numpy array, on the host and in kernels alike."""
    return pinned_array(shape, dtype, strides, order)


def pinned_array_like(ary) -> np.ndarray:
    return pinned_array(ary.shape, ary.dtype)


def mapped_array_like(ary, stream=0, portable=False, wc=False) -> np.ndarray:
    return mapped_array(ary.shape, ary.dtype)
