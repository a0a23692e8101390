"""numba.cuda.tests.support: what numba-cuda's own tests import from it: ``TestCase`` (with
``assertPreciseEqual``, numba's type-family-aware comparison), ``override_config``, the output capture
helpers, ``run_in_subprocess``, ``linux_only``/``windows_only``/``skip_unless_cffi``, ``CheckWarningsMixin`` and
``MemoryLeakMixin`` (NRT's allocation counts: kernels allocate nothing here, so they stay equal).

The comparison methods of ``TestCase`` below are numba-cuda 0.30.4's (``numba/cuda/tests/support.py``),
unchanged, so that a numba test compares kdebug's results exactly as numba compares its own:
Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES, BSD-2-Clause (the licence is in
tests/numba/numba_doc_examples/LICENSE)."""
from __future__ import annotations

import cmath
import collections
import contextlib
import enum
import gc
import importlib.util
import io
import math
import functools
import subprocess
import sys
import unittest
import warnings
from functools import cached_property

import numpy as np

from kdebug.lang.missing import missing_name
from kdebug.numba import errors
from kdebug.numba.core import config


linux_only = unittest.skipIf(not sys.platform.startswith("linux"), "linux only test")
# numba-cuda's (its cffi_utils.SUPPORTED: cffi is installed); a test it lets run that passes cffi objects to
# kernels then fails as kdebug fails it
skip_unless_cffi = unittest.skipUnless(importlib.util.find_spec("cffi") is not None, "requires cffi")
windows_only = unittest.skipIf(not sys.platform.startswith("win"), "Windows only test")


