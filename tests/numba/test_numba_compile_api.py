"""numba-cuda 0.30.4's host-side compile and ufunc API at numba's paths, with numba's values and messages:
``Vectorized.reduce`` (tests/cudapy/test_vectorize.py: test_reduce, test_reduce_async), the gufunc argument
and option checks (tests/cudapy/test_gufunc.py: test_nopython_flag, test_invalid_flags, test_duplicated_output,
test_bad_return_type, test_incorrect_number_of_pos_args), ``numba.cuda.compiler.compile`` /
``compile_ptx`` (tests/cudapy/test_compiler.py: test_compile_to_invalid_error, test_compile_ptx_for_current_device,
test_compile_for_current_device) and ``cuda.declare_device`` (tests/cudapy/test_device_func.py TestDeclareDevice:
test_declare_device_signature, test_declare_device_string, test_bad_declare_device_tuple,
test_bad_declare_device_string), whose calls compile for the ptx target and are a located error on the CPU
backend."""
from __future__ import annotations

import re

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import compiler
from kdebug.errors import CompileError
from kdebug.lang.types import float32, float64, int32, int64, void

SIGNATURES = ["int32(int32, int32)", "int64(int64, int64)", "float32(float32, float32)", "float64(float64, float64)"]
INPUT_SIZES = (8, 100, 2**10 + 1)  # test_vectorize.py's input_sizes


@pytest.fixture(scope="module")
def vector_add():
    @cuda.vectorize(SIGNATURES)
    def vector_add(a, b):
        return a + b
    return vector_add


def test_reduce(vector_add):
    for n in INPUT_SIZES:
        x = np.arange(n, dtype=np.int32)
        actual = vector_add.reduce(x)
        np.testing.assert_allclose(np.add.reduce(x), actual)
        assert actual.dtype == np.int32  # the input's dtype, as numba's general reduce


def test_reduce_async(vector_add):
    stream = cuda.stream()
    for n in INPUT_SIZES:
        x = np.arange(n, dtype=np.int32)
        dx = cuda.to_device(x, stream)
        actual = vector_add.reduce(dx, stream=stream)
        np.testing.assert_allclose(np.add.reduce(x), actual)
        assert actual.dtype == np.int32


def test_reduce_edges(vector_add):
    """vectorizers.py: one element is returned as it is; none is numba's TypeError."""
    assert vector_add.reduce(np.array([7.5])) == 7.5
    with pytest.raises(TypeError, match="Reduction on an empty array."):
        vector_add.reduce(np.zeros(0, np.float64))


def _foo(A, B):
    pass


def test_nopython_flag_and_invalid_flags():
    cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", nopython=True)(_foo)
    with pytest.raises(TypeError) as raises:
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", nopython=False)(_foo)
    assert str(raises.value) == "nopython flag must be True"
    with pytest.raises(TypeError) as raises:
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", what1=True, ever2=False)(_foo)
    head = "The following target options are not supported:"
    msg = str(raises.value)
    assert msg.startswith(head)
    assert {i.strip("'\" ") for i in msg[len(head):].strip().split(",")} == {"what1", "ever2"}


def test_duplicated_output():
    @cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)")
    def foo(inp, out):
        pass

    inp = out = np.zeros(10, dtype=np.float32)
    with pytest.raises(ValueError) as raises:
        foo(inp, out, out=out)
    assert str(raises.value) == "cannot specify argument 'out' as both positional and keyword"


def test_bad_return_type():
    with pytest.raises(TypeError) as te:
        @cuda.guvectorize([int32(int32[:], int32[:])], "(m)->(m)")
        def f(x, y):
            pass
    assert "guvectorized functions cannot return values" in str(te.value)
    assert "specifies int32 return type" in str(te.value)


def test_incorrect_number_of_pos_args():
    @cuda.guvectorize([(int32[:], int32[:], int32[:])], "(m),(m)->(m)")
    def f(x, y, z):
        pass

    arr = np.arange(5)
    for args, got in [((arr,), "Got 1 positional argument."), ((arr,) * 4, "Got 4 positional arguments.")]:
        with pytest.raises(TypeError) as te:
            f(*args)
        msg = str(te.value)
        assert "gufunc accepts 2 positional arguments" in msg and "or 3 positional arguments" in msg and got in msg


