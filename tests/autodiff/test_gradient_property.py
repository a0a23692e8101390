"""Random float programs of two arguments: kdebug.gradient (reverse mode) against kdebug.grad
(forward mode), for every argument.

The programs are those of ``tests/autodiff/test_grad_property.py`` (straight-line code, if/else on
values, ``for`` over a small range, ``while`` with a counter, arithmetic and math functions),
in float64. The programs of an example share one module and one kernel, so each example compiles
one kernel: for each thread and each program the kernel evaluates ``gradient(f)`` (both partials by
one reverse sweep), ``gradient(f, argnum=1)``, ``grad(f)`` and ``grad(f, argnum=1)``. Forward mode is checked
against a dual-number interpreter there; here the two transforms must agree to 1e-10
relative (floored at 1), which a wrong adjoint, a lost tape entry or a phi given to the wrong
predecessor would break.
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

NTHREADS = 4
PROGRAMS = 2  # programs per example, in one module and one kernel
PARTS = [1, 2, 3]  # the examples in three tests (half of them took 37-58 s beside the suite's other tests)

KERNEL = '''

@cuda.jit
def kern(xs, ys, out):
    i = cuda.grid(1)
    if i < xs.size:
        x = xs[i]
        y = ys[i]
{calls}'''

CALLS = '''\
        gx{n}, gy{n} = kdebug.gradient(f{n})(x, y)
        out[{n}, 0, i] = gx{n}
        out[{n}, 1, i] = gy{n}
        out[{n}, 2, i] = kdebug.gradient(f{n}, argnum=1)(x, y)
        out[{n}, 3, i] = kdebug.grad(f{n})(x, y)
        out[{n}, 4, i] = kdebug.grad(f{n}, argnum=1)(x, y)
'''

_modules = itertools.count()


def program(draw, n: int) -> str:
    """One program of test_grad_property's generator, as ``f{n}``, without its header."""
    text = Program(draw, "float64").source()
    body = text[text.index("@jit\ndef f(x, y):"):text.index('\n\nif "REFERENCE"')]
    return body.replace("@jit\ndef f(x, y):", f"@cuda.jit(device=True)\ndef f{n}(x, y):")


@pytest.mark.slow
@pytest.mark.timeout(int(os.environ.get("KDEBUG_PROPERTY_TIMEOUT", 3000)))
@pytest.mark.parametrize("part", PARTS)  # 200 examples in all, a third each: xdist runs the parts side by side
@settings(max_examples=-(-int(os.environ.get("KDEBUG_GRADIENT_EXAMPLES", 200)) // len(PARTS)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_programs_reverse_mode_matches_forward_mode(part, data):
    from kdebug.session.live import Session, set_session
    set_session(Session(backend="cpu", snapshots=False, tiered=False))
    texts = [program(data.draw, n) for n in range(PROGRAMS)]
    kernel = KERNEL.format(calls="".join(CALLS.format(n=n) for n in range(PROGRAMS)))
    source = "import math\nimport kdebug\nfrom kdebug import cuda\n\n\n" + "\n\n".join(texts) + kernel
    grid = (np.arange(-16, 17) / 8).tolist()  # multiples of 1/8 in [-2, 2]
    xs = np.array(data.draw(st.lists(st.sampled_from(grid), min_size=NTHREADS, max_size=NTHREADS)))
    ys = np.array(data.draw(st.lists(st.sampled_from(grid), min_size=NTHREADS, max_size=NTHREADS)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "generated_gradient.py")
        with open(path, "w") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(f"kdebug_gradient_prop_{next(_modules)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out = np.zeros((PROGRAMS, 5, NTHREADS))
        module.kern[1, NTHREADS](xs, ys, out)
        bad = []
        for n in range(PROGRAMS):
            for label, rev, fwd in (("df/dx", out[n, 0], out[n, 3]), ("df/dy", out[n, 1], out[n, 4]),
                                    ("gradient(f, argnum=1)", out[n, 2], out[n, 4])):
                ok = np.abs(rev - fwd) <= 1e-10 * np.maximum(1.0, np.abs(fwd))
                if not ok.all():
                    bad.append(f"f{n} {label}: reverse {rev.tolist()} forward {fwd.tolist()}")
    assert not bad, "\n".join(bad) + f"\n--- programs ---\n{source}\nxs={xs.tolist()} ys={ys.tolist()}"
