"""The names numba-cuda 0.30.4's cudapy test files import from its test support and driver modules, and the
behaviour they check, with numba-cuda's source (numba/cuda/tests/support.py, cudadrv/driver.py,
cudadrv/error.py, decorators.py, errors.py, api.py, cudadrv/devicearray.py) as the expected values."""
from __future__ import annotations

import importlib.util
import io
import pathlib
import subprocess
import sys
import unittest
import warnings
from unittest.mock import call, patch

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda.cudadrv import driver as driver_module
from kdebug.cuda.cudadrv.driver import CudaAPIError, CudaDriverError, LinkerError, Stream, driver
from kdebug.cuda import testing as cuda_testing
from kdebug.cuda.testing import ForeignArray
from kdebug.cuda.tests import support
from kdebug.numba.core import config
from kdebug.numba.errors import NumbaInvalidConfigWarning


@cuda.jit
def add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


def _skip_reason(decorated):
    return getattr(decorated, "__unittest_skip__", False), getattr(decorated, "__unittest_skip_why__", None)


def test_linux_only_and_windows_only_skip_off_their_platform():
    def f():
        pass

    linux = support.linux_only(f)
    windows = support.windows_only(lambda: None)
    on_linux = sys.platform.startswith("linux")
    assert _skip_reason(linux) == ((True, "linux only test") if not on_linux else (False, None))
    assert _skip_reason(windows)[0] == (not sys.platform.startswith("win"))


def test_cuda_api_error_has_numba_fields_and_text():
    err = CudaAPIError(999, "Transfer not allowed")
    assert (err.code, err.msg, err.args) == (999, "Transfer not allowed", (999, "Transfer not allowed"))
    assert str(err) == "[999] Transfer not allowed"
    assert isinstance(err, CudaDriverError) and not isinstance(err, RuntimeError)
    assert issubclass(LinkerError, RuntimeError)
    with pytest.raises(CudaAPIError, match="Transfer not allowed"):
        raise err


def test_driver_module_stream_class_and_driver_object():
    assert isinstance(cuda.stream(), Stream) and driver_module.Stream is Stream
    assert driver_module._have_nvjitlink() is False
    # kdebug calls no CUDA driver function through numba's driver object: none is there, and a mock set on it
    # (as numba's test_no_transfer_for_device_data sets one) can be removed again
    assert getattr(driver, "cuMemcpyHtoD", None) is None
    with pytest.raises(AttributeError, match="cuMemcpyHtoD"):
        driver.cuMemcpyHtoD
    driver.cuMemcpyHtoD = lambda *a: None
    del driver.cuMemcpyHtoD
    assert getattr(driver, "cuMemcpyHtoD", None) is None


def test_numba_cuda_has_the_c_type_aliases():
    assert cuda.double is cuda.float64 and cuda.intc is cuda.int32 and cuda.uintc is cuda.uint32
    assert cuda.size_t is cuda.uint64 and cuda.ssize_t is cuda.int64 and cuda.longlong is cuda.int64
    assert cuda.void is cuda.none and cuda.byte is cuda.uint8 and cuda.u1 is cuda.uint8


def _run_case(case_class, name):
    result = unittest.TestResult()
    case_class(name).run(result)
    return result


def test_memory_leak_mixin_passes_a_test_that_launches_kernels():
    class Case(support.MemoryLeakMixin, support.TestCase):
        def test_launch(self):
            d = cuda.to_device(np.zeros(8))
            add_one[1, 8](d)
            self.assertPreciseEqual(d.copy_to_host(), np.ones(8))

        def test_disabled(self):
            self.disable_leak_check()

    for name in ("test_launch", "test_disabled"):
        result = _run_case(Case, name)
        assert result.wasSuccessful(), result.errors + result.failures
    stats = support.nrt_allocation_stats()
    assert stats.alloc == stats.free and stats.mi_alloc == stats.mi_free


def test_check_warnings_mixin_counts_the_messages_of_its_category():
    class Case(support.CheckWarningsMixin, unittest.TestCase):
        def test_warned(self):
            with self.check_warnings(["redundant"]):
                warnings.warn("nopython kwarg is redundant", RuntimeWarning)

        def test_not_warned(self):
            with self.check_warnings(["redundant"]):
                pass

        def test_wrong_category(self):
            with self.check_warnings(["redundant"]):
                warnings.warn("nopython kwarg is redundant", UserWarning)

    assert _run_case(Case, "test_warned").wasSuccessful()
    assert len(_run_case(Case, "test_not_warned").failures) == 1
    assert len(_run_case(Case, "test_wrong_category").failures) == 1


def test_run_in_subprocess_returns_output_and_fails_on_a_nonzero_exit():
    out, err = support.run_in_subprocess("import sys; print('out'); print('err', file=sys.stderr)")
    assert (out, err) == ("out\n", "err\n")
    with pytest.raises(AssertionError, match="process failed with code 3: stderr:\nboom"):
        support.run_in_subprocess("import sys; sys.stderr.write('boom'); sys.exit(3)")
    with pytest.raises(subprocess.TimeoutExpired):
        support.run_in_subprocess("import time; time.sleep(5)", timeout=0.5)


