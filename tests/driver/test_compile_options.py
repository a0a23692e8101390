"""Compile options frozen into every job (kdebug/settings.py): changing one gives new keys and new jobs,
never a target changed under a compilation."""
from __future__ import annotations

import dataclasses
import os
import re
import textwrap

import numpy as np
import pytest

import kdebug
from conftest import ROOT, SAMPLES, run_kdebug
from kdebug import cuda, settings
from kdebug.session.live import Session, set_session
from kdebug.session.model import SessionModel
from kdebug.settings import CompileOptions, Recording, compile_options, key_identity

GRAD_SAMPLES = ["grad_newton", "grad_pointer", "grad_recursive_power", "grad_taylor"]


def test_options_are_frozen_hashable_and_their_digest_names_every_field():
    a = CompileOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.memcheck = False
    assert a == CompileOptions() and hash(a) == hash(CompileOptions()) and a.digest == CompileOptions().digest
    digests = {a.digest}
    for f in dataclasses.fields(a):  # every field changes the digest
        value = getattr(a, f.name)
        changed = (not value) if isinstance(value, bool) else value + 1 if isinstance(value, int) else (value or "") + "x"
        other = a.replace(**{f.name: changed})
        digests.add(other.digest)
        assert f.name in other.summary()
    assert len(digests) == len(dataclasses.fields(a)) + 1
    assert CompileOptions().summary() == ""


def test_the_environment_fills_what_is_not_given(monkeypatch):
    monkeypatch.setenv("KDEBUG_MEMCHECK", "0")
    monkeypatch.setenv("KDEBUG_LOCKSTEP", "off")
    monkeypatch.setenv("KDEBUG_HOST_CPU", "x86-64-v2")
    o = compile_options()
    assert (o.memcheck, o.lockstep, o.host_cpu) == (False, False, "x86-64-v2")
    assert compile_options(memcheck=True, lockstep=True, host_cpu="").memcheck is True
    # tiers only where nothing records the host assembly
    assert compile_options(Recording(snapshots=True), tiered=True).tiered is False
    assert compile_options(Recording(snapshots=False), tiered=True).tiered is True
    with pytest.raises(KeyError, match="add it to kdebug/settings.py"):
        settings.variable("KDEBUG_NOT_A_VARIABLE")


def test_kdebug_variables_are_read_in_settings_only():
    """Every KDEBUG_* read goes through kdebug/settings.py (its VARIABLES list is docs/internals/architecture.md's)."""
    readers = []
    pattern = re.compile(r"(os\.environ(\.get)?\s*[\[(]\s*|os\.getenv\(\s*)[\"']KDEBUG_")
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "kdebug")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if pattern.search(f.read()):
                        readers.append(os.path.relpath(path, ROOT))
    assert readers == [], f"KDEBUG_ variables read outside kdebug/settings.py: {readers}"
    with open(os.path.join(ROOT, "docs", "internals", "architecture.md"), encoding="utf-8") as f:
        readme = f.read()
    missing = [name for name in settings.VARIABLES if name not in readme]
    assert missing == [], f"variables docs/internals/architecture.md does not name: {missing}"


def test_tiers_are_derived_once_where_nothing_is_recorded_cut_or_edited():
    """``tiered`` is decided by compile_options alone; the target reads it as it is."""
    quiet = Recording(snapshots=False)
    assert compile_options(quiet, tiered=True).tiered is True
    assert compile_options(quiet, tiered=True, cut_kernel="k").tiered is False
    assert compile_options(quiet, tiered=True, overrides=("an edit",)).tiered is False
    assert compile_options(Recording(snapshots=True), tiered=True).tiered is False
    for snapshots in (True, False):
        session = Session(backend="cpu", snapshots=snapshots, tiered=True)
        assert session.target.tiered is session.options.tiered is (not snapshots)


