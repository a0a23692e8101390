import json

import numpy as np

from kdebug import cuda
from conftest import run_kdebug


def test_saxpy_runs_on_cpu_backend():
    @cuda.jit
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a * x[i] + y[i]

    x = np.arange(1000, dtype=np.float32)
    y = np.ones_like(x)
    out = np.zeros_like(x)
    saxpy[4, 256](np.float32(2), x, y, out)
    np.testing.assert_allclose(out, 2 * x + y)


def test_headless_cli_prints_job_tree_and_writes_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    r = run_kdebug("--headless", "--trace", str(trace), "sample_kernels/saxpy.py")
    assert r.returncode == 0, r.stderr
    assert "#1  saxpy(float32, float32[::1], float32[::1], float32[::1])  kernel  done" in r.stdout
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "session_started" and kinds[-1] == "session_ended"
    for e in events:
        assert e["v"] == 1 and isinstance(e["t"], float)
    phases = [e["phase"] for e in events if e["event"] == "phase_finished"]
    # regions: the CPU target's stage after lower (kernels with barriers are cut there; saxpy passes through)
    assert phases == ["parse", "typeinfer", "lower", "regions", "expand_deferred", "link_runtime", "optimize",
                      "finish", "validate", "emit", "load"]
    snaps = {e["phase"] for e in events if e["event"] == "snapshot"}
    assert {"before_finish", "after_finish"} <= snaps
