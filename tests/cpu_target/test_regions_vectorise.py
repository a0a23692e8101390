"""The region form's thread loops are vectorised: the reduction's regions run as SIMD loops over threads.

Compiled only, never run, so any x86-64 host checks both pinned CPU models (docs/testing.md "Tests on other CPU
models"): the vectoriser's choices depend on the model the code is made for, so the test pins it and
looks for vector arithmetic on the kernel's own values rather than naming instructions.
"""
from __future__ import annotations

import re
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest

from conftest import ROOT
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live
from kdebug.targets.cpu.target import emit_pipeline

sys.path.insert(0, f"{ROOT}/sample_kernels")
import reduction  # noqa: E402


def _launcher_body(model: str, memcheck: bool, kernel=reduction.block_sum) -> str:
    """The optimised launcher body of a reduction (the thread loops, the step function inlined)."""
    previous = seam.current()
    session = live.Session(backend="cpu", passes_on_demand=True, snapshots=True, regions=True, memcheck=memcheck, host_cpu=model)
    try:
        x = np.zeros(4, np.float32)
        compiled = session.compile_kernel(kernel, (T.typeof(x), T.typeof(x)))
        assert compiled.record.form[0] == "regions", compiled.record.form
        mod = llvm.parse_assembly(compiled.record.ir_after_finish())
        emit_pipeline(session.target.tm, mod, session.target.speed_level)
    finally:
        live.set_session(previous)
    text = str(mod)
    start = text.index(f"define internal fastcc void @{kernel.__name__}")
    body = [m.start() for m in re.finditer(r"^define ", text, re.M) if m.start() > start and ".grid.body" in
            text[m.start():text.index("\n", m.start())]]
    assert body, "no launcher body in the optimised module"
    end = text.find("\n}\n", body[0])
    return text[body[0]:end]


# x86-64-v3 (AVX2) and v4 (AVX-512) have masked loads and stores, which the branches inside the regions
# (``if t < step``, ``x[i] if i < x.size else 0``) need to become straight-line vector code; on SSE4.2
# (x86-64-v2) LLVM keeps these loops scalar.
@pytest.mark.parametrize("model", ["x86-64-v3", "x86-64-v4"])
def test_the_reductions_thread_loops_are_vectorised(model):
    body = _launcher_body(model, memcheck=False)
    # the tree's step s[t] += s[t + step]: a vector add of the shared array's elements (t is the thread
    # loop's induction variable, recomputed rather than read from a column)
    assert re.search(r"= fadd <\d+ x float>", body), f"the tree step's add is not vectorised for {model}"
    # masked loads: region 0's s[t] = x[i] if i < x.size else 0 too
    assert re.search(r"<\d+ x float> @llvm\.masked\.load", body), f"region 0's x[i] is not vectorised for {model}"


@pytest.mark.parametrize("model", ["x86-64-v3", "x86-64-v4"])
def test_an_index_made_of_the_thread_registers_loads_contiguous_elements(model):
    """Harris's reduction #4 loads ``x[blockIdx.x * (blockDim.x * 2) + threadIdx.x]`` and the element a block
    further: the registers are loaded with their ranges (never negative), so the index needs no wraparound
    and the thread loop loads consecutive elements with masked vector loads. Without the ranges LLVM saw a
    select on the index's sign and gathered every element (0.89 µs a block of 512 elements against 0.53)."""
    sys.path.insert(0, f"{ROOT}/benchmarks")
    from kernel_forms import reduction_forms
    body = _launcher_body(model, memcheck=False, kernel=reduction_forms.harris_two_loads)
    assert re.search(r"<\d+ x float> @llvm\.masked\.load", body), f"x[i] is not a masked vector load for {model}"
    assert "masked.gather" not in body, f"x[i] is gathered for {model}"
