"""CPU backend block semantics: barriers, shared/local arrays, atomics, votes, grid sync, shuffle."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import kdebug
from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from kdebug.lang import types
from conftest import SAMPLES, run_kdebug

BLOCK_SAMPLES = ["matmul_tiled", "reduction", "histogram", "scan", "stencil_halo"]


def load_sample(name):
    spec = importlib.util.spec_from_file_location(f"sample_{name}", os.path.join(SAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SMALL = {"matmul_tiled": {"n": 48}, "reduction": {"n": 5000}, "histogram": {"n": 1 << 14},
         "scan": {"n": 3000}, "stencil_halo": {"n": 1000}}


@pytest.mark.parametrize("shuffle", [None, 7], ids=["ordered", "shuffled"])
@pytest.mark.parametrize("name", BLOCK_SAMPLES)
def test_sample_matches_numpy(name, shuffle, capsys):
    kdebug.set_options(shuffle_threads=shuffle)
    load_sample(name).main(**SMALL[name])  # each sample asserts against numpy itself
    assert "match" in capsys.readouterr().out


@pytest.mark.parametrize("name", BLOCK_SAMPLES)
def test_sample_runs_headless(name):
    r = run_kdebug("--headless", f"sample_kernels/{name}.py", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "match" in r.stdout


def test_cli_shuffle_and_no_memcheck():
    r = run_kdebug("--headless", "--shuffle-threads=3", "--no-memcheck", "sample_kernels/reduction.py", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_shuffle_changes_the_order_between_barriers():
    """A racy kernel (last writer wins) shows the thread order: thread order, then shuffled."""
    @cuda.jit
    def last_writer(out):
        out[0] = cuda.threadIdx.x
        cuda.syncthreads()
        out[1] = cuda.threadIdx.x

    out = np.zeros(2, np.int32)
    last_writer[1, 64](out)
    assert list(out) == [63, 63]
    seen = set()
    for seed in range(4):
        kdebug.set_options(shuffle_threads=seed)
        last_writer[1, 64](out)
        seen.add(tuple(out))
    assert seen != {(63, 63)}


def test_barrier_in_loop_and_uniform_branch():
    @cuda.jit
    def rotate(x, rounds, flag):
        s = cuda.shared.array(32, cuda.int32)
        t = cuda.threadIdx.x
        v = x[t]
        for r in range(rounds):
            s[t] = v
            cuda.syncthreads()
            v = s[(t + 1) % 32]
            if flag > 0:  # uniform for the block: every thread takes the same branch
                cuda.syncthreads()
            else:
                cuda.syncthreads()
        x[t] = v

    x = np.arange(32, dtype=np.int32)
    rotate[1, 32](x, 5, 1)
    np.testing.assert_array_equal(x, np.roll(np.arange(32), -5))
    rotate[1, 32](x, 3, 0)
    np.testing.assert_array_equal(x, np.roll(np.arange(32), -8))


def test_barrier_inside_device_function():
    @cuda.jit(device=True)
    def neighbour(s, t):
        cuda.syncthreads()
        return s[(t + 1) % cuda.blockDim.x]

    @cuda.jit
    def kern(out):
        s = cuda.shared.array(64, cuda.int32)
        t = cuda.threadIdx.x
        s[t] = t * 10
        out[t] = neighbour(s, t)

    out = np.zeros(64, np.int32)
    kern[1, 64](out)
    np.testing.assert_array_equal(out, np.roll(np.arange(64) * 10, -1))


def test_shared_memory_is_private_to_each_block():
    @cuda.jit
    def kern(out):
        s = cuda.shared.array((2, 3), cuda.int64)
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        b = cuda.blockIdx.x + cuda.blockIdx.y * cuda.gridDim.x
        if t == 0:
            s[1, 2] = b
        cuda.syncthreads()
        out[b, t] = s[1, 2]

    out = np.zeros((64 * 4, 32 * 8), np.int64)
    kern[(64, 4), (32, 8)](out)  # 256 blocks of 256 threads: spread over cores
    np.testing.assert_array_equal(out, np.repeat(np.arange(256)[:, None], 256, axis=1))


def test_local_arrays_are_private_to_each_thread():
    @cuda.jit
    def kern(out):
        a = cuda.local.array(4, cuda.float64)
        t = cuda.threadIdx.x
        for k in range(4):
            a[k] = t + k
        cuda.syncthreads()
        acc = 0.0
        for k in range(4):
            acc += a[k]
        out[t] = acc

    out = np.zeros(32)
    kern[1, 32](out)
    np.testing.assert_array_equal(out, 4 * np.arange(32) + 6)


def test_atomic_histogram_loses_no_counts():
    @cuda.jit
    def hist(data, bins):
        i = cuda.grid(1)
        if i < data.size:
            cuda.atomic.add(bins, data[i] % 8, 1)

    n = 1 << 20
    data = np.random.default_rng(1).integers(0, 1000, n).astype(np.int32)
    bins = np.zeros(8, np.int32)
    hist[n // 256, 256](data, bins)  # 4096 blocks, run on several cores
    assert bins.sum() == n
    np.testing.assert_array_equal(bins, np.bincount(data % 8, minlength=8))


def test_atomics_return_the_old_value():
    @cuda.jit
    def kern(a, f, old):
        t = cuda.threadIdx.x
        old[t] = cuda.atomic.add(a, 0, 1)
        cuda.atomic.sub(a, 1, 2)
        cuda.atomic.max(a, 2, t)
        cuda.atomic.min(a, 3, t)
        cuda.atomic.exch(a, 4, 9)
        cuda.atomic.cas(a, 5, 0, t + 1)
        cuda.atomic.and_(a, 6, 6)
        cuda.atomic.or_(a, 7, t)
        cuda.atomic.xor(a, 8, 1)
        cuda.atomic.compare_and_swap(a, 0, 1000)
        cuda.atomic.add(f, (0, 0), 0.25)
        cuda.atomic.max(f, (0, 1), t * 0.5)
        cuda.atomic.min(f, (1, 0), t * 0.5)
        cuda.threadfence()
        cuda.threadfence_block()

    a = np.zeros(9, np.int64)
    a[3], a[6] = 100, 7
    f = np.zeros((2, 2), np.float32)
    old = np.zeros(32, np.int64)
    kern[1, 32](a, f, old)
    assert sorted(old) == list(range(32))
    assert list(a) == [32, -64, 31, 0, 9, 1, 6, 31, 0]
    assert f[0, 0] == 8.0 and f[0, 1] == 15.5 and f[1, 0] == 0.0


def test_atomic_on_shared_memory():
    @cuda.jit
    def kern(out):
        s = cuda.shared.array(1, cuda.int32)
        if cuda.threadIdx.x == 0:
            s[0] = 0
        cuda.syncthreads()
        cuda.atomic.add(s, 0, cuda.threadIdx.x)
        cuda.syncthreads()
        out[cuda.blockIdx.x] = s[0]

    out = np.zeros(4, np.int32)
    kern[4, 128](out)
    assert list(out) == [sum(range(128))] * 4


def test_syncthreads_count_and_or():
    @cuda.jit
    def kern(x, out):
        t = cuda.threadIdx.x
        out[t, 0] = cuda.syncthreads_count(x[t] > 0)
        out[t, 1] = cuda.syncthreads_and(x[t])
        out[t, 2] = cuda.syncthreads_or(x[t] != 0)

    out = np.zeros((64, 3), np.int32)
    for x, want in ((np.array([1, 0, 0, 2] * 16), [32, 0, 1]), (np.ones(64), [64, 1, 1]), (np.zeros(64), [0, 0, 0])):
        kern[1, 64](x.astype(np.int32), out)
        assert (out == want).all(), (x, out[0])


def test_grid_sync():
    @cuda.jit
    def kern(x, out):
        i = cuda.grid(1)
        x[i] = i * 2
        cuda.cg.this_grid().sync()
        out[i] = x[(i + 100) % x.size]  # written by another block before the grid barrier
        cuda.cg.this_grid().sync()
        x[i] = 0

    x = np.zeros(1024, np.int64)
    out = np.zeros_like(x)
    kern[16, 64](x, out)
    np.testing.assert_array_equal(out, ((np.arange(1024) + 100) % 1024) * 2)
    assert not x.any()

    @cuda.jit
    def kern2(x, out):  # numba's other spelling: the group in a variable
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        x[i] = i
        g.sync()
        out[i] = x[x.size - 1 - i]

    kern2[8, 32](x[:256], out[:256])
    np.testing.assert_array_equal(out[:256], np.arange(256)[::-1])


def test_laneid_and_warpsize():
    @cuda.jit
    def kern(out):
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        out[t, 0] = cuda.laneid
        out[t, 1] = cuda.warpsize

    out = np.zeros((96, 2), np.int32)
    kern[1, (48, 2)](out)
    np.testing.assert_array_equal(out[:, 0], np.arange(96) % 32)
    assert (out[:, 1] == 32).all()


def test_shared_array_shapes_from_globals_and_closures():
    rows = 4

    @cuda.jit
    def kern(out):
        s = cuda.shared.array(shape=(rows, COLS), dtype=np.float64)
        t = cuda.threadIdx.x
        s[t // COLS, t % COLS] = t
        cuda.syncthreads()
        out[t] = s[rows - 1 - t // COLS, t % COLS]

    out = np.zeros(rows * COLS)
    kern[1, rows * COLS](out)
    np.testing.assert_array_equal(out, np.arange(rows * COLS).reshape(rows, COLS)[::-1].ravel())


COLS = 8


def test_bench_cpu_quick_prints_its_table():
    """benchmarks/bench_cpu.py --quick runs and prints its table (speed itself is never asserted)."""
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_cpu.py"), "--quick", "--no-simulator",
                        "--repeat", "1"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "| kernel | kdebug size | kdebug memcheck on | kdebug memcheck off |" in r.stdout
    for name in ("saxpy", "matmul", "reduction", "scan", "stencil"):
        assert f"| {name} |" in r.stdout
    # the kernels with barriers in the region form (narrowed, and with every thread) and as coroutines
    assert ("| kernel | size | region form, on | region form, off | every thread (not narrowed), off | "
            "coroutines, on | coroutines, off | coroutines / regions (off) | numpy | region form (off) / numpy |"
            ) in r.stdout
    assert "reduction, region form, memcheck off:" in r.stdout
    assert "numba's CUDA simulator: not measured: skipped (--no-simulator)" in r.stdout


@pytest.mark.parametrize("memcheck", [True, False])
def test_barrier_first_in_the_kernel_and_device_launched_barrier_kernels(memcheck):
    kdebug.set_options(memcheck=memcheck)

    @cuda.jit
    def child(x):
        s = cuda.shared.array(32, cuda.int32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        cuda.syncthreads()
        x[t] = s[31 - t]

    @cuda.jit
    def parent(x, n):
        cuda.syncthreads()  # the very first statement: a suspend point in the entry block
        t = cuda.threadIdx.x
        if t == 0:
            child[1, n](x)
        cuda.syncthreads()

    x = np.arange(32, dtype=np.int32)
    parent[1, 4](x, 32)
    np.testing.assert_array_equal(x, np.arange(32)[::-1])
    if memcheck:
        with pytest.raises(KernelRuntimeError) as info:
            parent[1, 4](x, 33)
        assert "kernel child (launched from kernel parent)" in str(info.value)


def test_dynamic_shared_memory():
    @cuda.jit
    def kern(x, out):
        s = cuda.shared.array(0, cuda.float32)  # sized by the launch: k[grid, block, stream, nbytes]
        t = cuda.threadIdx.x
        s[t] = x[cuda.grid(1)]
        cuda.syncthreads()
        out[cuda.grid(1)] = s[s.size - 1 - t] + s.size * 1000

    x = np.arange(128, dtype=np.float32)
    out = np.zeros_like(x)
    kern[2, 64, 0, 64 * 4](x, out)
    np.testing.assert_array_equal(out, x.reshape(2, 64)[:, ::-1].ravel() + 64000)
    with pytest.raises(KernelRuntimeError, match=r"index 32 is outside shape \(32,\)"):
        kern[2, 64, 0, 32 * 4](x, out)


@pytest.mark.skipif(__import__("platform").machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
@pytest.mark.parametrize("model", ["x86-64-v3", "x86-64-v4"])
def test_barrier_free_kernel_stays_a_vectorised_loop(model):
    """Without memcheck, saxpy's thread loop is vectorised (packed single-precision arithmetic). The code
    depends on the CPU model: the test pins the AVX2 and AVX-512 models and only compiles for them
    (kdebug/targets/cpu/machines.py); it runs the kernel for this host."""
    import re
    from kdebug.session.live import Session, set_session
    set_session(Session(backend="cpu", passes_on_demand=True, memcheck=False))

    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    x = np.ones(1024, np.float32)
    out = np.zeros_like(x)
    saxpy[4, 256](np.float32(2), x, x, out)
    assert (out == 3).all()
    # it records snapshots: the host assembly is read below (inspect_asm is PTX, as numba's)
    pinned = Session(backend="cpu", memcheck=False, tiered=False, host_cpu=model)
    compiled = pinned.compile_kernel(saxpy, tuple(types.typeof(a) for a in (np.float32(2), x, x, out)))
    asm = compiled.record.snapshots["emit"]
    body = asm[asm.index(".grid.body:"):]
    assert re.search(r"\b(v?mulps|vfmadd\w*ps)\b", body), "the thread loop is not vectorised"


@pytest.mark.parametrize("shuffle", [None, 5], ids=["ordered", "shuffled"])
def test_syncwarp_warp_synchronous_reduction(shuffle):
    kdebug.set_options(shuffle_threads=shuffle)

    @cuda.jit
    def warp_reduce(x, out):
        s = cuda.shared.array(128, cuda.float32)
        t = cuda.threadIdx.x
        s[t] = x[cuda.grid(1)]
        cuda.syncthreads()
        if t < 64:
            s[t] += s[t + 64]
        cuda.syncthreads()
        if t < 32:  # the last warp reduces alone, synchronised by syncwarp only
            s[t] += s[t + 32]
            cuda.syncwarp()
            step = 16
            while step > 0:
                v = s[t + step] if t < step else 0.0
                cuda.syncwarp()
                s[t] += v
                cuda.syncwarp(0xffffffff)
                step //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    x = np.random.default_rng(3).random(128 * 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    warp_reduce[8, 128](x, out)
    np.testing.assert_allclose(out, x.reshape(8, 128).sum(1), rtol=1e-5)


def test_divergent_syncwarp():
    @cuda.jit
    def kern(x):
        t = cuda.threadIdx.x
        if t < 16:
            cuda.syncwarp()
        x[t] = 1

    with pytest.raises(KernelRuntimeError, match=r"cuda.syncwarp\(\) in kernel kern can never complete: lane 16 of "
                                                 r"warp 0, named in the mask 0xffffffff, has exited"):
        kern[1, 64](np.zeros(64, np.int32))
