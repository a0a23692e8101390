"""Random job graphs (``workbench.job_graphs``, a Hypothesis strategy: kernels, device functions, launch, pointer
and derivative edges, cycles, launch depths) rendered to scripts and run under the worklist strategy, each in a
debuggee child forked from one warm process (as ``kdebug fuzz-strategy``'s shrinker runs its trials): every
invariant the worklist claims holds. A failing graph is shrunk by Hypothesis to a minimal one."""
from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings

from kdebug.driver import invariants, strategies, workbench
from kdebug.reduce.trials import WarmStarts
from kdebug.session.options import RunOptions

from conftest import ROOT

TRIAL_S = 60.0  # one program's run: far above what a graph of five kernels takes
COUNTER = itertools.count()


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("job-graphs")
    starts = WarmStarts(str(folder))
    yield starts, folder
    starts.close()


def kernels_and_functions(source: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}


@pytest.mark.timeout(180)
@settings(max_examples=15, deadline=None)
@given(graph=workbench.job_graphs())
def test_the_worklist_strategy_holds_every_invariant_it_claims_on_random_job_graphs(warm, graph):
    starts, folder = warm
    source = graph.render()
    assert {k.name for k in graph.kernels} | {f.name for f in graph.functions} <= kernels_and_functions(source)
    n = next(COUNTER)
    script = folder / f"graph_{n}.py"
    script.write_text(source, encoding="utf-8")
    files = folder / f"graph_{n}.files"
    files.mkdir()
    options = RunOptions(script=str(script), backend="cpu", strategy="worklist", memcheck=False, snapshots=False)
    run = starts.run(options, TRIAL_S, str(folder), str(files))
    claimed = set(invariants.claims(strategies.get("worklist")))
    assert claimed == set(invariants.NAMES)
    broken = {d.message for d in run.diagnostics() if invariants.broken_in(d.message) in claimed}
    assert not broken, f"{graph.describe()}:\n{source}\n" + "\n".join(sorted(broken))
    errors = [d.message for d in run.diagnostics() if d.severity == "error"]
    assert run.status == "ok" and not errors, f"{graph.describe()} ended {run.status}: {errors}\n{run.stderr}"


def test_job_graphs_reach_every_kind_of_edge_and_shrink_to_the_smallest_graph():
    from hypothesis import find

    def any_graph(predicate):
        return find(workbench.job_graphs(), predicate,
                    settings=settings(max_examples=500, database=None, derandomize=True))
    cycle = any_graph(lambda g: any(k.name in k.launches for k in g.kernels))  # shrunk: one self-launch
    assert len(cycle.kernels) == 1 and cycle.kernels[0].launches == ["k0"] and cycle.functions == []
    assert cycle.depth == 0 and cycle.kernels[0].grad is None
    order = any_graph(lambda g: any(k.grad and k.grad[1] == 2 for k in g.kernels))
    assert [k.grad for k in order.kernels] == [("f0", 2)] and len(order.functions) == 1
    pointer = any_graph(lambda g: any(f.pointers for f in g.functions))
    assert [f.pointers for f in pointer.functions] == [["f1"], []]


def test_hypothesis_is_never_imported_by_kdebug_at_start_up(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    probe = ("import json, sys\nimport kdebug.cli, kdebug.driver.workbench, kdebug.reduce.fuzz\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'hypothesis')))\n")
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []
