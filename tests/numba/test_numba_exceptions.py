"""Exceptions in kernels as numba-cuda 0.30.4 (tests/cudapy/test_exception.py, dispatcher.py's _Kernel.launch,
cpython/numbers.py): with debug=True the launch raises the first exception on the host, prefixed with the
raise's function, file, line and thread; without it the raising thread stops and nothing is reported."""
from __future__ import annotations

import os
import re
import runpy

import numpy as np
import pytest

from conftest import run_kdebug
from kdebug import cuda
from kdebug.errors import CompileError

HERE = os.path.abspath(__file__)


def _line_of(fn, text: str) -> int:
    code = fn.__code__
    import inspect
    lines, first = inspect.getsourcelines(code)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _foo(ary):
    x = cuda.threadIdx.x
    if x == 2:
        ary.shape[-x]


def test_tuple_index_out_of_range_is_indexerror_with_debug_only():
    """numba's test_exception: the unsafe kernel runs, the debug one raises IndexError."""
    unsafe_foo = cuda.jit(_foo)
    safe_foo = cuda.jit(debug=True, opt=False)(_foo)
    unsafe_foo[1, 3](np.array([0, 1]))
    with pytest.raises(IndexError) as cm:
        safe_foo[1, 3](np.array([0, 1]))
    assert "tuple index out of range" in str(cm.value)
    line = _line_of(_foo, "ary.shape[-x]")
    assert str(cm.value) == (f"In function '_foo', file {HERE}, line {line}, tid=[0, 0, 2] ctaid=[0, 0, 0]: "
                             "tuple index out of range")


def test_user_raise():
    @cuda.jit(debug=True, opt=False)
    def foo(do_raise):
        if do_raise:
            raise ValueError

    foo[1, 1](False)
    with pytest.raises(ValueError) as cm:
        foo[1, 1](True)
    assert type(cm.value) is ValueError
    assert re.fullmatch(r"In function 'foo', file .*, line \d+, tid=\[0, 0, 0\] ctaid=\[0, 0, 0\]", str(cm.value))


def test_raise_message_names_the_first_raising_thread_and_others_go_on():
    @cuda.jit(debug=True)
    def k(out):
        i = cuda.grid(1)
        if i % 4 == 3:
            raise KeyError("odd lane", 3)
        out[i] = i

    out = np.full(16, -1.0)
    with pytest.raises(KeyError) as cm:
        k[(2, 1, 1), (8, 1, 1)](out)
    msg, extra = cm.value.args
    assert extra == 3
    assert msg.endswith("tid=[0, 0, 3] ctaid=[0, 0, 0]: odd lane")
    assert f"line {_line_of(k.py_func, 'raise KeyError')}," in msg
    want = np.where(np.arange(16) % 4 == 3, -1.0, np.arange(16.0))  # only the raising threads stopped
    np.testing.assert_array_equal(out, want)


def test_without_debug_the_raising_thread_stops_silently():
    @cuda.jit
    def k(out):
        i = cuda.threadIdx.x
        out[i] = 1
        if i == 1:
            raise ValueError("not seen")
        out[i] = 2

    out = np.zeros(3)
    k[1, 3](out)
    np.testing.assert_array_equal(out, [2, 1, 2])


def test_raise_in_a_device_function_stops_its_thread_and_is_reported():
    """numba-cuda's own test_raise_in_device_function is an expected failure there (its issue #8036):
    kdebug reports the device function's raise, located at it."""
    msg = "Device Function Error"

    @cuda.jit(device=True)
    def f(x):
        if x > 1:
            raise ValueError(msg)
        return x * 10

    @cuda.jit(device=True)
    def g(x):
        return f(x) + 1

    @cuda.jit(debug=True, opt=False)
    def kernel(out):
        i = cuda.threadIdx.x
        out[i] = g(i)

    out = np.zeros(4)
    with pytest.raises(ValueError) as raises:
        kernel[1, 4](out)
    assert msg in str(raises.value)
    assert "In function 'f'," in str(raises.value) and "tid=[0, 0, 2]" in str(raises.value)
    np.testing.assert_array_equal(out, [1, 11, 0, 0])
    out2 = np.zeros(4)
    cuda.jit(kernel.py_func)[1, 4](out2)  # without debug: the same threads stop, nothing is raised
    np.testing.assert_array_equal(out2, [1, 11, 0, 0])


