"""Tiered CPU compiles (kdebug/targets/cpu/tiers.py): quick code first, the optimised code from a
background thread, swapped in. Both tiers compute the same results; a failed tier 1 is reported and
tier 0 keeps running; large launches wait for tier 1; sessions that show code never tier; the
interpreter exits with a compile in flight. Calls are counted, nothing is timed."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import KernelRuntimeError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.session import live
from kdebug.targets import pass_record
from kdebug.targets.cpu import target as cpu_target
from kdebug.targets.cpu import tiers

from conftest import ROOT, SAMPLES


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    if t == 0:
        acc = np.float32(0)
        for k in range(64):
            acc += s[k]
        out[cuda.blockIdx.x] = acc


@cuda.jit
def poke(out, at):
    out[at] = 1


def _session(**kw):
    previous = seam.current()
    s = live.Session(backend="cpu", snapshots=False, tiered=True, **kw)
    live.set_session(s)
    return s, previous


@pytest.fixture
def tiered():
    s, previous = _session()
    yield s
    tiers.wait_all(60)
    live.set_session(previous)


def _tiers(s, dispatcher, *args):
    return s.compile_kernel(dispatcher, tuple(T.typeof(a) for a in args)).artifact.tiers


def test_both_tiers_compute_the_same(tiered):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    out = np.zeros_like(x)
    t = _tiers(tiered, saxpy, np.float32(2), x, y, out)
    results = []
    for tier in (0, 1):
        t.use(tier)
        assert t.tier == tier
        out[:] = 0
        saxpy[16, 256](np.float32(2), x, y, out)
        results.append(out.copy())
    assert t.error is None
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[1], 2 * x + y, rtol=1e-6)


def test_both_tiers_of_a_barrier_kernel_compute_the_same(tiered):
    x = np.arange(64 * 8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    t = _tiers(tiered, block_sum, x, out)
    got = []
    for tier in (0, 1):
        t.use(tier)
        out[:] = 0
        block_sum[8, 64](x, out)
        got.append(out.copy())
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[1], x.reshape(8, 64).sum(axis=1))


def test_both_tiers_report_the_same_failed_check(tiered):
    out = np.zeros(4, np.int32)
    t = _tiers(tiered, poke, out, 9)
    texts = []
    for tier in (0, 1):
        t.use(tier)
        with pytest.raises(KernelRuntimeError) as info:
            poke[1, 1](out, 9)
        texts.append(str(info.value))
    assert texts[0] == texts[1] and "outside" in texts[0]


def test_the_sample_matmul_tiled_runs_on_both_tiers(tiered):
    import runpy
    ns = runpy.run_path(os.path.join(SAMPLES, "matmul_tiled.py"), run_name="tiers_matmul")
    a = np.random.default_rng(2).standard_normal((40, 40)).astype(np.float32)
    c = np.zeros_like(a)
    t = _tiers(tiered, ns["matmul_tiled"], a, a, c)
    for tier in (0, 1):
        t.use(tier)
        c[:] = 0
        ns["matmul_tiled"][(3, 3), (16, 16)](a, a, c)
        np.testing.assert_allclose(c, a @ a, rtol=1e-4, atol=1e-3)


def test_a_failed_tier_1_is_reported_and_tier_0_keeps_running(tiered, monkeypatch):
    def broken(tm, mod, level, unroll, interleave):
        raise RuntimeError("LLVM said no")

    monkeypatch.setattr(tiers, "optimise_unlocked", broken)
    x = np.ones(256, np.float32)
    out = np.zeros_like(x)
    with pytest.warns(RuntimeWarning, match="did not compile .*LLVM said no.*keeps running its unoptimised"):
        t = _tiers(tiered, saxpy, np.float32(3), x, x, out)
        assert not t.wait(60)
    assert isinstance(t.error, RuntimeError) and t.tier == 0
    saxpy[1, 256](np.float32(3), x, x, out)
    np.testing.assert_array_equal(out, 4 * x)


def test_a_large_launch_waits_for_tier_1(tiered, monkeypatch):
    monkeypatch.setattr(tiers, "WAIT_THREADS", 256)
    x = np.ones(256, np.float32)
    out = np.zeros_like(x)
    _tiers(tiered, saxpy, np.float32(1), x, x, out)  # compiled, tier 1 not asked for
    used = []
    original = tiers.Tiers.address

    def address(self, job_id, threads):
        a = original(self, job_id, threads)
        used.append((threads, a == self.tier1.get(job_id) if self.tier1 else False))
        return a

    monkeypatch.setattr(tiers.Tiers, "address", address)
    saxpy[1, 256](np.float32(1), x, x, out)
    assert used == [(256, True)]  # it waited: tier 1's code ran
    np.testing.assert_array_equal(out, 2 * x)


@cuda.jit
def saxpy_strided(a, x, y, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]


@pytest.mark.parametrize("kernel, optimize", [(saxpy, ("passes", tiers.TIER0_STRAIGHT_PASSES)),
                                              (saxpy_strided, ("level", 1)), (block_sum, ("level", 1))],
                         ids=["straight", "loop", "barrier"])
def test_pipelines_a_tiered_compile_runs(tiered, monkeypatch, kernel, optimize):
    """In the foreground: optimize's tier 0 pipeline (three passes on a kernel without loops and barriers,
    -O1 on the others) and tier 0's -O0, no -O2 at all; tier 1's two -O2 runs (optimize's on the kernel,
    emit's over the launcher) on the background thread."""
    runs = []
    real_run, real_passes, real_unlocked = cpu_target.run_pipeline, cpu_target.run_passes, tiers.optimise_unlocked
    monkeypatch.setattr(cpu_target, "run_pipeline",
                        lambda tm, mod, level, **kw: (runs.append(("fg", ("level", level), threading.current_thread().name)),
                                                      real_run(tm, mod, level, **kw))[1])
    monkeypatch.setattr(cpu_target, "run_passes",
                        lambda tm, mod, names: (runs.append(("fg", ("passes", names), threading.current_thread().name)),
                                                real_passes(tm, mod, names))[1])
    monkeypatch.setattr(tiers, "optimise_unlocked",
                        lambda tm, mod, level, *a: (runs.append(("bg", ("level", level), threading.current_thread().name)),
                                                    real_unlocked(tm, mod, level, *a))[1])
    x = np.ones(64, np.float32)
    args = (np.float32(1), x, x, x) if kernel is not block_sum else (x, np.zeros(1, np.float32))
    t = _tiers(tiered, kernel, *args)
    assert t.wait(60)
    main = threading.current_thread().name
    assert runs == [("fg", optimize, main), ("fg", ("level", 0), main),
                    ("bg", ("level", 2), "kdebug-tier1"), ("bg", ("level", 2), "kdebug-tier1")]


def _module(build) -> "ir.Module":
    from llvmlite import ir
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.IntType(1), ir.IntType(32)]), "f")
    build(fn, ir)
    return mod


