"""PTX beside a CPU session: one PtxPipeline of the session, shared by ``dump --target ptx`` and
``ptx_of`` (inspect_asm), whose own job table stays out of the session's job tree."""
from __future__ import annotations

import numpy as np

from kdebug import cuda
from kdebug.lang import types as T
from kdebug.session.live import Session, set_session
from kdebug.session.ptx_compile import PtxPipeline

F32_1D = T.Array(T.float32, 1)


@cuda.jit
def leaf(out):
    out[0] = 1


@cuda.jit
def scale(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] *= 2
    if i == 0:
        leaf[1, 1](out)


def test_one_ptx_pipeline_serves_dump_and_ptx_of_and_compiles_each_job_once():
    session = Session(backend="cpu", passes_on_demand=True, emit_ptx=True, ptx_arch="sm_80")
    set_session(session)
    try:
        out = np.ones(32, dtype=np.float32)
        scale[1, 32](out)
        assert out[0] == 1 and out[1:].tolist() == [2.0] * 31
        pipeline = session.ptx_pipeline()
        assert isinstance(pipeline, PtxPipeline) and session.ptx_pipeline() is pipeline
        assert pipeline.target.arch == "sm_80"
        # dump --target ptx: the session's own jobs (the kernel and the child it launches) got PTX
        jobs = {r.name: r for r in session.driver.records.values()}
        assert set(jobs) == {"scale", "leaf"}  # the PTX jobs are not in the session's table
        assert ".entry" in jobs["scale"].snapshots["ptx"] and "ptx" in jobs["leaf"].snapshots
        ptx, _ = session.ptx_of(scale, (F32_1D,))  # inspect_asm: the same pipeline, no second compile
        assert ptx == pipeline.compile(scale, (F32_1D,)).artifact.ptx
        counts = pipeline.driver.compile_counts  # job key -> compilations: scale and leaf, once each
        assert len(counts) == 2 and set(counts.values()) == {1}
        assert ".target sm_80" in ptx
    finally:
        set_session(None)


def test_a_cpu_session_builds_no_ptx_pipeline_until_asked():
    session = Session(backend="cpu", passes_on_demand=True)
    set_session(session)
    try:
        out = np.ones(4, dtype=np.float32)
        scale[1, 4](out)
        assert session._ptx_pipeline is None  # a plain run compiles nothing for PTX
        ptx, _ = session.ptx_of(scale, (F32_1D,))
        assert ".entry" in ptx and session._ptx_pipeline is not None
    finally:
        set_session(None)
