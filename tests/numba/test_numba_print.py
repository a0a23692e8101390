"""print() in kernels as numba-cuda prints (printimpl.py: items joined by spaces, %lld/%llu, %f, True/False):
on the CPU backend one line per call and thread, in thread order, flushed at the launch's end, capped."""
from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_kdebug
from kdebug import cuda
from kdebug.targets.ptx import cuda_tool

SCRIPT = """\
import numpy as np
from numba import cuda

@cuda.jit
def k(a):
    i = cuda.grid(1)
    cuda.syncthreads()
    print("thread", i, a[i], i < 2, np.uint64(2**64 - 1), np.int8(-5))

k[2, 3](np.arange(6, dtype=np.float32) * 0.5)
print("after the launch")
"""


def test_print_lines_are_in_thread_order_at_the_launch_end(tmp_path):
    script = tmp_path / "p.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "t.jsonl"
    r = run_kdebug("run", "--numba", "--headless", "--shuffle-threads=3", "--trace", str(trace), str(script))
    assert r.returncode == 0, r.stderr
    want = [f"thread {i} {i * 0.5:f} {i < 2} 18446744073709551615 -5" for i in range(6)]
    assert r.stdout.splitlines()[:7] == want + ["after the launch"]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    out = [e for e in events if e["event"] == "kernel_output"]
    assert len(out) == 1 and out[0]["launch"] == 1 and out[0]["name"] == "k"
    assert out[0]["lines"] == [[b, t, want[3 * b + t]] for b in range(2) for t in range(3)]


def test_print_is_capped_at_10000_lines_with_a_note(tmp_path):
    script = tmp_path / "many.py"
    script.write_text(textwrap.dedent("""\
        from kdebug import cuda

        @cuda.jit
        def k():
            print(cuda.grid(1))
            print(cuda.grid(1))

        k[6, 1000]()
        """))
    r = run_kdebug("run", "--headless", str(script))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["0", "0", "1", "1"] and lines[9999] == "4999"
    assert lines[10000] == ("kdebug: 2000 more line(s) printed by k (launch 1) not shown: "
                            "the limit is 10000 lines per launch")


def test_print_rejects_what_numba_cannot_print():
    from kdebug.errors import TypingError
    import numpy as np

    @cuda.jit
    def k(a):
        print(a)

    with pytest.raises(TypingError, match="prints numbers, booleans and string constants, not float64"):
        k[1, 1](np.zeros(2))


def test_print_compiles_to_vprintf_for_the_gpu():
    def k(x):
        print("x is", x, x > 0)

    ptx, _ = cuda.compile_ptx(k, "void(float32)")
    assert ".extern .func  (.param .b32 func_retval0) vprintf" in ptx and "call.uni" in ptx
    from kdebug.cuda import types
    from kdebug.targets.printing import c_format
    space = ("s", " ")  # a line's pieces are written one after the other (the frontend adds the spaces)
    assert c_format([("s", "x is 100%"), space, (types.float32, None), space, (types.boolean, None), space,
                     (types.uint8, None), space, (types.int16, None)]) == "x is 100%% %f %s %llu %lld\n"  # numba's


@pytest.mark.skipif(cuda_tool("ptxas") is None, reason="ptxas (CUDA toolkit) is not installed here")
def test_print_ptx_assembles():
    from kdebug.targets.ptx import run_ptxas

    def k(x, n):
        print("x is", x, n, x > 0)

    ptx, _ = cuda.compile_ptx(k, "void(float64, uint32)")
    report = run_ptxas(ptx, "sm_90", False)
    assert report["ok"], report["log"]
