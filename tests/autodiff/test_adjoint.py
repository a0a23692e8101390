"""Kernel adjoints (kdebug.adjoint): the samples under each strategy, Duplicated semantics (reads
accumulate, writes read and zero their shadows, in-place updates chain), the tape's atomics, and
what cannot be differentiated."""
from __future__ import annotations

import math
import runpy
import textwrap

import numpy as np
import pytest

import kdebug
from conftest import run_sample
from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from test_grad import compiled_once, tree


@pytest.mark.parametrize("sample,kernel", [("adjoint_stencil", "smooth"), ("adjoint_least_squares", "residuals"),
                                           ("adjoint_block_reduce", "block_squares")])
@pytest.mark.parametrize("strategy", ["worklist", "toplevel", "recursive"])
def test_samples_check_themselves_under_every_strategy(sample, kernel, strategy):
    # an adjoint's body needs the kernel's body, which is its own job's primal: no marker stands between
    model, error = run_sample(sample, strategy)
    assert error is None, error
    assert tree(model) == [(f"{kernel}_adjoint", None, "host", "kernel"),
                           (f"adjoint({kernel})", f"{kernel}_adjoint", "adjoint", "derivative")]
    assert compiled_once(model)
    (job,) = [j for j in model.jobs.values() if j.reason == "adjoint"]
    for stage in ("primal", "primal_resolved", "activity", "augmented_forward", "reverse", "tape"):
        assert stage in job.snapshots, stage
    tape = model.snapshots[job.snapshots["tape"]].text
    if sample == "adjoint_stencil":
        # x[i - 1], x[i], x[i + 1]: neighbours' elements, plain adds inside a block's window (the CPU
        # runs a block's threads one at a time), atomic at its edges; each names its source line
        line = next(n for n, text in enumerate(job.source.splitlines(), job.source_line)
                    if "0.25 * x[i - 1]" in text)
        reads = [t for t in tape.splitlines() if t.startswith("block-local:")]
        assert len(reads) == 3 and all("own index plus -1..1" in t for t in reads), tape
        cached = [t for t in tape.splitlines() if t.strip().startswith(("cached %", "block-local:"))]
        assert cached and all(f" at {sample}.py:{line}:" in t for t in cached), tape
    elif sample == "adjoint_block_reduce":  # one shared array with its shadow, two barriers run backwards too
        assert sum(t.startswith("shared:") for t in tape.splitlines()) == 1, tape
        assert sum(t.startswith("barrier:") for t in tape.splitlines()) == 2, tape
    else:  # the fit's parameters are read by every thread
        assert "becomes an atomic accumulation (atomicrmw fadd) into its shadow" in tape


@cuda.jit
def scale_in_place(x, y, c):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * x[i] * c + y[i]


@cuda.jit
def accumulate_sum(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i] * x[i])


def test_in_place_update_chains_through_and_scalars_are_constants():
    set_session(Session(backend="cpu", passes_on_demand=True))
    rng = np.random.default_rng(1)
    x0, y = rng.standard_normal(16), rng.standard_normal(16)
    x, dx, dy = x0.copy(), rng.standard_normal(16), np.zeros(16)
    seed = dx.copy()
    kdebug.adjoint(scale_in_place)[1, 16](x, dx, y, dy, 3.0)
    np.testing.assert_allclose(x, x0 * x0 * 3.0 + y, rtol=1e-14)  # the primal's effect
    np.testing.assert_allclose(dx, seed * 2 * x0 * 3.0, rtol=1e-14)  # the adjoint of x's initial value
    np.testing.assert_allclose(dy, seed, rtol=1e-14)


def test_an_atomic_add_in_the_primal_is_differentiated():
    set_session(Session(backend="cpu", passes_on_demand=True))
    x = np.linspace(-1, 1, 32)
    total, dx, dtotal = np.zeros(1), np.zeros(32), np.array([2.0])
    try:
        kdebug.adjoint(accumulate_sum)[1, 32](x, dx, total, dtotal)
    except CompileError as exc:  # said where it is written, with the construct and the job
        pytest.fail(str(exc))
    np.testing.assert_allclose(total, [np.sum(x * x)], rtol=1e-13)
    np.testing.assert_allclose(dx, 2.0 * 2 * x, rtol=1e-14)
    np.testing.assert_allclose(dtotal, [2.0])  # an accumulation keeps the adjoint of what it added to


