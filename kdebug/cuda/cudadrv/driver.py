"""numba.cuda.cudadrv.driver under ``--numba``: the context numba code reaches through
``cuda.current_context()`` (its ``deallocations``, ``defer_cleanup()``), and ``_have_nvjitlink()``, which is
False: kdebug links device code with ptxas and nvlink (the PTX target) or its CPU backend, never through
nvJitLink. Also numba's driver errors (``CudaAPIError(code, msg)``, ``LinkerError``...), ``Stream`` (the
class of ``cuda.stream()``'s streams) and ``driver``, the object numba calls the CUDA driver API through
(kdebug calls no CUDA driver function through it: see ``Driver``)."""
from __future__ import annotations

import contextlib
from collections import deque

from kdebug.cuda.cudadrv.error import CudaDriverError, CudaRuntimeError, CudaSupportError  # noqa: F401
from kdebug.lang import devices
from kdebug.lang.missing import missing_name
from kdebug.lang.streams import Stream  # noqa: F401


def _config():
    from kdebug.numba.core import config  # kept lazy for start-up time: kdebug.numba.core imports kdebug.cuda
    return config


def _have_nvjitlink() -> bool:
    return False


class DeadMemoryError(RuntimeError):
    pass


class LinkerError(RuntimeError):
    pass


class CudaAPIError(CudaDriverError):
    """A CUDA driver call that failed: its error ``code`` (a CUresult) and ``msg``, shown as ``[code] msg``."""

    def __init__(self, code, msg):
        self.code = code
        self.msg = msg
        super().__init__(code, msg)

    def __str__(self):
        return "[%s] %s" % (self.code, self.msg)


class Driver:
    """numba's ``driver``: the CUDA driver API, one attribute per function (``driver.cuMemcpyHtoD``...).
    kdebug's device memory, copies and launches go through its own runtime (the CPU backend's memory, or
    pycuda on the gpu backend), never through this object, so it has none of those functions: reading one
    is the AttributeError naming it, and what code sets on it (a test's mock) changes nothing kdebug does."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"numba.cuda.cudadrv.driver.driver.{name}: kdebug does not call the CUDA driver API "
                             f"through numba's driver object, so it has no {name!r} (kdebug's device memory and "
                             "launches go through its own runtime)")

    def __repr__(self) -> str:
        return "<kdebug: numba's CUDA driver object, with no driver functions>"


driver = Driver()


class _PendingDeallocs:
    """numba-cuda's ``Context.deallocations``: frees queued until a count or size is passed, or ``clear()``
    (not while ``disable()``/``cuda.defer_cleanup()`` holds). kdebug's device memory is freed by Python's
    garbage collector, so nothing of kdebug's is queued here; what code adds with ``add_item`` is freed as
    numba frees it."""

    def __init__(self, capacity: int | None = None) -> None:
        self._cons: deque = deque()
        self._disable_count = 0
        self._size = 0
        self._memory_capacity = capacity

    @property
    def _max_pending_bytes(self) -> int:
        capacity = self._memory_capacity or devices.current_context().get_memory_info().total
        return int(capacity * _config().CUDA_DEALLOCS_RATIO)

    def add_item(self, dtor, handle, size: int = -1) -> None:
        self._cons.append((dtor, handle, size))
        self._size += max(int(size), 1)
        if len(self._cons) > _config().CUDA_DEALLOCS_COUNT or self._size > self._max_pending_bytes:
            self.clear()

    def clear(self) -> None:
        """Run the queued frees now, unless cleanup is deferred."""
        if not self.is_disabled:
            while self._cons:
                dtor, handle, _size = self._cons.popleft()
                dtor(handle)
            self._size = 0

    @contextlib.contextmanager
    def disable(self):
        self._disable_count += 1
        try:
            yield
        finally:
            self._disable_count -= 1
            assert self._disable_count >= 0

    @property
    def is_disabled(self) -> bool:
        return self._disable_count > 0

    def __len__(self) -> int:
        return len(self._cons)


class Context(devices.Context):
    """``cuda.current_context()`` under ``--numba``: kdebug's context (``get_memory_info``, ``synchronize``,
    ``reset``) with numba's ``deallocations`` and ``defer_cleanup()``; one per device, as numba's."""

    def __init__(self, device) -> None:
        super().__init__(device)
        self.deallocations = _PendingDeallocs()
        self.allocations: dict = {}

    @contextlib.contextmanager
    def defer_cleanup(self):
        """numba's: no frees while the block runs."""
        with self.deallocations.disable():
            yield

    def reset(self) -> None:
        """numba frees the context's allocations and its pending deallocations."""
        self.allocations.clear()
        self.deallocations.clear()

    def __repr__(self) -> str:
        return f"<kdebug CUDA context on device {getattr(self.device, 'id', 0)}>"


_contexts: dict = {}


def current_context(devnum: int = 0) -> Context:
    """numba.cuda.current_context / get_context: the device's context, the same object each time."""
    device = devices.current_device()
    key = getattr(device, "id", 0)
    context = _contexts.get(key)
    if context is None:
        context = _contexts[key] = Context(device)
    return context


get_context = current_context


@contextlib.contextmanager
def defer_cleanup():
    """numba.cuda.defer_cleanup: the current context's ``defer_cleanup()``."""
    with current_context().defer_cleanup():
        yield


def __getattr__(name):
    return missing_name(__name__, name, 2)
