"""Every sample kernel runs as a plain script and checks itself; ``kdebug --headless`` runs one (the headless
report of every sample: tests/command_line/test_option_matrix.py)."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES, run_kdebug

SAMPLE_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SAMPLES, "*.py")))


def test_the_foundation_samples_exist():
    for name in ("saxpy.py", "stencil2d.py", "matmul_naive.py", "device_functions.py"):
        assert name in SAMPLE_FILES


@pytest.mark.parametrize("sample", SAMPLE_FILES)
def test_sample_runs_as_a_plain_script(sample):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("KDEBUG_BACKEND", None)
    r = subprocess.run([sys.executable, os.path.join("sample_kernels", sample)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_kdebug_headless_without_the_run_command():
    """``kdebug --headless SCRIPT`` is ``kdebug run --headless SCRIPT``; every sample's headless run and report
    are checked in tests/command_line/test_option_matrix.py (test_plain_run)."""
    r = run_kdebug("--headless", os.path.join("sample_kernels", "saxpy.py"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert "Launches" in r.stdout and "Diagnostics" in r.stdout