def test_raise_in_a_kernel_with_barriers():
    @cuda.jit(debug=True)
    def k(a):
        i = cuda.threadIdx.x
        a[i] = 1
        cuda.syncthreads()
        if i == 1:
            raise RuntimeError("stop")
        a[i] = 2

    a = np.zeros(3)
    with pytest.raises(RuntimeError, match=r"tid=\[0, 0, 1\] ctaid=\[0, 0, 0\]: stop$"):
        k[1, 3](a)
    np.testing.assert_array_equal(a, [2, 1, 2])


def test_no_zero_division_error():
    """numba's test_no_zero_division_error: inf, and the kernel goes on; integer // and % by zero give 0."""
    @cuda.jit
    def f(r, x, y, n):
        r[0] = y[0] / x[0]
        r[1] = y[0]
        r[2] = 7 // n[0]
        r[3] = 7 % n[0]
        r[4] = y[0] % x[0]

    r = np.zeros(5)
    f[1, 1](r, np.zeros(1), np.ones(1), np.zeros(1, dtype=np.int64))
    assert np.isinf(r[0]) and r[1] == 1 and r[2] == 0 and r[3] == 0 and np.isnan(r[4])


def test_zero_division_error_in_debug():
    """numba's test_zero_division_error_in_debug: ZeroDivisionError, and the thread stops there."""
    @cuda.jit(debug=True, opt=False)
    def f(r, x, y):
        r[0] = y[0] / x[0]
        r[1] = y[0]

    r = np.zeros(2)
    with pytest.raises(ZeroDivisionError, match="division by zero$"):
        f[1, 1](r, np.zeros(1), np.ones(1))
    assert r[0] == 0 and r[1] == 0


@pytest.mark.parametrize("expr, message, value", [
    ("a // b", "integer division by zero", 1), ("a % b", "integer modulo by zero", 1),
    ("a / b", "division by zero", 1.5), ("fa // fb", "division by zero", 1.0), ("fa % fb", "modulo by zero", 1.0),
    ("b ** -a", "0 cannot be raised to a negative power", 0),  # numba: an int to a negative power is 0 (2 ** -3)
])
def test_debug_zero_division_messages_are_numbas(expr, message, value, tmp_path):
    path = tmp_path / "divide.py"
    path.write_text(f"def k(out, a, b, fa, fb):\n    out[0] = {expr}\n")
    ns = runpy.run_path(str(path))
    k = cuda.jit(debug=True)(ns["k"])
    out = np.zeros(1)
    with pytest.raises(ZeroDivisionError) as cm:
        k[1, 1](out, 3, 0, 3.0, 0.0)
    assert str(cm.value).endswith(": " + message)
    k[1, 1](out, 3, 2, 3.0, 2.0)  # a non-zero divisor raises nothing
    assert out[0] == value


def test_out_of_bounds_with_debug_is_indexerror_at_memchecks_location():
    @cuda.jit(debug=True)
    def k(a):
        a[cuda.threadIdx.x] = 1

    with pytest.raises(IndexError) as cm:
        k[1, 4](np.zeros(3))
    line = _line_of(k.py_func, "a[cuda.threadIdx.x] = 1")
    assert str(cm.value) == (f"In function 'k', file {HERE}, line {line}, tid=[0, 0, 3] ctaid=[0, 0, 0]: "
                             "out-of-bounds write of global array 'a' in kernel k: index 3 is outside shape (3,), "
                             "in block (0, 0, 0), thread (3, 0, 0)")


def test_exception_arguments_must_be_constants():
    @cuda.jit(debug=True)
    def k(a):
        raise ValueError(a[0])

    with pytest.raises(CompileError, match="must be a compile-time constant"):
        k[1, 1](np.zeros(1))

    @cuda.jit
    def bare(a):
        raise

    with pytest.raises(CompileError, match="bare raise"):
        bare[1, 1](np.zeros(1))


def test_ptx_target_stops_the_thread_with_exit():
    def k(a):
        if a[0] < 0:
            raise ValueError("negative")
        a[0] = 1

    ptx, _ = cuda.compile_ptx(k, "void(float64[:])")
    assert re.search(r"^\s*exit;", ptx, re.M)


def test_uncaught_kernel_exception_fails_the_run_with_the_location(tmp_path):
    script = tmp_path / "k.py"
    script.write_text("import numpy as np\nfrom numba import cuda\n\n@cuda.jit(debug=True)\ndef k(a):\n"
                      "    if cuda.threadIdx.x == 1:\n        raise ValueError(\"negative input\")\n\n"
                      "k[1, 2](np.zeros(2))\n")
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 1
    assert (f"ValueError: In function 'k', file {script}, line 7, tid=[0, 0, 1] ctaid=[0, 0, 0]: negative input"
            in r.stderr)
    assert f"{script}:7:9: kernel error: ValueError('negative input') raised in kernel k" in r.stdout