def test_launch_configuration_errors_are_numba_value_and_type_errors():
    def noop(x):
        pass

    k = cuda.jit(noop)
    with pytest.raises(ValueError, match=r"griddim must be a sequence of 1, 2 or 3 integers, got \[1, 2, 3, 4\]"):
        k[(1, 2, 3, 4), (5, 6)]
    with pytest.raises(ValueError, match=r"blockdim must be a sequence of 1, 2 or 3 integers, got \[3, 4, 5, 6\]"):
        k[(1, 2), (3, 4, 5, 6)]
    with pytest.raises(TypeError, match=r"griddim must be a sequence of integers, got \[2.0\]") as err:
        k[2.0, 3]
    assert err.value.loc is not None and err.value.loc.line == sys._getframe().f_lineno - 1
    with pytest.raises(TypeError, match=r"blockdim must be a sequence of integers, got \[3.0\]"):
        k[2, 3.0]
    with pytest.raises(ValueError, match="launch configuration was not specified"):
        k(0)
    assert k[[2, 1], [4]].griddim == (2, 1, 1)  # numba takes lists too


def test_jit_lto_without_nvjitlink_is_numbas_runtime_error():
    with pytest.raises(RuntimeError, match="LTO requires nvjitlink") as err:
        cuda.jit(lto=True)
    assert err.value.loc is not None and "leave lto out" in str(err.value)
    cuda.jit(lto=False)  # no error


def test_debug_with_opt_warns_as_numba_decorator_does():
    with pytest.warns(NumbaInvalidConfigWarning, match="not supported by CUDA"):
        cuda.jit(debug=True)  # opt defaults to config.OPT != 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cuda.jit(debug=True, opt=False)
        cuda.jit()
    assert not [w for w in caught if issubclass(w.category, NumbaInvalidConfigWarning)]
    with support.override_config("CUDA_DEBUGINFO_DEFAULT", 1):
        with support.override_config("OPT", config._OptLevel("max")):
            assert config.OPT == 3 and config.OPT.is_opt_max and repr(config.OPT) == "_OptLevel('max')"
            with pytest.warns(NumbaInvalidConfigWarning, match="not supported by CUDA"):
                cuda.jit()
        with support.override_config("OPT", config._OptLevel(0)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cuda.jit()
            assert not caught
    with pytest.warns(NumbaInvalidConfigWarning, match="mutually exclusive"):
        cuda.jit(debug=True, opt=False, lineinfo=True)


def test_cuda_array_interface_gives_and_takes_streams():
    assert cuda.device_array(4).__cuda_array_interface__["stream"] is None
    s = cuda.stream()
    assert int(s.handle) not in (0, 1, 2) and int(s) == s.handle and int(cuda.stream()) != int(s)
    produced = cuda.device_array(4, stream=s)
    assert produced.stream is s and produced.__cuda_array_interface__["stream"] == int(s.handle)
    assert cuda.to_device(np.zeros(3), stream=s).__cuda_array_interface__["stream"] == int(s.handle)
    imported = cuda.as_cuda_array(ForeignArray(produced))
    assert imported.stream.external and int(imported.stream.handle) == int(s.handle)
    assert cuda.as_cuda_array(ForeignArray(cuda.device_array(4))).stream == 0
    with patch.object(Stream, "synchronize", return_value=None) as sync:
        cuda.as_cuda_array(ForeignArray(produced))
    sync.assert_called_once_with()
    with patch.object(Stream, "synchronize", return_value=None) as sync:
        cuda.as_cuda_array(ForeignArray(produced), sync=False)
        with support.override_config("CUDA_ARRAY_INTERFACE_SYNC", False):
            cuda.as_cuda_array(ForeignArray(produced))
    sync.assert_not_called()


def test_kernels_and_ufuncs_take_cuda_array_interface_objects():
    h = np.arange(6.0)
    d = cuda.to_device(h)
    add_one[1, 8](ForeignArray(d))  # the kernel writes the exporter's memory
    np.testing.assert_equal(d.copy_to_host(), h + 1)
    add_one[1, 8](ForeignArray(cuda.device_array(0)))  # a zero-size export: its pointer is 0
    s1, s2 = cuda.stream(), cuda.stream()
    with patch.object(Stream, "synchronize", return_value=None) as sync:
        add_one[1, 8](ForeignArray(cuda.device_array(4, stream=s1)))
        add_one[1, 8](ForeignArray(cuda.device_array(4, stream=s2)))
    sync.assert_has_calls([call(), call()])

    @cuda.vectorize(["f8(f8, f8)"])
    def vadd(a, b):
        return a + b

    np.testing.assert_equal(vadd(ForeignArray(d), 6).copy_to_host(), h + 7)
    out = ForeignArray(cuda.device_array(6))
    np.testing.assert_equal(vadd(h, 1.0, out=out).copy_to_host(), h + 1)


def test_test_data_dir_and_skip_unless_cffi():
    """test_device_func.py imports ``numba.cuda.testing.test_data_dir`` (numba-cuda's: ``tests/data`` beside
    testing.py, here kdebug's, which holds no data files) and ``numba.cuda.tests.support.skip_unless_cffi``
    (numba-cuda's: skip unless cffi is installed)."""
    data = cuda_testing.test_data_dir
    assert isinstance(data, pathlib.Path) and data == pathlib.Path(cuda_testing.__file__).parent / "tests" / "data"
    assert not (data / "jitlink.cu").exists()  # a test that reads it fails with FileNotFoundError

    class Uses(unittest.TestCase):
        @support.skip_unless_cffi
        def test_it(self):
            pass

    skipped = unittest.TextTestRunner(stream=io.StringIO()).run(Uses("test_it")).skipped
    cffi_installed = importlib.util.find_spec("cffi") is not None
    assert [reason for _, reason in skipped] == ([] if cffi_installed else ["requires cffi"])
