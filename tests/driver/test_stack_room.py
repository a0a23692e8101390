"""kdebug/stack_room.py: kdebug's compiles (and a debuggee's script) run on a frame-stack chunk with room, so
that a recursion whose depth goes up and down across the end of one of CPython's 16 KiB chunks does not
map and unmap memory at every call (one page fault each, counted here)."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from conftest import ROOT
from kdebug import stack_room
from phase_probe import answers_at_each_phase

pytestmark = pytest.mark.timeout(120)

ROUNDS = 100


def _down(n: int) -> int:
    return 0 if n == 0 else _down(n - 1) + 1


def _worst_faults(depths=range(1, 300)) -> tuple[int, int]:
    """(the most page faults ``ROUNDS`` recursions of one depth cost, that depth) over ``depths``: two ends of
    chunks at least (a chunk holds ~146 frames of ``_down``)."""
    worst = (0, 0)
    for depth in depths:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(ROUNDS):
            _down(depth)
        worst = max(worst, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, depth))
    return worst


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="the frame stack's chunks are CPython's")
def test_a_recursion_across_a_chunks_end_faults_at_every_call_and_on_the_room_never():
    bare = _worst_faults()
    if bare[0] < ROUNDS:
        pytest.skip(f"this Python or this kernel unmaps no frame-stack chunk at each return ({bare[0]} page "
                    f"faults in {ROUNDS} recursions at the worst depth): nothing for the room to save here")
    roomy = stack_room.call(_worst_faults)
    assert roomy[0] < ROUNDS // 4, (bare, roomy)  # a few stray faults (the allocator's), not one a call


def test_call_gives_fns_value_and_exceptions_and_runs_nested_calls_directly():
    assert stack_room.call(lambda a, b=0: a + b, 2, b=3) == 5
    with pytest.raises(KeyError):
        stack_room.call({}.__getitem__, "missing")
    seen = []
    stack_room.call(lambda: seen.append((stack_room.inside(), stack_room.call(lambda: stack_room.inside()))))
    assert seen == [(True, True)] and not stack_room.inside()  # and off again afterwards


def test_a_kernels_compile_runs_on_the_room():
    seen = answers_at_each_phase(stack_room.inside)
    assert seen and all(seen), seen


def test_a_debuggees_script_runs_on_the_room(tmp_path):
    script = tmp_path / "where_am_i.py"
    script.write_text("from kdebug import stack_room\nprint('on the room:', stack_room.inside())\n")
    r = subprocess.run([sys.executable, "-m", "kdebug.cli", "run", "--headless", "--backend", "cpu", str(script)],
                       cwd=ROOT, capture_output=True, text=True, timeout=100,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert "on the room: True" in r.stdout + r.stderr, r.stdout + r.stderr