def f_module(x, y):
    return x + y


def test_compiler_module():
    """numba.cuda.compiler holds compile, compile_ptx and the current-device forms (sm_90 without a GPU)."""
    ptx, resty = compiler.compile(f_module, (int32, int32), device=True)
    assert ".visible .func" in ptx and resty == int64
    for fn in (compiler.compile_ptx_for_current_device, compiler.compile_for_current_device):
        ptx, _ = fn(f_module, (int32, int32), device=True)
        assert ".target sm_90" in ptx
    with pytest.raises(NotImplementedError, match="Unsupported output type: illegal"):
        compiler.compile(f_module, int32(int32, int32), device=True, output="illegal")
    with pytest.raises(ValueError, match="Can only designate forced inlining in LTO-IR"):
        compiler.compile(f_module, int32(int32, int32), device=True, forceinline=True)
    with pytest.raises(CompileError, match="LTO-IR comes from NVVM"):
        compiler.compile(f_module, int32(int32, int32), device=True, output="ltoir")
    assert cuda.compile(f_module, (int32, int32))[0] == compiler.compile(f_module, (int32, int32))[0]


def test_declare_device_api():
    for sig in (int32(float32[:]), "int32(float32[:])"):
        f1 = cuda.declare_device("f1", sig)
        assert f1.name == "f1" and f1.sig.args == (float32[:],) and f1.sig.return_type == int32
    for bad in ((float32[:],), "(float32[:],)"):
        with pytest.raises(TypeError, match="Return type"):
            cuda.declare_device("f1", bad)
    with pytest.raises(NotImplementedError, match="Unsupported ABI: fortran"):
        cuda.declare_device("f1", "int32(int32)", abi="fortran")


times2 = cuda.declare_device("times2", "int32(int32)", link="times2.cu")
scale = cuda.declare_device("scale", "float64(float64, int32)", abi="c")


def call_times2(r, x):
    i = cuda.grid(1)
    if i < len(r):
        r[i] = times2(x[i])


def call_scale(x):
    return scale(x, 3)


def test_declared_functions_in_ptx():
    """numba's ABI (an int status, the result through a pointer) and the C ABI, as .extern functions."""
    ptx, _ = cuda.compile_ptx(call_times2, (int32[:], int32[:]))
    assert ".extern .func  (.param .b32 func_retval0) times2" in ptx
    assert re.search(r"call(\.uni)?\s[^;]*\btimes2\b", ptx)  # the kernel calls it
    ptx, resty = cuda.compile_ptx(call_scale, (float64,), device=True)
    assert ".extern .func  (.param .b64 func_retval0) scale" in ptx and resty == float64


def test_declared_function_on_the_cpu_backend_is_located():
    k = cuda.jit(call_times2)
    with pytest.raises(CompileError) as err:
        k[1, 4](np.zeros(4, np.int32), np.arange(4, dtype=np.int32))
    msg = str(err.value)
    assert "times2 is declared with cuda.declare_device (link: times2.cu)" in msg and "cpu target" in msg
    assert err.value.loc.line == call_times2.__code__.co_firstlineno + 3


def test_inspect_lto_ptx_errors():
    """codegen.py's get_lto_ptx: without lto=True numba's 'LTO is not enabled'; lto=True itself is numba's
    decorator error for a machine without nvJitLink (kdebug does not drive it: _have_nvjitlink() is False)."""
    def k(r):
        r[0] = 1

    plain = cuda.jit("void(int32[:])")(k)
    with pytest.raises(RuntimeError, match="LTO is not enabled"):
        plain.inspect_lto_ptx()
    with pytest.raises(RuntimeError, match="LTO requires nvjitlink") as err:
        cuda.jit("void(int32[:])", lto=True)
    assert err.value.loc is not None and "leave lto out" in str(err.value)
