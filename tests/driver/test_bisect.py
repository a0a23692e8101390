"""kdebug bisect: a kernel's optimisation pipelines cut after pass N (LLVM's opt-bisect limit), and the
binary search for the first pass after which a property holds. Each build is a debuggee child run;
tests that name a pass from optimised IR pin the CPU model (docs/testing.md "Tests on other CPU models")."""
from __future__ import annotations

import pytest

from kdebug.reduce.bisect import Bisector, parse_bisect_property
from kdebug.session.options import RunOptions
from conftest import run_kdebug

PINNED = {"KDEBUG_HOST_CPU": "x86-64-v3"}  # AVX2: the vectoriser's choices are those of this model

INNER_LOOP = '''
import numpy as np
from kdebug import cuda

@cuda.jit
def scale_rows(out, a, n):
    i = cuda.grid(1)
    if i < out.shape[0]:
        for j in range(n):
            out[i, j] = a[i, j] * 2.0 + 1.0

a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
out = np.zeros_like(a)
scale_rows[2, 32](out, a, 32)
print(out[1, :4])
'''

FAST_DIVISION = '''
import numpy as np
from kdebug import cuda

@cuda.jit(fastmath=True)
def divide(out, x, s):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] / s

x = np.linspace(0.1, 100.0, 256).astype(np.float32)
out = np.zeros_like(x)
divide[2, 128](out, x, np.float32(3.7))
print(" ".join(repr(float(v)) for v in out))
'''


def script(tmp_path, text: str, name: str = "kernel.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_bisect_names_the_loop_vectoriser(tmp_path):
    # bounds checks in the inner loop keep it scalar: the vectoriser's case is the unchecked loop
    res = run_kdebug("bisect", script(tmp_path, INNER_LOOP), "--kernel", "scale_rows", "--until", "ir:<8 x float>",
                     "--backend", "cpu", "--no-memcheck", env=PINNED, timeout=240)
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("first pass: #") and " LoopVectorizePass (optimize, scale_rows" in first, res.stdout
    diff = res.stdout.split("\n\n", 1)[1]
    assert any(line.startswith("+") and "<8 x float>" in line for line in diff.splitlines())
    assert not any(line.startswith("-") and "<8 x float>" in line for line in diff.splitlines())


def test_bisect_output_differs_names_the_pass_that_multiplies_by_the_reciprocal(tmp_path):
    res = run_kdebug("bisect", script(tmp_path, FAST_DIVISION), "--kernel", "divide", "--until", "output-differs",
                     "--backend", "cpu", env=PINNED, timeout=240)
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("first pass: #"), res.stdout
    diff = res.stdout.split("\n\n", 1)[1].splitlines()
    # that pass's own change: the division by s goes, a multiplication by a reciprocal 1/s comes
    assert any(line.startswith("-") and "fdiv fast float %" in line for line in diff), res.stdout
    assert any(line.startswith("+") and "fmul fast float" in line for line in diff), res.stdout
    assert any(line.startswith("+") and "fdiv fast float 1.0" in line for line in diff), res.stdout


def test_a_property_that_never_holds_says_so(tmp_path):
    res = run_kdebug("bisect", script(tmp_path, FAST_DIVISION), "--kernel", "divide", "--until", "ir:no_such_thing",
                     "--backend", "cpu", timeout=240)
    assert res.returncode == 1
    assert res.stdout.startswith("no pass makes ir:no_such_thing hold: neither the unoptimised build nor the "
                                 "fully optimised one shows it"), res.stdout


def test_a_property_of_the_unoptimised_build_says_so(tmp_path):
    res = run_kdebug("bisect", script(tmp_path, FAST_DIVISION), "--kernel", "divide", "--until", "ir:fdiv fast",
                     "--backend", "cpu", timeout=240)
    assert res.returncode == 1
    assert res.stdout.startswith("no pass makes ir:fdiv fast hold: it holds already in the build with no "
                                 "optimisation passes"), res.stdout


def test_a_cut_after_n_passes_runs_exactly_n(tmp_path):
    path = script(tmp_path, FAST_DIVISION)
    bisector = Bisector(RunOptions(script=path, backend="cpu"), "divide", parse_bisect_property("ir:x"), 120,
                        warm=False)
    try:
        survey = bisector.build(-1)
        total = len(survey.passes)
        assert total > 100 and all(run[3] for run in survey.passes)
        assert [run[0] for run in survey.passes] == list(range(1, total + 1))  # numbered over both phases
        assert {run[4] for run in survey.passes} == {"optimize", "emit"}
        # class names from the survey's headers, for every pass but the inliner's advisor (LLVM prints no IR after it)
        assert all(run[5] for run in survey.passes if run[1] != "inliner-ml-advisor-release")
        for limit in (0, 7, total // 2):
            build = bisector.build(limit)
            assert sum(run[3] for run in build.passes) == limit  # only the first N passes run ...
            assert all(run[3] for run in build.passes[:limit])
            # ... and they are the survey's first N (what later passes meet depends on what ran)
            assert [run[1:3] for run in build.passes[:limit]] == [run[1:3] for run in survey.passes[:limit]]
            assert build.outcome.status == "ok", build.outcome.stderr
            assert "BISECT" not in build.outcome.stderr  # LLVM's gate lines never reach the user
        # no optimisation passes: the division stays a division
        assert "fdiv fast float %" in bisector.build(0).text
    finally:
        bisector.close()


@pytest.mark.parametrize("text, problem", [
    ("ir", "give a regular expression"), ("ir:(", "not a regular expression"), ("bogus", "unknown property"),
    ("output-differs:x", "takes no argument")])
def test_bad_properties_are_usage_errors(tmp_path, text, problem):
    res = run_kdebug("bisect", script(tmp_path, FAST_DIVISION), "--kernel", "divide", "--until", text, timeout=60)
    assert res.returncode == 2 and problem in res.stderr, res.stderr


def test_a_kernel_the_script_never_compiles_is_named(tmp_path):
    res = run_kdebug("bisect", script(tmp_path, FAST_DIVISION), "--kernel", "nope", "--until", "output-differs",
                     "--backend", "cpu", timeout=120)
    assert res.returncode == 1
    assert "kernel 'nope'" in res.stderr and "divide" in res.stderr, res.stderr
