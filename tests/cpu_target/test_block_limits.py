"""The region form's copy of its blocks for launches whose blocks fit memcheck's checks on the thread index
(kdebug/targets/cpu/forms/regions/block_limits.py): which limits the analysis finds, that the copy's checks of
the thread index fold and the plain copy keeps them, and that both copies give the coroutines' outputs,
errors and warnings, with blocks that fit, that are smaller, and that are larger than the limits in each
dimension, untiered and on a tiered compile's optimised code."""
from __future__ import annotations

import importlib.util
import itertools
import re
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest

from conftest import ROOT, module_folder, watched_session
from test_regions_property import _run  # one kernel launch: its outputs, error and warnings
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live
from kdebug.targets.cpu import tiers
from kdebug.targets.cpu.checks.memcheck import FRESH
from kdebug.targets.cpu.target import emit_pipeline

sys.path.insert(0, f"{ROOT}/sample_kernels")
sys.path.insert(0, f"{ROOT}/benchmarks")
import matmul_tiled  # noqa: E402
import scan  # noqa: E402
from kernel_forms import matmul_forms, reduction_forms  # noqa: E402

_dir = module_folder("kdebug-limits-")
_count = itertools.count()

# a tile transposed through shared memory, and a read one column on (``k``: 0 in bounds; 1 reads past the
# tile's edge at tx = 15, a failed check inside a block that fits the limits)
TILE_KERNEL = """
from kdebug import cuda
from kdebug.cuda import float32

TPB = 16


@cuda.jit
def tile(x, out, k):
    s = cuda.shared.array((TPB, TPB), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tz = cuda.threadIdx.z
    nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
    i = cuda.blockIdx.x * nt + (tz * cuda.blockDim.y + ty) * cuda.blockDim.x + tx
    s[ty, tx] = x[i] + float32(tz)
    cuda.syncthreads()
    out[i] = s[tx % cuda.blockDim.y, ty % cuda.blockDim.x] + s[ty, tx + k]
"""


def _load(source: str, name: str):
    path = f"{_dir}/limits_k{next(_count)}.py"
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"limits_k{next(_count)}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def _limits(session, dispatcher, *arrays):
    rec = session.compile_kernel(dispatcher, tuple(T.typeof(a) for a in arrays)).record
    assert rec.form[0] == "regions", rec.form
    return rec.target_state.block_limits.get(rec.entry)


@pytest.fixture(scope="module")
def checked():
    previous = seam.current()
    yield live.Session(backend="cpu", snapshots=False, tiered=False, memcheck=True)
    live.set_session(previous)


# ---- what the analysis finds ---------------------------------------------------------------------------------
def test_the_limits_are_the_extents_the_thread_index_is_checked_against(checked):
    a = np.zeros((4, 4), np.float32)
    # sA[ty, tx], sA[ty, k], sB[k, tx] of 16 x 16 tiles: x and y up to 16, z any
    assert _limits(checked, matmul_tiled.matmul_tiled, a, a, a) == (16, 16, 1024)
    for form in ("numba_docs", "numba_049", "cuda_guide"):
        b = a.astype(np.float64) if form == "cuda_guide" else a
        assert _limits(checked, getattr(matmul_forms, form), b, b, b) == (16, 16, 1024), form
    x = np.zeros(8, np.float32)
    assert _limits(checked, reduction_forms.harris_two_loads, x, x) == (256, 1024, 1024)  # sdata[tid] of 256
    s = np.zeros(8, np.int64)
    assert _limits(checked, scan.block_scan, s, s, s) == (128, 1024, 1024)  # s[t] of TPB = 128


def test_no_limits_where_no_check_reads_the_thread_index_itself(checked):
    x = np.zeros(8, np.float32)
    # s[(t * 3 + 1) % 64]: the index is made of the thread's, not the thread's itself; a guard t < 32 is no check
    kernel = _load("""
from kdebug import cuda
from kdebug.cuda import float32


@cuda.jit
def k(x, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[(t * 3 + 1) % 64] = x[t]
    cuda.syncthreads()
    if t < 32:
        out[t] = s[(t * 5) % 64]
""", "k")
    assert _limits(checked, kernel, x, x) is None
    previous = seam.current()
    try:  # no memcheck, no checks
        unchecked = live.Session(backend="cpu", snapshots=False, tiered=False, memcheck=False)
        a = np.zeros((4, 4), np.float32)
        assert _limits(unchecked, matmul_tiled.matmul_tiled, a, a, a) is None
    finally:
        live.set_session(previous)


# ---- the code: the copy's checks of the thread index fold ---------------------------------------------------
def _function(text: str, name: str) -> str:
    start = re.search(rf"^define [^\n]*@{re.escape(name)}\(", text, re.M)
    assert start, f"no {name} in the optimised module"
    return text[start.start():text.index("\n}\n", start.start())]