def test_recording_is_a_second_value_kept_out_of_the_job_key():
    """Snapshots and pass records do not change the code made: a run with them and one without compile
    the same jobs under the same keys (lineinfo and tiers, which follow recording by default, do change
    the code, so they are pinned here)."""
    assert "snapshots" not in {f.name for f in dataclasses.fields(CompileOptions)}
    assert "passes_on_demand" not in {f.name for f in dataclasses.fields(CompileOptions)}
    assert Recording(snapshots=False, passes_on_demand=True).passes_on_demand is False  # only with snapshots
    keys, options = set(), set()
    for recording in (Recording(), Recording(snapshots=False), Recording(snapshots=True, passes_on_demand=True)):
        session = Session(backend="cpu", recording=recording, memcheck=True, lineinfo=False, tiered=False)
        set_session(session)
        model = SessionModel()
        session.bus.subscribe(model.apply)
        _launch()
        assert session.driver.snapshots is recording.snapshots and session.target.recording is recording
        options.add(session.options)
        keys |= {j.key for j in model.jobs.values() if j.name == "_grad_kernel"}
    assert len(options) == 1 and len(keys) == 1, (options, keys)


def test_one_options_value_reaches_the_target_whole():
    """Session(options=...) passes the value to the driver and the target; the keywords build the same one."""
    made = compile_options(Recording(snapshots=False), memcheck=False, racecheck=True, lockstep=False)
    session = Session(backend="cpu", options=made, recording=Recording(snapshots=False))
    assert session.options == made and session.driver.options is session.options is session.target.options
    by_keywords = Session(backend="cpu", memcheck=False, racecheck=True, lockstep=False, snapshots=False)
    assert by_keywords.options == made and by_keywords.recording == session.recording
    with pytest.raises(TypeError):
        Session(backend="cpu", options=made, memcheck=True)
    with pytest.raises(TypeError):
        Session(backend="cpu", no_such_option=True)


def test_set_options_has_one_signature_the_session_s():
    """kdebug.set_options and the seam forward every keyword to Session.set_options, which alone declares them."""
    import inspect
    from kdebug.lang import seam
    params = lambda f: [p.kind for p in inspect.signature(f).parameters.values()]  # noqa: E731
    assert params(kdebug.set_options) == [inspect.Parameter.VAR_KEYWORD]
    assert params(seam.KernelSession.set_options)[1:] == [inspect.Parameter.VAR_KEYWORD]
    session = Session(backend="cpu", snapshots=False)
    set_session(session)
    kdebug.set_options(memcheck=False, lockstep=False, shuffle_threads=5)
    assert (session.options.memcheck, session.options.lockstep, session.shuffle_seed) == (False, False, 5)
    with pytest.raises(TypeError):
        kdebug.set_options(no_such_option=True)


@cuda.jit(device=True)
def _poly(x):
    return x * x * x + 2.0 * x


_dpoly = kdebug.grad(_poly)


@cuda.jit
def _grad_kernel(xs, out):
    i = cuda.grid(1)
    if i < xs.size:
        out[i] = _dpoly(xs[i])


def _launch(n=40):
    xs = np.linspace(-2, 2, n)
    out = np.zeros(n)
    _grad_kernel[1, 64](xs, out)
    return xs, out


def test_set_options_before_a_grad_launch_gives_the_plain_results():
    """The reproduction of issue 23: set_options(memcheck=False) before a kernel that calls a kdebug.grad
    function ended in an internal AssertionError ('primal' is no stage of cpu)."""
    set_session(Session(backend="cpu", snapshots=True))
    xs, plain = _launch()
    np.testing.assert_allclose(plain, 3 * xs * xs + 2.0, rtol=1e-14)
    session = Session(backend="cpu", snapshots=True)
    set_session(session)
    kdebug.set_options(memcheck=False)
    assert session.options.memcheck is False and session.target.memcheck is False
    _, out = _launch()
    np.testing.assert_array_equal(out, plain)


