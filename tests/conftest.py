"""Shared test helpers. Every test runs under pytest-timeout (pyproject.toml)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

# The suite is about the CPU backend unless a test asks for the GPU: on a machine with pycuda and
# a device, "auto" would pick the GPU, where CPU-only checks (memcheck, barrier divergence) do not apply.
os.environ.setdefault("KDEBUG_BACKEND", "cpu")
# Every process that imports numpy starts OpenBLAS's thread pool, a thread per core that spins up: ~0.1 s of
# CPU per process on 2 cores, and the suite starts thousands of processes (kdebug's command, its debuggee,
# the TUI, its replay process) while xdist's workers already fill every core. kdebug never calls BLAS; the
# samples' numpy references give the same numbers on one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# A suite started in the background by a script (``pytest &``, a CI runner's shell without job control) inherits
# SIGINT ignored, and so does every process it starts: Python then keeps it ignored, as does kdebug (a ^C
# meant for the foreground job must not stop a background one). The tests of Ctrl-C (the debuggee's, the
# TUI's, reduce's) send SIGINT to processes they start, as a terminal's ^C reaches a foreground job: the
# suite's processes take SIGINT as they do in a foreground start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_kernels")

# The tests live in a folder per layer (docs/testing.md "The suite's folders") and import each other by
# module name (``from test_tui import live_app``, ``from real_terminal import kdebug``): tests/ and every
# folder of tests are on sys.path before any test module is collected, in every xdist worker too. Without
# __init__.py files a test module's name is its file's name, so every name is unique across the folders.
TESTS = os.path.dirname(os.path.abspath(__file__))
TEST_FOLDERS = sorted(entry.path for entry in os.scandir(TESTS)
                      if entry.is_dir() and not entry.name.startswith((".", "_")))
for _folder in [TESTS, *TEST_FOLDERS]:
    if _folder not in sys.path:
        sys.path.insert(0, _folder)


def pytest_configure(config):
    """kdebug's modules byte-compiled once, before any test (in xdist's controller, before its workers
    start), as an installed package's are: where PYTHONDONTWRITEBYTECODE is set (CI's machines) a fresh
    checkout has no ``__pycache__``, and every kdebug process a test starts (the command, its debuggee,
    the TUI, its replay process) compiled the modules it imports from source again, ~0.3 s of CPU each.
    Bytecode is a cache of the same source (files up to date are left alone): the tests run the same code."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller did it
    import compileall
    compileall.compile_dir(os.path.join(ROOT, "kdebug"), quiet=2)


def pytest_collection_finish(session):
    """What collection made (the test modules, their items, pytest's and hypothesis's state) lives as long
    as the run: it is moved out of the garbage collector's way (``gc.freeze``), so that a collection walks only
    what the tests make. The regions property test with 16 examples, one process, in turn: 17.7 / 18.4 s of
    CPU before, 16.3 / 17.0 s after (benchmarks/README.md, bench_gc_pause.py). Nothing a test makes is
    frozen; the tests run the same code."""
    import gc
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def fresh_session():
    """Each test gets its own debug session (job table, cache, event bus)."""
    from kdebug.session.live import set_session
    set_session(None)
    yield
    set_session(None)


def watched_session(**options):
    """A CPU session made with ``options`` (no snapshots), and the list its bus adds each diagnostic to: the
    forms' tests compare the warnings of one launch (empty the list before it)."""
    from kdebug import events as E
    from kdebug.session import live
    session = live.Session(backend="cpu", snapshots=False, **options)
    seen: list = []
    session.bus.subscribe(lambda e: seen.append(e) if isinstance(e, E.Diagnostic) else None)
    return session, seen


def module_folder(prefix: str) -> str:
    """A folder for the kernel modules a property test writes and imports (a kernel needs its source in a
    file), removed when the test process ends: the suite leaves nothing behind in the temporary folder."""
    import atexit
    import shutil
    import tempfile
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def run_kdebug(*args, timeout=120, cwd=ROOT, env=None):
    """Run the kdebug command in a child process; returns CompletedProcess with text output."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "kdebug.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=full_env)

def run_sample(name: str, strategy: str):
    """Run sample ``name`` in this process under a fresh CPU session with ``strategy``; returns
    (the session model, the KdebugError the sample raised or None)."""
    import runpy

    from kdebug.errors import KdebugError
    from kdebug.session.live import Session, set_session
    from kdebug.session.model import SessionModel
    session = Session(backend="cpu", passes_on_demand=True, strategy=strategy)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    try:
        runpy.run_path(os.path.join(SAMPLES, name + ".py"), run_name="__main__")
    except KdebugError as exc:
        return model, exc
    return model, None


def tree_labels(app, indent: bool = True) -> list[str]:
    """The TUI job tree's rows, top to bottom (each indented two spaces a level when ``indent``)."""
    out = []

    def visit(node, depth):
        for child in node.children:
            out.append("  " * depth * indent + str(child.label))
            visit(child, depth + 1)
    visit(app.tree.root, 0)
    return out


# numba-cuda's documentation examples are run through kdebug by numba/test_numba_doc_examples.py, not by pytest
collect_ignore = ["numba/numba_doc_examples"]


@pytest.fixture(scope="session")
def sample_trace(tmp_path_factory):
    """``sample_trace("dynamic_parallel.py", "--strategy", "recursive")``: the path of a trace of that sample's
    headless run on the CPU backend, recorded once per session for each sample and options."""
    cache: dict[tuple, str] = {}

    def record(sample: str, *options: str) -> str:
        if (sample, options) not in cache:
            path = str(tmp_path_factory.mktemp("sample-traces") / (sample.replace(".py", "") + ".jsonl"))
            r = run_kdebug("run", "--headless", "--backend", "cpu", *options, "--trace", path,
                           os.path.join("sample_kernels", sample))
            assert os.path.exists(path), r.stderr
            cache[(sample, options)] = path
        return cache[(sample, options)]
    return record