@pytest.mark.parametrize("model", ["x86-64-v2", "x86-64-v3"])
def test_the_copy_for_small_blocks_has_no_check_of_the_tiles_and_the_plain_copy_keeps_them(model):
    """Compiled only (the CPU model pinned). The tiled matmul's failed checks record their site (with the
    ``FRESH`` bit) where they end a thread's step: the sites of the inner loop's reads of the tiles
    (``sA[ty, k] * sB[k, tx]``) are in the plain copy's code and not in the copy for blocks of at most 16 x 16
    threads; its global arrays' stay in both. (The tiles' stores before the barrier keep one check in the
    copy: InstCombine merged ``ty < 16 and tx < 16`` into ``(ty | tx) < 16``, which LLVM does not fold from
    the loops' bounds; they run once a tile, the reads 16 times.)"""
    previous = seam.current()
    session = live.Session(backend="cpu", snapshots=True, tiered=False, memcheck=True, host_cpu=model)
    try:
        a = np.zeros((4, 4), np.float32)
        rec = session.compile_kernel(matmul_tiled.matmul_tiled, (T.typeof(a),) * 3).record
        mod = llvm.parse_assembly(rec.ir_after_finish())
        emit_pipeline(session.target.tm, mod, session.target.speed_level)
        table = session.target.check_sites
    finally:
        live.set_session(previous)
    text = str(mod)
    small = _function(text, rec.entry + ".grid.small_blocks")
    plain = _function(text, rec.entry + ".grid.body")
    sites = {k: table.site(k) for k in range(1, len(table))}
    tiles = [k for k, s in sites.items() if s.kind == "access" and s.array in ("sA", "sB") and s.access == "read"]
    globals_ = [k for k, s in sites.items() if s.kind == "access" and s.array in ("A", "B", "C")]
    assert len(tiles) >= 2 and len(globals_) >= 2, sites

    def recorded(code: str, k: int) -> bool:
        return re.search(rf"\b{k | FRESH}\b", code) is not None

    assert not [k for k in tiles if recorded(small, k)], small
    assert [k for k in tiles if recorded(plain, k)], "the plain copy lost the tiles' checks"
    assert any(recorded(small, k) for k in globals_), "the copy lost the global arrays' checks"


# ---- what runs: both copies against the coroutines ----------------------------------------------------------
@pytest.fixture(scope="module")
def forms():
    previous = seam.current()
    made = {}
    for name, regions, tiered in (("regions", True, False), ("tiered", True, True), ("coroutines", False, False)):
        made[name] = watched_session(tiered=tiered, regions=regions, memcheck=True)
    yield made
    live.set_session(previous)


# blocks that fit (16 x 16, smaller, a z dimension), and larger ones in x and in y (the plain copy: the
# tile's checks fail there, and report as the coroutines do)
SHAPES = [(16, 16, 1), (8, 4, 1), (16, 8, 2), (1, 1, 1), (32, 8, 1), (4, 32, 1)]


@pytest.mark.parametrize("block", SHAPES, ids=lambda b: "x".join(map(str, b)))
@pytest.mark.parametrize("k", [0, 1])
def test_both_copies_give_the_coroutines_outputs_errors_and_warnings(forms, block, k):
    """The coroutines' error and warnings, and their outputs where no check failed (after a failed check the
    region form's other threads still run their step: docs/internals/cpu-forms.md, "Memcheck in the region
    form"); the region form's outputs the same untiered, on tier 0 (no copy) and on tier 1."""
    kernel = _load(TILE_KERNEL, "tile")
    coroutines = _run(*forms["coroutines"], kernel, 3, block, k)
    want = _run(*forms["regions"], kernel, 3, block, k)
    assert want[1:] == coroutines[1:]
    if want[1] is None:
        assert want[0] == coroutines[0]
    assert _limits(forms["regions"][0], kernel, np.zeros(1, np.float32), np.zeros(1, np.float32), np.int32(k)) \
        == (16, 16, 1024)  # the launcher has the copy: s[ty, tx], s[ty, tx + k] (x and y up to 16)
    tiered, seen = forms["tiered"]
    assert _run(tiered, seen, kernel, 3, block, k) == want  # tier 0 (no copy) or already tier 1
    tiers.wait_all()
    assert _run(tiered, seen, kernel, 3, block, k) == want  # tier 1's code, with the copy
    # the tile's checks fail in blocks larger than it, and s[ty, tx + 1] at tx = 15 (a block that fits)
    if block[0] > 16 or block[1] > 16 or (k == 1 and block[0] == 16):
        assert want[1] is not None and "out-of-bounds" in want[1], want
    else:
        assert want[1] is None, want
