"""Debug locations: the frontend's ``!dbg`` on every instruction (kdebug/frontend/debug_info.py), and
that they are only metadata: the optimised code is the same with and without them."""
from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys

import llvmlite.binding as llvm
import pytest

from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from conftest import ROOT, SAMPLES

PINNED = "x86-64-v3"


def compiled(name: str, lineinfo: bool) -> SessionModel:
    session = Session(backend="cpu", passes_on_demand=True, lineinfo=lineinfo, host_cpu=PINNED)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    runpy.run_path(os.path.join(SAMPLES, name + ".py"), run_name="__main__")
    set_session(None)
    return model


CHILD = """
import json, os, sys
sys.path[:0] = [sys.argv[3], os.path.dirname(sys.argv[3])]  # this file's folder and tests/ (conftest)
from test_debug_info import compiled
model = compiled(sys.argv[1], sys.argv[2] == "1")
print(json.dumps({j.name + "/" + phase: model.snapshot_text(j.id, phase) for j in model.jobs.values()
                  for phase in ("optimize", "after_finish") if model.snapshot_text(j.id, phase) is not None}))
"""


def compiled_apart(name: str, lineinfo: bool) -> dict[str, str]:
    """Each build in a process of its own: numbers kdebug hands out per process (bounds-check sites,
    region ids) then match."""
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, "-c", CHILD, name, "1" if lineinfo else "0", here], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1])


def without_debug_info(text: str) -> str:
    """The module with its debug info stripped: no ``!dbg`` attachments, only the metadata the code
    still reaches (branch weights, loop hints...), renumbered in order of first use, so that two
    modules differing only in debug info print the same."""
    text = re.sub(r",? !dbg !\d+", "", text)
    lines = [line for line in text.splitlines()  # blank lines: the gap before the metadata
             if line.strip() and not line.startswith(("!llvm.dbg.cu", "!llvm.module.flags"))]
    nodes = {m.group(1): line for line in lines if (m := re.match(r"^!(\d+) = ", line))}
    code = [line for line in lines if not line.startswith("!")]
    reached, todo = set(), [n for line in code for n in re.findall(r"!(\d+)\b", line)]
    while todo:
        n = todo.pop()
        if n not in reached and n in nodes:
            reached.add(n)
            todo += re.findall(r"!(\d+)\b", nodes[n].split(" = ", 1)[1])
    kept = code + [nodes[n] for n in sorted(reached, key=int)]
    numbers: dict[str, str] = {}
    renumber = lambda m: "!" + numbers.setdefault(m.group(1), f"m{len(numbers)}")  # noqa: E731
    return "\n".join(re.sub(r"!(\d+)\b", renumber, line) for line in kept).rstrip() + "\n"


@pytest.mark.parametrize("sample", ["saxpy", "matmul_tiled", "recursive_launch"])
def test_debug_locations_leave_the_optimised_code_unchanged(sample):
    with_info, without = compiled_apart(sample, True), compiled_apart(sample, False)
    assert sorted(with_info) == sorted(without) and with_info
    for key, a in with_info.items():
        b = without[key]
        assert "!dbg" in a and "!dbg" not in b
        assert without_debug_info(a) == without_debug_info(b), key


def test_every_instruction_of_a_lowered_kernel_has_a_source_line():
    model = compiled("saxpy", True)
    job = next(j for j in model.jobs.values() if j.name == "saxpy")
    text = model.snapshot_text(job.id, "lower")
    mod = llvm.parse_assembly(text)
    mod.verify()
    fn = next(f for f in mod.functions if not f.is_declaration and f.name.startswith("saxpy"))
    # llvmlite prints ``unreachable`` without its metadata (its own printer): the one exception
    body = [str(i) for b in fn.blocks for i in b.instructions if i.opcode != "unreachable"]
    assert body and all("!dbg" in i for i in body), [i for i in body if "!dbg" not in i][:3]
    # the lines are the kernel's own: saxpy's def and body lines in sample_kernels/saxpy.py
    source = open(os.path.join(SAMPLES, "saxpy.py")).read().splitlines()
    lines = {int(n) for n in re.findall(r"!DILocation\([^)]*\bline: (\d+)", text)}
    assert any("out[i] = a * x[i] + y[i]" in source[n - 1] or "a * x[i]" in source[n - 1] for n in lines), lines
    assert 'filename: "saxpy.py"' in text


CARRIED = '''
import numpy as np
from kdebug import cuda

@cuda.jit
def prefix_rows(a, n):
    i = cuda.grid(1)
    if i < a.shape[0]:
        for j in range(1, n):
            a[i, j] = a[i, j - 1] * 0.5 + a[i, j]

a = np.ones((64, 32), dtype=np.float32)
prefix_rows[2, 32](a, 32)
print(a[0, :4])
'''


def test_remarks_name_a_loop_carried_dependence_missed_at_its_for_line(tmp_path):
    script = tmp_path / "carried.py"
    script.write_text(CARRIED)
    out = tmp_path / "dump"
    res = subprocess.run([sys.executable, "-m", "kdebug.cli", "dump", str(script), "--out", str(out), "--backend",
                          "cpu", "--no-memcheck"], capture_output=True, text=True, timeout=240,
                         env=dict(os.environ, KDEBUG_HOST_CPU=PINNED))
    assert res.returncode == 0, res.stderr
    (remarks,) = out.glob("*_prefix_rows_remarks.txt")
    rows = [line.split(" ", 3) for line in remarks.read_text().splitlines()]
    for_line = next(n for n, line in enumerate(CARRIED.splitlines(), 1) if line.strip().startswith("for j"))
    body_line = for_line + 1
    assert [f"carried.py:{for_line}:9", "missed", "loop-vectorize"] in [r[:3] for r in rows], remarks.read_text()
    # LLVM's reason is beside it: the dependence on the element before, at the body's line
    reasons = [r for r in rows if r[1] == "analysis" and r[2] == "loop-vectorize"]
    assert any(r[0].startswith(f"carried.py:{body_line}:") and r[3].startswith("loop not vectorized:")
               for r in reasons), remarks.read_text()
    # and every line has the dump's shape: file:line:col kind pass message (phase)
    assert all(r[1] in ("passed", "missed", "analysis") and re.fullmatch(r".+:\d+:\d+", r[0]) for r in rows)
