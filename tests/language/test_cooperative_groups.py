"""cuda.cg as numba-cuda 0.30.4 has it: this_grid() with .sync() only (its cg.py); anything else a kernel asks
of cooperative groups (this_thread_block, a group's size or thread_rank) is a located error naming what numba
has and what to write instead."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError


@cuda.jit
def grid_sync_twice(a, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    a[i] = i
    g.sync()
    out[i] = a[(i + 1) % a.size]
    g.sync()
    a[i] = out[i] * 2


def test_grid_group_sync_orders_blocks():
    a = np.zeros(64, np.int64)
    out = np.zeros(64, np.int64)
    grid_sync_twice[4, 16](a, out)
    assert list(out) == [(i + 1) % 64 for i in range(64)]
    assert list(a) == [2 * ((i + 1) % 64) for i in range(64)]


def _kernel(tmp_path, body):
    path = tmp_path / "cg_probe.py"
    path.write_text("from kdebug import cuda\n\n@cuda.jit\ndef k(a):\n    " + body + "\n")
    spec = importlib.util.spec_from_file_location("cg_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@pytest.mark.parametrize("body,message,hint", [
    ("g = cuda.cg.this_thread_block()", r"cuda.cg.this_thread_block is not in numba-cuda 0.30.4: .* only this_grid\(\)",
     "cuda.syncthreads()"),
    ("cuda.cg.this_thread_block().sync()", r"cuda.cg.this_thread_block is not in numba-cuda", "cuda.syncthreads()"),
    ("a[0] = cuda.cg.tiled_partition(32)", r"cuda.cg.tiled_partition is not in numba-cuda", "cuda.syncthreads()"),
    ("a[0] = cuda.cg.this_grid().size", r"grid group has no attribute 'size': .*GridGroup has only .sync\(\)",
     "cuda.gridsize(1)"),
    ("a[0] = cuda.cg.this_grid().thread_rank()", r"no attribute 'thread_rank': .*only .sync\(\)", "cuda.grid(1)"),
    ("a[0] = cuda.cg.this_grid().num_threads()", r"no attribute 'num_threads'", "cuda.gridsize(1)"),
])
def test_group_api_numba_lacks_is_a_located_error(tmp_path, body, message, hint):
    k = _kernel(tmp_path, body)
    with pytest.raises(CompileError, match=message) as err:
        k[1, 1](np.zeros(4))
    assert err.value.loc.line == 5
    assert hint in str(err.value)


def test_group_api_error_points_at_the_attribute(tmp_path):
    k = _kernel(tmp_path, "g = cuda.cg.this_thread_block()")
    with pytest.raises(CompileError) as err:
        k[1, 1](np.zeros(4))
    assert (err.value.loc.line, err.value.loc.col) == (5, 9)


def test_host_import_of_a_name_numba_lacks_names_it():
    with pytest.raises(ImportError, match="this_thread_block: kdebug does not provide 'this_thread_block'"):
        from kdebug.cuda.cg import this_thread_block  # noqa: F401


def test_a_kernel_that_takes_the_grid_group_is_cooperative():
    """numba-cuda 0.30.4 tests/cudapy/test_cooperative_groups.py: test_this_grid_is_cooperative,
    test_sync_group_is_cooperative, test_false_cooperative_doesnt_link_cudadevrt (the flag part)."""
    @cuda.jit
    def this_grid(A):
        cuda.cg.this_grid()
        A[0] = 1.0

    @cuda.jit
    def sync_group(A):
        g = cuda.cg.this_grid()
        g.sync()
        A[0] = 1.0

    @cuda.jit
    def no_sync(A):
        A[0] = cuda.grid(1)

    for kernel, cooperative in ((this_grid, True), (sync_group, True), (no_sync, False)):
        A = np.full(1, fill_value=np.nan)
        kernel[1, 1](A)
        assert not np.isnan(A[0])
        assert [o.cooperative for o in kernel.overloads.values()] == [cooperative], kernel
