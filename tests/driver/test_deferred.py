"""Deferred codegen: the job tree, compilations per key, re-entrant requests and finish
coverage, for each deferred sample under each strategy."""
from __future__ import annotations

import os
import runpy
import textwrap

import numpy as np
import pytest

from conftest import SAMPLES, run_kdebug, run_sample
from kdebug.session.live import Session, set_session
from kdebug.errors import KdebugError, KernelRuntimeError
from kdebug.session.model import SessionModel


def tree(model):
    """(name, parent name, reason) per job, in tree order."""
    return [(j.name, model.jobs[j.parent].name if j.parent else None, j.reason) for j, _ in model.walk()]


def cycles(model):
    return [(ev.cycle_names, ev.resolution) for ev in model.reentrant]


def compiled_once(model):
    return all(n == 1 for n in model.compilations.values())


def finish_misses(model):
    return [d for d in model.diagnostics if d.category == "finish"]


EXPECTED_TREES = {
    "dynamic_parallel": [("parent", None, "host"), ("scale_range", "parent", "launch")],
    "recursive_launch": [("kernel_a", None, "host"), ("kernel_b", "kernel_a", "launch"),
                         ("kernel_c", "kernel_b", "launch")],
    "self_launch": [("countdown", None, "host")],
    "nested_deferred": [("top", None, "host"), ("fill_via_launch", "top", "pointer"),
                        ("fill_squares", "fill_via_launch", "launch"), ("square", "fill_squares", "pointer")],
    "mutual_pointers": [("parity", None, "host"), ("is_even", "parity", "pointer"), ("is_odd", "is_even", "pointer")],
}
EXPECTED_CYCLES = {
    "dynamic_parallel": [],
    "recursive_launch": [["kernel_a", "kernel_b", "kernel_c", "kernel_a"]],
    "self_launch": [["countdown", "countdown"]],
    "nested_deferred": [],
    "mutual_pointers": [["is_even", "is_odd", "is_even"]],
}


@pytest.mark.parametrize("strategy", ["worklist", "toplevel"])
@pytest.mark.parametrize("sample", sorted(EXPECTED_TREES))
def test_correct_strategies_compile_each_job_once(sample, strategy):
    model, error = run_sample(sample, strategy)
    assert error is None, error
    assert tree(model) == EXPECTED_TREES[sample]
    assert compiled_once(model), model.compilations
    assert cycles(model) == [(c, "reference") for c in EXPECTED_CYCLES[sample]]
    assert not finish_misses(model)
    for job in model.jobs.values():
        assert job.state == "done"
        assert {"before_finish", "after_finish"} <= set(job.snapshots), (job.name, job.snapshots)


def test_worklist_nested_jobs_expand_their_own_markers_toplevel_does_not():
    model, _ = run_sample("nested_deferred", "worklist")
    resolved = {(ev.job, ev.target_job) for ev in model.events if ev.kind == "deferred_resolved"}
    assert resolved == {(1, 2), (2, 3), (3, 4)}  # each job resolved its own marker
    assert all("expand_deferred" in j.snapshots for j in model.jobs.values())
    model, _ = run_sample("nested_deferred", "toplevel")
    rounds = {(ev.job, ev.target_job, ev.round) for ev in model.events if ev.kind == "deferred_resolved"}
    assert rounds == {(1, 2, 1), (1, 3, 2), (1, 4, 3)}  # the toplevel expands nested markers in later rounds
    assert "expand_deferred" not in model.jobs[3].snapshots


@pytest.mark.parametrize("sample", ["recursive_launch", "self_launch", "mutual_pointers"])
def test_recursive_strategy_stops_cycles_with_the_cycle_named(sample):
    model, error = run_sample(sample, "recursive")
    assert error is not None and "\u2192".join(EXPECTED_CYCLES[sample][0]).replace("\u2192", " \u2192 ") in str(error)
    assert cycles(model) == [(EXPECTED_CYCLES[sample][0], "stopped")]
    assert not model.launches  # nothing ran
    assert any(j.state == "failed" for j in model.jobs.values())


