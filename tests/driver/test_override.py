"""Edit and continue: ``kdebug run --override DIR`` (kdebug/driver/overrides.py).

A stage file of a dump, edited, replaces that stage of its job and the driver continues from it. Each
edit here is of IR whose text these tests do not otherwise depend on (the lowered module, one constant
of the optimised one, pinned to KDEBUG_HOST_CPU=x86-64-v2 as docs/testing.md asks).
"""
from __future__ import annotations

import os
import re
import shutil
import textwrap
from types import SimpleNamespace

import pytest

from conftest import run_kdebug
from kdebug.driver import overrides
from kdebug.settings import CompileOptions

ENV = {"KDEBUG_HOST_CPU": "x86-64-v2"}

SHIFT = """\
    import numpy as np
    from kdebug import cuda
    from kdebug.cuda import float32

    TPB = 64


    @cuda.jit
    def shift(x, out):
        s = cuda.shared.array(TPB, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        cuda.syncthreads()
        out[t] = s[(t + 1) % TPB]


    x = np.arange(TPB, dtype=np.float32)
    out = np.zeros(TPB, np.float32)
    shift[1, TPB](x, out)
    print("out[0] =", out[0])
"""

SCALE = """\
    import numpy as np
    from kdebug import cuda


    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] * 3.0


    x = np.ones(32, dtype=np.float64)
    out = np.zeros(32, np.float64)
    scale[1, 32](x, out)
    print("out[0] =", out[0])
"""


