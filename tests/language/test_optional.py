"""numba's Optional (issue #48): a device function that returns a value on one path and None on another.

Each expectation is numba's behaviour, from numba 0.68's and numba-cuda 0.30.4's sources:
- numba/core/types/misc.py, ``Optional.unify``: T with None (a ``return None``, a bare ``return``, the end
  of the body) unifies to ``Optional(T)``; T with Optional(U) to Optional(unify(T, U)).
- numba/core/typing/builtins.py, ``CmpOpIs``/``CmpOpIsNot``: ``x is None`` is a boolean for any x;
  numba/core/optional.py, ``optional_is_none``: an Optional's valid bit; numba/cuda/cpython/builtins.py,
  ``generic_is``: False for operands of different types (``1.5 is None``), ``always_return_true_impl``
  for ``None is None``.
- numba/core/optional.py, ``optional_to_any``: where the value is needed, Optional(T) is cast to T with a
  check that raises ``TypeError("expected T, got None")``; in CUDA device code a raise returns an error
  code (numba/cuda/core/callconv.py, ``MinimalCallConv.return_user_exc``): the thread stops, and only with
  ``debug=True`` does the launch raise it on the host (numba/cuda/dispatcher.py, ``_Kernel.launch``).
- numba/cuda/datamodel/cuda_models.py, ``OptionalModel``: the value is ``{data: T, valid: i1}``.
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.lang import types as T
from kdebug.targets import ptx as P

PTXAS = P.cuda_tool("ptxas")


@cuda.jit(device=True)
def maybe(x):
    if x > 0:
        return x * 2.0
    return None


@cuda.jit(device=True)
def passed_on(x):  # returns the callee's Optional as it is
    return maybe(x)


@cuda.jit(device=True)
def falls_off(x):  # no return on the other path: None (numba's implicit return None)
    if x > 0:
        return 1


@cuda.jit(device=True)
def early_exit(x):
    r = passed_on(x)
    if r is None:
        return 0.0
    return r + 1.0  # r narrowed: it is not None here


XS = np.array([1.0, -2.0, 3.0, 0.0])


def test_is_none_and_is_not_none_narrow_the_branches():
    @cuda.jit
    def k(xs, out, flags):
        i = cuda.grid(1)
        if i < xs.size:
            r = maybe(xs[i])
            if r is None:
                flags[i] = 1
                out[i] = -1.0
            else:
                out[i] = r
            if r is not None:
                flags[i] += 10
            out[i] += r if r is not None else 100.0

    out, flags = np.zeros(4), np.zeros(4, np.int64)
    k[1, 4](XS, out, flags)
    np.testing.assert_array_equal(out, [4.0, 99.0, 12.0, 99.0])
    np.testing.assert_array_equal(flags, [10, 1, 10, 1])


def test_optional_returned_through_functions_and_implicit_none():
    @cuda.jit
    def k(xs, a, b):
        i = cuda.grid(1)
        if i < xs.size:
            a[i] = early_exit(xs[i])
            f = falls_off(xs[i])
            b[i] = 5 if f is None else 7

    a, b = np.zeros(4), np.zeros(4)
    k[1, 4](XS, a, b)
    np.testing.assert_array_equal(a, [3.0, 0.0, 7.0, 0.0])
    np.testing.assert_array_equal(b, [7, 5, 7, 5])
    assert cuda.compile_ptx(passed_on.py_func, "(float64,)", device=True)[1] == T.Optional(T.float64)
    assert cuda.compile_ptx(falls_off.py_func, "(float64,)", device=True)[1] == T.Optional(T.int64)


def test_is_none_of_a_value_that_is_never_none():
    @cuda.jit
    def k(out):
        x = 1.5
        out[0] = x is None  # generic_is: different types, False
        out[1] = x is not None
        out[2] = None is None  # always_return_true_impl

    out = np.full(3, 7.0)
    k[1, 1](out)
    np.testing.assert_array_equal(out, [0.0, 1.0, 1.0])


def _none_used_as_value(xs, out):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = maybe(xs[i]) + 1.0  # optional_to_any: TypeError when None


def test_none_where_a_value_is_needed_stops_the_thread():
    """Without debug=True: the threads whose value is None stop there (nothing written), the others go on."""
    out = np.full(4, -7.0)
    cuda.jit(_none_used_as_value)[1, 4](XS, out)
    np.testing.assert_array_equal(out, [3.0, -7.0, 7.0, -7.0])


def test_none_where_a_value_is_needed_raises_typeerror_with_debug():
    out = np.full(4, -7.0)
    with pytest.raises(TypeError) as info:
        cuda.jit(debug=True, opt=False)(_none_used_as_value)[1, 4](XS, out)
    code = _none_used_as_value.__code__
    line = code.co_firstlineno + 3
    # numba's message; kdebug prefixes the cast's own location (numba-cuda passes none for this raise)
    assert re.fullmatch(rf"In function '_none_used_as_value', file {re.escape(code.co_filename)}, line {line}, "
                        r"tid=\[0, 0, 1\] ctaid=\[0, 0, 0\]: expected float64, got None", str(info.value))


def test_unsupported_optional_uses_are_located_errors():
    @cuda.jit(device=True)
    def twice(x):
        return 2 * x

    @cuda.jit
    def passes(xs, out):
        r = maybe(xs[0])
        out[0] = twice(r)

    with pytest.raises(CompileError) as info:
        passes[1, 1](XS, np.zeros(1))
    err = info.value
    assert "passing OptionalType(float64) (a value that may be None) to device function twice" in str(err)
    assert err.loc.line == passes.py_func.__code__.co_firstlineno + 3
    assert "r is None" in err.hint

    @cuda.jit
    def updates(xs, out):
        r = maybe(xs[0])
        r += 1.0
        out[0] = r

    with pytest.raises(CompileError, match=r"cannot update 'r' in place: it is OptionalType\(float64\)") as info:
        updates[1, 1](XS, np.zeros(1))
    assert info.value.loc.line == updates.py_func.__code__.co_firstlineno + 3


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH and CUDA_HOME has none")
@pytest.mark.parametrize("debug", [False, True])
def test_ptx_assembles(tmp_path, debug):
    def k(xs, out):
        i = cuda.grid(1)
        if i < xs.size:
            r = early_exit(xs[i])
            out[i] = r
            v = maybe(xs[i])
            if v is not None:
                out[i] += v
            out[i] += maybe(xs[i])

    ptx, _ = cuda.compile_ptx(k, "void(float64[:], float64[:])", debug=debug, opt=not debug)
    src = tmp_path / "m.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "m.o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
