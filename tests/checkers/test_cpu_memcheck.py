"""CPU backend memcheck and barrier checks: located KernelRuntimeErrors, never a crash or a hang."""
from __future__ import annotations

import numpy as np
import pytest

import kdebug
from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from conftest import run_kdebug


def launch_error(kernel, config, *args) -> KernelRuntimeError:
    with pytest.raises(KernelRuntimeError) as info:
        kernel[config](*args)
    return info.value


def still_alive():
    """The process and the session go on: another launch works."""
    @cuda.jit
    def inc(x):
        x[cuda.grid(1)] += 1

    x = np.zeros(64, np.int32)
    inc[2, 32](x)
    assert (x == 1).all()


def test_out_of_bounds_global_write():
    @cuda.jit
    def kern(out):
        i = cuda.grid(1)
        out[i] = 1.0

    out = np.zeros(1000, np.float32)
    err = launch_error(kern, (4, 256), out)
    text = str(err)
    assert "out-of-bounds write of global array 'out' in kernel kern" in text
    assert "index 1000 is outside shape (1000,)" in text
    assert "block (3, 0, 0), thread (232, 0, 0)" in text
    assert err.loc.file.endswith("test_cpu_memcheck.py") and err.loc.col == 9
    assert "\n            out[i] = 1.0\n            ^\n" in text  # the source line and a caret under it
    assert err.category == "memcheck"
    assert (out == 1.0).sum() <= 1000  # nothing written past the end: the array is intact
    still_alive()


def test_out_of_bounds_update_is_reported_as_its_read():
    """``a[i] += x`` loads before it stores, so its first bad access is the read (compute-sanitizer:
    "Invalid __global__ read"), in a straight-line kernel and in one with a loop."""
    @cuda.jit
    def bump(a):
        a[cuda.grid(1)] += 1.0

    @cuda.jit
    def bump_loop(a, n):
        for k in range(n):
            a[cuda.grid(1) + k] += 1.0

    a = np.zeros(100, np.float32)
    for err in (launch_error(bump, (1, 128), a), launch_error(bump_loop, (1, 128), a, 2)):
        text = str(err)
        assert "out-of-bounds read of global array 'a'" in text, text
        assert "index 100 is outside shape (100,)" in text, text
    still_alive()


def test_out_of_bounds_shared_write_2d():
    @cuda.jit
    def kern(out):
        tile = cuda.shared.array((4, 8), cuda.int32)
        t = cuda.threadIdx.x
        tile[t, 0] = t
        cuda.syncthreads()
        out[t] = tile[t, 0]

    err = launch_error(kern, (2, 5), np.zeros(5, np.int32))
    assert "out-of-bounds write of shared array 'tile'" in str(err)
    assert "index (4, 0) is outside shape (4, 8)" in str(err)
    assert "thread (4, 0, 0)" in str(err)
    still_alive()


def test_out_of_bounds_local_write():
    @cuda.jit
    def kern(out, n):
        a = cuda.local.array(4, cuda.float64)
        for k in range(n):
            a[k] = k
        out[cuda.threadIdx.x] = a[0]

    err = launch_error(kern, (1, 8), np.zeros(8), 5)
    assert "out-of-bounds write of local array 'a'" in str(err)
    assert "index 4 is outside shape (4,)" in str(err)
    still_alive()


def test_out_of_bounds_read_and_negative_index():
    @cuda.jit
    def kern(x, out, k):
        i = cuda.grid(1)
        out[i] = x[k - i]

    x = np.arange(10, dtype=np.int64)
    out = np.zeros(10, np.int64)
    kern[1, 10](x, out, 9)  # 9 - i >= 0
    np.testing.assert_array_equal(out, x[::-1])
    kern[1, 10](x, out, -1)  # negative indices wrap around, as in numba
    np.testing.assert_array_equal(out, x[-1 - np.arange(10)])
    kern[1, 10](x, out, 5)  # 5 - 9 = -4 wraps to 6
    err = launch_error(kern, (1, 10), x, out, -2)
    assert "out-of-bounds read of global array 'x'" in str(err)
    assert "index -11 is outside shape (10,)" in str(err)


def test_out_of_bounds_in_device_function_and_atomic():
    @cuda.jit(device=True)
    def put(a, i):
        a[i] = 1

    @cuda.jit
    def kern(a):
        put(a, cuda.grid(1))

    err = launch_error(kern, (1, 20), np.zeros(16, np.int32))
    assert "device function put (kernel kern)" in str(err)

    @cuda.jit
    def hist(bins, data):
        cuda.atomic.add(bins, data[cuda.grid(1)], 1)

    err = launch_error(hist, (1, 4), np.zeros(4, np.int32), np.array([0, 1, 7, 2], np.int32))
    assert "out-of-bounds atomic of global array 'bins'" in str(err)
    assert "index 7 is outside shape (4,)" in str(err)