def test_new_options_give_new_keys_and_jobs_and_the_old_ones_stay_cached():
    session = Session(backend="cpu", snapshots=True)
    set_session(session)
    model = SessionModel()
    session.bus.subscribe(model.apply)
    _launch()
    first_target, first = session.target, session.options
    kdebug.set_options(memcheck=False, shuffle_threads=3)
    _launch()
    assert session.target is not first_target and first_target.memcheck is True  # never changed
    kdebug.set_options(memcheck=True, shuffle_threads=None)
    assert session.options == first.replace(shuffle=True)
    _launch()
    kernels = [j for j in model.jobs.values() if j.name == "_grad_kernel"]
    keys = [j.key for j in kernels]
    assert len(keys) == 3 == len(set(keys))  # three sets of options, three jobs
    assert len({key_identity(k) for k in keys}) == 1  # the same function, types and kind
    # no duplicate-codegen warning: another key is not the same job compiled again
    assert not [d for d in model.diagnostics if d.category == "duplicate"]
    # back to the first options: found in the cache, not compiled a fourth time
    session.configure(first)
    _launch()
    assert len([j for j in model.jobs.values() if j.name == "_grad_kernel"]) == 3
    assert session.driver.launch_cache is session.driver._launch_caches[first]


def test_a_compilation_keeps_its_options_while_another_thread_changes_them():
    """configure waits for the driver's lock: a compilation in progress is never retargeted."""
    import threading
    session = Session(backend="cpu", snapshots=True)
    set_session(session)
    seen = []
    started, release = threading.Event(), threading.Event()

    def on_event(ev):
        if type(ev).__name__ == "PhaseStarted" and ev.phase == "optimize" and not started.is_set():
            started.set()
            release.wait(10)
            seen.append(session.driver.options)

    session.bus.subscribe(on_event)
    t = threading.Thread(target=_launch)
    t.start()
    assert started.wait(30)
    changer = threading.Thread(target=lambda: kdebug.set_options(memcheck=False))
    changer.start()
    changer.join(0.3)
    assert changer.is_alive()  # held back by the compilation
    release.set()
    t.join(30)
    changer.join(30)
    assert seen[0].memcheck is True and session.options.memcheck is False


@pytest.mark.parametrize("sample", GRAD_SAMPLES)
@pytest.mark.parametrize("flags", [["--shuffle-threads=1"], ["--shuffle-threads=7", "--no-memcheck"]],
                         ids=["shuffle1", "shuffle7-nomemcheck"])
def test_grad_samples_under_shuffle_give_the_plain_results(sample, flags):
    """The other reproduction: any grad sample under --shuffle-threads ended in kdebug's own traceback."""
    path = os.path.join(SAMPLES, sample + ".py")
    plain = run_kdebug("run", "--headless", "--backend", "cpu", path, timeout=300)
    shuffled = run_kdebug("run", "--headless", "--backend", "cpu", *flags, path, timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert shuffled.returncode == 0, shuffled.stderr
    assert "Traceback" not in shuffled.stderr and "AssertionError" not in shuffled.stderr

    def results(out):  # the sample's own lines (its printed results), not the timings of the report
        return [line for line in out.splitlines() if line.startswith(sample.split("_")[0])]

    assert results(shuffled.stdout) == results(plain.stdout) and results(plain.stdout)


def test_set_options_in_a_script_before_a_grad_launch(tmp_path):
    script = tmp_path / "opts.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import kdebug
        kdebug.set_options(memcheck=False)
        import grad_newton
        grad_newton.main()
    """ % SAMPLES))
    r = run_kdebug("run", "--headless", "--backend", "cpu", str(script), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "grad_newton: 256 roots" in r.stdout and "Traceback" not in r.stderr


def test_float16_on_a_cpu_model_without_f16c_runs():
    """x86-64-v2 has no half-precision instructions: LLVM calls the compiler runtime's conversions, which
    the JIT must find (they jumped to address 0 and the launch crashed)."""
    session = Session(backend="cpu", snapshots=True, tiered=False, host_cpu="x86-64-v2")
    set_session(session)

    def add(ary, a, b):
        ary[0] = cuda.fp16.hadd(a, b)

    kernel = cuda.jit("void(f2[:], f2, f2)")(add)
    [compiled] = session.driver.cache.values()
    assert "__extendhfsf2" in compiled.artifact.asm  # the conversion is a call on this model
    ary = np.zeros(1, np.float16)
    kernel[1, 1](ary, np.float16(3.14), np.float16(1.57))
    assert ary[0] == np.float16(np.float16(3.14) + np.float16(1.57))
