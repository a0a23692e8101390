"""racecheck and initcheck on the CPU backend: each hazard kind, and the cases that must stay clean."""
from __future__ import annotations

import numpy as np
import pytest

import kdebug
from kdebug import cuda
from kdebug.cuda import float32, int32
from kdebug.session.live import get_session
from conftest import run_kdebug

N = 32


def hazards_of(kernel, grid, block, *args, shuffle=None, racecheck=True, initcheck=False):
    """The hazards one launch found, as JSON (what the trace records)."""
    kdebug.set_options(racecheck=racecheck, initcheck=initcheck, shuffle_threads=shuffle)
    session = get_session()
    before = len(session.hazards)
    kernel[grid, block](*args)
    return [h.to_json() for h in session.hazards[before:]]


def line_of(hazard, which):
    return hazard[which]["location"]["line"]


# ---- shared memory: each hazard kind -------------------------------------------------------------
@cuda.jit
def shared_raw(out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    s[t] = t                      # write
    out[t] = s[(t + 1) % N]       # read of a neighbour's element, no barrier between


@cuda.jit
def shared_war(out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    v = s[(t + 1) % N]            # read
    s[t] = v * 2                  # a neighbour reads this element in the same epoch
    out[t] = v


@cuda.jit
def shared_waw(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    s[0] = t                      # every thread writes the one element
    cuda.syncthreads()
    out[t] = s[0]


def test_shared_read_after_write():
    (h,) = hazards_of(shared_raw, 1, N, np.zeros(N, np.float32))
    assert (h["sanitizer"], h["kind"], h["array"], h["space"]) == ("racecheck", "read-after-write", "s", "shared")
    assert h["first"]["access"] == "write" and h["second"]["access"] == "read"
    assert line_of(h, "second") == line_of(h, "first") + 1
    assert h["first"]["block"] == h["second"]["block"] == [0, 0, 0]
    assert h["first"]["thread"] != h["second"]["thread"]
    # thread t+... reads the element thread t wrote: one occurrence per element
    assert h["count"] == N
    assert h["index"] == [0] and h["first"]["thread"] == [0, 0, 0] and h["second"]["thread"] == [N - 1, 0, 0]


def test_shared_write_after_read():
    (h,) = hazards_of(shared_war, 1, N, np.zeros(N, np.float32))
    assert h["kind"] == "write-after-read"
    assert h["first"]["access"] == "read" and h["second"]["access"] == "write"
    assert line_of(h, "second") == line_of(h, "first") + 1
    assert h["count"] == N


def test_shared_write_after_write():
    (h,) = hazards_of(shared_waw, 1, N, np.zeros(N, np.int32))
    assert h["kind"] == "write-after-write" and h["index"] == [0] and h["count"] == 1
    assert h["first"]["thread"] == [0, 0, 0] and h["second"]["thread"] == [1, 0, 0]
    assert line_of(h, "first") == line_of(h, "second")


def test_report_text_has_both_source_lines_with_carets():
    hazards_of(shared_raw, 1, N, np.zeros(N, np.float32))
    text = get_session().hazards[-1].text
    assert "s[t] = t" in text and "out[t] = s[(t + 1) % N]" in text
    assert text.count("^") == 2 and "thread (0, 0, 0) of block (0, 0, 0)" in text and "hint:" in text


# ---- global memory ---------------------------------------------------------------------------------
@cuda.jit
def histogram_racy(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        bins[values[i]] += 1


@cuda.jit
def histogram_atomic(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i], 1)


@cuda.jit
def neighbour_read(a, out):
    i = cuda.grid(1)
    a[i] = i
    out[i] = a[(i + 1) % a.size]       # another block's element for the last thread of each block


def test_global_update_without_atomics_is_a_race_across_blocks():
    values = (np.arange(512) % 4).astype(np.int32)
    (h,) = hazards_of(histogram_racy, 4, 128, values, np.zeros(4, np.int32))
    assert (h["kind"], h["array"], h["space"]) == ("write-after-write", "bins", "global")
    assert h["first"]["access"] == h["second"]["access"] == "update"
    assert h["count"] == 4  # every bin


def test_global_read_after_write_between_threads():
    n = 256
    (h,) = hazards_of(neighbour_read, 2, 128, np.zeros(n, np.int32), np.zeros(n, np.int32))
    assert (h["kind"], h["array"]) == ("read-after-write", "a")
    assert h["count"] == n


def test_atomics_never_race_with_atomics():
    values = (np.arange(512) % 4).astype(np.int32)
    bins = np.zeros(4, np.int32)
    assert hazards_of(histogram_atomic, 4, 128, values, bins) == []
    assert list(bins) == [128] * 4


@cuda.jit
def shared_atomics(out):
    s = cuda.shared.array(1, int32)
    t = cuda.threadIdx.x
    if t == 0:
        s[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(s, 0, 1)
    cuda.syncthreads()
    out[t] = s[0]


def test_shared_atomics_after_a_barrier_are_clean():
    out = np.zeros(N, np.int32)
    assert hazards_of(shared_atomics, 1, N, out, initcheck=True) == []
    assert (out == N).all()


# ---- no false positives ---------------------------------------------------------------------------------
@cuda.jit
def producer_consumer(out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    s[t] = t * 2
    cuda.syncthreads()
    out[cuda.grid(1)] = s[N - 1 - t]


@cuda.jit
def disjoint(x, out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i]
    s[t] = s[t] + 1          # re-reading and rewriting its own element
    out[i] = s[t]


@cuda.jit
def grid_phases(a, out):
    i = cuda.grid(1)
    a[i] = i
    cuda.cg.this_grid().sync()
    out[i] = a[a.size - 1 - i]   # another block's element, after the grid barrier


@cuda.jit
def grid_phases_unsynced(a, out):
    i = cuda.grid(1)
    a[i] = i
    out[i] = a[a.size - 1 - i]


def test_barrier_separated_producer_consumer_is_clean():
    out = np.zeros(2 * N, np.float32)
    assert hazards_of(producer_consumer, 2, N, out, initcheck=True) == []
    assert out[0] == 2 * (N - 1)


def test_threads_on_disjoint_elements_and_their_own_writes_are_clean():
    x = np.arange(2 * N, dtype=np.float32)
    out = np.zeros(2 * N, np.float32)
    assert hazards_of(disjoint, 2, N, x, out, initcheck=True) == []
    np.testing.assert_array_equal(out, x + 1)


def test_grid_sync_orders_the_phases():
    n = 256
    assert hazards_of(grid_phases, 2, 128, np.zeros(n, np.int32), np.zeros(n, np.int32), initcheck=True) == []
    (h,) = hazards_of(grid_phases_unsynced, 2, 128, np.zeros(n, np.int32), np.zeros(n, np.int32))
    assert h["kind"] == "read-after-write" and h["count"] == n


@cuda.jit
def block_barrier_orders_global(a, out):
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * cuda.blockDim.x
    a[base + t] = t
    cuda.syncthreads()
    out[base + t] = a[base + (t + 1) % cuda.blockDim.x]  # a neighbour's element in the same block


def test_a_block_barrier_orders_global_accesses_of_its_block():
    n = 2 * N
    assert hazards_of(block_barrier_orders_global, 2, N, np.zeros(n, np.int32), np.zeros(n, np.int32)) == []


@cuda.jit
def guarded_neighbour(x, out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.size:  # the early-exit guard: exited threads release the barrier (sm_70)
        return
    s[t] = x[i]
    cuda.syncthreads()
    out[i] = s[t - 1] if t > 0 else s[t]  # an element a thread that did not exit wrote


def test_early_exit_guard_before_a_barrier_is_clean():
    n = N + N // 4  # the second block's last threads exit before the barrier
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    assert hazards_of(guarded_neighbour, 2, N, x, out, initcheck=True) == []
    assert out[N + 3] == N + 2


# ---- determinism ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,dtype", [(shared_raw, np.float32), (shared_war, np.float32),
                                          (shared_waw, np.int32)])
def test_reports_do_not_depend_on_the_thread_order(kernel, dtype):
    reports = [hazards_of(kernel, 2, N, np.zeros(N, dtype), shuffle=seed) for seed in (None, 1, 2, 3)]
    assert reports[0] and all(r == reports[0] for r in reports)


def test_global_reports_do_not_depend_on_the_thread_order():
    values = (np.arange(512) % 4).astype(np.int32)
    reports = [hazards_of(histogram_racy, 4, 128, values, np.zeros(4, np.int32), shuffle=s) for s in (None, 5, 9)]
    assert reports[0] and all(r == reports[0] for r in reports)


# ---- initcheck ----------------------------------------------------------------------------------------------
@cuda.jit
def copy_plus_one(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + 1


@cuda.jit
def partial_fill(x, out):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    if t < N // 2:
        s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t]


def test_initcheck_reports_reads_of_an_uninitialised_device_array():
    d = cuda.device_array(128, np.float32)
    o = cuda.device_array(128, np.float32)
    (h,) = hazards_of(copy_plus_one, 1, 128, d, o, racecheck=False, initcheck=True)
    assert (h["sanitizer"], h["kind"], h["array"], h["space"]) == ("initcheck", "uninitialised read", "a", "global")
    assert h["count"] == 128 and h["second"] is None and h["index"] == [0]
    # what the first launch wrote is initialised for the next one; a host copy initialises too
    assert hazards_of(copy_plus_one, 1, 128, o, d, racecheck=False, initcheck=True) == []
    e = cuda.device_array(128, np.float32)
    e.copy_to_device(np.ones(128, np.float32))
    assert hazards_of(copy_plus_one, 1, 128, e, o, racecheck=False, initcheck=True) == []
    assert hazards_of(copy_plus_one, 1, 128, cuda.to_device(np.ones(128, np.float32)), o,
                      racecheck=False, initcheck=True) == []


def test_initcheck_reports_shared_elements_no_thread_wrote():
    (h,) = hazards_of(partial_fill, 1, N, np.ones(N, np.float32), np.zeros(N, np.float32),
                      racecheck=False, initcheck=True)
    assert (h["kind"], h["array"], h["space"], h["index"]) == ("uninitialised read", "s", "shared", [N // 2])
    assert h["first"]["thread"] == [N // 2, 0, 0] and h["count"] == N // 2


@cuda.jit
def copy_plus_one_2d(a, out):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j] + 1


def _uninit(kernel, grid, block, *args):
    return [(h["array"], h["index"], h["count"])
            for h in hazards_of(kernel, grid, block, *args, racecheck=False, initcheck=True)]


def test_host_copies_into_views_initialise_what_they_write():
    """Every host-side write path marks the elements it writes, in every view of the allocation: copies
    into slices (d[0:5].copy_to_device), element and slice assignment, device_array_like + copy, to_device
    of a strided host array, 2-D rows and blocks; what no copy reached is still reported."""
    h = np.arange(128, dtype=np.float32)
    o = cuda.device_array(128, np.float32)
    d = cuda.device_array(128, np.float32)
    d[0:64].copy_to_device(h[0:64])
    assert _uninit(copy_plus_one, 1, 128, d, o) == [("a", [64], 64)]  # the half no copy reached
    d[64:].copy_to_device(h[64:])
    assert _uninit(copy_plus_one, 1, 128, d, o) == []
    e = cuda.device_array_like(h)
    e[::2].copy_to_device(h[::2])  # a strided view of the allocation: the even elements
    (hz,) = _uninit(copy_plus_one, 1, 128, e, o)
    assert hz == ("a", [1], 64)
    e[1::2] = 0.0  # slice assignment on the device array
    assert _uninit(copy_plus_one, 1, 128, e, o) == []
    f = cuda.device_array_like(h)
    f.copy_to_device(h)
    assert _uninit(copy_plus_one, 1, 128, f, o) == []
    g = cuda.device_array(128, np.float32)
    g[5] = 1.0
    assert _uninit(copy_plus_one, 1, 128, g, o) == [("a", [0], 127)]
    s = cuda.to_device(np.arange(256, dtype=np.float32)[::2])  # to_device of a strided host array
    assert _uninit(copy_plus_one, 1, 128, s, o) == []
    m = cuda.device_array((8, 16), np.float32)
    mo = cuda.device_array((8, 16), np.float32)
    m[1:7, :].copy_to_device(np.ones((6, 16), np.float32))
    m[0].copy_to_device(np.ones(16, np.float32))
    assert _uninit(copy_plus_one_2d, (1, 1), (8, 16), m, mo) == [("a", [7, 0], 16)]
    m.reshape(128)[112:].copy_to_device(np.ones(16, np.float32))  # through a reshaped view
    assert _uninit(copy_plus_one_2d, (1, 1), (8, 16), m, mo) == []


def test_initcheck_on_fortran_ordered_and_strided_device_arrays():
    m = cuda.device_array((8, 16), np.float32, order="F")
    mo = cuda.device_array((8, 16), np.float32)
    m[:, 0:4].copy_to_device(np.ones((8, 4), np.float32))  # the first four columns (contiguous in F order)
    ((array, _, count),) = _uninit(copy_plus_one_2d, (1, 1), (8, 16), m, mo)
    assert (array, count) == ("a", 8 * 12)
    m[:, 4:] = 2.0
    assert _uninit(copy_plus_one_2d, (1, 1), (8, 16), m, mo) == []
    gapped = cuda.device_array((8, 16), np.float32, strides=(128, 4))  # rows 128 bytes apart, 64 used
    gapped[::2].copy_to_device(np.ones((4, 16), np.float32))
    ((array, index, count),) = _uninit(copy_plus_one_2d, (1, 1), (8, 16), gapped, mo)
    assert (array, index, count) == ("a", [1, 0], 64)


def test_a_kernel_writing_through_a_view_initialises_the_allocation():
    d = cuda.device_array(128, np.float32)
    o = cuda.device_array(128, np.float32)
    src = cuda.to_device(np.ones(64, np.float32))
    assert _uninit(copy_plus_one, 1, 64, src, d[64:]) == []  # the kernel writes d's second half through a view
    assert _uninit(copy_plus_one, 1, 128, d, o) == [("a", [0], 64)]
    assert _uninit(copy_plus_one, 1, 64, d[64:], o) == []


# ---- faces: command line, trace -------------------------------------------------------------------------
def test_sanitize_option_on_the_command_line(tmp_path):
    trace = tmp_path / "run.jsonl"
    r = run_kdebug("--headless", "--sanitize", "memcheck,racecheck", "--trace", str(trace),
                   "sample_kernels/sanitizers/histogram_race.py", timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr  # hazards fail the run, as compute-sanitizer's error exit
    assert "histogram_racy" in r.stdout and "histogram_atomic matches" in r.stdout
    import json
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    start = next(e for e in events if e["event"] == "session_started")
    assert start["sanitizers"] == ["memcheck", "synccheck", "racecheck"]
    diags = [e for e in events if e["event"] == "diagnostic" and e.get("sanitizer")]
    assert len(diags) == 1 and diags[0]["sanitizer"] == "racecheck" and diags[0]["hazard"]["kind"] == "write-after-write"


def test_sanitize_rejects_unknown_names():
    r = run_kdebug("--headless", "--sanitize", "memcheck,speedcheck", "sample_kernels/saxpy.py", timeout=60)
    assert r.returncode == 2 and "unknown sanitizer speedcheck" in r.stderr


def _started(trace):
    import json
    return next(json.loads(x) for x in trace.read_text().splitlines() if '"session_started"' in x)


def test_default_sanitizers_are_todays_checks(tmp_path):
    trace = tmp_path / "run.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), "sample_kernels/saxpy.py", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _started(trace)["sanitizers"] == ["memcheck", "synccheck"]
    r = run_kdebug("--headless", "--sanitize", "racecheck,initcheck", "--trace", str(trace), "sample_kernels/saxpy.py",
                   timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _started(trace)["sanitizers"] == ["synccheck", "racecheck", "initcheck"]  # no memcheck: not listed
