"""numba.cuda.launchconfig as numba-cuda 0.30.4 (numba/cuda/launchconfig.py, and
tests/cudapy/test_launch_config_sensitive.py's use: the configuration read while a launch compiles):
what compile-time code sees of the launch, capture_compile_config, and the launch configuration object's
numba attributes."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import launchconfig
from kdebug.numba.extending import overload


def probe():
    pass


SEEN = []


@overload(probe)
def ol_probe():
    cfg = launchconfig.ensure_current_launch_config()
    SEEN.append((cfg.griddim, cfg.blockdim, cfg.sharedmem, cfg.dispatcher.__name__))

    def impl():
        pass
    return impl


def test_compile_time_code_sees_the_launch_configuration():
    @cuda.jit
    def launch_config_sensitive_kernel(x):
        probe()
        x[0] = 1

    SEEN.clear()
    arr = np.zeros(1, dtype=np.int32)
    with launchconfig.capture_compile_config(launch_config_sensitive_kernel) as record:
        launch_config_sensitive_kernel[1, 32](arr)
    assert SEEN == [((1, 1, 1), (32, 1, 1), 0, "launch_config_sensitive_kernel")] and arr[0] == 1
    assert record["config"].blockdim == (32, 1, 1) and record["config"].griddim == (1, 1, 1)
    with launchconfig.capture_compile_config(launch_config_sensitive_kernel) as again:
        launch_config_sensitive_kernel[1, 64](arr)  # compiled already: numba leaves the record empty
    assert again["config"] is None and len(SEEN) == 1


def test_outside_a_launch_there_is_no_configuration():
    assert launchconfig.current_launch_config() is None
    with pytest.raises(RuntimeError, match="No launch config set for this thread"):
        launchconfig.ensure_current_launch_config()
    with pytest.raises(TypeError, match="dispatcher is required"):
        with launchconfig.capture_compile_config(None):
            pass


def test_the_launch_configuration_has_numbas_attributes_and_pre_launch_callbacks():
    @cuda.jit
    def k(x):
        x[0] += 1

    s = cuda.stream()
    cfg = k[(2, 3), (4, 2), s, 64]
    assert (cfg.griddim, cfg.blockdim, cfg.stream, cfg.sharedmem, cfg.dispatcher) == ((2, 3, 1), (4, 2, 1), s, 64, k)
    calls = []
    cfg.pre_launch_callbacks.append(lambda kernel, config: calls.append((kernel, config)))
    x = np.zeros(1)
    cfg(x)
    assert calls == [(k, cfg)]
