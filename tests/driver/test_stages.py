"""The stage list (kdebug/stages.py): what the driver runs, and the order every face shows."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from kdebug import cuda
from kdebug import events as E
from kdebug import stages as S
from kdebug.session.live import Session, set_session
from kdebug.session.ptx_compile import ptx_driver
from kdebug.lang.dispatcher import Dispatcher
from kdebug.tui import teaching

from conftest import ROOT


@cuda.jit
def _scale(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2.0


def test_the_list_is_ordered_and_named_once():
    names = [s.name for s in S.STAGES]
    assert len(names) == len(set(names))
    assert names[:3] == ["parse", "typeinfer", "lower"] and names[-1] == "load"
    assert names.index("before_finish") < names.index("finish") < names.index("after_finish") < names.index("emit")


def test_a_target_adds_its_own_stages_between_emit_and_load():
    plain = [s.name for s in S.pipeline()]
    assert "ptx" not in plain and "ptxas" not in plain and plain[-2:] == ["emit", "load"]
    with_ptxas = [s.name for s in S.pipeline((S.PTXAS,))]
    assert with_ptxas[-3:] == ["emit", "ptxas", "load"]
    both = [s.name for s in S.pipeline((S.PTXAS, S.PTX))]
    assert both[-4:] == ["emit", "ptx", "ptxas", "load"]  # the list's order, whatever the target's
    with pytest.raises(ValueError, match="not in kdebug/stages.py"):
        S.pipeline((S.Stage("cubin", "text", "not a stage of the list", target="ptx"),))


def test_snapshot_names_in_stage_order():
    assert S.in_stage_order({"emit", "zz_extra", "parse", "after_finish", "ptxas", "aa_extra"}) == \
        ["parse", "after_finish", "emit", "ptxas", "aa_extra", "zz_extra"]


def test_a_cpu_compilation_runs_the_drivers_list_in_order():
    bus = E.EventBus()
    seen = []
    bus.subscribe(seen.append)
    session = Session(backend="cpu", passes_on_demand=True, bus=bus)
    set_session(session)
    try:
        _scale[1, 32](np.ones(32, np.float32))
    finally:
        set_session(None)
    top = next(e.job for e in seen if isinstance(e, E.JobRequested) and e.parent is None)
    phases = [e.phase for e in seen if isinstance(e, E.PhaseStarted) and e.job == top]
    order = [s.name for s in session.driver.stages]
    assert phases == [n for n in order if n not in ("before_finish", "after_finish")]
    snaps = [e.phase for e in seen if isinstance(e, E.Snapshot) and e.job == top]
    # load records no snapshot; regions only for a job with barriers (this kernel has none)
    assert snaps == [s.name for s in session.driver.stages if s.language and s.name != "regions"]


def test_the_ptx_target_runs_ptxas_as_its_own_stage():
    driver = ptx_driver("sm_90", snapshots=True)  # stages run where someone reads their snapshots
    assert [s.name for s in driver.stages][-3:] == ["emit", "ptxas", "load"]
    seen = []
    driver.bus.subscribe(seen.append)
    compiled = driver.compile_kernel(Dispatcher(_scale.py_func), (cuda.float32[:],))
    assert "ptxas" in [e.phase for e in seen if isinstance(e, E.PhaseFinished)]
    report = compiled.record.snapshots["ptxas"]
    # -lineinfo: the snapshots' compile options have lineinfo, so the PTX has .loc lines (test_ptx_lineinfo.py)
    assert report.startswith("ptxas -arch=sm_90 -v -lineinfo: ") or "ptxas is not on PATH" in report
    assert compiled.artifact.ptxas["command"] == "ptxas -arch=sm_90 -v -lineinfo"


def test_an_unknown_phase_is_refused():
    driver = ptx_driver("sm_90")
    rec = driver.new_record(driver_job(driver), None, "host")
    with pytest.raises(AssertionError, match="no stage of ptx"):
        driver.run_phase(rec, "cubin", lambda: None)


def driver_job(driver):
    from kdebug.driver.job import CompilerJob
    return CompilerJob(Dispatcher(_scale.py_func), (cuda.float32[:],), driver.options, "kernel")


def test_the_tui_explains_every_stage():
    assert {s.name for s in S.STAGES} <= set(teaching.PHASES)


def test_the_architecture_page_shows_the_list():
    with open(os.path.join(ROOT, "docs", "internals", "architecture.md"), encoding="utf-8") as f:
        readme = f.read()
    block = re.search(r"\n    parse -> .*?\n\n", readme, re.S).group(0)
    shown = re.findall(r"[a-z_]+", re.sub(r"\(.*?\)|\[.*?\]", "", block))
    assert shown == [s.name for s in S.STAGES if not s.every_job and not s.job_kind]  # a toplevel compilation's


def test_derivative_jobs_record_their_own_stages_after_lower():
    names = [s.name for s in S.STAGES]
    assert [s.name for s in S.of_job_kind("derivative")] == ["primal", "primal_resolved", "derivative", "activity",
                                                             "augmented_forward", "reverse", "tape"]
    assert names.index("lower") < names.index("primal") < names.index("derivative") < names.index("expand_deferred")
    assert not {"primal", "primal_resolved", "derivative"} & {s.name for s in S.pipeline()}
