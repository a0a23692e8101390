"""numba's type helpers at numba's paths under --numba (numba-cuda 0.30.4: numba/cuda/np/numpy_support.py,
numba/cuda/types/__init__.py's domains, numba/cuda/core/errors.py and config.py, numba/cuda/utils.py,
numba/cuda/tests/support.py's TestCase), each with numba's values."""
from __future__ import annotations

import textwrap

from conftest import run_kdebug


def run_numba(tmp_path, body: str):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script), timeout=180)


def test_numpy_support_and_domains_at_numbas_paths(tmp_path):
    """test_complex.py (numpy_support.as_dtype of its argument types), test_math.py (from_dtype(dt)[::1]),
    test_record_dtype.py (from_dtype of a record dtype), test_operator.py (from_dtype(np.int8))."""
    r = run_numba(tmp_path, """\
        import numpy as np
        from numba import cuda, types
        from numba.cuda import types as cuda_types
        from numba.np import numpy_support as np_support
        from numba.cuda.np import numpy_support
        from numba.cuda.np.numpy_support import from_dtype, as_dtype
        from numba.cuda.core.errors import TypingError, NumbaNotImplementedError
        from numba.core.errors import TypingError as CoreTypingError

        assert np_support is numpy_support and TypingError is CoreTypingError
        assert from_dtype(np.float32) is types.float32 and from_dtype(np.dtype("i1")) is types.int8
        assert str(from_dtype(np.float64)[::1]) == "float64[::1]"
        assert as_dtype(types.complex64) == np.dtype("complex64") and as_dtype(types.boolean) == np.dtype("?")
        rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
        assert numpy_support.as_struct_dtype(from_dtype(rec)) == rec
        assert str(from_dtype(np.dtype("datetime64[D]"))) == "datetime64[D]"
        try:
            as_dtype(types.float32[:])
        except NumbaNotImplementedError as exc:
            assert "cannot be represented as a NumPy dtype" in str(exc), exc
        else:
            raise AssertionError("as_dtype of an array type")
        try:
            from_dtype(np.dtype(object))
        except NumbaNotImplementedError:
            pass
        else:
            raise AssertionError("from_dtype(object)")
        assert numpy_support.strides_from_shape(shape=(2, 3, 4), itemsize=8, c_contiguous=True,
                                                f_contiguous=False) == (96, 32, 8)
        assert numpy_support.strides_from_shape(shape=(2, 3, 4), itemsize=8, c_contiguous=False,
                                                f_contiguous=True) == (8, 16, 48)
        assert numpy_support.is_contiguous((1, 3, 4), (999, 16, 4), 4)  # outer unit dimensions do not count
        assert not numpy_support.is_contiguous((3, 1, 4), (16, 999, 4), 4)  # inner ones do, in numba's test
        assert not numpy_support.is_contiguous((3, 4), (4, 12), 4) and numpy_support.is_fortran((3, 4), (4, 12), 4)
        assert numpy_support.map_layout(np.zeros((3, 4), order="F")) == "F"
        assert types.signed_domain == frozenset([types.int8, types.int16, types.int32, types.int64])
        assert types.integer_domain == types.signed_domain | types.unsigned_domain
        assert types.number_domain == types.real_domain | types.integer_domain | types.complex_domain
        assert cuda_types.real_domain == {types.float32, types.float64} and types.float16 not in types.real_domain
        assert types.np_complex_domain is types.complex_domain
        print("helpers ok")
    """)
    assert r.returncode == 0 and "helpers ok" in r.stdout, (r.stdout + r.stderr)[-3000:]


def test_config_utils_and_numbas_test_case(tmp_path):
    """CUDATestCase is numba's TestCase: assertPreciseEqual compares type families, dtypes and signed zeros
    (numba/cuda/tests/support.py); override_config sets a config variable for a block; the config
    is numba.cuda.core.config and numba.cuda.config alike."""
    r = run_numba(tmp_path, """\
        import unittest
        import numpy as np
        from numba import cuda
        from numba.cuda import config, HAS_NUMBA
        from numba.cuda.core import config as core_config
        from numba.cuda.core.config import ENABLE_CUDASIM
        from numba.cuda.utils import PYVERSION
        from numba.cuda.testing import CUDATestCase
        from numba.cuda.tests.support import override_config, TestCase

        assert config is core_config and ENABLE_CUDASIM == 0 and HAS_NUMBA is True
        import sys
        assert PYVERSION == sys.version_info[:2]

        class T(CUDATestCase):
            def test_precise(self):
                self.assertPreciseEqual(np.float32(1.5), np.float32(1.5))
                self.assertPreciseEqual(np.arange(3.0), np.arange(3.0))
                self.assertPreciseEqual(float("nan"), float("nan"))
                with self.assertRaises(AssertionError):
                    self.assertPreciseEqual(np.float32(1.0), np.float64(1.0))  # dtypes differ
                with self.assertRaises(AssertionError):
                    self.assertPreciseEqual(0.0, -0.0)  # signed zeros
                with self.assertRaises(AssertionError):
                    self.assertPreciseEqual(1, True)  # bools and ints never mix
                with self.assertRaises(AssertionError):
                    self.assertPreciseEqual(np.zeros(3, np.int32), np.zeros(3, np.int64))
                self.assertPreciseEqual(1.0, 1.0 + 2e-16, prec="double")
                with self.assertRaises(AssertionError):
                    self.assertPreciseEqual(1.0, 1.0 + 1e-15, prec="double")
                self.assertEqual(config.CUDA_WARN_ON_IMPLICIT_COPY, 0)  # CUDATestCase's setUp

            def test_override(self):
                with override_config("CUDA_LOW_OCCUPANCY_WARNINGS", 7):
                    self.assertEqual(config.CUDA_LOW_OCCUPANCY_WARNINGS, 7)
                self.assertEqual(config.CUDA_LOW_OCCUPANCY_WARNINGS, 0)

        result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))
        assert issubclass(CUDATestCase, TestCase)
        print("ran", result.testsRun, "ok", result.wasSuccessful())
    """)
    assert r.returncode == 0 and "ran 2 ok True" in r.stdout, (r.stdout + r.stderr)[-3000:]


def test_a_missing_module_under_a_stand_in_package_names_the_numba_module(tmp_path):
    r = run_numba(tmp_path, """\
        try:
            import numba.cuda.core.untyped_passes
        except ModuleNotFoundError as exc:
            print("missing:", exc)
    """)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("missing:"))
    assert "numba.cuda.core.untyped_passes" in line and "kdebug." not in line.split("(")[0]