def _write(tmp_path, text):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("body,what,line", [
    ("cuda.atomic.max(out, 0, x[i])", "an atomic other than add and sub (cuda.atomic.max)",
     "cuda.atomic.max(out, 0, x[i])"),
    ("child[1, 1](out)", "a device-side launch", "child[1, 1](out)"),
    ("cuda.syncwarp(0xffffffff)", "a warp barrier (cuda.syncwarp)", "cuda.syncwarp(0xffffffff)"),
    ("s = cuda.shared.array(0, np.float64)", "dynamic shared memory", "s = cuda.shared.array(0, np.float64)"),
])
def test_constructs_an_adjoint_cannot_take_are_located_errors(tmp_path, body, what, line):
    path = _write(tmp_path, f"""
        import numpy as np
        import kdebug
        from kdebug import cuda

        @cuda.jit
        def child(out):
            out[0] = 1.0

        @cuda.jit
        def k(x, out):
            i = cuda.grid(1)
            {body}

        x, out = np.ones(4), np.zeros(4)
        kdebug.adjoint(k)[1, 4](x, np.zeros(4), out, np.zeros(4))
    """)
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError) as info:
        runpy.run_path(str(path))
    assert f"{what}" in str(info.value) and "cannot be differentiated: job #2 adjoint(k)" in str(info.value)
    assert info.value.loc.source_line().strip() == line


def test_adjoint_argument_errors():
    with pytest.raises(CompileError, match="takes a @cuda.jit kernel") as info:
        kdebug.adjoint(kdebug.gradient)
    assert "kdebug.gradient(fn)" in info.value.hint
    set_session(Session(backend="cpu", passes_on_demand=True))
    with pytest.raises(CompileError, match="each array followed by its shadow"):
        kdebug.adjoint(scale_in_place)[1, 4](np.ones(4), np.ones(4), np.ones(4), 3.0)


@cuda.jit(device=True)
def point(x, y):
    return x / (x * x + 1.0) + math.sin(y)


