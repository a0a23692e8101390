"""numba-cuda 0.30.4's documentation examples, unchanged, under ``kdebug run --numba --headless --backend cpu``.

The examples (tests/numba/numba_doc_examples/, extracted by scripts/extract_numba_doc_examples.py) check
their own results with numba's expected values; every test method in them must run and pass, none
may be skipped. Those that need what kdebug does not have yet are strict xfails naming it.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re

import pytest

from conftest import ROOT, run_kdebug

HERE = os.path.join(ROOT, "tests", "numba", "numba_doc_examples")
RUNNER = os.path.join(HERE, "run_doc_example.py")

# example -> number of test methods it holds (a run must report exactly these)
EXAMPLES = {
    "test_cg": 1, "test_cpointer": 1, "test_cpu_gpu_compat": 1, "test_globals": 2, "test_laplace": 1,
    "test_matmul": 1, "test_montecarlo": 1, "test_random": 1, "test_reduction": 1, "test_sessionize": 1,
    "test_ufunc": 1, "test_vecadd": 1,
}
NEEDS: dict[str, str] = {  # example -> what kdebug lacks for it (a strict xfail)
}


def _param(name):
    marks = [pytest.mark.xfail(strict=True, reason=NEEDS[name])] if name in NEEDS else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(n) for n in EXAMPLES])
def test_doc_example_runs_with_numbas_results(name):
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", RUNNER, name, timeout=300)
    summary = re.search(rf"doc example {name}: ran=(\d+) failures=(\d+) errors=(\d+) skipped=(\d+)", r.stdout)
    assert summary, r.stdout + r.stderr
    ran, failures, errors, skipped = map(int, summary.groups())
    assert (failures, errors, skipped) == (0, 0, 0), r.stdout[-4000:] + r.stderr[-4000:]
    assert ran == EXAMPLES[name], r.stdout
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]


def test_every_example_of_the_wheel_is_here_unchanged():
    """The fixtures are numba-cuda's files byte for byte: their hashes are those of the wheel's RECORD."""
    with open(os.path.join(HERE, "ORIGIN.md")) as f:
        recorded = dict(re.findall(r"\| `(test_\w+\.py)` \| `(sha256=[\w-]+)` \|", f.read()))
    assert sorted(recorded) == sorted(n + ".py" for n in EXAMPLES)
    for base, digest in recorded.items():
        with open(os.path.join(HERE, base), "rb") as f:
            data = f.read()
        got = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert got == digest, base
    with open(os.path.join(HERE, "LICENSE")) as f:
        assert "Redistribution and use in source and binary forms" in f.read()  # BSD-2-Clause


def test_the_runner_fails_a_failing_example(tmp_path):
    """The harness can fail: an example whose assertion fails exits 1 with failures=1."""
    bad = tmp_path / "test_zz_failing_probe.py"
    bad.write_text("import unittest\n\ndef test_probe():\n    assert 1 == 2\n\n"
                   "class TestSkips(unittest.TestCase):\n    def test_ok(self):\n        pass\n")
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", RUNNER, str(bad))
    assert r.returncode == 1
    assert "doc example test_zz_failing_probe: ran=2 failures=1 errors=0 skipped=0" in r.stdout
