"""The PTX target's emit inlines each kernel body into its entry with a short pass list, not a second -O3
(optimize ran -O3 already): the PTX it gives is a second -O3's, up to the order of instructions."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest

from kdebug import cuda
from kdebug.targets import base
from kdebug.targets.ptx import target as PT


@cuda.jit(device=True)
def _clamp(v, lo, hi):
    return min(max(v, lo), hi)


def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def clamped_sum(x, out, n):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(n):
        acc += _clamp(x[(i + k) % x.size], -1.0, 1.0)
    if i < out.size:
        out[i] = acc


KERNELS = [(saxpy, "void(float32, float32[::1], float32[::1], float32[::1])"),
           (clamped_sum, "void(float64[::1], float64[::1], int64)")]


def _emitted_modules(monkeypatch, fn, sig):
    """(module text before emit's pipeline, target machine, compile_ptx's PTX, -O3 runs during emit)."""
    seen = {}
    o3_in_emit = []
    real_emit, real_pipeline = PT.PtxTarget.emit, PT.run_pipeline

    def emit(self, mod, jobs, compilation):
        seen["ir"], seen["tm"], seen["in_emit"] = str(mod), self.tm, True
        try:
            return real_emit(self, mod, jobs, compilation)
        finally:
            seen["in_emit"] = False

    def pipeline(*a, **k):
        if seen.get("in_emit"):
            o3_in_emit.append(a)
        return real_pipeline(*a, **k)

    monkeypatch.setattr(PT.PtxTarget, "emit", emit)
    monkeypatch.setattr(PT, "run_pipeline", pipeline)
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    return seen["ir"], seen["tm"], ptx, o3_in_emit


def _instructions(ptx: str) -> list[str]:
    """The PTX's instruction lines without LLVM's process-wide call-sequence numbers."""
    return [re.sub(r"callseq \d+", "callseq", line) for line in ptx.splitlines()]


@pytest.mark.parametrize("fn, sig", KERNELS, ids=[k[0].__name__ for k in KERNELS])
def test_emit_runs_the_short_pass_list_and_gives_a_second_O3s_ptx(monkeypatch, fn, sig):
    ir, tm, ptx, o3_in_emit = _emitted_modules(monkeypatch, fn, sig)
    assert o3_in_emit == []  # optimize's -O3 is the only one
    again = llvm.parse_assembly(ir)
    base.run_passes(tm, again, PT.POST_INLINE_PASSES)
    assert _instructions(tm.emit_assembly(again)) == _instructions(ptx)  # what compile_ptx returned
    o3 = llvm.parse_assembly(ir)
    base.run_pipeline(tm, o3, 3)
    reference = _instructions(tm.emit_assembly(o3))
    assert len(reference) == len(_instructions(ptx))
    if fn is saxpy:
        assert reference == _instructions(ptx)
    else:  # the same instructions, perhaps in another order or with commuted operands
        words = lambda lines: sorted(w for line in lines for w in re.findall(r"[a-z]+(?:\.[a-z0-9]+)+", line))  # noqa: E731
        assert words(reference) == words(_instructions(ptx))