def _script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def _dump(script, out, *options):
    r = run_kdebug("dump", *options, script, "--out", str(out), env=ENV, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _stage_file(folder, job_stem, stage, ext="ll"):
    names = [n for n in os.listdir(folder) if re.fullmatch(rf"{job_stem}_\d\d-{stage}\.{ext}", n)]
    assert len(names) == 1, sorted(os.listdir(folder))
    return folder / names[0]


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, (old, text[:2000])
    path.write_text(text.replace(old, new))


# ---- the lecture: dump, remove a barrier, run with --override and racecheck, see the race -----------

def test_removing_a_barrier_in_the_lowered_ir_shows_the_race_at_the_kernels_line(tmp_path):
    script = _script(tmp_path, "shift.py", SHIFT)
    folder = tmp_path / "dump"
    _dump(script, folder, "--sanitize", "racecheck")
    clean = run_kdebug("run", "--headless", "--sanitize", "racecheck", "--override", str(folder), script, env=ENV)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the dump as written: no edit, no race
    assert "hazard" not in clean.stdout and "out[0] = 1.0" in clean.stdout
    # the barrier, as the coroutine form lowers it: a suspend point; without it each thread runs on
    _edit(_stage_file(folder, "001_shift", "lower"), 'call i8 @"llvm.coro.suspend"(token none, i1 0)', "add i8 0, 0")
    r = run_kdebug("run", "--headless", "--sanitize", "racecheck", "--override", str(folder), script, env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "read-after-write hazard on shared array 's'" in r.stdout, r.stdout
    assert f"{script}:12:5" in r.stdout and f"{script}:14:" in r.stdout  # the write and the read, in the kernel
    assert re.search(r"note: job #1 shift: the lower stage is 001_shift_\d\d-lower\.ll", r.stdout), r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_an_edited_constant_in_the_optimised_ir_changes_what_the_launch_computes(tmp_path):
    script = _script(tmp_path, "scale.py", SCALE)
    folder = tmp_path / "dump"
    _dump(script, folder)
    optimize = _stage_file(folder, "001_scale", "optimize")
    _edit(optimize, "3.000000e+00", "5.000000e+00")
    r = run_kdebug("run", "--headless", "--override", str(folder), script, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "out[0] = 5.0" in r.stdout, r.stdout
    # the dump of the edited run names the edited stage, and its key is another than the original's
    again = tmp_path / "again"
    _dump(script, again, "--override", str(folder))
    first = _stage_file(again, "001_scale", "optimize").read_text().splitlines()[0]
    assert first.startswith("; kdebug: overridden by " + optimize.name), first
    job_file = (again / "001_scale_00-job.txt").read_text()
    assert "overridden: optimize by " + optimize.name in job_file
    key_of = lambda text: re.search(r"^key: (.*)$", text, re.M).group(1)  # noqa: E731
    original = key_of((folder / "001_scale_00-job.txt").read_text())
    edited = key_of(job_file)
    assert original != edited and original.split("@")[0] == edited.split("@")[0]
    # the edited dump, used again, is the same edit (its edited file has no digest in the job file)
    r = run_kdebug("run", "--headless", "--override", str(again), script, env=ENV)
    assert "out[0] = 5.0" in r.stdout, r.stdout + r.stderr


# ---- the original kept: optimize.original next to the edited optimize, diffable, never read as an edit ------

@pytest.fixture(scope="module")
def overridden(tmp_path_factory):
    """SCALE with its optimised constant edited (3.0 -> 5.0), run with --trace: (the trace, the script, the folder)."""
    tmp = tmp_path_factory.mktemp("original")
    script = _script(tmp, "scale.py", SCALE)
    folder = tmp / "dump"
    _dump(script, folder)
    _edit(_stage_file(folder, "001_scale", "optimize"), "3.000000e+00", "5.000000e+00")
    trace = tmp / "run.jsonl"
    r = run_kdebug("run", "--headless", "--override", str(folder), "--trace", str(trace), script, env=ENV)
    assert r.returncode == 0 and "out[0] = 5.0" in r.stdout, r.stdout + r.stderr
    return str(trace), script, folder


def test_an_overridden_stage_keeps_what_the_driver_made_as_its_original(overridden):
    from kdebug.session import stage_diff
    from kdebug.session.trace import load_model
    model = load_model(overridden[0])
    job = model.jobs[1]
    assert list(job.snapshots).index("optimize.original") == list(job.snapshots).index("optimize") - 1
    original, edited = model.snapshot_text(1, "optimize.original"), model.snapshot_text(1, "optimize")
    header, body = edited.split("\n", 1)
    assert header.startswith("; kdebug: overridden by 001_scale_") and overrides.OVERRIDDEN not in original
    assert original.replace("3.000000e+00", "5.000000e+00") == body and "3.000000e+00" in original  # the edit only
    # a stage like any other: the optimize passes made the original, the edited snapshot follows it,
    # and the edited stage's diff is against the original by default
    stages = stage_diff.job_stages(model, 1)
    names = [s.label for s in stages if not s.is_pass]
    assert names[names.index("optimize.original") + 1] == "optimize"
    b = next(k for k, s in enumerate(stages) if s.key == ("optimize", None))
    assert stages[b - 1].key == ("optimize.original", None) and stages[b - 2].is_pass
    assert stages[stage_diff.default_base(model, stages, b)].phase == "optimize.original"
    assert model.jobs[1].edited == {"optimize": _stage_file(overridden[2], "001_scale", "optimize").name}


def test_the_tui_diffs_the_original_against_the_edited_stage(overridden):
    import asyncio

    from test_tui import SIZE, replay_app, view_lines, wait_for

    async def go():
        app = replay_app(overridden[0])
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.detail.job_id == 1, "the job to show")
            await pilot.press("2")
            app.detail.set_phase("optimize")
            await pilot.press("8")
            await pilot.pause()
            head = " ".join(str(app.query_one("#diff-bar").render()).split())
            assert "A optimize.original" in head and "B optimize" in head, head
            changed = [ln for ln in view_lines(app, "view-diff") if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
            assert any(ln.startswith("+") and "5.000000e+00" in ln for ln in changed), changed
            assert any(ln.startswith("-") and "3.000000e+00" in ln for ln in changed), changed
            assert "optimize.original" in " ".join(str(app.query_one("#phase-bar").render()).split())
    asyncio.run(go())


def test_a_dump_of_an_overridden_run_never_makes_the_original_an_edit(overridden, tmp_path):
    _trace, script, folder = overridden
    again = tmp_path / "again"
    _dump(script, again, "--override", str(folder))
    original = _stage_file(again, "001_scale", r"optimize\.original")
    assert "3.000000e+00" in original.read_text() and overrides.OVERRIDDEN not in original.read_text()
    assert overrides.STAGE_FILE.fullmatch(original.name) is None
    edits = overrides.load(str(again)).files
    assert [(o.stage, o.file) for o in edits] == [("optimize", _stage_file(again, "001_scale", "optimize").name)]
    # a name of the dump's own: a later dump into the folder removes it where that run has no original
    from kdebug.session.dump import DUMP_FILE
    assert DUMP_FILE.fullmatch(original.name)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (the CUDA toolkit) is not installed")
def test_an_edited_ptx_round_trip_is_assembled_by_ptxas(tmp_path):
    script = _script(tmp_path, "scale.py", SCALE)
    folder = tmp_path / "dump"
    _dump(script, folder, "--target", "ptx")
    ptx = _stage_file(folder, "001_scale", "ptx", "ptx")
    _edit(ptx, "0d4008000000000000", "0d4014000000000000")  # 3.0 -> 5.0
    again = tmp_path / "again"
    r = _dump(script, again, "--target", "ptx", "--override", str(folder))
    assert "out[0] = 3.0" in r.stdout  # the launches run the CPU target's code, unedited
    edited = _stage_file(again, "001_scale", "ptx", "ptx").read_text()
    assert edited.startswith("// kdebug: overridden by " + ptx.name)
    assert "0d4014000000000000" in edited and "0d4008000000000000" not in edited
    report = _stage_file(again, "001_scale", "ptxas", "txt").read_text()
    assert report.splitlines()[0].endswith(": ok"), report
    assert "error" not in report.lower()
    assert "overridden: ptx by " + ptx.name in (again / "001_scale_00-job.txt").read_text()
    # an edit ptxas refuses: its report says so at the edited file's own line
    _edit(ptx, "mul.f64", "mul.rx.f64")  # mul.f64, not mul.rn.f64: ptxas may fuse it (NVVM's -fma=1)
    line = next(k for k, text in enumerate(ptx.read_text().splitlines(), 1) if "mul.rx.f64" in text)
    _dump(script, again, "--target", "ptx", "--override", str(folder))
    report = _stage_file(again, "001_scale", "ptxas", "txt").read_text()
    assert "FAILED" in report.splitlines()[0] and f"line {line}; error" in report and ".rx" in report, report


def test_a_malformed_edit_is_a_located_error_in_the_edited_file(tmp_path):
    script = _script(tmp_path, "scale.py", SCALE)
    folder = tmp_path / "dump"
    _dump(script, folder)
    optimize = _stage_file(folder, "001_scale", "optimize")
    _edit(optimize, "fmul double", "fmul doubel")
    line = next(k for k, text in enumerate(optimize.read_text().splitlines(), 1) if "doubel" in text)
    r = run_kdebug("run", "--headless", "--override", str(folder), script, env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert re.search(rf"{re.escape(str(optimize))}:{line}:\d+: compile error: the edited optimize stage does not "
                     r"parse: expected type", out), out
    assert "Traceback" not in out
    assert "Session failed" in r.stdout  # the rest of the session as usual: the report
    # one the verifier refuses (LLVM's parser would abort the process on it where debug info is present)
    text = optimize.read_text()
    m = re.search(r"(%[\w.]+) = fmul doubel (%[\w.]+),", text)
    name = m.group(1)
    optimize.write_text(text.replace(m.group(0), f"{name} = fmul double {name},"))
    text = optimize.read_text()
    line = next(k for k, t in enumerate(text.splitlines(), 1) if t.strip().startswith(f"{name} = fmul double {name},"))
    r = run_kdebug("run", "--headless", "--override", str(folder), script, env=ENV)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert f"{optimize}:{line}:3: compile error: the edited optimize stage does not verify: Only PHI nodes may " \
           "reference their own value!" in out, out
    assert "Traceback" not in out and "crashed" not in out


def test_override_names_a_folder(tmp_path):
    script = _script(tmp_path, "scale.py", SCALE)
    r = run_kdebug("run", "--headless", "--override", str(tmp_path / "nowhere"), script)
    assert r.returncode == 2 and "--override" in r.stderr and "no such folder" in r.stderr


# ---- the rule: which job a file names, and the key ---------------------------------------------------

def _rec(job_id, name, key):
    return SimpleNamespace(id=job_id, name=name, key=key, entry=f"{name}_j{job_id}")


def _write(folder, name, text):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


def test_a_file_names_its_job_by_key_where_the_dump_wrote_one_else_by_id(tmp_path):
    folder = tmp_path / "d"
    _write(folder, "002_saxpy_00-job.txt", "key: m.saxpy(float32[::1])/kernel/cpu#1234abcd@00000000\n")
    _write(folder, "002_saxpy_07-optimize.ll", "define void @saxpy_j2() {\n  ret void\n}\n")
    _write(folder, "003_axpy_03-lower.ll", "; no key file\n")
    _write(folder, "003_axpy_02-typeinfer.txt", "not a stage one can edit\n")
    edits = overrides.load(str(folder))
    assert sorted((o.name, o.stage) for o in edits.files) == [("axpy", "lower"), ("saxpy", "optimize")]
    # by key: another run's job id, its entry renamed in the text
    rec = _rec(5, "saxpy", "m.saxpy(float32[::1])/kernel/cpu#1234abcd@99999999")
    edit = edits.find(rec, "optimize", "cpu")
    assert edit is not None and "@saxpy_j5()" in edit.text_for(rec)
    assert edits.find(_rec(2, "saxpy", "m.saxpy(float64[::1])/kernel/cpu#1234abcd@0"), "optimize", "cpu") is None
    assert edits.find(rec, "optimize", "ptx") is None  # a CPU job's IR is not the PTX target's
    # without a key file: the job id in the name
    assert edits.find(_rec(3, "axpy", "m.axpy()/kernel/cpu#1@0"), "lower", "cpu") is not None
    assert edits.find(_rec(4, "axpy", "m.axpy()/kernel/cpu#1@0"), "lower", "cpu") is None


def test_a_file_as_the_dump_wrote_it_is_no_edit(tmp_path):
    folder = tmp_path / "d"
    text = "define void @k_j1() {\n  ret void\n}\n"
    _write(folder, "001_k_07-optimize.ll", text)
    _write(folder, "001_k_00-job.txt", f"key: m.k()/kernel/cpu#1@0\nfile: 001_k_07-optimize.ll "
                                       f"{overrides.text_digest(text)}\n")
    assert not overrides.load(str(folder))
    (folder / "001_k_07-optimize.ll").write_text(text.replace("ret void", "ret void ; edited"))
    assert overrides.load(str(folder))


def test_edits_enter_the_compile_options_digest_and_so_every_key(tmp_path):
    folder = tmp_path / "d"
    _write(folder, "001_k_07-optimize.ll", "define void @k_j1() {\n  ret void\n}\n")
    one = overrides.load(str(folder))
    assert CompileOptions(overrides=None).digest == CompileOptions().digest  # no edits: the keys of before
    assert CompileOptions(overrides=one).digest != CompileOptions().digest
    assert CompileOptions(overrides=one).digest == CompileOptions(overrides=overrides.load(str(folder))).digest
    (folder / "001_k_07-optimize.ll").write_text("define void @k_j1() {\n  unreachable\n}\n")
    assert CompileOptions(overrides=overrides.load(str(folder))).digest != CompileOptions(overrides=one).digest
    assert "edits#" in CompileOptions(overrides=one).summary()


# ---- the TUI: E edits the IR stage shown, then reruns with the edit ---------------------------------

EDITOR = """\
import sys
path = sys.argv[-1]
text = open(path).read()
open(path, "w").write(text.replace("3.000000e+00", "5.000000e+00"))
"""


def _app_editing_with(editor_code: str, tmp_path, monkeypatch, name: str, source: str):
    """A live app on the script ``source`` whose $EDITOR is the Python program ``editor_code`` (what E runs)."""
    import sys
    import tempfile

    from test_tui import live_app
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    editor = tmp_path / "editor.py"
    editor.write_text(editor_code)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the session's edit folder
    return live_app(_script(tmp_path, name, source), cwd=str(tmp_path))


@pytest.mark.timeout(300)
def test_E_in_the_tui_edits_the_ir_stage_shown_and_reruns_with_it(tmp_path, monkeypatch):
    import asyncio

    from test_tui import SIZE, wait_for
    app = _app_editing_with(EDITOR, tmp_path, monkeypatch, "scale.py", SCALE)

    async def go():
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
            job = next(j for j in app.model.jobs.values() if j.name == "scale")
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            app.detail.action_tab("ir")
            app.detail.set_phase("optimize")
            await pilot.pause()
            await pilot.press("E")
            await wait_for(pilot, lambda: app.opts.override is not None, "the edit to be taken")
            await wait_for(pilot, lambda: app.model.ended is not None and app.model.jobs, "the rerun to end",
                           limit=120)
            notes = [d.message for d in app.model.diagnostics if d.category == "override"]
            assert notes and "the optimize stage is 001_scale_" in notes[0], notes
            rerun = next(j for j in app.model.jobs.values() if j.name == "scale")
            assert rerun.key != job.key and rerun.key.split("@")[0] == job.key.split("@")[0]
            text = app.detail.stage_text("optimize", rerun)[0]
            assert text.startswith("; kdebug: overridden by ") and "5.000000e+00" in text
    asyncio.run(go())


# ---- a device function's edit: its callers and its derivative jobs are compiled from the edited body -----

DEVICE = """\
    import numpy as np
    import kdebug
    from kdebug import cuda


    @cuda.jit(device=True)
    def f(x):
        return x * x


    df = kdebug.grad(f)
    rf = kdebug.gradient(f, argnum=0)


    @cuda.jit
    def use(x, out, dout, rout):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = kdebug.deferred(f)(x[i])  # a call through f's own job
            dout[i] = df(x[i])
            rout[i] = rf(x[i])


    x = np.full(4, 3.0)
    out, dout, rout = np.zeros(4), np.zeros(4), np.zeros(4)
    use[1, 4](x, out, dout, rout)
    print("f:", out[0], "grad:", dout[0], "gradient:", rout[0])
"""

CUBE = ('  %".7" = fmul double %".5", %".6", !dbg !9\n',
        '  %".7a" = fmul double %".5", %".6", !dbg !9\n  %".7" = fmul double %".7a", %".6", !dbg !9\n')


@pytest.mark.timeout(300)
def test_an_edited_device_function_is_what_its_caller_and_its_derivatives_compile(tmp_path):
    script = _script(tmp_path, "device.py", DEVICE)
    folder = tmp_path / "dump"
    assert "f: 9.0 grad: 6.0 gradient: 6.0" in _dump(script, folder).stdout
    lower = _stage_file(folder, "002_f", "lower")
    _edit(lower, *CUBE)  # f(x) = x*x*x: 27 at 3, and its derivative 3x*x = 27 too
    summary = tmp_path / "summary.json"
    r = run_kdebug("run", "--headless", "--override", str(folder), "--json-summary", str(summary), script, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "f: 27.0 grad: 27.0 gradient: 27.0" in r.stdout, r.stdout
    assert f"note: job #3 grad(f): the primal stage is {lower.name} (the edited lower stage of f, job #2)" in r.stdout
    # the report's and the summary's job records say which stages were edited
    assert re.search(rf"#2  f\(float64\)  device  done .* edited lower \({lower.name}\)", r.stdout), r.stdout
    assert re.search(rf"#3  grad\(f\)\(float64\)  derivative .* edited primal \({lower.name}\)", r.stdout), r.stdout
    import json
    edited = json.loads(summary.read_text())["jobs"]["edited"]
    assert {"job": 2, "name": "f", "stage": "lower", "file": lower.name} in edited
    assert {(e["name"], e["stage"]) for e in edited} == {("f", "lower"), ("grad(f)", "primal"),
                                                         ("gradient(f, argnum=0)", "primal")}
    # the dump of the edited run names the edited stages: the derivative's primal is the edited body
    again = tmp_path / "again"
    _dump(script, again, "--override", str(folder))
    primal = _stage_file(again, "003_grad_f_", "primal").read_text()
    assert primal.startswith("; kdebug: overridden by " + lower.name) and '%".7a" = fmul' in primal
    assert "overridden: primal by " + lower.name in (again / "003_grad_f__00-job.txt").read_text()
    assert "overridden: lower by " + lower.name in (again / "002_f_00-job.txt").read_text()
    # the edited dump, an override folder in turn: the same edit
    r = run_kdebug("run", "--headless", "--override", str(again), script, env=ENV)
    assert "f: 27.0 grad: 27.0 gradient: 27.0" in r.stdout, r.stdout + r.stderr


@pytest.mark.timeout(300)
def test_an_edit_that_changes_a_signature_others_rely_on_is_refused_with_what_relies_on_it(tmp_path):
    script = _script(tmp_path, "device.py", DEVICE)
    folder = tmp_path / "dump"
    _dump(script, folder)
    lower = _stage_file(folder, "002_f", "lower")
    _edit(lower, 'double %"arg.x") !dbg', 'double %"arg.x", double %"arg.y") !dbg')
    line = next(k for k, t in enumerate(lower.read_text().splitlines(), 1) if t.startswith("define"))
    r = run_kdebug("run", "--headless", "--override", str(folder), script, env=ENV)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert f"{lower}:{line}:1: compile error: the edited lower stage changes the signature of f (@f_j2) from " \
           "double (ptr, double) to double (ptr, double, double), relied on by job #1 use (calls it), job #3 " \
           "grad(f) (its derivative) and job #4 gradient(f, argnum=0) (its derivative)" in out, out
    assert "hint: edit the body of f and keep its signature" in out
    assert "Traceback" not in out and "Session failed (exit status 1)" in r.stdout
    # a kernel's: the host's launches rely on it
    script = _script(tmp_path, "scale.py", SCALE)
    folder = tmp_path / "scale"
    _dump(script, folder)
    optimize = _stage_file(folder, "001_scale", "optimize")
    text = optimize.read_text()
    m = re.search(r'^define[^\n]*@"?scale_j1"?\((.*)\)', text, re.M)
    optimize.write_text(text.replace(m.group(1), m.group(1) + ", i64 %extra", 1))
    r = run_kdebug("run", "--headless", "--override", str(folder), script, env=ENV)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "the edited optimize stage changes the signature of scale (@scale_j1)" in out, out
    assert "relied on by the host's launches of scale\n" in out and "Traceback" not in out


def test_a_device_function_nothing_relies_on_may_change_its_signature():
    before = "define double @f_j1(ptr %c, double %x) {\n  ret double %x\n}\n"
    after = "define double @f_j1(ptr %c, double %x, double %y) {\n  ret double %y\n}\n"
    rec = SimpleNamespace(id=1, name="f", entry="f_j1")
    overrides.check_text("001_f_03-lower.ll", rec, "lower", before, after, [])  # compile_ptx(f, device=True)
    with pytest.raises(Exception) as exc:
        overrides.check_text("001_f_03-lower.ll", rec, "lower", before, after, ["job #2 k (calls it)"])
    assert str(exc.value.loc) == "001_f_03-lower.ll:1:1"
    assert exc.value.message.endswith("from double (ptr, double) to double (ptr, double, double), relied on by "
                                      "job #2 k (calls it)")


ADD_PARAMETER = """\
import re, sys
path = sys.argv[-1]
text = open(path).read()
open(path, "w").write(text.replace('double %"arg.x") !dbg', 'double %"arg.x", double %"arg.y") !dbg', 1))
"""


@pytest.mark.timeout(300)
def test_E_refuses_a_signature_change_and_keeps_the_session(tmp_path, monkeypatch):
    import asyncio

    from test_tui import SIZE, wait_for
    app = _app_editing_with(ADD_PARAMETER, tmp_path, monkeypatch, "device.py", DEVICE)

    async def go():
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end", limit=120)
            model = app.model
            job = next(j for j in model.jobs.values() if j.name == "f")
            app.detail.show(job.id)
            await wait_for(pilot, lambda: app.detail.job_id == job.id, "the job to show")
            app.detail.action_tab("ir")
            app.detail.set_phase("lower")
            await pilot.pause()
            await pilot.press("E")
            await wait_for(pilot, lambda: any("changes the signature" in str(n.message) for n in app._notifications),
                           "the refusal")
            [note] = [str(n.message) for n in app._notifications if "changes the signature" in str(n.message)]
            assert "002_f_03-lower.ll:5:1: the edited lower stage changes the signature of f (@f_j2) from double " \
                   "(ptr, double) to double (ptr, double, double), relied on by job #1 use (calls it)" in note, note
            assert "job #3 grad(f) (its derivative)" in note and ".refused" in note
            assert app.model is model and app.opts.override is None  # no rerun: the session as it was
            assert not os.path.exists(os.path.join(app.edit_folder, "002_f_03-lower.ll"))
            refused = os.path.join(app.edit_folder, "002_f_03-lower.ll.refused")
            assert 'double %"arg.y"' in open(refused).read()
    asyncio.run(go())
