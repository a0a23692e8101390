"""Every sample kernel under each run option alone and under a few pairs, through the headless face.

None may end in an internal error (a traceback through kdebug's files, an AssertionError, an internal
compiler error), and a sample may end otherwise than in its plain run only where the option's meaning
says so: the toplevel and recursive strategies fail on what they cannot compile (explained), and a
sanitizer fails a run where it reports a finding. (Issue 23: the grad samples under --shuffle-threads
ended in kdebug's own AssertionError.)
"""
from __future__ import annotations

import glob
import os
import re

import pytest

from conftest import ROOT, run_kdebug

SAMPLES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "sample_kernels", "*.py"))
                 + glob.glob(os.path.join(ROOT, "sample_kernels", "sanitizers", "*.py")))
# what each sample does plainly: the sanitizer samples are bugs that the default checks (memcheck,
# synccheck) or their own asserts already catch; every other sample checks itself and passes
PLAIN_STATUS = {s: 1 if "/sanitizers/" in s.replace(os.sep, "/") else 0 for s in SAMPLES}

SAME = "same"  # the option must not change the outcome
SINGLE = {
    "shuffle": (["--shuffle-threads=5"], SAME),
    "no-memcheck": (["--no-memcheck"], SAME),
    "sanitize-all": (["--sanitize=all"], "finding"),
    "toplevel": (["--strategy=toplevel"], "strategy"),
    "recursive": (["--strategy=recursive"], "strategy"),
}
# options whose meaning does not depend on what a sample compiles: on the pair samples only (the suite's time)
SINGLE_ON_PAIR_SAMPLES = {
    "timeout": (["--timeout=120"], SAME),
    "break-all": (["--break=all"], SAME),
}
PAIRS = {
    "shuffle+no-memcheck": (["--shuffle-threads=7", "--no-memcheck"], SAME),
    "sanitize-all+shuffle": (["--sanitize=all", "--shuffle-threads=3"], "finding"),
    "toplevel+no-memcheck": (["--strategy=toplevel", "--no-memcheck"], "strategy"),
    "recursive+timeout": (["--strategy=recursive", "--timeout=120"], "strategy"),
}
# the pairs on samples that reach every part (launches, pointers, grads, barriers, a sanitizer finding)
PAIR_SAMPLES = [s for s in SAMPLES if os.path.basename(s) in (
    "saxpy.py", "reduction.py", "recursive_launch.py", "grad_pointer.py", "matmul_tiled.py", "histogram_race.py")]

INTERNAL = re.compile(r"AssertionError|internal compiler error|this is a bug in kdebug|"
                      r"File \"[^\"]*[/\\]kdebug[/\\][^\"]+\.py\", line \d+")
# what a strategy says when it cannot compile a sample (kdebug/driver/strategies.py, driver.py, derivative.py)
STRATEGY_FAILURE = re.compile(r"missed the finish passes|re-entrant|marker|strateg", re.I)
FINDING = re.compile(r"racecheck|initcheck|memcheck|synccheck|out of bounds|out-of-bounds|barrier", re.I)


def _check(sample: str, flags: list[str], meaning: str) -> None:
    r = run_kdebug("run", "--headless", "--backend", "cpu", *flags, sample, timeout=300)
    out = r.stdout + r.stderr
    assert not INTERNAL.search(out), f"{sample} {flags}: an internal error\n{out[-3000:]}"
    assert r.returncode in (0, 1), f"{sample} {flags}: exit status {r.returncode}\n{out[-3000:]}"
    plain = PLAIN_STATUS[sample]
    if r.returncode == plain:
        return
    assert meaning != SAME, f"{sample} {flags}: exit {r.returncode}, plainly {plain}\n{out[-3000:]}"
    assert r.returncode == 1, f"{sample} {flags}: passes only under the option\n{out[-3000:]}"
    why = STRATEGY_FAILURE if meaning == "strategy" else FINDING
    diagnostics = out[out.find("Diagnostics"):] if "Diagnostics" in out else out
    assert why.search(diagnostics), f"{sample} {flags}: failed without saying why ({meaning})\n{out[-3000:]}"


@pytest.mark.parametrize("sample", SAMPLES)
def test_plain_run(sample):
    """Also every sample's headless report (tests/command_line/test_samples.py runs them as plain scripts)."""
    r = run_kdebug("run", "--headless", "--backend", "cpu", sample, timeout=300)
    out = r.stdout + r.stderr
    assert not INTERNAL.search(out), out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert r.returncode == PLAIN_STATUS[sample], out[-3000:]
    assert "Launches" in r.stdout and "Diagnostics" in r.stdout, out[-3000:]


@pytest.mark.parametrize("option", sorted(SINGLE))
@pytest.mark.parametrize("sample", SAMPLES)
def test_each_option_alone(sample, option):
    flags, meaning = SINGLE[option]
    _check(sample, flags, meaning)


@pytest.mark.parametrize("option", sorted(SINGLE_ON_PAIR_SAMPLES))
@pytest.mark.parametrize("sample", PAIR_SAMPLES)
def test_options_that_never_change_an_outcome(sample, option):
    flags, meaning = SINGLE_ON_PAIR_SAMPLES[option]
    _check(sample, flags, meaning)


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("sample", PAIR_SAMPLES)
def test_pairs_of_options(sample, pair):
    flags, meaning = PAIRS[pair]
    _check(sample, flags, meaning)
