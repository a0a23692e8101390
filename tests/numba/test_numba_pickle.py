"""Pickling kernels, device functions, ufuncs, configured launches and intrinsics, as numba-cuda 0.30.4
does (by value, compiled code left behind): the expected behaviour of its tests/cudapy/test_serialize.py
(TestPickle) and tests/cudapy/test_extending.py (TestIntrinsic.test_serialization and
test_deserialization), each cited at its test."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import types
from kdebug.numba.extending import _Intrinsic, intrinsic

from conftest import ROOT


def check_call(callee):
    """test_serialize.py check_call: the rebuilt kernel gives the original's result, pickled once and
    twice, and a configured launch keeps its grid and block."""
    arr = np.array([100])
    callee[1, 1](arr)
    expected = arr.copy()
    foo1 = pickle.loads(pickle.dumps(callee))
    assert foo1 is not callee
    arr = np.array([100])
    foo1[1, 1](arr)
    np.testing.assert_equal(arr, expected)
    foo2 = pickle.loads(pickle.dumps(foo1))
    arr = np.array([100])
    foo2[1, 1](arr)
    np.testing.assert_equal(arr, expected)
    foo3 = pickle.loads(pickle.dumps(foo2[5, 8]))
    assert foo3.griddim == (5, 1, 1) and foo3.blockdim == (8, 1, 1)


def test_pickling_a_kernel_and_the_device_function_it_calls():
    """test_serialize.py test_pickling_jit and test_pickling_jit_typing (a declared signature)."""
    @cuda.jit(device=True)
    def inner(a):
        return a + 1

    @cuda.jit
    def foo(arr):
        arr[0] = inner(arr[0])

    @cuda.jit("void(intp[:])")
    def typed(arr):
        arr[0] = inner(arr[0])

    check_call(foo)
    check_call(typed)
    arr = np.array([100])
    pickle.loads(pickle.dumps(foo))[1, 1](arr)
    assert arr[0] == 101


def test_pickling_a_cuda_ufunc():
    """test_serialize.py test_pickling_vectorize: the rebuilt ufunc computes the same, pickled twice."""
    @cuda.vectorize(["intp(intp)", "float64(float64)"])
    def cuda_vect(x):
        return x * 2

    ary = np.arange(10, dtype=np.intp)
    expected = cuda_vect(ary)
    foo1 = pickle.loads(pickle.dumps(cuda_vect))
    np.testing.assert_equal(foo1(ary), expected)
    foo2 = pickle.loads(pickle.dumps(foo1))
    np.testing.assert_equal(foo2(ary), expected)
    np.testing.assert_equal(expected, ary * 2)


def test_a_configured_launch_with_callbacks_does_not_pickle():
    """test_serialize.py test_pickling_configured_launch_with_pre_launch_callbacks_raises: numba's words."""
    @cuda.jit
    def foo(arr):
        arr[0] += 1

    cfg = foo[5, 8]
    cfg.pre_launch_callbacks.append(lambda kernel, config: None)
    with pytest.raises(pickle.PicklingError, match="Cannot pickle configured launches with pre-launch callbacks"):
        pickle.dumps(cfg)


def test_an_intrinsic_pickles_once_and_unpickles_to_itself():
    """test_extending.py TestIntrinsic.test_serialization: pickling the kernel that calls an intrinsic
    gives the intrinsic a UUID (one memo entry more), unpickling finds it in the memo (no entry more),
    and the intrinsic itself unpickles to the very same object."""
    @intrinsic
    def identity(context, x):
        def codegen(context, builder, signature, args):
            return args[0]
        return x(x), codegen

    @cuda.jit
    def foo(x, out):
        out[0] = identity(x)

    out = np.zeros(1, np.int64)
    foo[1, 1](5, out)
    assert out[0] == 5
    memo = _Intrinsic._memo
    size = len(memo)
    serialized_foo = pickle.dumps(foo)
    assert len(memo) == size + 1
    foo_rebuilt = pickle.loads(serialized_foo)
    assert len(memo) == size + 1
    out[0] = 0
    foo_rebuilt[1, 1](6, out)
    assert out[0] == 6
    assert pickle.loads(pickle.dumps(identity)) is identity
    assert len(memo) == size + 1


def test_an_intrinsic_dropped_from_the_memo_rebuilds_once():
    """test_extending.py TestIntrinsic.test_deserialization: an intrinsic made without registering
    leaves the memo once it is gone from ``_recent``; unpickling rebuilds it (a new defn), and a second
    unpickling gives that rebuilt one."""
    def defn(context, x):
        def codegen(context, builder, signature, args):
            return args[0]
        return x(x), codegen

    memo = _Intrinsic._memo
    size = len(memo)
    original = _Intrinsic("foo", defn)
    assert original._defn is defn
    pickled = pickle.dumps(original)
    assert len(memo) == size + 1
    uid = original._uuid
    del original
    assert uid in memo  # still among the recent ones
    _Intrinsic._recent.clear()
    assert uid not in memo
    rebuilt = pickle.loads(pickled)
    assert rebuilt._defn is not defn
    second = pickle.loads(pickled)
    assert rebuilt._defn is second._defn
    assert types.int64 == rebuilt._defn(None, types.int64)[0].restype


def test_a_pickled_kernel_runs_where_its_file_is_not(tmp_path):
    """A kernel pickled from a script and unpickled by another process whose file system lacks the
    script: kdebug compiles source, so the pickle carries the kernel's lines, and an error in the
    rebuilt kernel still names the script's line."""
    script = tmp_path / "make_kernel.py"
    script.write_text(textwrap.dedent("""\
        import pickle, sys
        from numba import cuda

        def make():
            @cuda.jit
            def scale(a, k):
                i = cuda.grid(1)
                if i < a.size:
                    a[i] = a[i] * k
            return scale

        with open(sys.argv[1], "wb") as f:
            pickle.dump(make(), f)
        """))
    blob = tmp_path / "kernel.pickle"
    env = dict(os.environ, PYTHONPATH=ROOT)
    made = subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "--headless", "--backend", "cpu",
                           str(script), str(blob)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert made.returncode == 0, made.stdout + made.stderr
    script.unlink()  # the other machine has no such file
    use = tmp_path / "use_kernel.py"
    use.write_text(textwrap.dedent(f"""\
        import pickle
        import numpy as np
        with open({str(blob)!r}, "rb") as f:
            scale = pickle.load(f)
        a = np.arange(4.0)
        scale[1, 4](a, 3.0)
        print("scaled", [float(x) for x in a])
        scale[1, 4](a, (1.0, 2.0))
        """))
    ran = subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--numba", "--headless", "--backend", "cpu",
                          str(use)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    out = ran.stdout + ran.stderr
    assert "scaled [0.0, 3.0, 6.0, 9.0]" in out, out
    # a launch the kernel cannot type is located in the kernel's own lines, from the pickle
    assert "make_kernel.py:9:" in out and "a[i] = a[i] * k" in out, out
