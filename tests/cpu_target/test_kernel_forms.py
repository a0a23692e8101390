"""The kernel-form corpus (benchmarks/kernel_forms/): every form of the block reduction, the tiled matmul and
the Hillis-Steele scan gives numpy's numbers (small sizes), with memcheck on and off, and each takes the region
form; a failed check in a form reports the thread, index and line the coroutines report. Timings are
benchmarks/bench_kernel_forms.py's, never asserted here."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from conftest import ROOT
from kdebug.errors import KernelRuntimeError
from kdebug.lang import types as T
from kdebug.session import live
from kdebug.targets.cpu.forms.regions import cut

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import kernel_forms  # noqa: E402
from kernel_forms import reduction_forms  # noqa: E402

FORMS = kernel_forms.all_forms()


def _check(form, got, ref):
    if form.rtol:
        np.testing.assert_allclose(got, ref, rtol=form.rtol, atol=1e-3 * max(1.0, float(np.abs(ref).max())))
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("memcheck", [True, False], ids=["memcheck", "no-memcheck"])
@pytest.mark.parametrize("form", FORMS, ids=[f"{f.kernel}-{f.name}" for f in FORMS])
def test_every_form_gives_numpys_numbers(form, memcheck):
    live.set_session(live.Session(backend="cpu", snapshots=False, tiered=False, memcheck=memcheck))
    for seed, n in ((1, form.sizes[0]), (2, form.sizes[0] // 3 + 1 if form.kernel != "matmul" else 32)):
        inputs = form.inputs(n, seed)
        _check(form, form.run(*inputs), form.reference(*inputs))


def test_every_form_takes_the_region_form_and_says_how_its_loops_run():
    """No form falls back to coroutines; the regions snapshot's header says how memcheck stops and how the
    loops run, with their lines: CUDA by Example's grid-stride `while` in rounds, as its range
    (kdebug/frontend/grid_stride.py; a `while` that is not exactly its range: tests/cpu_target/test_regions_rounds.py)."""
    s = live.Session(backend="cpu", snapshots=False, tiered=False)
    live.set_session(s)
    x = np.zeros(600, np.float32)
    for form in FORMS:
        mod = sys.modules[f"kernel_forms.{form.kernel}_forms"]
        inputs = form.inputs(form.sizes[0], 0)
        if form.kernel == "matmul":
            args = (inputs[0], inputs[1], inputs[0])
        elif form.kernel == "reduction":
            args = (inputs[0], inputs[0][:4])
        else:
            args = (inputs[0], inputs[0], inputs[0][:4])
        rec = s.compile_kernel(getattr(mod, form.name), tuple(T.typeof(a) for a in args)).record
        assert rec.form == ("regions", None), (form.name, rec.form)
        rk = rec.target_state.regions[rec.entry]
        assert rk.fresh, (form.name, rk.fresh_why)  # its failed checks end the thread's step
    rec = s.compile_kernel(reduction_forms.cuda_by_example, (T.typeof(x), T.typeof(x))).record
    text = cut.describe(rec.target_state.regions[rec.entry], rec.target_state.cuts[rec.entry], rec.entry)
    line = reduction_forms.cuda_by_example.py_func.__code__.co_firstlineno if hasattr(
        reduction_forms.cuda_by_example, "py_func") else None
    assert "memcheck: a failed check ends its thread's step" in text, text
    assert "runs thread by thread" not in text, text
    if line is not None:  # the `while tid < x.size` of the form, by its file's line
        assert f"the loop of line {line + 6} runs in rounds (its iterations" in text, text


def test_a_failed_check_in_a_form_names_the_first_thread_as_the_coroutines_do():
    """A block reduction reading past its shared array (the tree's first step with a bound too big): the report
    names the same thread, index and line in the region form and as coroutines."""
    x = np.ones(512, np.float32)
    found = {}
    for regions in (True, False):
        live.set_session(live.Session(backend="cpu", snapshots=False, tiered=False, regions=regions))
        partial = np.zeros(2, np.float32)
        with pytest.raises(KernelRuntimeError) as exc:
            _too_far[2, 256](x, partial)
        found[regions] = (str(exc.value), str(getattr(exc.value, "loc", "")))
    assert found[True] == found[False], found
    assert "index 300" in found[True][0] and "thread (44, 0, 0)" in found[True][0], found
    assert "block (0, 0, 0)" in found[True][0], found


from kdebug import cuda  # noqa: E402
from kdebug.cuda import float32  # noqa: E402


@cuda.jit
def _too_far(x, partial):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    step = 256
    if t < step:
        s[t] += s[t + step] if t >= 44 else 0.0  # thread 44 is the first to read past the end: s[300]
    cuda.syncthreads()
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]
