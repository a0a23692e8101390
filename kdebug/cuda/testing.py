"""numba.cuda.testing: the unittest helpers numba-cuda's own tests and documentation examples use.

Their skip conditions are evaluated for kdebug: it is not numba's CUDA simulator, it provides
``numba.jit`` (numba-cuda's "base numba install"), its device reports compute capability 9.0, and the
CPU backend emulates grid synchronisation without the CUDA device runtime library."""
from __future__ import annotations

import os
import platform
import shutil
import unittest
from pathlib import Path

import numpy as np

from kdebug.cuda import get_current_device
from kdebug.cuda.tests.support import TestCase
from kdebug.lang import seam
from kdebug.lang.missing import missing_name
from kdebug.numba.core import config
from kdebug.targets.ptx.toolkit import cuda_libdir

ENABLE_CUDASIM = False  # kdebug compiles kernels; it is not numba's simulator
HAS_NUMBA = True  # numba.jit / njit exist under --numba
# numba-cuda's: the tests' data files (jitlink.cu, ...) beside numba/cuda/testing.py, in tests/data; kdebug
# ships none, so the folder is not there, and a test that reads a file from it fails saying which
test_data_dir = Path(__file__).parent / "tests" / "data"


class CUDATestCase(TestCase):
    """For tests that use a CUDA device (numba-cuda's CUDATestCase, with numba's ``assertPreciseEqual``;
    without its FileCheck helpers). Like numba's, it turns the occupancy and implicit-copy warnings
    off for the test."""

    FLOAT16_RTOL = np.finfo(np.float16).eps

    def setUp(self):
        self._low_occupancy_warnings = config.CUDA_LOW_OCCUPANCY_WARNINGS
        self._warn_on_implicit_copy = config.CUDA_WARN_ON_IMPLICIT_COPY
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        config.CUDA_WARN_ON_IMPLICIT_COPY = 0

    def tearDown(self):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = self._low_occupancy_warnings
        config.CUDA_WARN_ON_IMPLICIT_COPY = self._warn_on_implicit_copy


def skip_on_cudasim(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(ENABLE_CUDASIM, reason)


def skip_unless_cudasim(reason):
    assert isinstance(reason, str)
    return unittest.skipUnless(ENABLE_CUDASIM, reason)


skip_on_standalone_numba_cuda = unittest.skipUnless(HAS_NUMBA, "requires base numba install")


def cc_X_or_above(major, minor):
    return tuple(get_current_device().compute_capability) >= (major, minor)


def skip_unless_cc_50(fn):
    return unittest.skipUnless(cc_X_or_above(5, 0), "requires cc >= 5.0")(fn)


def skip_unless_cc_53(fn):
    return unittest.skipUnless(cc_X_or_above(5, 3), "requires cc >= 5.3")(fn)


def skip_unless_cc_60(fn):
    return unittest.skipUnless(cc_X_or_above(6, 0), "requires cc >= 6.0")(fn)


def skip_unless_cc_75(fn):
    return unittest.skipUnless(cc_X_or_above(7, 5), "requires cc >= 7.5")(fn)


def skip_unless_cc_90(fn):
    return unittest.skipUnless(cc_X_or_above(9, 0), "requires cc >= 9.0")(fn)


def cudadevrt_missing() -> bool:
    """Grid syncs need CUDA's device runtime library on a GPU; the CPU backend emulates them."""
    if seam.current().gpu_runtime() is None:
        return False
    return cuda_libdir() is None


def skip_if_cudadevrt_missing(fn):
    return unittest.skipIf(cudadevrt_missing(), "cudadevrt missing")(fn)


def xfail_unless_cudasim(fn):
    return unittest.expectedFailure(fn)  # kdebug is not the simulator


def skip_unless_conda_cudatoolkit(reason):
    assert isinstance(reason, str)
    return unittest.skip(reason)  # kdebug finds the CUDA toolkit on PATH, never numba's conda one


def skip_if_external_memmgr(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(False, reason)  # kdebug has no EMM plugins: its own memory manager only


def skip_under_cuda_memcheck(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(os.environ.get("CUDA_MEMCHECK") is not None, reason)


def skip_without_nvdisasm(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(shutil.which("nvdisasm") is None, reason)


def skip_with_nvdisasm(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(shutil.which("nvdisasm") is not None, reason)


def skip_on_arm(reason):
    assert isinstance(reason, str)
    cpu = platform.processor()
    return unittest.skipIf(cpu.startswith("arm") or cpu.startswith("aarch"), reason)


def skip_on_wsl2(reason):
    assert isinstance(reason, str)
    rel = platform.release().lower()
    return unittest.skipIf("microsoft-standard-wsl2" in rel or "wsl2" in rel, reason)


def _cuda_header(name: str) -> bool:
    nvcc = shutil.which("nvcc") or shutil.which("ptxas")
    if nvcc is None:
        return False
    include = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
    return os.path.isfile(os.path.join(include, name))


def skip_if_cuda_includes_missing(fn):
    return unittest.skipUnless(_cuda_header("cuda.h"), "CUDA include dir not available on this system")(fn)


def skip_if_curand_kernel_missing(fn):
    return unittest.skipUnless(_cuda_header("curand_kernel.h"), "curand_kernel.h not available on this system")(fn)


def skip_if_nvjitlink_missing(reason):
    assert isinstance(reason, str)
    return unittest.skip(reason)  # kdebug links with nvlink, not nvJitLink


def skip_on_nvjitlink_13_1_sm_120(reason):
    assert isinstance(reason, str)
    return unittest.skipIf(False, reason)


class ForeignArray:
    """An array from another library through the CUDA Array Interface (numba's test helper): a device
    array hidden so that it does not look like one."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


def __getattr__(name):
    return missing_name(__name__, name, 2)