def _blocks(fn, *names):
    from llvmlite import ir
    return [fn.append_basic_block(n) for n in names], [ir.IRBuilder(b) for b in fn.blocks[-len(names):]]


def test_straight_line_finds_each_kind_of_cycle():
    """tiers.straight_line on llvmlite.ir modules: branches that only go forward, a diamond, a switch,
    a declaration are straight; a loop, a block branching to itself, a cycle through a switch case are not;
    nor is a block without a terminator or with one it does not follow."""
    def diamond(fn, ir):
        (a, b, c, d), (ba, bb, bc, bd) = _blocks(fn, "a", "b", "c", "d")
        ba.cbranch(fn.args[0], b, c); bb.branch(d); bc.branch(d); bd.ret_void()

    def switch(fn, ir):
        (a, b, c), (ba, bb, bc) = _blocks(fn, "a", "b", "c")
        sw = ba.switch(fn.args[1], c); sw.add_case(1, b); bb.branch(c); bc.ret_void()

    def loop(fn, ir):
        (a, h, body, end), (ba, bh, bbody, bend) = _blocks(fn, "a", "h", "body", "end")
        ba.branch(h); bh.cbranch(fn.args[0], body, end); bbody.branch(h); bend.ret_void()

    def self_loop(fn, ir):
        (a, b), (ba, bb) = _blocks(fn, "a", "b")
        ba.branch(b); bb.cbranch(fn.args[0], b, b)

    def switch_back(fn, ir):
        (a, b, c), (ba, bb, bc) = _blocks(fn, "a", "b", "c")
        ba.branch(b); sw = bb.switch(fn.args[1], c); sw.add_case(7, a); bc.ret_void()

    def unterminated(fn, ir):
        (a,), (ba,) = _blocks(fn, "a")

    def indirect(fn, ir):
        (a, b), (ba, bb) = _blocks(fn, "a", "b")
        br = ba.branch_indirect(ir.BlockAddress(fn, b)); br.add_destination(b); bb.ret_void()

    from llvmlite import ir
    declared = ir.Module()
    ir.Function(declared, ir.FunctionType(ir.VoidType(), []), "g")
    assert tiers.straight_line(declared)
    assert tiers.straight_line(_module(diamond)) and tiers.straight_line(_module(switch))
    for build in (loop, self_loop, switch_back, unterminated, indirect):
        assert not tiers.straight_line(_module(build)), build.__name__


