"""memcheck leaves out the checks that could never fail (kdebug/frontend/index_bounds.py): ``a[k]`` where ``k``
walks ``range(start, a.shape[0], positive step)`` from ``k >= 0`` and nothing rebinds ``k`` or ``a``. Every other
shape keeps its check, and a wrong index is still reported. The lowered IR is read (a failed check's block is
named ``oob``); nothing is timed."""
from __future__ import annotations

import re

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from kdebug.frontend import source_registry
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live

TPB = 64


@cuda.jit(device=True)
def gridsize(n):  # a user's function of the intrinsic's name: proves nothing
    return n - 2


# Harris's reduction #3 with a grid-stride loop (run in rounds), and variants of its loop that prove nothing for x[k]
REDUCTION = """
def {name}(x, y, partial):
    s = cuda.shared.array(TPB, np.float64)
    acc = 0.0
    {before}
    for k in range(cuda.grid(1), {stop}, {step}):
        {inside}
        acc += x[k]
    s[cuda.threadIdx.x] = acc
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        t = 0.0
        for j in range(TPB):
            t += s[j]
        partial[cuda.blockIdx.x] = t
"""
VARIANTS = {
    "grid_stride_sum": dict(stop="x.shape[0]", step="cuda.gridsize(1)"),
    "other_stop": dict(stop="y.shape[0]", step="cuda.gridsize(1)"),  # the range is y's, the index x's
    "rebinds_k": dict(stop="x.shape[0]", step="cuda.gridsize(1)", inside="k = k - 0"),
    "own_gridsize": dict(stop="x.shape[0]", step="gridsize(1)"),  # a user's function of the intrinsic's name
    "rebinds_x": dict(before="n = x.shape[0]; x = y", stop="n", step="cuda.gridsize(1)"),
}
for _name, _parts in VARIANTS.items():  # each from its own text, which kdebug reads as it reads an exec'd script's
    _text = REDUCTION.format(name=_name, **{"before": "pass", "inside": "pass", **_parts})
    source_registry.remember(f"<{_name}>", _text)
    exec(compile(_text, f"<{_name}>", "exec"), globals())
    globals()[_name] = cuda.jit(globals()[_name])
grid_stride_sum, other_stop, rebinds_k, own_gridsize, rebinds_x = (globals()[n] for n in VARIANTS)  # noqa: F821


@cuda.jit
def split_loop(x, out):  # step 1, no barrier: the index-split loop's k >= 0 part
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0
        for k in range(i, len(x)):
            acc += x[k]
        out[i] = acc


@cuda.jit
def split_loop_unproven(x, out):  # the same, its stop an expression index_bounds does not read
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0
        for k in range(i, len(x) - 0):
            acc += x[k]
        out[i] = acc


@pytest.fixture
def session():
    previous = seam.current()
    s = live.Session(backend="cpu", snapshots=True)
    live.set_session(s)
    yield s
    live.set_session(previous)


def _checks(session, kernel, *args) -> int:
    """The failed-check blocks of ``kernel``'s lowered IR (memcheck_ir.FAILED_CHECK_BLOCK)."""
    compiled = session.compile_kernel(kernel, tuple(T.typeof(a) for a in args))
    return len(re.findall(r"^oob[.\d]*:", compiled.record.snapshots["lower"], re.M))


UNPROVEN = [other_stop, rebinds_k]  # run in rounds as grid_stride_sum is


def test_the_grid_stride_loops_accesses_have_no_check_and_the_sum_is_right(session):
    """The same kernel where the range proves nothing for x[k] (another array's extent, k rebound) keeps the
    checks of x[k] in its rounds (the loop's lead iterations keep theirs)."""
    x, partial = np.arange(1000, dtype=np.float64), np.zeros(4)
    unproven = {k.__name__: _checks(session, k, x, x, partial) for k in UNPROVEN}
    assert len(set(unproven.values())) == 1, unproven
    assert _checks(session, grid_stride_sum, x, x, partial) < min(unproven.values())
    grid_stride_sum[4, TPB](x, x, partial)
    assert partial.sum() == x.sum()


def test_a_rebound_array_keeps_its_check_and_its_wrong_index_is_reported(session):
    x, y, partial = np.zeros(100), np.zeros(50), np.zeros(2)
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds read of global array 'x'.*index 50 is outside shape \(50,\)"):
        rebinds_x[2, TPB](x, y, partial)


def test_another_arrays_range_is_still_checked(session):
    x, y, partial = np.zeros(50), np.zeros(100), np.zeros(2)
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds read of global array 'x'.*index 50 is outside shape \(50,\)"):
        other_stop[2, TPB](x, y, partial)


def test_the_index_split_loops_nonnegative_part_has_no_check(session):
    """The split loop lowers its body twice: the iterations with k < 0 keep the check, the others lose it."""
    x, out = np.arange(300, dtype=np.float64), np.zeros(128)
    assert _checks(session, split_loop, x, out) == _checks(session, split_loop_unproven, x, out) - 1
    split_loop[2, TPB](x, out)
    np.testing.assert_array_equal(out, [x[i:].sum() for i in range(128)])


@pytest.mark.parametrize("kernel, bound", [(grid_stride_sum, ("x", 0)), (other_stop, ("y", 0)), (rebinds_k, None),
                                           (own_gridsize, None), (rebinds_x, None), (split_loop, ("x", 0)),
                                           (split_loop_unproven, None)])
def test_what_index_bounds_proves_of_each_loop(kernel, bound):
    """index_bounds.bound on each kernel's first range loop: a user's function called gridsize, a rebound
    array or loop variable, a stop it does not read prove nothing."""
    import ast
    from kdebug.frontend import index_bounds
    from kdebug.frontend.typeinfer import infer_function
    x = np.zeros(8)
    args = (x, x) if kernel in (split_loop, split_loop_unproven) else (x, x, x)
    tf = infer_function(kernel.py_func, tuple(T.typeof(a) for a in args), "kernel")
    loop = next(n for n in ast.walk(tf.source.tree) if isinstance(n, ast.For))
    assert index_bounds.bound(tf, loop) == bound
