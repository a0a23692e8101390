"""numba's dispatcher API on kdebug kernels (numba-cuda 0.30.4's CUDADispatcher, dispatcher.py)."""
from __future__ import annotations

import io

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import types
from kdebug.errors import CompileError, LaunchError
from kdebug.targets.ptx import cuda_tool


@cuda.jit
def axpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        t = a * x[i]
        r[i] = t + y[i]


def _launch_both():
    for dt in (np.float32, np.float64):
        x = np.arange(8, dtype=dt)
        r = np.zeros_like(x)
        axpy[1, 8](r, dt(2), x, x)
        np.testing.assert_equal(r, 3 * x)


def test_overloads_and_signatures_are_the_compiled_argument_types():
    _launch_both()
    f32 = (types.float32[::1], types.float32, types.float32[::1], types.float32[::1])
    f64 = (types.float64[::1], types.float64, types.float64[::1], types.float64[::1])
    assert set(axpy.signatures) == {f32, f64} and set(axpy.overloads) == {f32, f64}
    assert axpy.py_func.__name__ == "axpy" and axpy.py_func.__code__.co_argcount == 4  # the Python function
    assert axpy.overloads[f32].signature.args == f32
    assert axpy.definitions.keys() == axpy.overloads.keys()


def test_inspect_llvm_and_inspect_asm_per_signature_and_for_all():
    _launch_both()
    f32 = (types.float32[::1], types.float32, types.float32[::1], types.float32[::1])
    llvm = axpy.inspect_llvm(f32)
    assert isinstance(llvm, str) and "define" in llvm and "fadd float" in llvm
    ptx = axpy.inspect_asm(f32)  # PTX, from the PTX side of the driver on the CPU backend
    # a * x[i] + y[i] is one fma, as NVVM contracts it (numba-cuda's default -fma=1)
    assert ".version" in ptx and ".entry axpy" in ptx and "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx
    every = axpy.inspect_asm()
    assert set(every) == set(axpy.signatures) and every[f32] == ptx


def test_inspect_types_prints_the_typed_source_line_by_line():
    _launch_both()
    out = io.StringIO()
    axpy.inspect_types(file=out)
    text = out.getvalue()
    assert text.count("-" * 80) == 2 and text.count("=" * 80) == 2
    assert "axpy (float32[::1], float32, float32[::1], float32[::1])" in text
    assert "        t = a * x[i]\n        #   t = float32" in text and "#   t = float64" in text
    assert "#   i = int64" in text


@pytest.mark.skipif(cuda_tool("ptxas") is None, reason="ptxas (CUDA toolkit) is not installed here")
def test_resource_figures_come_from_ptxas():
    _launch_both()
    regs = axpy.get_regs_per_thread()
    assert set(regs) == set(axpy.signatures) and all(isinstance(v, int) and 0 < v < 256 for v in regs.values())
    sig = types.void(types.float32[::1], types.float32, types.float32[::1], types.float32[::1])
    assert axpy.get_regs_per_thread(sig) == regs[sig.args]
    assert axpy.get_shared_mem_per_block(sig) == 0 and axpy.get_local_mem_per_thread(sig) == 0
    assert 0 < axpy.get_max_threads_per_block(sig) <= 1024


def test_specialize_compiles_once_for_those_types():
    x = np.arange(4, dtype=np.float32)
    r = np.zeros_like(x)
    special = axpy.specialize(r, np.float32(1), x, x)
    assert special.specialized and not axpy.specialized
    assert axpy.specialize(r, np.float32(1), x, x) is special  # cached in .specializations
    special[1, 4](r, np.float32(1), x, x)
    np.testing.assert_equal(r, 2 * x)
    with pytest.raises(LaunchError, match="was compiled for"):
        special[1, 4](np.zeros(4), 1.0, np.zeros(4), np.zeros(4))
    with pytest.raises(RuntimeError, match="already specialized"):
        special.specialize(r, np.float32(1), x, x)


def test_max_cooperative_grid_blocks_of_the_emulated_sm90():
    @cuda.jit("void(int32[::1])")
    def k(a):
        a[0] = 1

    sig = (types.int32[::1],)
    # 132 SMs, each at most 32 blocks and 2048 threads (H100's limits, the emulated device)
    assert k.overloads[sig].max_cooperative_grid_blocks(32) == 132 * 32
    assert k.overloads[sig].max_cooperative_grid_blocks(1024) == 132 * 2
    assert k.overloads[sig].max_cooperative_grid_blocks((16, 16)) == 132 * 8


def test_extensions_prepare_each_argument_before_the_launch():
    calls = []

    class Doubler:
        def prepare_args(self, ty, val, stream, retr):
            if isinstance(val, np.ndarray):
                retr.append(lambda: calls.append("cleanup"))
                return ty, val
            return ty, val * 2

    @cuda.jit(extensions=[Doubler()])
    def fill(a, v):
        a[0] = v

    a = np.zeros(1)
    fill[1, 1](a, 2.5)
    assert a[0] == 5.0 and calls == ["cleanup"] and len(fill.extensions) == 1


def test_keywords_that_change_nothing_here_say_so_once(tmp_path):
    from conftest import run_kdebug
    script = tmp_path / "kw.py"
    script.write_text("from kdebug import cuda\n"
                      "@cuda.jit(cache=True, lineinfo=True, fastmath=True)\n"
                      "def a(x):\n    x[0] = 1\n"
                      "@cuda.jit(cache=True, max_registers=32)\n"
                      "def b(x):\n    x[0] = 1\n")
    r = run_kdebug("run", "--headless", str(script))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("cuda.jit(cache=True) has no effect under kdebug") == 1
    assert r.stdout.count("cuda.jit(max_registers=32) has no effect under kdebug") == 1
    assert "lineinfo" not in r.stdout and "fastmath" not in r.stdout


def test_unknown_keywords_and_boundscheck_fail_as_in_numba():
    with pytest.raises(CompileError, match="cuda.jit has no keyword 'fast_math'"):
        cuda.jit(fast_math=True)
    with pytest.raises(NotImplementedError, match="bounds checking is not supported for CUDA"):
        cuda.jit(boundscheck=True)
    with pytest.raises(ValueError, match="link keyword invalid for device function"):
        cuda.jit(device=True, link=["f.cu"])
