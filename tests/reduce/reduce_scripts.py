"""Buried-bug scripts for tests/reduce/test_reduce.py: unrelated kernels and host code around one defect."""
from __future__ import annotations

import ast
import os

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "sample_kernels")


def sample_defs(sample: str, *names: str) -> str:
    """The named functions of a sample kernel file, decorators included, as they are written there."""
    with open(os.path.join(SAMPLES, sample), encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    defs = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    parts = []
    for name in names:
        node = defs[name]
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        parts.append("\n".join(lines[first - 1:node.end_lineno]))
    return "\n\n\n" + "\n\n\n".join(parts) + "\n"

FILLER_KERNELS = '''
import numpy as np

import kdebug
from kdebug import cuda
from kdebug.cuda import float32, int32


@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def scale(out, k):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = out[i] * k


@cuda.jit
def square(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = out[i] * out[i]
'''

FILLER_HOST = '''

def checks():
    n = 64
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    saxpy[2, 32](out, x, y, 2.0)
    scale[2, 32](out, 3.0)
    square[2, 32](out)
    assert out[1] == 81.0
    print("filler ok", float(out.sum()))


def main():
    checks()
{host}
    print("done")


if __name__ == "__main__":
    main()
'''

DEFECTS = {
    # kernel_a and kernel_b launch each other: a re-entrant request (worklist resolves it)
    "reentrant": ('''

@cuda.jit
def kernel_a(out, depth, again):
    out[depth] = 97
    kernel_b[1, 1](out, depth + 1, again)


@cuda.jit
def kernel_b(out, depth, again):
    out[depth] = 98
    if again:
        kernel_a[1, 1](out, depth + 1, False)
''', '''    res = np.zeros(8, dtype=np.int32)
    kernel_a[1, 1](res, 0, True)
    print(res)'''),
    # pointer -> launch -> pointer: under --strategy recursive the innermost jobs miss finish (the sample's
    # own functions; buried with the small filler, as FILLER_KERNELS has a kernel named square too)
    "nested": (sample_defs("nested_deferred.py", "square", "fill_squares", "fill_via_launch", "top") + '''
''', '''    sq_out = np.zeros(40, dtype=np.int64)
    count = np.zeros(1, dtype=np.int64)
    top[1, 1](sq_out, count)
    print("squares", int(sq_out.sum()))'''),
    # two pointers to one device function from two device functions: under recursive, compiled twice
    "shared": ('''

@cuda.jit(device=True)
def twice(x):
    return 2 * x


@cuda.jit(device=True)
def left(x):
    return kdebug.deferred(twice)(x) + 1


@cuda.jit(device=True)
def right(x):
    return kdebug.deferred(twice)(x) - 1


@cuda.jit
def both(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = kdebug.deferred(left)(i) + kdebug.deferred(right)(i)
''', '''    pair = np.zeros(32, dtype=np.int64)
    both[1, 32](pair)
    print("pairs", int(pair.sum()))'''),
    # writes one element past the end
    "memcheck": ('''

@cuda.jit
def shift(out):
    i = cuda.grid(1)
    out[i + 1] = i
''', '''    shifted = np.zeros(64, dtype=np.int32)
    shift[2, 32](shifted)'''),
    # increments bins without atomics
    "race": ('''

@cuda.jit
def histogram_racy(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        bins[values[i]] += 1
''', '''    values = (np.arange(32) % 4).astype(np.int32)
    bins = np.zeros(4, np.int32)
    histogram_racy[1, 32](values, bins)'''),
    # half the threads store to shared memory, all of them read it
    "uninit": ('''

@cuda.jit
def partial(out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    if t < 16:
        s[t] = t
    cuda.syncthreads()
    out[t] = s[t]
''', '''    halves = np.zeros(32, dtype=np.float32)
    partial[1, 32](halves)'''),
    # a barrier only half the block reaches
    "sync": ('''

@cuda.jit
def halfsync(out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
    out[t] = t
''', '''    synced = np.zeros(32, dtype=np.int32)
    halfsync[1, 32](synced)'''),
    # a kernel that calls an intrinsic that does not exist: a located compile error
    "error": ('''

@cuda.jit
def typo(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = cuda.no_such_intrinsic(i)
''', '''    typed = np.zeros(16, dtype=np.int32)
    typo[1, 16](typed)'''),
    # a bug in kdebug itself, simulated: the driver's toplevel compilation raises
    "internal": ('''

import kdebug.driver.driver as compiler_driver


def broken_compile(self, rec):
    raise RuntimeError("a pass crashed")


compiler_driver.Driver.compile_toplevel = broken_compile
''', '''    broken = np.zeros(4, dtype=np.float32)
    square[1, 4](broken)'''),
    # what the script prints
    "output": ('''

@cuda.jit
def count_odd(values, total):
    i = cuda.grid(1)
    if i < values.size and values[i] % 2 == 1:
        cuda.atomic.add(total, 0, 1)
''', '''    odd = np.zeros(1, dtype=np.int32)
    count_odd[4, 32](np.arange(128, dtype=np.int32), odd)
    print("checksum", int(odd[0]) * 7)'''),
}


SMALL_FILLER_KERNELS = FILLER_KERNELS.split("\n\n\n@cuda.jit\ndef scale")[0] + "\n"
SMALL_FILLER_HOST = FILLER_HOST.replace("    scale[2, 32](out, 3.0)\n    square[2, 32](out)\n", "").replace(
    "out[1] == 81.0", "out[1] == 3.0")


def buried(defect: str, small: bool = False) -> str:
    """The defect among three unrelated kernels and their host code (``small``: one kernel)."""
    kernels, host = DEFECTS[defect]
    if small:
        return SMALL_FILLER_KERNELS.lstrip() + kernels + SMALL_FILLER_HOST.format(host=host)
    return FILLER_KERNELS.lstrip() + kernels + FILLER_HOST.format(host=host)
