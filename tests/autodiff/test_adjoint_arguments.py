"""An adjoint launch's arguments (kdebug.adjoint(k)[grid, block](x, dx, ...)): each shadow is checked
against its array at the launch (rank, dtype, shape, strides, and memory shared with any array argument),
refused as a LaunchError at the user's launch line; an out-of-bounds access memcheck stops in an adjoint
names the shadow it kept from going out of bounds. A launch that could corrupt the heap runs in a
subprocess with a timeout."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kdebug
from kdebug import cuda
from kdebug.errors import KernelRuntimeError, LaunchError
from kdebug.session.live import Session, set_session

HERE = os.path.dirname(os.path.abspath(__file__))
N = 64


@cuda.jit
def square(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * x[i]


@cuda.jit
def reads_past(x, out):
    i = cuda.grid(1)
    out[i] = 2.0 * x[i + 1]  # the last thread reads one past x's end


@cuda.jit
def writes_past(x, out):
    i = cuda.grid(1)
    out[i + 1] = 2.0 * x[i]  # the last thread writes one past out's end


def _session(memcheck: bool = True) -> None:
    set_session(Session(backend="cpu", passes_on_demand=True, memcheck=memcheck))


def _located_here(info) -> LaunchError:
    """The launch error, located at this file's line that made the launch (not in a generated wrapper)."""
    err = info.value
    assert err.loc is not None, str(err)
    assert os.path.abspath(err.loc.file) == os.path.abspath(__file__), str(err)
    assert err.loc.line == info.tb.tb_lineno, str(err)  # the line of the launch in the test
    assert "<kdebug.adjoint" not in str(err)
    return err


def _launch_a_short_shadow() -> None:
    """Run in a child process: a shadow of 8 elements for a 64-element x (before the launch checks, the
    adjoint wrote past its end, and glibc could abort on the corrupted heap)."""
    _session(memcheck=True)
    x, out = np.linspace(0, 1, N), np.zeros(N)
    dx, dout = np.zeros(8), np.ones(N)
    try:
        kdebug.adjoint(square)[1, N](x, dx, out, dout)  # the short shadow's launch
    except LaunchError as err:
        print(json.dumps({"file": err.loc.file, "line": err.loc.line, "text": str(err),
                          "out": out.tolist(), "dx": dx.tolist()}))
        return
    print(json.dumps({"launched": True}))


def test_a_short_shadow_is_refused_at_the_launch_line_never_a_crash():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import test_adjoint_arguments as t; t._launch_a_short_shadow()")
    r = subprocess.run([sys.executable, "-c", code, HERE], capture_output=True, text=True, timeout=300,
                       cwd=HERE, env={**os.environ, "KDEBUG_BACKEND": "cpu"})
    assert r.returncode == 0, f"the child died ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}"
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert "launched" not in report, "a shadow of 8 elements for 64 was accepted"
    with open(__file__) as f:
        line = next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# the short shadow's launch"))
    assert os.path.abspath(report["file"]) == os.path.abspath(__file__) and report["line"] == line, report
    text = report["text"]
    assert f"test_adjoint_arguments.py:{line}:" in text and "launch error" in text, text
    assert "the shadow of x (argument 2) has shape (8,), but x (argument 1) has (64,)" in text, text
    assert "np.zeros_like(x)" in text, text
    assert report["out"] == [0.0] * N and report["dx"] == [0.0] * 8  # refused before anything ran


@pytest.mark.parametrize("kernel,array,access,argument", [(reads_past, "x", "read", 2),
                                                         (writes_past, "out", "write", 4)])
def test_memcheck_reports_an_out_of_bounds_access_through_a_shadow(kernel, array, access, argument):
    # shadows of the right shape pass the launch checks; the kernel indexes one past an array's end, and
    # the adjoint would take its shadow there: memcheck stops it at the array's access, naming the shadow
    _session(memcheck=True)
    n = 16
    guard = np.full(4, 7.0)  # the elements right after each shadow: untouched
    dx_buf, dout_buf = np.concatenate([np.zeros(n), guard]), np.concatenate([np.ones(n), guard])
    x, out = np.linspace(0, 1, n), np.zeros(n)
    with pytest.raises(KernelRuntimeError) as info:
        kdebug.adjoint(kernel)[1, n](x, dx_buf[:n], out, dout_buf[:n])
    err = info.value
    text = str(err)
    assert err.category == "memcheck", text
    assert f"out-of-bounds {access} of global array '{array}'" in text, text
    assert f"index {n} is outside shape ({n},)" in text and "thread (15, 0, 0)" in text, text
    assert f"{array}'s shadow (argument {argument} of adjoint({kernel.__name__})) has {array}'s shape" in text, text
    assert "the launch stopped before it did" in text, text
    assert os.path.abspath(err.loc.file) == os.path.abspath(__file__)
    assert f"{array}[i + 1]" in err.loc.source_line()  # located at the kernel's access, as memcheck does
    np.testing.assert_array_equal(dx_buf[n:], guard)
    np.testing.assert_array_equal(dout_buf[n:], guard)


