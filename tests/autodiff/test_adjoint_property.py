"""Random kernels over arrays: kdebug.adjoint against finite differences of the primal and
against the transpose of the primal's Jacobian built column by column with kdebug.grad.

A random device function ``f(x, y)`` (the generator of ``tests/autodiff/test_grad_property.py``:
straight-line code, branches, loops, math functions) is used by a kernel of one of three
forms: elementwise (``out[i] = f(a[i], b[i])``), neighbour reads
(``out[i] = f(a[i - 1] + 0.5 a[i + 1], a[i] b[i])``: the reads of a[i +- 1] are shared by
threads, atomics in the reverse sweep), an in-place update (``a[i] = f(a[i], b[i]) + a[i]``:
a's shadow is read as the final value's adjoint and left as the initial value's) or a shared-memory
tree reduction (``s[t] = f(a[i], b[i])``, then halving steps with a barrier after each, and thread 0
writes ``out[0] = s[0]``: the barriers run backwards, the shared array's shadow carries the adjoints).

- Jacobian: a second kernel evaluates ``grad(f)`` and ``grad(f, argnum=1)`` at each thread's
  point; J^T dout is assembled from them by the chain rule of the kernel's form (float64, 1e-10).
- Finite differences: L = sum(dout * final outputs); central differences in every input element
  (h = 1e-3 and 5e-4, Richardson-extrapolated) must match the adjoint (float64, 1e-6 relative,
  floored at 1). Inputs are
  pseudo-random reals, so no perturbation lands on a branch's or a kink's boundary.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_grad_property import Program

N = 8
FORMS = {
    "elementwise": ("if i < a.size:", "out[i] = f(a[i], b[i])"),
    "neighbour": ("if 0 < i < a.size - 1:", "out[i] = f(a[i - 1] + 0.5 * a[i + 1], a[i] * b[i])"),
    "inplace": ("if i < a.size:", "a[i] = f(a[i], b[i]) + a[i]"),
}
KERNEL = '''

@cuda.jit
def kern(a, b, out):
    i = cuda.grid(1)
    {guard}
        {body}
'''
REDUCTION = '''

@cuda.jit
def kern(a, b, out):
    s = cuda.shared.array(8, np.float64)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    s[t] = f(a[i], b[i])
    cuda.syncthreads()
    step = 4
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0] = s[0]
'''
FORMS["reduction"] = ("", "")
JAC = '''

@cuda.jit
def jac(us, vs, out):
    i = cuda.grid(1)
    if i < us.size:
        out[0, i] = kdebug.grad(f)(us[i], vs[i])
        out[1, i] = kdebug.grad(f, argnum=1)(us[i], vs[i])
'''
_modules = itertools.count()


def points(form, a, b):
    """Each thread's (u, v) = the arguments of f, and the threads that run."""
    if form == "neighbour":
        idx = np.arange(1, N - 1)
        return idx, a[idx - 1] + 0.5 * a[idx + 1], a[idx] * b[idx]
    idx = np.arange(N)
    return idx, a.copy(), b.copy()


def transpose_product(form, a, b, fx, fy, idx, seed_a, seed_out):
    """J^T applied to the final outputs' adjoints: the adjoints of a and b (and out) on exit."""
    da, db, dout = np.zeros(N), np.zeros(N), seed_out.copy()
    if form == "elementwise":
        da[idx] += seed_out[idx] * fx
        db[idx] += seed_out[idx] * fy
        dout[idx] = 0.0
        da += seed_a
    elif form == "reduction":  # out[0] = sum of f at every thread's point
        da += seed_out[0] * fx + seed_a
        db += seed_out[0] * fy
        dout[0] = 0.0
    elif form == "neighbour":
        g = seed_out[idx]
        np.add.at(da, idx - 1, g * fx)
        np.add.at(da, idx + 1, 0.5 * g * fx)
        da[idx] += g * fy * b[idx]
        db[idx] += g * fy * a[idx]
        dout[idx] = 0.0
        da += seed_a
    else:  # a[i] = f(a[i], b[i]) + a[i]: a's shadow is the final value's adjoint
        da = seed_a * (fx + 1.0)
        db = seed_a * fy
    return da, db, dout


