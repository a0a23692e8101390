"""print() of tuples and dim3s, captured CUDA-Array-Interface objects, declared device functions, as numba-cuda
0.30.4 has them (its tests/cudapy/test_print.py, test_device_array_capture.py, test_device_func.py).

- print: numba-cuda's printimpl.py writes a tuple as Python does (``(1, ((2, 4), 3.000000), (4,), 5)``,
  ``(1,)``: floats as ``%f``), ``cuda.threadIdx`` as ``(%d, %d, %d)``, and more than 32 items warns
  (NumbaWarning) and prints the raw format string, as CUDA's vprintf cannot format more.
- test_print.py runs its kernels in ``subprocess.run([sys.executable, "-c", code])``: under
  ``kdebug run --numba`` that Python imports numba as the script does (kdebug's sitecustomize).
- A kernel or device function may use a global or closure object that exports ``__cuda_array_interface__``
  (numba's typeof makes it the device array it describes): reads and writes reach its memory.
- A device function declared with a signature casts a call's numbers to it (no new compilation, as
  numba's dispatcher with compilation disabled); launching a device function is numba's RuntimeError;
  ``compile_device(args).fndesc.mangled_name`` is the symbol ``inspect_llvm(args)`` defines; a device
  function's ``inspect_sass`` is numba's RuntimeError; a ``numba.jit`` function with a signature is not
  compiled for the device (numba: "using cpu function on device but its compilation is disabled").
- ``cuda.CUSource`` & co. (numba.cuda.cudadrv.linkable_code) hold code to link from memory.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import run_kdebug
from kdebug import cuda
from kdebug.cuda import int32
from kdebug.cuda.cudadrv import linkable_code
from kdebug.errors import NumbaWarning, TypingError
from kdebug.lang import numba_compat


def _printed(capsys, kernel, config, *args) -> list[str]:
    capsys.readouterr()
    kernel[config](*args)
    cuda.synchronize()
    return capsys.readouterr().out.splitlines()


# ---- print ---------------------------------------------------------------------------------------
def test_print_writes_tuples_as_python_does_with_floats_as_printf_f(capsys):
    @cuda.jit
    def print_tuple(tup):
        print(tup)

    assert _printed(capsys, print_tuple, (1, 1), (1, 2, 3, 4, 5)) == ["(1, 2, 3, 4, 5)"]
    assert _printed(capsys, print_tuple, (1, 1), (1, ((2, 4), 3.0), (4,), 5)) == ["(1, ((2, 4), 3.000000), (4,), 5)"]
    assert _printed(capsys, print_tuple, (1, 1), (1,)) == ["(1,)"]


def test_print_of_a_tuple_among_other_items_keeps_the_spaces_between_items(capsys):
    @cuda.jit
    def k(x):
        print("x", (x, x > 0), -1)

    assert _printed(capsys, k, (1, 1), 2.5) == ["x (2.500000, True) -1"]


def test_print_of_thread_idx_is_its_three_coordinates(capsys):
    @cuda.jit
    def printdim3():
        print(cuda.threadIdx)

    lines = _printed(capsys, printdim3, (1, (2, 2, 2)))
    assert sorted(lines) == [str(i) for i in np.ndindex(2, 2, 2)]  # numba's test_dim3


def test_print_of_more_than_32_items_warns_and_prints_its_format_string(capsys):
    @cuda.jit
    def print_too_many(r):
        print(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
              r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20],
              r[21], r[22], r[23], r[24], r[25], r[26], r[27], r[28], r[29], r[30],
              r[31], 0.5, "text")

    with pytest.warns(NumbaWarning, match="CUDA print\\(\\) cannot print more than 32 items. The raw format "
                                          "string will be emitted by the kernel instead."):
        lines = _printed(capsys, print_too_many, (1, 1), np.arange(32))
    assert lines == [" ".join(["%lld"] * 32 + ["%f", "%s"])]  # numba's formats, '%' printed as such


def test_print_of_an_array_is_a_located_error():
    @cuda.jit
    def k(a):
        print((1, a))

    with pytest.raises(TypingError, match="prints numbers, booleans and string constants, not float64"):
        k[1, 1](np.zeros(2))


def test_print_of_a_tuple_compiles_to_one_vprintf_for_the_gpu():
    def k(x):
        print((x, 2), cuda.threadIdx)

    ptx, _ = cuda.compile_ptx(k, "void(float32)")
    assert ptx.count("call.uni") == 1 and "vprintf" in ptx
    fmt = b"(%f, %lld) (%lld, %lld, %lld)\n"  # the format string, as PTX's byte list (its NUL left implicit)
    assert "{" + ", ".join(map(str, fmt)) + "}" in ptx


def test_a_python_the_script_starts_imports_numba_as_the_script_does(tmp_path):
    script = tmp_path / "starts_python.py"
    script.write_text(textwrap.dedent('''\
        import subprocess, sys
        code = """from numba import cuda

        @cuda.jit
        def hello():
            print(cuda.grid(1), (1.5, True))

        hello[1, 2]()
        cuda.synchronize()
        """
        cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        print("child:", cp.returncode, cp.stdout.split("\\n"), cp.stderr[-300:])
        '''))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stderr
    assert "child: 0 ['0 (1.500000, True)', '1 (1.500000, True)', ''] " in r.stdout, r.stdout


def test_only_a_run_with_numba_changes_what_pythons_it_starts_import(tmp_path):
    script = tmp_path / "no_numba.py"
    script.write_text("import os\nprint('site' in os.environ.get('PYTHONPATH', ''), os.environ.get('KDEBUG_NUMBA'))\n")
    r = run_kdebug("run", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "False None"


# ---- captured arrays -------------------------------------------------------------------------------
class _Exporter:
    """An object of another library: only its ``__cuda_array_interface__`` (numba's ForeignArray)."""

    def __init__(self, arr) -> None:
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


def test_a_captured_cuda_array_interface_object_is_read_through_a_device_function():
    host = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)
    captured = _Exporter(cuda.to_device(host))

    @cuda.jit(device=True)
    def read(i):
        return captured[i] * 2.0

    @cuda.jit
    def kernel(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = read(i)

    out = cuda.device_array(5, dtype=np.float32)
    kernel[1, 5](out)
    np.testing.assert_array_equal(out.copy_to_host(), host * 2)


def test_a_kernel_writes_to_a_captured_cuda_array_interface_object_s_memory():
    inner = cuda.to_device(np.zeros((2, 3), dtype=np.int32))
    captured = _Exporter(inner)

    @cuda.jit
    def kernel():
        i, j = cuda.grid(2)
        if i < 2 and j < 3:
            captured[i, j] = i * 10 + j

    kernel[1, (2, 3)]()
    np.testing.assert_array_equal(inner.copy_to_host(), [[0, 1, 2], [10, 11, 12]])


# ---- device functions ------------------------------------------------------------------------------
def test_a_device_function_with_a_signature_casts_a_call_s_numbers():
    @cuda.jit("int32(int32, int32, int32, int32)", device=True)
    def rgba(r, g, b, a):
        return ((r & 0xFF) << 16) | ((g & 0xFF) << 8) | ((b & 0xFF) << 0) | ((a & 0xFF) << 24)

    @cuda.jit
    def rgba_caller(x, channels):
        x[0] = rgba(channels[0], channels[1], channels[2], channels[3])

    x = cuda.device_array(1, dtype=np.int32)
    rgba_caller[1, 1](x, cuda.to_device(np.asarray([1.0, 2.0, 3.0, 4.0], dtype=np.float32)))
    assert x[0] == 0x04010203
    assert rgba.signatures == [(int32, int32, int32, int32)]  # no float32 specialisation


def test_a_device_function_with_signatures_uses_the_exact_match_first():
    @cuda.jit(["int32(int32)", "float32(float32)"], device=True)
    def double(v):
        return v * 2

    @cuda.jit
    def k(out, a, b):
        out[0] = double(a)
        out[1] = double(b)

    out = np.zeros(2, dtype=np.float64)
    k[1, 1](out, np.int32(7), np.float32(3.75))
    assert out.tolist() == [14.0, 7.5]  # the float32 one for the float32, not a cast to the first's int32


def test_launching_a_device_function_is_numba_s_runtime_error():
    @cuda.jit(device=True)
    def f():
        pass

    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        f[1, 1]()


def test_compile_device_names_the_symbol_inspect_llvm_and_inspect_asm_define():
    @cuda.jit(device=True)
    def foo(x, y):
        return x + y

    args = (int32, int32)
    fname = foo.compile_device(args).fndesc.mangled_name
    assert "foo" in fname
    assert fname in foo.inspect_llvm(args)
    assert ".func" in foo.inspect_asm(args)


def test_inspect_sass_of_a_device_function_is_numba_s_runtime_error():
    @cuda.jit(device=True)
    def foo(x, y):
        return x + y

    with pytest.raises(RuntimeError, match="Cannot inspect SASS of a device function"):
        foo.inspect_sass((int32, int32))


def test_a_cpu_jit_function_with_a_signature_is_not_compiled_for_the_device():
    from kdebug.numba.core.dispatcher import jit

    @jit("(i4, i4)")
    def add(a, b):
        return a + b

    @jit
    def sub(a, b):
        return a - b

    @cuda.jit
    def k(ary):
        ary[0] = add(ary[0], 1)

    @cuda.jit
    def k2(ary):
        ary[0] = sub(ary[0], 1)

    ary = np.arange(3, dtype=np.int64)
    with pytest.raises(TypingError, match="Untyped global name 'add':.*using cpu function on device"):
        k[1, 1](ary)
    k2[1, 1](ary)  # without a signature numba.jit's function compiles for the device
    assert ary[0] == -1


# ---- linkable code ---------------------------------------------------------------------------------
def test_linkable_code_holds_data_and_names_as_numba_s(tmp_path):
    src = cuda.CUSource('extern "C" __device__ int f(int *out) { *out = 1; return 0; }')
    assert src.name == "<unnamed-cu>" and src.kind == "cu" and "__device__" in src.data
    assert cuda.PTXSource(b"", name="mine").name == "mine"
    path = tmp_path / "times2.cu"
    path.write_text("// cu")
    loaded = linkable_code.LinkableCode.from_path(str(path))
    assert isinstance(loaded, cuda.CUSource) and loaded.name == "times2" and loaded.data == "// cu"
    assert linkable_code.LinkableCode.from_path_or_obj(src) is src
    with pytest.raises(ValueError, match="Unknown extension: .txt"):
        linkable_code.LinkableCode.from_path(str(tmp_path / "x.txt"))
    with pytest.raises(TypeError, match="setup_callback must be callable"):
        cuda.Cubin(b"", setup_callback=1)


def test_the_sitecustomize_installs_nothing_without_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "KDEBUG_NUMBA"}
    env["PYTHONPATH"] = numba_compat.SITE_FOLDER
    cp = subprocess.run([sys.executable, "-c", "import sys; print(any(type(f).__name__ == 'NumbaFinder' "
                         "for f in sys.meta_path))"], capture_output=True, text=True, timeout=60, env=env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == "False"