def test_recursive_strategy_misses_finish_on_grandchildren():
    model, error = run_sample("nested_deferred", "recursive")
    assert error is not None and "missed the finish passes" in str(error)
    missed = {model.jobs[d.job].name for d in finish_misses(model)}
    assert missed == {"fill_squares", "square"}  # the toplevel only finished its own request
    assert "after_finish" in model.jobs[2].snapshots and "after_finish" not in model.jobs[3].snapshots


def test_recursive_strategy_on_a_tree_without_cycles_still_runs():
    model, error = run_sample("dynamic_parallel", "recursive")
    assert error is None and compiled_once(model)


def _write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


DIAMOND = """
    import numpy as np
    from kdebug import cuda

    @cuda.jit
    def leaf(out, k):
        out[k] += 1

    @cuda.jit
    def left(out):
        leaf[1, 1](out, 0)

    @cuda.jit
    def right(out):
        leaf[1, 1](out, 1)

    @cuda.jit
    def root(out):
        left[1, 1](out)
        right[1, 1](out)

    out = np.zeros(2, dtype=np.int64)
    root[1, 1](out)
    assert out.tolist() == [1, 1], out
"""


@pytest.mark.parametrize("strategy,leaf_compiles,duplicates", [("worklist", 1, 0), ("toplevel", 1, 0),
                                                                ("recursive", 2, 1)])
def test_diamond_is_not_reentrant_and_recursive_duplicates_codegen(tmp_path, strategy, leaf_compiles, duplicates):
    path = _write(tmp_path, "diamond", DIAMOND)
    session = Session(backend="cpu", passes_on_demand=True, strategy=strategy)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    try:
        runpy.run_path(str(path), run_name="__main__")
    except KdebugError:
        pass  # the recursive strategy misses finish on the leaf it compiled twice
    assert not model.reentrant
    leaf = [k for k in model.compilations if ".leaf(" in k]
    assert model.compilations[leaf[0]] == leaf_compiles
    assert len([d for d in model.diagnostics if d.category == "duplicate"]) == duplicates


def test_runaway_device_recursion_stops_at_cuda_nesting_limit(tmp_path):
    path = _write(tmp_path, "runaway", """
        import numpy as np
        from kdebug import cuda

        @cuda.jit
        def runaway(out, n):
            out[0] = n
            runaway[1, 1](out, n + 1)
    """)
    ns = runpy.run_path(str(path))
    out = np.zeros(1, dtype=np.int64)
    with pytest.raises(KernelRuntimeError) as info:
        ns["runaway"][1, 1](out, 0)
    assert "over CUDA's limit of 24" in str(info.value)
    assert "runaway[1, 1](out, n + 1)" in str(info.value)  # located at the launch site
    assert out[0] == 24  # 25 grids ran (depths 0..24), the 26th was refused


def test_host_launch_of_a_kernel_compiled_as_a_deferred_job_reuses_it(tmp_path):
    model, error = run_sample("recursive_launch", "worklist")
    assert error is None
    ns = runpy.run_path(os.path.join(SAMPLES, "recursive_launch.py"))
    out = np.zeros(6, dtype=np.int32)
    ns["kernel_b"][1, 1](out, 0, False)  # a fresh module's kernel_b: compiled anew, then runs
    assert "".join(chr(c) for c in out[:2]) == "bc"


def test_dump_writes_before_and_after_finish_for_nested_jobs(tmp_path):
    r = run_kdebug("dump", "sample_kernels/recursive_launch.py", "--out", str(tmp_path / "d"))
    assert r.returncode == 0, r.stderr
    names = os.listdir(tmp_path / "d")
    for job in ("001_kernel_a", "002_kernel_b", "003_kernel_c"):
        assert any(n.startswith(job) and "before_finish" in n for n in names), names
        assert any(n.startswith(job) and "after_finish" in n for n in names), names
    after_b = next(n for n in names if n.startswith("002_kernel_b") and "after_finish" in n)
    assert "kernel_b_j2.grid" in (tmp_path / "d" / after_b).read_text()  # finish wrapped the nested kernel


def test_recursive_cli_exits_1_within_seconds_with_cycle():
    r = run_kdebug("--headless", "--strategy", "recursive", "sample_kernels/recursive_launch.py", timeout=60)
    assert r.returncode == 1
    assert "kernel_a \u2192 kernel_b \u2192 kernel_c \u2192 kernel_a" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr
