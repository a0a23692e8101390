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
from conftest import SAMPLES

PINNED = "x86-64-v3"


def compiled(name: str, lineinfo: bool) -> SessionModel:
    session = Session(backend="cpu", lineinfo=lineinfo, host_cpu=PINNED)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    runpy.run_path(os.path.join(SAMPLES, name + ".py"), run_name="__main__")
    set_session(None)
    return model


CHILD = """
import json, sys
sys.path.insert(0, sys.argv[3])
from test_debug_info import compiled
model = compiled(sys.argv[1], sys.argv[2] == "1")
print(json.dumps({j.name + "/" + phase: model.snapshot_text(j.id, phase) for j in model.jobs.values()
                  for phase in ("optimize", "after_finish") if model.snapshot_text(j.id, phase) is not None}))
"""


def compiled_apart(name: str, lineinfo: bool) -> dict[str, str]:
    """Each build in a process of its own: numbers kdebug hands out per process (bounds-check sites,
    region ids) then match."""
    tests = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, "-c", CHILD, name, "1" if lineinfo else "0", tests], capture_output=True,
                         text=True, timeout=120, cwd=os.path.dirname(tests))
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