def run_in_subprocess(code, flags=(), env=None, timeout=30):
    """numba's: run ``code`` in a new Python (``python *flags -c code``; ``env`` and ``timeout`` as
    ``subprocess.run`` takes them) and return its ``(stdout, stderr)``; a non-zero exit is an AssertionError
    with its stderr. Under ``kdebug run --numba`` that Python's ``import numba.cuda`` is kdebug's too, in the
    script's mode and on its backend (``numba_compat.reach_child_pythons``), where ``env`` is this process's."""
    try:
        proc = subprocess.run([sys.executable, *flags, "-c", code], env=env, check=True, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.CalledProcessError as e:
        raise AssertionError(f"process failed with code {e.returncode:d}: stderr:\n{e.stderr}\n") from e
    return proc.stdout, proc.stderr


def captured_stdout():
    """Capture sys.stdout: ``with captured_stdout() as out: print("x")`` then ``out.getvalue()``."""
    return contextlib.redirect_stdout(io.StringIO())


def captured_stderr():
    return contextlib.redirect_stderr(io.StringIO())


@contextlib.contextmanager
def override_config(name, value):
    """Set numba config variable ``name`` to ``value`` for a block (it must exist in numba's config)."""
    old_value = getattr(config, name)
    setattr(config, name, value)
    try:
        yield
    finally:
        setattr(config, name, old_value)


class TestCase(unittest.TestCase):
    longMessage = True

    @staticmethod
    def run_test_in_subprocess(maybefunc=None, timeout=60, envvars=None):
        """numba's decorator reruns the test in a fresh interpreter through numba's own test runner
        (``python -m numba.runtests``); kdebug has no such runner, so the test skips and says so."""
        def wrapper(func):
            @functools.wraps(func)
            def inner(self, *args, **kwargs):
                self.skipTest("run_test_in_subprocess: numba reruns this test through its own test runner in a "
                              "new interpreter (python -m numba.runtests), which kdebug --numba does not provide")
            return inner
        return wrapper(maybefunc) if callable(maybefunc) else wrapper

    @cached_property
    def random(self):
        """A random state yielding the same numbers for any test case (numba's)."""
        return np.random.RandomState(42)

    def reset_module_warnings(self, module):
        if isinstance(module, str):
            module = sys.modules[module]
        try:
            del module.__warningregistry__
        except AttributeError:
            pass

    @contextlib.contextmanager
    def assertTypingError(self):
        """
        A context manager that asserts the enclosed code block fails
        compiling in nopython mode.
        """
        _accepted_errors = (
            errors.LoweringError,
            errors.TypingError,
            TypeError,
            NotImplementedError,
        )
        with self.assertRaises(_accepted_errors) as cm:
            yield cm

    _bool_types = (bool, np.bool_)
    _exact_typesets = [
        _bool_types,
        (int,),
        (str,),
        (np.integer,),
        (bytes, np.bytes_),
    ]
    _approx_typesets = [(float,), (complex,), (np.inexact)]
    _sequence_typesets = [(tuple, list)]
    _float_types = (float, np.floating)
    _complex_types = (complex, np.complexfloating)

    def _detect_family(self, numeric_object):
        """
        This function returns a string description of the type family
        that the object in question belongs to.  Possible return values
        are: "exact", "complex", "approximate", "sequence", and "unknown"
        """
        if isinstance(numeric_object, np.ndarray):
            return "ndarray"

        if isinstance(numeric_object, enum.Enum):
            return "enum"

        for tp in self._sequence_typesets:
            if isinstance(numeric_object, tp):
                return "sequence"

        for tp in self._exact_typesets:
            if isinstance(numeric_object, tp):
                return "exact"

        for tp in self._complex_types:
            if isinstance(numeric_object, tp):
                return "complex"

        for tp in self._approx_typesets:
            if isinstance(numeric_object, tp):
                return "approximate"

        return "unknown"

    def _fix_dtype(self, dtype):
        """
        Fix the given *dtype* for comparison.
        """
        # Under 64-bit Windows, Numpy may return either int32 or int64
        # arrays depending on the function.
        if (
            sys.platform == "win32"
            and sys.maxsize > 2**32
            and dtype == np.dtype("int32")
        ):
            return np.dtype("int64")
        else:
            return dtype

    def _fix_strides(self, arr):
        """
        Return the strides of the given array, fixed for comparison.
        Strides for 0- or 1-sized dimensions are ignored.
        """
        if arr.size == 0:
            return [0] * arr.ndim
        else:
            return [
                stride / arr.itemsize
                for (stride, shape) in zip(arr.strides, arr.shape)
                if shape > 1
            ]

    def assertStridesEqual(self, first, second):
        """
        Test that two arrays have the same shape and strides.
        """
        self.assertEqual(first.shape, second.shape, "shapes differ")
        self.assertEqual(first.itemsize, second.itemsize, "itemsizes differ")
        self.assertEqual(
            self._fix_strides(first),
            self._fix_strides(second),
            "strides differ",
        )

    def assertPreciseEqual(
        self,
        first,
        second,
        prec="exact",
        ulps=1,
        msg=None,
        ignore_sign_on_zero=False,
        abs_tol=None,
    ):
        """
        Versatile equality testing function with more built-in checks than
        standard assertEqual().

        For arrays, test that layout, dtype, shape are identical, and
        recursively call assertPreciseEqual() on the contents.

        For other sequences, recursively call assertPreciseEqual() on
        the contents.

        For scalars, test that two scalars or have similar types and are
        equal up to a computed precision.
        If the scalars are instances of exact types or if *prec* is
        'exact', they are compared exactly.
        If the scalars are instances of inexact types (float, complex)
        and *prec* is not 'exact', then the number of significant bits
        is computed according to the value of *prec*: 53 bits if *prec*
        is 'double', 24 bits if *prec* is single.  This number of bits
        can be lowered by raising the *ulps* value.
        ignore_sign_on_zero can be set to True if zeros are to be considered
        equal regardless of their sign bit.
        abs_tol if this is set to a float value its value is used in the
        following. If, however, this is set to the string "eps" then machine
        precision of the type(first) is used in the following instead. This
        kwarg is used to check if the absolute difference in value between first
        and second is less than the value set, if so the numbers being compared
        are considered equal. (This is to handle small numbers typically of
        magnitude less than machine precision).

        Any value of *prec* other than 'exact', 'single' or 'double'
        will raise an error.
        """
        try:
            self._assertPreciseEqual(
                first, second, prec, ulps, msg, ignore_sign_on_zero, abs_tol
            )
        except AssertionError as exc:
            failure_msg = str(exc)
            # Fall off of the 'except' scope to avoid Python 3 exception
            # chaining.
        else:
            return
        # Decorate the failure message with more information
        self.fail("when comparing %s and %s: %s" % (first, second, failure_msg))

    def _assertPreciseEqual(
        self,
        first,
        second,
        prec="exact",
        ulps=1,
        msg=None,
        ignore_sign_on_zero=False,
        abs_tol=None,
    ):
        """Recursive workhorse for assertPreciseEqual()."""

        def _assertNumberEqual(first, second, delta=None):
            if (
                delta is None
                or first == second == 0.0
                or math.isinf(first)
                or math.isinf(second)
            ):
                self.assertEqual(first, second, msg=msg)
                # For signed zeros
                if not ignore_sign_on_zero:
                    try:
                        if math.copysign(1, first) != math.copysign(1, second):
                            self.fail(
                                self._formatMessage(
                                    msg, "%s != %s" % (first, second)
                                )
                            )
                    except TypeError:
                        pass
            else:
                self.assertAlmostEqual(first, second, delta=delta, msg=msg)

        first_family = self._detect_family(first)
        second_family = self._detect_family(second)

        assertion_message = "Type Family mismatch. (%s != %s)" % (
            first_family,
            second_family,
        )
        if msg:
            assertion_message += ": %s" % (msg,)
        self.assertEqual(first_family, second_family, msg=assertion_message)

        # We now know they are in the same comparison family
        compare_family = first_family

        # For recognized sequences, recurse
        if compare_family == "ndarray":
            dtype = self._fix_dtype(first.dtype)
            self.assertEqual(dtype, self._fix_dtype(second.dtype))
            self.assertEqual(
                first.ndim, second.ndim, "different number of dimensions"
            )
            self.assertEqual(first.shape, second.shape, "different shapes")
            self.assertEqual(
                first.flags.writeable,
                second.flags.writeable,
                "different mutability",
            )
            # itemsize is already checked by the dtype test above
            self.assertEqual(
                self._fix_strides(first),
                self._fix_strides(second),
                "different strides",
            )
            if first.dtype != dtype:
                first = first.astype(dtype)
            if second.dtype != dtype:
                second = second.astype(dtype)
            for a, b in zip(first.flat, second.flat):
                self._assertPreciseEqual(
                    a, b, prec, ulps, msg, ignore_sign_on_zero, abs_tol
                )
            return

        elif compare_family == "sequence":
            self.assertEqual(len(first), len(second), msg=msg)
            for a, b in zip(first, second):
                self._assertPreciseEqual(
                    a, b, prec, ulps, msg, ignore_sign_on_zero, abs_tol
                )
            return

        elif compare_family == "exact":
            exact_comparison = True

        elif compare_family in ["complex", "approximate"]:
            exact_comparison = False

        elif compare_family == "enum":
            self.assertIs(first.__class__, second.__class__)
            self._assertPreciseEqual(
                first.value,
                second.value,
                prec,
                ulps,
                msg,
                ignore_sign_on_zero,
                abs_tol,
            )
            return

        elif compare_family == "unknown":
            # Assume these are non-numeric types: we will fall back
            # on regular unittest comparison.
            self.assertIs(first.__class__, second.__class__)
            exact_comparison = True

        else:
            assert 0, "unexpected family"

        # If a Numpy scalar, check the dtype is exactly the same too
        # (required for datetime64 and timedelta64).
        if hasattr(first, "dtype") and hasattr(second, "dtype"):
            self.assertEqual(first.dtype, second.dtype)

        # Mixing bools and non-bools should always fail
        if isinstance(first, self._bool_types) != isinstance(
            second, self._bool_types
        ):
            assertion_message = "Mismatching return types (%s vs. %s)" % (
                first.__class__,
                second.__class__,
            )
            if msg:
                assertion_message += ": %s" % (msg,)
            self.fail(assertion_message)

        try:
            if cmath.isnan(first) and cmath.isnan(second):
                # The NaNs will compare unequal, skip regular comparison
                return
        except TypeError:
            # Not floats.
            pass

        # if absolute comparison is set, use it
        if abs_tol is not None:
            if abs_tol == "eps":
                rtol = np.finfo(type(first)).eps
            elif isinstance(abs_tol, float):
                rtol = abs_tol
            else:
                raise ValueError(
                    'abs_tol is not "eps" or a float, found %s' % abs_tol
                )
            if abs(first - second) < rtol:
                return

        exact_comparison = exact_comparison or prec == "exact"

        if not exact_comparison and prec != "exact":
            if prec == "single":
                bits = 24
            elif prec == "double":
                bits = 53
            else:
                raise ValueError("unsupported precision %r" % (prec,))
            k = 2 ** (ulps - bits - 1)
            delta = k * (abs(first) + abs(second))
        else:
            delta = None
        if isinstance(first, self._complex_types):
            _assertNumberEqual(first.real, second.real, delta)
            _assertNumberEqual(first.imag, second.imag, delta)
        elif isinstance(first, (np.timedelta64, np.datetime64)):
            # Since Np 1.16 NaT == NaT is False, so special comparison needed
            if np.isnat(first):
                self.assertEqual(np.isnat(first), np.isnat(second))
            else:
                _assertNumberEqual(first, second, delta)
        else:
            _assertNumberEqual(first, second, delta)


NRTAllocationStats = collections.namedtuple("NRTAllocationStats", "alloc free mi_alloc mi_free")


def nrt_allocation_stats() -> NRTAllocationStats:
    """numba's ``rtsys.get_allocation_stats()``: what the NRT allocated and freed in kernels (``np.empty``,
    array expressions). kdebug's kernels cannot allocate (a located compile error says so), so nothing is
    ever allocated or freed through an NRT here: all four counts are 0."""
    return NRTAllocationStats(0, 0, 0, 0)


class EnableNRTStatsMixin:
    """numba's: turns NRT's statistics counters on for the test (kdebug's counts are always there)."""

    def setUp(self):
        pass

    def tearDown(self):
        pass


class MemoryLeak:
    """numba's: the test fails when NRT allocated more than it freed while it ran."""

    __enable_leak_check = True

    def memory_leak_setup(self):
        gc.collect()  # NRT-backed objects in a dead reference cycle
        self.__init_stats = nrt_allocation_stats()

    def memory_leak_teardown(self):
        if self.__enable_leak_check:
            self.assert_no_memory_leak()

    def assert_no_memory_leak(self):
        old = self.__init_stats
        new = nrt_allocation_stats()
        self.assertEqual(new.alloc - old.alloc, new.free - old.free)
        self.assertEqual(new.mi_alloc - old.mi_alloc, new.mi_free - old.mi_free)

    def disable_leak_check(self):
        self.__enable_leak_check = False


class MemoryLeakMixin(EnableNRTStatsMixin, MemoryLeak):
    def setUp(self):
        super().setUp()
        self.memory_leak_setup()

    def tearDown(self):
        gc.collect()
        self.memory_leak_teardown()
        super().tearDown()


class CheckWarningsMixin:
    """numba's ``check_warnings(messages, category)``: the block warns once for each of ``messages`` (a
    substring of the warning's text), each of ``category``."""

    @contextlib.contextmanager
    def check_warnings(self, messages, category=RuntimeWarning):
        with warnings.catch_warnings(record=True) as catch:
            warnings.simplefilter("always")
            yield
        found = 0
        for w in catch:
            for m in messages:
                if m in str(w.message):
                    self.assertEqual(w.category, category)
                    found += 1
        self.assertEqual(found, len(messages))


def __getattr__(name):
    return missing_name(__name__, name, 2)