def test_memcheck_off_from_python():
    @cuda.jit
    def kern(x, out):
        i = cuda.grid(1)
        out[i] = x[i + 1]  # reads one past the end of x

    base = np.arange(11, dtype=np.int32)
    x = base[:10]  # a view: the element past its end is base[10]
    out = np.zeros(10, np.int32)
    launch_error(kern, (1, 10), x, out)
    kdebug.set_options(memcheck=False)
    kern[1, 10](x, out)
    np.testing.assert_array_equal(out, base[1:])
    kdebug.set_options(memcheck=True)
    launch_error(kern, (1, 10), x, out)


def test_first_error_wins_over_many_threads_and_cores():
    @cuda.jit
    def kern(out):
        out[cuda.grid(1) + 1] = 1

    err = launch_error(kern, (256, 256), np.zeros(256 * 256, np.int8))
    assert "index 65536 is outside shape (65536,)" in str(err)  # only the very last thread fails


def test_barrier_in_branch_released_by_exited_threads():
    """sm_70: the 16 threads that skip the barrier exit, which releases it (a warning: see
    tests/checkers/test_barrier_semantics.py)."""
    @cuda.jit
    def kern(x):
        t = cuda.threadIdx.x
        if t < 16:
            cuda.syncthreads()
        x[t] = 1

    x = np.zeros(32, np.int32)
    kern[1, 32](x)
    assert (x == 1).all()
    still_alive()


def test_barrier_after_early_return():
    @cuda.jit
    def kern(x):
        t = cuda.threadIdx.x
        if t >= x.size:
            return
        cuda.syncthreads()
        x[t] = 1

    x = np.zeros(40, np.int32)
    kern[2, 64](x)
    assert (x == 1).all()


def test_different_barriers_reached():
    @cuda.jit
    def kern(x):
        t = cuda.threadIdx.x
        if t % 2 == 0:
            cuda.syncthreads()
        else:
            cuda.syncthreads_count(1)
        x[t] = 1

    err = launch_error(kern, (1, 32), np.zeros(32, np.int32))
    assert "wait at different barriers" in str(err)
    assert "cuda.syncthreads_count()" in str(err) and "thread (1, 0, 0)" in str(err)


def test_divergent_grid_barrier():
    @cuda.jit
    def kern(x):
        if cuda.blockIdx.x == 1:
            return
        cuda.cg.this_grid().sync()
        x[cuda.grid(1)] = 1

    err = launch_error(kern, (3, 8), np.zeros(24, np.int32))
    assert "grid barrier that can never complete" in str(err)
    assert "every thread of block (1, 0, 0) has exited" in str(err)


def test_cli_reports_kernel_errors_without_traceback(tmp_path):
    script = tmp_path / "oob.py"
    script.write_text(
        "import numpy as np\n"
        "from kdebug import cuda\n\n"
        "@cuda.jit\n"
        "def oob(a):\n"
        "    a[cuda.grid(1)] = 1\n\n"
        "base = np.zeros(64, np.int32)\n"
        "oob[2, 32](base[:40])  # a view: without memcheck the writes land in base[40:]\n"
        "print('base tail', base[40:].sum())\n")
    r = run_kdebug("--headless", str(script), timeout=120)
    assert r.returncode == 1
    out = r.stdout + r.stderr
    assert "oob.py:6:5: kernel error: out-of-bounds write of global array 'a' in kernel oob" in out
    assert "Traceback" not in out
    env_off = run_kdebug("--headless", str(script), timeout=120, env={"KDEBUG_MEMCHECK": "0"})
    flag_off = run_kdebug("--headless", "--no-memcheck", str(script), timeout=120)
    for r in (env_off, flag_off):  # without memcheck nothing is checked
        assert r.returncode == 0, r.stdout + r.stderr
        assert "out-of-bounds" not in r.stdout + r.stderr and "base tail 24" in r.stdout


def test_grid_barrier_launch_too_large_is_a_launch_error():
    from kdebug.errors import LaunchError

    @cuda.jit
    def kern(x):
        cuda.cg.this_grid().sync()
        x[0] = 1

    with pytest.raises(LaunchError, match=r"syncs its grid .* 4097 blocks of 256 threads exceed the 1056"):
        kern[4097, 256](np.zeros(1, np.int32))
    still_alive()