def test_an_array_passed_as_its_own_shadow_is_refused_and_left_unchanged():
    _session()
    x, out, dout = np.linspace(-1, 1, N), np.zeros(N), np.ones(N)
    x0 = x.copy()
    with pytest.raises(LaunchError) as info:
        kdebug.adjoint(square)[1, N](x, x, out, dout)
    err = _located_here(info)
    assert "adjoint(square): x (argument 1) is passed as its own shadow (argument 2)" in err.message, str(err)
    assert "np.zeros_like(x)" in err.hint
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(out, 0.0)
    np.testing.assert_array_equal(dout, 1.0)


@pytest.mark.parametrize("case", ["view", "slice", "other argument", "device view"])
def test_a_shadow_sharing_memory_with_an_argument_is_refused(case):
    _session()
    buf = np.linspace(-1, 1, 2 * N)
    x, out, dout = buf[:N], np.zeros(N), np.ones(N)
    if case == "view":  # the same memory through another array object
        args, other = (x, x[::1], out, dout), "x (argument 1)"
    elif case == "slice":  # half of the shadow is the second half of x
        args, other = (x, buf[N // 2:N // 2 + N], out, dout), "x (argument 1)"
    elif case == "other argument":  # the shadow of x is out
        args, other = (x, out[:], out, dout), "out (argument 3)"
    else:  # device arrays: a view of x's device memory
        x = cuda.to_device(x)
        args, other = (x, x[::1], out, dout), "x (argument 1)"
    before = [np.array(a.copy_to_host() if hasattr(a, "copy_to_host") else a) for a in args]
    with pytest.raises(LaunchError) as info:
        kdebug.adjoint(square)[1, N](*args)
    err = _located_here(info)
    assert f"adjoint(square): the shadow of x (argument 2) shares memory with {other}" in err.message, str(err)
    assert "would overwrite" in err.message and "np.zeros_like(x)" in err.hint, str(err)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a.copy_to_host() if hasattr(a, "copy_to_host") else a, b)
    # arrays that interleave in one buffer share no element: accepted, and the adjoint is right
    buf = np.zeros(2 * N)
    x, dx = buf[0::2], buf[1::2]
    x[:] = np.linspace(-1, 1, N)
    kdebug.adjoint(square)[1, N](x, dx, np.zeros(N), np.ones(N))
    np.testing.assert_allclose(dx, 2 * np.linspace(-1, 1, N), rtol=1e-15)


@pytest.mark.parametrize("case,said", [
    ("dtype", "the shadow of x (argument 2) has dtype float32, but x (argument 1) has float64"),
    ("rank", "the shadow of x (argument 2) has 2 dimension(s), but x (argument 1) has 1"),
    ("strides", "the shadow of x (argument 2) has strides (24,), but x (argument 1) has (16,)"),
])
def test_a_shadow_of_the_wrong_type_is_refused_at_the_launch_line(case, said):
    _session()
    x, out, dout = np.linspace(-1, 1, N), np.zeros(N), np.ones(N)
    spare = np.zeros(3 * N)
    if case == "dtype":
        dx = np.zeros(N, np.float32)
    elif case == "rank":
        dx = np.zeros((8, 8))
    else:  # both strided: the adjoint stepped through the shadow with x's strides, off its elements
        x = np.linspace(-1, 1, 2 * N)[::2]
        dx = spare[::3]
    with pytest.raises(LaunchError) as info:
        kdebug.adjoint(square)[1, N](x, dx, out, dout)
    err = _located_here(info)
    assert said in err.message, str(err)
    assert err.hint and "np.zeros_like(x)" in err.hint
    np.testing.assert_array_equal(spare, 0.0)
    np.testing.assert_array_equal(out, 0.0)
