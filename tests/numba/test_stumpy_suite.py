"""stumpy's GPU test suite, unchanged, under the command docs/guide/numba.md gives a project's CI:

    kdebug run --numba -m pytest tests/test_gpu_*.py

stumpy 1.14.1's sdist (PyPI; its tests/ folder) is downloaded into a scratch folder, with scipy and pandas
where this Python lacks them; the test skips, saying why, where they cannot be had (no network). Its 8
GPU test files, 134 tests, all pass (numba-cuda's simulator ran them before it was removed)."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

STUMPY = "stumpy==1.14.1"
GPU_TESTS = 134  # in tests/test_gpu_*.py of stumpy 1.14.1
# stumpy's imports beyond numpy and numba (which kdebug stands for): its own and its tests'
DEPENDENCIES = ("scipy", "pandas", "python-dateutil", "six", "tzdata", "pytz")


def pip(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)


def missing_modules() -> list[str]:
    code = "import importlib.util as u; print(' '.join(m for m in ('scipy', 'pandas') if u.find_spec(m) is None))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return r.stdout.split()


@pytest.fixture(scope="module")
def stumpy_source(tmp_path_factory):
    """(stumpy's unpacked sdist, a folder of its dependencies to put on PYTHONPATH or None)."""
    root = tmp_path_factory.mktemp("stumpy")
    try:
        r = pip("download", STUMPY, "--no-deps", "--no-binary", ":all:", "-d", str(root), timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip download {STUMPY} timed out (no network?)")
    archives = glob.glob(str(root / "stumpy-*.tar.gz"))
    if r.returncode != 0 or not archives:
        pytest.skip(f"cannot download {STUMPY}'s sdist: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(root, filter="data")
    source = str(root / os.path.basename(archives[0])[:-len(".tar.gz")])
    deps = None
    if missing_modules():
        deps = str(root / "deps")
        try:
            r = pip("install", "--no-deps", "--target", deps, *DEPENDENCIES, timeout=900)
        except subprocess.TimeoutExpired:
            pytest.skip(f"installing stumpy's dependencies ({', '.join(DEPENDENCIES)}) timed out")
        if r.returncode != 0:
            pytest.skip(f"cannot install stumpy's dependencies ({', '.join(DEPENDENCIES)}): "
                        f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return source, deps


def test_stumpys_gpu_suite_passes_unchanged(stumpy_source):
    source, deps = stumpy_source
    files = sorted(os.path.relpath(p, source) for p in glob.glob(os.path.join(source, "tests", "test_gpu_*.py")))
    assert len(files) == 8, files
    path = os.pathsep.join([ROOT] + ([deps] if deps else []) + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, PYTHONPATH=path, KDEBUG_BACKEND="cpu")
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "NUMBA_ENABLE_CUDASIM"):
        env.pop(name, None)
    r = subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "-m", "pytest", "-p", "no:cacheprovider",
                        "-q", *files], capture_output=True, text=True, timeout=2000, cwd=source, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert f"{GPU_TESTS} passed in" in out, out[-6000:]
    assert "0 finding(s)" in out  # the plugin's summary: no sanitizer finding in stumpy's kernels
    assert "launches of" in out  # the report summarised the launches, not a line each
    assert len(out.splitlines()) < 200, out[-3000:]


def test_racecheck_finds_stumpys_race_and_the_plugin_fails_the_test_that_launched_it(stumpy_source):
    """With racecheck on, the one command finds what numba-cuda's simulator never could: in stumpy's
    ``_compute_and_update_PI_kernel`` (gpu_aamp.py) every thread stores ``p_norm_out[0]`` with no barrier while
    thread 0 writes and then reads that element. The plugin fails the test that launched the kernel, with the
    located finding in that test's report (issue 48: "the racecheck finding shown by the plugin")."""
    source, deps = stumpy_source
    path = os.pathsep.join([ROOT] + ([deps] if deps else []) + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, PYTHONPATH=path, KDEBUG_BACKEND="cpu")
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "NUMBA_ENABLE_CUDASIM"):
        env.pop(name, None)
    r = subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "--sanitize=racecheck", "-m", "pytest",
                        "-p", "no:cacheprovider", "-q", "-x", "tests/test_gpu_aamp.py"],
                       capture_output=True, text=True, timeout=1200, cwd=source, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-6000:]
    report = out[out.index("FAILURES"):out.index("short test summary")]  # the failed test's own report
    assert "kdebug: a kernel this test launched has a sanitizer finding" in report, report[-4000:]
    assert "racecheck: write-after-write hazard on global array 'p_norm_out'[0] in kernel " \
           "_compute_and_update_PI_kernel" in report, report[-4000:]
    assert "gpu_aamp.py:167:13" in report and "gpu_aamp.py:172:13" in report, report[-4000:]
    assert "FAILED tests/test_gpu_aamp.py::test_gpu_aamp_self_join" in out, out[-3000:]
    assert "finding(s)" in out and "0 finding(s)" not in out, out[-3000:]  # the plugin's summary counts it
