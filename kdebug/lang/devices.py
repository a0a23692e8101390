"""numba.cuda's devices and contexts: ``cuda.gpus``, ``current_context()``, ``detect()``, ``select_device``...

On the CPU backend there is one device, the emulated sm_90 (kdebug/lang/device.py); its memory is the
host's. On the gpu backend the device is pycuda's."""
from __future__ import annotations

import contextlib
import os
from collections import namedtuple

from kdebug.lang import seam
from kdebug.lang.device import EMULATED

MemoryInfo = namedtuple("MemoryInfo", "free total")


def current_device():
    runtime = seam.current().gpu_runtime()
    return runtime.current_device() if runtime is not None else EMULATED


class Context:
    """``cuda.current_context()``: the device, its memory, synchronize/reset."""

    def __init__(self, device) -> None:
        self.device = device

    def get_memory_info(self) -> MemoryInfo:
        runtime = seam.current().gpu_runtime()
        if runtime is not None and hasattr(runtime, "memory_info"):
            return MemoryInfo(*runtime.memory_info())
        page = os.sysconf("SC_PAGE_SIZE")
        return MemoryInfo(os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page)

    def synchronize(self) -> None:
        """Launches here complete before they return."""

    def reset(self) -> None:
        """numba frees the context's allocations; kdebug's are freed by Python's garbage collector."""


class GPU:
    """One entry of ``cuda.gpus``: a context manager selecting the device."""

    def __init__(self, device) -> None:
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __repr__(self) -> str:
        return f"<kdebug GPU {self._device.id} {self._device.name!r}>"


class GPUList:
    """``cuda.gpus``: the devices, ``len``, indexing, iteration and ``.current``."""

    def _devices(self) -> list[GPU]:
        return [GPU(current_device())]

    def __len__(self) -> int:
        return len(self._devices())

    def __getitem__(self, index) -> GPU:
        return self._devices()[index]

    def __iter__(self):
        return iter(self._devices())

    @property
    def current(self) -> GPU:
        return self._devices()[0]

    def __repr__(self) -> str:
        return f"<kdebug gpus: {self._devices()}>"


gpus = GPUList()


def current_context(devnum: int = 0) -> Context:
    return Context(current_device())


get_context = current_context


def select_device(device_id: int):
    if device_id != 0:
        raise ValueError(f"kdebug has one device (id 0), not device {device_id}")
    return current_device()


def list_devices() -> list[GPU]:
    return list(gpus)


def close() -> None:
    """numba closes the device's contexts; kdebug has nothing to close."""


def detect() -> bool:
    """Print the devices as numba's detect() does; True when one is supported."""
    devices = list_devices()
    print(f"Found {len(devices)} CUDA devices")
    for dev in devices:
        cc = tuple(dev.compute_capability)
        print("id %d    %20s %40s" % (dev.id, dev.name, "[SUPPORTED]"))
        print("%40s: %s" % ("Compute Capability", "%d.%d" % cc))
        print("%40s: %s" % ("FP16 Support", "Yes"))
    print("Summary:")
    print(f"\t{len(devices)}/{len(devices)} devices are supported")
    return bool(devices)


def profile_start() -> None:
    """Marks the start of a profiled region for nsys/ncu; without a profiler attached it does nothing."""


def profile_stop() -> None:
    """Marks the end of a profiled region."""


@contextlib.contextmanager
def profiling():
    profile_start()
    yield
    profile_stop()