def test_a_straight_kernels_tier_0_computes_what_its_optimised_code_does(tiered):
    """saxpy's tier 0 from the three passes computes what tier 1 (-O2) does (poke, a straight kernel too,
    reports the same failed check on both tiers: test_both_tiers_report_the_same_failed_check)."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    c = tiered.compile_kernel(saxpy, tuple(T.typeof(a) for a in (np.float32(3), x, y, out)))
    assert cpu_target.module_state(c.record).straight
    t = c.artifact.tiers
    for tier in (0, 1):
        t.use(tier)
        out[:] = 0
        saxpy[4, 256](np.float32(3), x, y, out)
        np.testing.assert_array_equal(out, np.float32(3) * x + y)


def test_pipelines_an_untiered_compile_runs(monkeypatch):
    """A session that shows code: optimize's -O2 and emit's -O2, both in the foreground, nothing queued."""
    runs = []
    real_run = cpu_target.run_pipeline
    monkeypatch.setattr(cpu_target, "run_pipeline",
                        lambda tm, mod, level, **kw: (runs.append((level, kw)), real_run(tm, mod, level, **kw))[1])
    monkeypatch.setattr(tiers.Worker, "submit", lambda w, t: pytest.fail("an untiered compile queued a tier 1"))
    s = live.Session(backend="cpu", snapshots=True)
    x = np.ones(8, np.float32)
    s.compile_kernel(saxpy, tuple(T.typeof(a) for a in (np.float32(1), x, x, x)))
    assert runs == [(2, {}), (2, {"unroll": False, "interleave": False})]


def _module_before_codegen_untiered(dispatcher, argtypes) -> str:
    s = live.Session(backend="cpu", snapshots=False, tiered=False, memcheck=False)
    compiled = s.compile_kernel(dispatcher, argtypes)
    import llvmlite.binding as llvm
    mod = llvm.parse_assembly(compiled.record.ir_after_finish())
    cpu_target.emit_pipeline(s.target.tm, mod, s.target.speed_level)
    return compiled.record.ir_after_finish(), str(mod)


@pytest.mark.parametrize("kernel", ["saxpy", "block_sum"])
def test_tier_1_is_the_untiered_code_and_inspect_llvm_shows_it(monkeypatch, kernel):
    """Tier 1 compiles what the untiered compile does (its module before code generation is the same,
    but for its new names); once it runs, the after-finish IR (inspect_llvm) is the untiered one.
    Without memcheck: its checks' site numbers are numbered into the code by each target (each session's
    own table); so are a barrier's, so for block_sum the numbers are left out of the comparison."""
    dispatcher = {"saxpy": saxpy, "block_sum": block_sum}[kernel]
    x = np.ones(64 * 8, np.float32)
    args = (np.float32(1), x, x, x) if kernel == "saxpy" else (x, np.zeros(8, np.float32))
    argtypes = tuple(T.typeof(a) for a in args)
    want_after_finish, want_codegen = _module_before_codegen_untiered(dispatcher, argtypes)
    seen = []
    real = tiers._emit_object
    monkeypatch.setattr(tiers, "_emit_object", lambda tm, mod: (seen.append(str(mod)), real(tm, mod))[1])
    s, previous = _session(memcheck=False)
    try:
        compiled = s.compile_kernel(dispatcher, argtypes)
        assert compiled.artifact.tiers.wait(60)
        got_after_finish = compiled.record.ir_after_finish()
    finally:
        live.set_session(previous)
    def same(text: str) -> str:  # a block's "; preds = ..." comment lists them in use-list order
        text = re.sub(r" +; preds = .*", "", text)
        return text if kernel == "saxpy" else re.sub(r"\b\d+\b", "N", text)
    assert same(got_after_finish) == same(want_after_finish)
    # only this kernel's modules: a background tier of an earlier test's kernel may still be emitting
    mine = [m for m in seen if re.search(rf"@{kernel}_j\d", m)]
    assert mine, [m[:200] for m in seen]
    assert same(mine[0].replace(tiers.TIER1_SUFFIX, "")) == same(want_codegen)


def test_tier_1_is_compiled_only_once_a_kernel_runs_again(tiered):
    """A kernel launched once never compiles tier 1 (it would cost what the untiered compile does, for code
    nobody runs); its second launch asks for it; waiting for it (inspect_llvm, wait_all) asks too."""
    x = np.linspace(0, 1, 256, dtype=np.float32)
    out = np.zeros_like(x)
    saxpy[1, 256](np.float32(2), x, x, out)
    t = _tiers(tiered, saxpy, np.float32(2), x, x, out)
    assert t.submitted is None and t.tier == 0 and not t.ready.is_set()
    assert tiered.target.tier_worker.pending() == 0
    saxpy[1, 256](np.float32(2), x, x, out)
    assert t.submitted is not None
    assert t.wait(60) and t.tier == 1
    once = np.zeros_like(x)
    block_sum[4, 64](x, once)
    b = _tiers(tiered, block_sum, x, once)
    assert b.submitted is None
    assert tiers.wait_all(60) and b.submitted is not None and b.tier == 1
    np.testing.assert_allclose(out, 3 * x)