@cuda.jit
def pointwise(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = point(a[i], b[i])


def test_a_device_function_called_by_the_kernel_passes_its_adjoints_on():
    # found by the property test: the callee's gradient twin is a function's, not the kernel's
    set_session(Session(backend="cpu", passes_on_demand=True))
    a, b, out = np.linspace(-1, 1, 8), np.ones(8), np.zeros(8)
    da, db, dout = np.zeros(8), np.zeros(8), np.full(8, 2.0)
    kdebug.adjoint(pointwise)[1, 8](a, da, b, db, out, dout)
    np.testing.assert_allclose(da, 2.0 * (1 - a * a) / (a * a + 1) ** 2, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(db, 2.0 * np.cos(b), rtol=1e-14)


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def shifted(x, out):
    i = cuda.grid(1)
    if i < x.size - 1:
        out[i + 1] = 3.0 * x[i]


def _adjoint_session():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    return model


def _stage(model, reason_name, stage):
    (job,) = [j for j in model.jobs.values() if j.name == reason_name]
    return model.snapshots[job.snapshots[stage]].text


@pytest.mark.parametrize("block", [(32,), (16, 2)])
def test_reads_at_the_threads_own_index_stay_plain_adds_behind_a_launch_guard(block):
    model = _adjoint_session()
    n = 64
    x, y, out = np.linspace(-1, 1, n), np.ones(n), np.zeros(n)
    dx, dy, dout = np.zeros(n), np.full(n, 0.5), np.full(n, 2.0)
    kdebug.adjoint(saxpy)[n // block[0], block](3.0, x, dx, y, dy, out, dout)
    np.testing.assert_allclose(out, 3.0 * x + 1.0, rtol=1e-15)
    if len(block) == 1:  # a 2-D block: two threads share each cuda.grid(1) index and race on out[i] (and dout[i])
        np.testing.assert_allclose(dx, 3.0 * 2.0, rtol=1e-15)
        np.testing.assert_allclose(dy, 0.5 + 2.0, rtol=1e-15)
    tape = _stage(model, "adjoint(saxpy)", "tape")
    plain = [t for t in tape.splitlines() if t.startswith("exclusive:")]
    assert len(plain) == 2 and all("is this thread's own element: kept as a plain add" in t for t in plain), tape
    assert "atomic:" not in tape
    reverse = _stage(model, "adjoint(saxpy)", "reverse")
    # the guard: blockDim.y/.z and gridDim.y/.z read (fields 1 and 3 of the thread context) and compared with 1,
    # the shadows' extents compared; the atomic accumulation stays for launches that fail it
    assert reverse.count("atomicrmw fadd") == 2 and "ptrtoint" in reverse, reverse
    assert reverse.count("icmp eq i32") >= 4
    # the body's one caller is the wrapper kernel: always inlined there, so the thread loop sees it whole
    body = _stage(model, "saxpy_adjoint", "after_finish")
    head = next(line for line in body.splitlines() if line.startswith("define void @adjoint_saxpy"))
    group = head.rsplit("#", 1)[1].split()[0]
    assert "alwaysinline" in next(line for line in body.splitlines() if line.startswith(f"attributes #{group} "))


def test_an_array_accessed_off_the_threads_own_index_keeps_its_atomics():
    model = _adjoint_session()
    n = 32
    x, out = np.linspace(0, 1, n), np.zeros(n)
    dx, dout = np.zeros(n), np.arange(n, dtype=np.float64)
    kdebug.adjoint(shifted)[1, n](x, dx, out, dout)
    expect = np.zeros(n)
    expect[:-1] = 3.0 * np.arange(1, n)
    np.testing.assert_allclose(dx, expect, rtol=1e-15)
    tape = _stage(model, "adjoint(shifted)", "tape")
    # x[i] is read at the thread's own index, out written at i + 1: only x's read is exclusive
    assert [t.split(":")[0] for t in tape.splitlines() if t.startswith(("exclusive:", "atomic:"))] == ["exclusive"]
    assert "exclusive reads kept as plain adds: %" in tape


def test_overlapping_shadows_take_the_atomic_path_and_stay_right():
    _adjoint_session()
    n = 32
    x, y, out = np.linspace(-1, 1, n), np.ones(n), np.zeros(n)
    buf = np.zeros(n + 1)
    dx, dy = buf[:n], buf[1:]  # one buffer, shifted by an element: thread i's dy[i] is thread i+1's dx[i+1]
    kdebug.adjoint(saxpy)[1, n](2.0, x, dx, y, dy, out, np.ones(n))
    expect = np.zeros(n + 1)
    expect[:n] += 2.0
    expect[1:] += 1.0
    np.testing.assert_allclose(buf, expect, rtol=1e-15)


@cuda.jit
def smooth(x, out):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@cuda.jit
def wraps(x, out):
    i = cuda.grid(1)
    if i < x.size - 1:  # x[i - 2] is numba's x[n - 2] and x[n - 1] for threads 0 and 1
        out[i] = 2.0 * x[i - 2] + x[i + 1]


@pytest.mark.parametrize("n,block", [(64, 4), (1001, 7), (1 << 18, 64)])
def test_neighbour_reads_are_plain_inside_a_block_and_atomic_at_its_edges(n, block):
    # the CPU backend runs a block's threads one at a time and blocks side by side (2^18: 4096 blocks on the
    # block pool): every element gets every contribution. Adjoints in quarters sum exactly, so a lost update
    # at a block's edge would show as an exact mismatch
    model = _adjoint_session()
    x, out = np.linspace(-1, 1, n), np.zeros(n)
    dx, dout = np.full(n, 0.5), (np.arange(n) % 13).astype(np.float64)
    seed = dout.copy()
    kdebug.adjoint(smooth)[(n + block - 1) // block, block](x, dx, out, dout)
    expect = np.full(n, 0.5)
    expect[:-2] += 0.25 * seed[1:-1]
    expect[1:-1] += 0.5 * seed[1:-1]
    expect[2:] += 0.25 * seed[1:-1]
    np.testing.assert_array_equal(dx, expect)
    tape = _stage(model, "adjoint(smooth)", "tape")
    local = [t for t in tape.splitlines() if t.startswith("block-local:")]
    assert len(local) == 3 and all("own index plus -1..1" in t for t in local), tape
    assert "atomic:" not in tape
    reverse = _stage(model, "adjoint(smooth)", "reverse")
    # each read's plain add sits behind its window test; the atomic one stays for the edges
    assert reverse.count("atomicrmw fadd") == 3 and reverse.count("icmp sle i64") >= 3, reverse


@pytest.mark.parametrize("block", [1, 3, 16])
def test_a_wrapped_negative_index_takes_the_atomic_path(block):
    # threads 0 and 1 read x[-2] and x[-1]: elements n - 2 and n - 1, whichever block adds there too
    model = _adjoint_session()
    n = 48
    x, out = np.linspace(0, 1, n), np.zeros(n)
    dx, dout = np.zeros(n), np.arange(1, n + 1, dtype=np.float64)
    seed = dout.copy()
    kdebug.adjoint(wraps)[(n + block - 1) // block, block](x, dx, out, dout)
    expect = np.zeros(n)
    for i in range(n - 1):
        expect[(i - 2) % n] += 2.0 * seed[i]
        expect[i + 1] += seed[i]
    np.testing.assert_array_equal(dx, expect)
    tape = _stage(model, "adjoint(wraps)", "tape")
    assert "own index plus -2..1" in tape and "the array's last 2 element(s)" in tape, tape


def test_a_gpu_keeps_the_neighbour_reads_atomic(tmp_path):
    # a GPU runs a block's threads together: no window there, every neighbour read accumulates atomically
    from test_ptx import dump_ptx
    files = dump_ptx("adjoint_stencil.py", tmp_path)["files"]
    (ptx,) = [f["ptx"] for stem, f in files.items() if stem.endswith("smooth_adjoint") and "ptx" in f]
    assert ptx.count("atom.global.add.f64") == 3, ptx
