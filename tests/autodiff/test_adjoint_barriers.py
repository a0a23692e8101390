"""Kernel adjoints with barriers and shared arrays (kdebug.adjoint): the barriers run forwards, then
backwards; each shared array gets a zeroed shadow. Checked against closed-form gradients, exactly where
the arithmetic is exact, on the CPU backend (the body a coroutine) and on the PTX target (bar.sync)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
import kdebug
from kdebug import cuda
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel

B = 64


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(B, np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = B // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@cuda.jit
def block_product(x, out):
    s = cuda.shared.array(B, np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 1.0
    cuda.syncthreads()
    step = B // 2
    while step > 0:
        if t < step:
            s[t] *= s[t + step]  # overwritten each step: the reverse needs the values the tape keeps
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def halo_products(x, out):
    s = cuda.shared.array(34, np.float64)  # a block of 32 and one halo element each side
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    s[t + 1] = x[i]
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == 31:
        s[33] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    out[i] = s[t] * s[t + 2] + s[t + 1] * s[t + 1]


@cuda.jit
def scaled_by_count(x, out):
    i = cuda.grid(1)
    c = cuda.syncthreads_count(x[i] > 0.0)  # an integer: the votes do not carry adjoints
    out[i] = x[i] * c


@cuda.jit
def guarded_squares(x, out):
    s = cuda.shared.array(B, np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.size:
        return  # exits before the barrier: it releases the barrier the others wait at
    s[t] = x[i] * x[i]
    cuda.syncthreads()
    if t == 0:
        total = 0.0
        for k in range(min(cuda.blockDim.x, x.size - cuda.blockIdx.x * cuda.blockDim.x)):
            total += s[k]
        out[cuda.blockIdx.x] = total


@cuda.jit
def reads_past_shared(x, out):
    s = cuda.shared.array(B, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t + 1]


def _session(**options):
    session = Session(backend="cpu", passes_on_demand=True, **options)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    return session, model


def _job(model, name):
    (job,) = [j for j in model.jobs.values() if j.name == name]
    return job


@pytest.mark.parametrize("n", [B, 1000, 4097])
def test_a_tree_reduction_s_adjoint_gives_every_element_the_seed(n):
    session, model = _session()
    x = np.linspace(0.5, 2.0, n)
    out, dx, dout = np.zeros(1), np.full(n, 0.25), np.array([3.0])
    kdebug.adjoint(block_sum)[(n + B - 1) // B, B](x, dx, out, dout)
    np.testing.assert_allclose(out, [x.sum()], rtol=1e-12)  # the primal's effect
    # d out / d x_i = 1 for every i: each element's adjoint went down its block's tree, one barrier a step
    np.testing.assert_array_equal(dx, np.full(n, 3.25))
    np.testing.assert_array_equal(dout, [3.0])  # an accumulation keeps the adjoint of what it added to
    (wrapper,) = [r for r in session.driver.records.values() if r.name == "block_sum_adjoint"]
    assert wrapper.form[0] == "coroutines" and "its adjoint body has barriers" in wrapper.form[1], wrapper.form


def test_a_product_tree_needs_the_overwritten_values_from_the_tape():
    _, model = _session()
    rng = np.random.default_rng(5)
    n = 300
    x = rng.uniform(0.5, 1.5, n)
    blocks = (n + B - 1) // B
    out, dx = np.zeros(blocks), np.zeros(n)
    dout = rng.standard_normal(blocks)
    seed = dout.copy()
    kdebug.adjoint(block_product)[blocks, B](x, dx, out, dout)
    padded = np.ones(blocks * B)
    padded[:n] = x
    prods = padded.reshape(blocks, B).prod(axis=1)
    np.testing.assert_allclose(out, prods, rtol=1e-13)
    np.testing.assert_allclose(dx, (np.repeat(seed * prods, B)[:n]) / x, rtol=1e-12)
    np.testing.assert_array_equal(dout, 0.0)  # written: its initial value does not reach its final one
    tape = model.snapshots[_job(model, "adjoint(block_product)").snapshots["tape"]].text
    line = block_product.py_func.__code__.co_firstlineno
    shared = [t for t in tape.splitlines() if t.startswith("shared:")]
    barriers = [t for t in tape.splitlines() if t.startswith("barrier:")]
    assert len(shared) == 1 and f"test_adjoint_barriers.py:{line + 2}:" in shared[0] and "(512 bytes a block)" in shared[0]
    assert sorted(int(b.split("test_adjoint_barriers.py:")[1].split(":")[0]) - line for b in barriers) == [6, 11]
    # the loop's products keep their operands per trip
    assert any("operand of a product (overwritten in a loop: kept per trip)" in t for t in tape.splitlines()), tape


def test_a_shared_halo_stencil_s_adjoint_is_the_jacobian_transpose():
    _session()
    rng = np.random.default_rng(11)
    n = 128
    x = rng.standard_normal(n)
    out, dx = np.zeros(n), np.zeros(n)
    dout = rng.standard_normal(n)
    seed = dout.copy()
    kdebug.adjoint(halo_products)[n // 32, 32](x, dx, out, dout)
    p = np.concatenate([[0.0], x, [0.0]])
    np.testing.assert_allclose(out, p[:-2] * p[2:] + x * x, rtol=1e-14)
    jac = np.zeros((n, n))  # d out_i / d x_j
    for i in range(n):
        jac[i, i] += 2 * x[i]
        if i > 0:
            jac[i, i - 1] += p[i + 2]
        if i + 1 < n:
            jac[i, i + 1] += p[i]
    np.testing.assert_allclose(dx, jac.T @ seed, rtol=1e-12, atol=1e-14)


def test_a_vote_s_count_is_a_constant_of_the_adjoint():
    _session()
    x = np.array([1.0, -2.0, 3.0, 0.5, -1.0, 2.0, 4.0, -3.0])
    out, dx, dout = np.zeros(8), np.zeros(8), np.arange(1.0, 9.0)
    kdebug.adjoint(scaled_by_count)[1, 8](x, dx, out, dout)
    np.testing.assert_array_equal(out, x * 5)
    np.testing.assert_array_equal(dx, np.arange(1.0, 9.0) * 5)


def test_threads_that_exit_before_a_barrier_release_it_in_the_adjoint_too():
    session, model = _session()
    n = 100
    x = np.linspace(-1.0, 1.0, n)
    blocks = (n + B - 1) // B
    out, dx = np.zeros(blocks), np.zeros(n)
    dout = np.array([2.0, -1.0])
    kdebug.adjoint(guarded_squares)[blocks, B](x, dx, out, dout)
    np.testing.assert_allclose(out, [np.sum(x[:B] ** 2), np.sum(x[B:] ** 2)], rtol=1e-13)
    np.testing.assert_allclose(dx, 2 * x * np.repeat([2.0, -1.0], B)[:n], rtol=1e-14)
    assert not [d for d in model.diagnostics if "barrier" in d.message], [d.message for d in model.diagnostics]


@pytest.mark.parametrize("options", [dict(shuffle=5), dict(racecheck=True)])
def test_shuffled_threads_and_racecheck_keep_the_gradient(options):
    shuffle = options.pop("shuffle", None)
    session, model = _session(**options)
    if shuffle is not None:
        kdebug.set_options(shuffle_threads=shuffle)
    try:
        n = 200
        x = np.linspace(0.5, 2.0, n)
        out, dx, dout = np.zeros(1), np.zeros(n), np.array([1.5])
        kdebug.adjoint(block_sum)[(n + B - 1) // B, B](x, dx, out, dout)
    finally:
        kdebug.set_options(shuffle_threads=None)
    np.testing.assert_array_equal(dx, np.full(n, 1.5))
    assert not [d for d in model.diagnostics if d.severity in ("error", "warning")], \
        [d.message for d in model.diagnostics]


def test_an_out_of_bounds_shared_read_in_the_adjoint_is_reported_at_its_line():
    _session()
    x, out = np.ones(B), np.zeros(B)
    with pytest.raises(Exception) as info:
        kdebug.adjoint(reads_past_shared)[1, B](x, np.zeros(B), out, np.zeros(B))
    text = str(info.value)
    line = reads_past_shared.py_func.__code__.co_firstlineno + 6
    assert f"test_adjoint_barriers.py:{line}:" in text and "out-of-bounds read of shared array 's'" in text, text


def test_the_gpu_adjoint_has_its_barriers_twice_and_adds_into_shared_shadows_atomically(tmp_path):
    from test_ptx import dump_ptx
    files = dump_ptx("adjoint_block_reduce.py", tmp_path)["files"]
    (stem,) = [s for s in files if s.endswith("block_squares_adjoint")]
    ptx = files[stem]["ptx"]
    # the zeroing's barrier, the one after the loads, and the loop's barrier: forwards and backwards
    assert ptx.count("bar.sync") >= 5, ptx
    assert ".shared" in ptx and "atom.add.f64" in ptx, ptx
    # the block's threads zero the shadow where the adjoint starts (a GPU's shared memory is not zeroed)
    assert re.search(r"st\.shared\.\w32\s+\[[^\]]+\],\s*0;", ptx), ptx
    assert "ok" in files[stem].get("ptxas", "ok").splitlines()[0]


TIER0_SCRIPT = '''
import numpy as np, kdebug
from kdebug import cuda

@cuda.jit
def k(x, out):
    s = cuda.shared.array(32, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[cuda.grid(1)] ** 2
    cuda.syncthreads()
    if t == 0:
        total = 0.0
        for j in range(32):  # a constant trip count: its allocas live in the primal's entry block
            total += s[j]
        out[cuda.blockIdx.x] = total

x = np.linspace(1.0, 2.0, 64)
dx, out, dout = np.zeros(64), np.zeros(2), np.ones(2)
kdebug.adjoint(k)[2, 32](x, dx, out, dout)
np.testing.assert_allclose(dx, 2 * x)
print("ok")
'''


def test_a_barrier_adjoint_s_locals_survive_tier_0_s_coroutine_split(tmp_path):
    """The tiered compile's -O1 pipeline split the adjoint body into a coroutine with the primal's
    allocas left in a later block: LLVM's verifier aborted the process ("Instruction does not dominate
    all uses"). A fresh process, tiered as a plain run is, so an abort fails this test alone."""
    script = tmp_path / "tier0.py"
    script.write_text(TIER0_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "KDEBUG_TIERED"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