def test_sessions_that_show_code_compile_it_at_once():
    for kw in ({"snapshots": True}, {"snapshots": False, "tiered": False}):
        s = live.Session(backend="cpu", **kw)
        x = np.ones(8, np.float32)
        compiled = s.compile_kernel(saxpy, tuple(T.typeof(a) for a in (np.float32(1), x, x, x)))
        assert compiled.artifact.tiers is None
    assert live.Session(backend="cpu", snapshots=True, tiered=True).compile_kernel(
        saxpy, tuple(T.typeof(a) for a in (np.float32(1), x, x, x))).artifact.tiers is None


def test_each_target_owns_its_worker_which_ends_once_the_target_is_gone():
    """The background thread is the target's (CpuTarget.tier_worker): another target gets its own, and a
    target that goes away takes its thread with it, once what it queued is compiled."""
    import gc
    s = live.Session(backend="cpu", snapshots=False, tiered=True)
    other = live.Session(backend="cpu", snapshots=False, tiered=True, memcheck=False)
    x = np.ones(8, np.float32)
    argtypes = tuple(T.typeof(a) for a in (np.float32(1), x, x, x))
    t = s.compile_kernel(saxpy, argtypes).artifact.tiers
    assert t.wait(60) and other.compile_kernel(saxpy, argtypes).artifact.tiers.wait(60)
    worker = s.target.tier_worker
    assert worker is not other.target.tier_worker and worker.thread is not other.target.tier_worker.thread
    thread = worker.thread
    assert thread.is_alive() and worker in tiers._all()
    del s, t
    gc.collect()
    thread.join(30)
    assert not thread.is_alive() and worker.thread is None and other.target.tier_worker.thread.is_alive()


def test_kdebug_tiered_0_turns_tiers_off(monkeypatch):
    monkeypatch.setenv("KDEBUG_TIERED", "0")
    assert not live.Session(backend="cpu", snapshots=False).target.tiered
    monkeypatch.setenv("KDEBUG_TIERED", "1")
    assert live.Session(backend="cpu", snapshots=False).target.tiered


def test_a_recorded_pipeline_waits_for_background_work():
    gate = pass_record.BackgroundGate()
    inside, release, recorded = threading.Event(), threading.Event(), threading.Event()

    def background():
        with gate.background():
            inside.set()
            release.wait(30)

    def record():
        with gate.recording():
            recorded.set()

    bg = threading.Thread(target=background)
    bg.start()
    assert inside.wait(30)
    rec = threading.Thread(target=record)
    rec.start()
    assert not recorded.wait(0.2)  # held back while the background work runs
    release.set()
    assert recorded.wait(30)
    bg.join(30)
    rec.join(30)



@pytest.mark.parametrize("side", ["recording", "background"])
def test_a_ctrl_c_while_the_gate_waits_leaves_no_count_up(side):
    """^C (a KeyboardInterrupt) while one side waits for the other: the count it had put up stayed up, and
    the other side waited for good (the tier-1 thread, and the process's exit with it)."""
    gate = pass_record.BackgroundGate()
    holder = gate.recording if side == "background" else gate.background  # the side already inside
    waiter = gate.background if side == "background" else gate.recording
    wait = gate._cv.wait

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    with holder():
        gate._cv.wait = interrupted
        with pytest.raises(KeyboardInterrupt):
            with waiter():
                raise AssertionError("not reached: the gate is held")
        gate._cv.wait = wait
    assert (gate._running, gate._recording) == (0, 0)
    done = threading.Event()

    def other():
        with holder():
            done.set()
    t = threading.Thread(target=other)
    t.start()
    assert done.wait(30)
    t.join(30)

EXIT_SCRIPT = """
import numpy as np
from kdebug import cuda

@cuda.jit
def k(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1

x = np.zeros(64, np.float32)
for _ in range({kernels}):
    k[1, 64](x)
    again = cuda.jit(k.py_func)  # a new kernel object: another compile, its tier 1 queued at its second launch
    again[1, 64](x)
    again[1, 64](x)
print("done", x[0])
"""


@pytest.mark.parametrize("kernels", [1, 4])
def test_the_interpreter_exits_with_tier_1_in_flight(tmp_path, kernels):
    script = tmp_path / "s.py"
    script.write_text(EXIT_SCRIPT.format(kernels=kernels))
    env = dict(os.environ, KDEBUG_TIERED="1", KDEBUG_BACKEND="cpu")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"done {3.0 * kernels}"
    assert "Warning" not in r.stderr  # queued compiles dropped at exit are not failures