@pytest.mark.slow
@pytest.mark.timeout(int(os.environ.get("KDEBUG_PROPERTY_TIMEOUT", 3000)))
@settings(max_examples=int(os.environ.get("KDEBUG_ADJOINT_EXAMPLES", 50)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_kernel_adjoints_match_the_jacobian_transpose_and_finite_differences(data):
    import kdebug
    from kdebug.session.live import Session, set_session
    set_session(Session(backend="cpu", snapshots=False, tiered=False))
    form = data.draw(st.sampled_from(sorted(FORMS)), label="form")
    text = Program(data.draw, "float64").source()
    f = text[text.index("@jit\ndef f(x, y):"):text.index('\n\nif "REFERENCE"')]
    f = f.replace("@jit\ndef f(x, y):", "@cuda.jit(device=True)\ndef f(x, y):")
    guard, body = FORMS[form]
    kern = REDUCTION if form == "reduction" else KERNEL.format(guard=guard, body=body)
    source = "import math\nimport numpy as np\nimport kdebug\nfrom kdebug import cuda\n\n\n" + f + kern + JAC
    if form == "reduction":  # threads in a random order between barriers: a missing barrier shows
        kdebug.set_options(shuffle_threads=data.draw(st.integers(1, 2 ** 16), label="shuffle"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    a0, b0 = rng.uniform(-1.5, 1.5, N), rng.uniform(-1.5, 1.5, N)
    seed_a, seed_out = rng.standard_normal(N), rng.standard_normal(N)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "generated_adjoint.py")
        with open(path, "w") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(f"kdebug_adjoint_prop_{next(_modules)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)

        def primal(a, b):
            a, out = a.copy(), np.zeros(N)
            module.kern[1, N](a, b.copy(), out)
            return a, out

        a, da, b, db, out, dout = a0.copy(), seed_a.copy(), b0.copy(), np.zeros(N), np.zeros(N), seed_out.copy()
        kdebug.adjoint(module.kern)[1, N](a, da, b, db, out, dout)
        final_a, final_out = primal(a0, b0)
        np.testing.assert_allclose(a, final_a, rtol=1e-15)  # the primal's effects happen too
        np.testing.assert_allclose(out, final_out, rtol=1e-15)
        # the Jacobian's transpose, from forward-mode partials of f at each thread's point
        idx, us, vs = points(form, a0, b0)
        parts = np.zeros((2, len(idx)))
        module.jac[1, len(idx)](us, vs, parts)
        want_a, want_b, want_out = transpose_product(form, a0, b0, parts[0], parts[1], idx, seed_a, seed_out)
    msg = f"--- {form} ---\n{source}\na={a0.tolist()}\nb={b0.tolist()}"
    tol = lambda w: 1e-10 * np.maximum(1.0, np.abs(w))  # noqa: E731
    assert (np.abs(da - want_a) <= tol(want_a)).all(), f"da {da} J^T {want_a}\n{msg}"
    assert (np.abs(db - want_b) <= tol(want_b)).all(), f"db {db} J^T {want_b}\n{msg}"
    assert (np.abs(dout - want_out) <= tol(want_out)).all(), f"dout {dout} J^T {want_out}\n{msg}"

    # finite differences of L = seed_a . a_final + seed_out . out_final (the inputs' initial values)
    def loss(a, b):
        fa, fo = primal(a, b)
        return (seed_a @ fa if form == "inplace" else 0.0) + (seed_out @ fo if form != "inplace" else 0.0)

    def central(which, x0, j, h):
        up, down = x0.copy(), x0.copy()
        up[j] += h
        down[j] -= h
        if which == "a":
            return (loss(up, b0) - loss(down, b0)) / (2 * h)
        return (loss(a0, up) - loss(a0, down)) / (2 * h)

    h = 1e-3  # Richardson's extrapolation of two central differences: error O(h^4), rounding ~1e-13
    for which, x0, got in (("a", a0, da - (seed_a if form != "inplace" else 0.0)), ("b", b0, db)):
        wide = np.array([central(which, x0, j, h) for j in range(N)])
        narrow = np.array([central(which, x0, j, h / 2) for j in range(N)])
        quarter = np.array([central(which, x0, j, h / 4) for j in range(N)])
        fd, finer = (4 * narrow - wide) / 3, (4 * quarter - narrow) / 3
        # a jump or a kink within the stencil (floor, min, a branch on the value) makes the differences
        # disagree: no derivative to compare there (the Jacobian check above covers those elements). Two
        # extrapolations that agree to 1e-7 (smooth: ~1e-12) leave fd no error the check below could see;
        # a kink 1.7e-4 from the point (min(0.75, x) at x = 0.75017, found by a run of the suite) moved the two
        # differences apart by less than 1e-3 while fd missed by 2e-4
        smooth = (np.abs(wide - narrow) <= 1e-3 * np.maximum(1.0, np.abs(narrow))) \
            & (np.abs(fd - finer) <= 1e-7 * np.maximum(1.0, np.abs(finer)))
        assert (np.abs(got - fd) <= 1e-6 * np.maximum(1.0, np.abs(fd)))[smooth].all(), \
            f"d{which} {got} finite differences {fd}\n{msg}"
