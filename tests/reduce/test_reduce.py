"""kdebug reduce: buried-bug scripts reduced until their property, the reduction engine's invariant
(never a result without the property), the syntax-tree passes and the command line."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdebug.reduce import passes
from kdebug.reduce.job import NothingToReduce, reduce_script
from kdebug.reduce.properties import Outcome, for_alert, parse_property, same_cycle, through_kdebug
from kdebug.reduce.reducer import Reducer
from kdebug.reduce.trials import Trials, TrialRunner
from kdebug.session.options import RunOptions
from reduce_scripts import DEFECTS, SMALL_FILLER_HOST, SMALL_FILLER_KERNELS, buried

STRATEGIES = ("worklist", "toplevel", "recursive")
from conftest import ROOT


def reduce_buried(tmp_path, defect: str, until: list[str], small: bool = False, **options):
    script = tmp_path / f"{defect}_bug.py"
    script.write_text(buried(defect, small))
    original = script.read_text()
    opts = RunOptions(script=str(script), backend="cpu", snapshots=False, **options)
    props = [parse_property(u, STRATEGIES) for u in until]
    out = tmp_path / f"{defect}_bug.reduced.py"
    result = reduce_script(opts, props, str(out), jobs=2, timeout=60, trace=str(tmp_path / "final.jsonl"))
    assert script.read_text() == original  # the original is never modified
    assert out.read_text() == result.source
    assert result.holds, result.shown  # the final, plain run still shows it
    # judged once more here, independently of the reducer's own final check
    runner = TrialRunner(opts, props, timeout=60, warm=False)
    try:
        assert runner.holds(runner.outcomes(result.source, path=str(out), plain=True))
    finally:
        runner.close()
    assert result.lines < result.original_lines
    return result


# ---- whole reductions, one per property ----------------------------------------------------------
@pytest.mark.timeout(300)
def test_reentrant_cycle_reduced_to_the_two_kernels(tmp_path):
    r = reduce_buried(tmp_path, "reentrant", ["reentrant:kernel_a,kernel_b"])
    assert r.lines <= 12, r.source
    tree = ast.parse(r.source)
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"kernel_a", "kernel_b"} <= defs and not defs & {"saxpy", "scale", "square", "checks"}
    assert "reentrant: kernel_a -> kernel_b -> kernel_a" in r.shown[0]
    # the alert of the final run names the same property (what a "reduce this alert" asks for)
    model = r.final["worklist"].model()
    specs = {for_alert(model, a) for a in model.alerts}
    assert "reentrant:kernel_a,kernel_b" in specs
    assert r.trials < 120 and r.cached >= 0


def reduce_combined(tmp_path, defects: list[str], until: list[str], **options):
    """Several defects in one small buried-bug script, reduced until every property holds."""
    kernels = "".join(DEFECTS[d][0] for d in defects)
    host = "\n".join(DEFECTS[d][1] for d in defects)
    script = tmp_path / "bugs.py"
    script.write_text(SMALL_FILLER_KERNELS + kernels + SMALL_FILLER_HOST.format(host=host))
    opts = RunOptions(script=str(script), backend="cpu", snapshots=False, **options)
    props = [parse_property(u, STRATEGIES) for u in until]
    r = reduce_script(opts, props, str(tmp_path / "bugs.reduced.py"), jobs=2, timeout=60)
    assert r.holds and len(r.shown) == len(until), r.shown
    assert not {"saxpy", "checks", "main"} & defined(r.source), r.source
    assert r.lines < r.original_lines
    return r


def defined(source: str) -> set[str]:
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.timeout(300)
def test_finish_miss_and_duplicate_under_recursive(tmp_path):
    # a device function reached through two pointers: under recursive, compiled twice and missing finish
    r = reduce_combined(tmp_path, ["shared"], ["finish-miss", "duplicate"], strategy="recursive")
    assert r.lines <= 20, r.source
    assert {"twice", "left", "right", "both"} <= defined(r.source)


@pytest.mark.timeout(300)
def test_memcheck_sync_and_output_together(tmp_path):
    r = reduce_combined(tmp_path, ["output", "sync", "memcheck"], ["memcheck", "sync", r"output:checksum \d+"])
    assert r.lines <= 20, r.source
    assert {"shift", "halfsync"} <= defined(r.source) and "print('checksum'" in r.source
    assert r.shown[0].startswith("memcheck:") and r.shown[1].startswith("sync:") and r.shown[2].startswith("output:")


@pytest.mark.timeout(300)
def test_race_and_uninit_together(tmp_path):
    r = reduce_combined(tmp_path, ["race", "uninit"], ["race", "uninit"], racecheck=True, initcheck=True)
    assert r.lines <= 20, r.source
    assert {"histogram_racy", "partial"} <= defined(r.source)


@pytest.mark.timeout(300)
def test_internal_error_reduced(tmp_path):
    r = reduce_buried(tmp_path, "internal", ["internal-error"], small=True)
    assert r.lines <= 10, r.source
    model = r.final["worklist"].model()
    assert "internal-error" in {for_alert(model, a) for a in model.alerts}
    assert "compile_toplevel" in r.source and not {"checks", "main"} & defined(r.source)


@pytest.mark.timeout(300)
def test_differs_between_strategies(tmp_path):
    r = reduce_buried(tmp_path, "nested", ["differs:worklist,recursive"], small=True)
    assert r.lines <= 16, r.source
    assert r.runs >= 2 * r.trials  # each trial ran both strategies
    assert "differs: worklist exit 0" in r.shown[0]


@pytest.mark.timeout(120)
def test_nothing_to_reduce_when_the_original_lacks_the_property(tmp_path):
    script = tmp_path / "fine.py"
    script.write_text(buried("output", small=True))
    opts = RunOptions(script=str(script), backend="cpu", snapshots=False)
    with pytest.raises(NothingToReduce, match="does not show reentrant"):
        reduce_script(opts, [parse_property("reentrant", STRATEGIES)], str(tmp_path / "x.py"), jobs=1, timeout=60)
    assert not (tmp_path / "x.py").exists()


# ---- the engine's invariant, on cheap in-process judges --------------------------------------------
class Predicate(Trials):
    """Judges a candidate by running it here (generated arithmetic only) and looking at what it printed."""

    def __init__(self, wanted: str, jobs: int) -> None:
        super().__init__(jobs)
        self.wanted = wanted
        self.accepted_sources: list[str] = []

    def judge(self, source: str) -> bool:
        return shows(source, self.wanted)


def printed_by(source: str) -> list[str]:
    """What a generated program prints (its own ``print``: judges run on several threads at once)."""
    out: list[str] = []
    exec(compile(source, "<candidate>", "exec"), {"print": lambda *a: out.extend(map(str, a))})  # noqa: S102
    return out


def shows(source: str, wanted: str) -> bool:
    try:
        return wanted in printed_by(source)
    except Exception:  # noqa: BLE001 - a candidate that fails does not show it
        return False


statement = st.one_of(
    st.tuples(st.just("assign"), st.integers(0, 5), st.integers(0, 5), st.integers(1, 40)),
    st.tuples(st.just("print"), st.integers(0, 5)),
    st.tuples(st.just("if"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("def"), st.integers(0, 5), st.integers(1, 9)),
)


def program(stmts) -> str:
    lines = [f"v{i} = {i}" for i in range(6)]
    for s in stmts:
        if s[0] == "assign":
            lines.append(f"v{s[1]} = v{s[2]} + {s[3]}")
        elif s[0] == "print":
            lines.append(f"print(v{s[1]})")
        elif s[0] == "if":
            lines += [f"if v{s[1]} > v{s[2]}:", f"    v{s[1]} = v{s[2]} * 2", "else:", f"    print(v{s[1]} + 1)"]
        else:
            lines += [f"def f{s[1]}(a, b):", f"    return a * {s[2]} + b", f"v{s[1]} = f{s[1]}(v{s[1]}, 1)"]
    return "\n".join(lines) + "\n"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statement, min_size=3, max_size=14), st.integers(1, 2))
def test_a_reduction_never_returns_a_script_without_the_property(stmts, jobs):
    source = program(stmts)
    printed = printed_by(source)
    if not printed:
        return  # nothing printed: no property to keep
    wanted = printed[len(printed) // 2]
    judge = Predicate(wanted, jobs)
    try:
        result = Reducer(judge).reduce(source)
    finally:
        judge.close()
    assert shows(result, wanted), (source, result)
    assert passes.code_lines(result) <= passes.code_lines(source)
    assert passes.size(ast.parse(result)) <= passes.size(ast.parse(source))
    # every candidate was judged once: the cache answered the repeats
    assert judge.trials == len(judge.cache)


# ---- the passes -------------------------------------------------------------------------------------
LAUNCHES = '''
import kdebug
from kdebug import cuda

@cuda.jit(device=True, debug=True)
def dev(a, b, c):
    return a + c

@cuda.jit
def k(out, n, m):
    out[0] = kdebug.deferred(dev)(n, m, 3)
    k[1, 32](out, n, m)

k[4, 128](None, 5, 6)
'''


def test_parameter_removal_is_consistent_at_definition_and_every_call_site():
    tree = ast.parse(LAUNCHES)
    candidates = list(passes.parameters(tree))
    assert all(ast.parse(c) for c in candidates)
    dropped_b = next(c for c in candidates if "def dev(a, c)" in c)
    assert "kdebug.deferred(dev)(n, 3)" in dropped_b
    dropped_m = next(c for c in candidates if "def k(out, n)" in c)
    assert "k[1, 32](out, n)" in dropped_m and "k[4, 128](None, 5)" in dropped_m


def test_decorator_options_and_literals():
    tree = ast.parse(LAUNCHES)
    decos = list(passes.decorator_options(tree))
    assert any("@cuda.jit(debug=True)\n" in c for c in decos)
    assert any("@cuda.jit(device=True)\n" in c for c in decos)
    lits = list(passes.literals(tree))
    assert any("k[1, 128](None, 5, 6)" in c for c in lits) and any("k[4, 64](None, 5, 6)" in c for c in lits)
    # every rewrite is smaller than the tree it came from
    size = passes.size(tree)
    assert all(passes.size(ast.parse(c)) < size for c in decos + lits)


def test_inline_a_one_use_device_function_and_unwrap_blocks():
    tree = ast.parse("def f(x, y):\n    return x * y\n\nif True:\n    z = f(2, 3)\nelse:\n    z = 0\nprint(z)\n")
    inlined = list(passes.inline_functions(tree))
    assert inlined == ["if True:\n    z = 2 * 3\nelse:\n    z = 0\nprint(z)\n"]
    unwrapped = list(passes.unwrap_blocks(tree))
    assert "def f(x, y):\n    return x * y\nz = f(2, 3)\nprint(z)\n" in unwrapped
    assert "def f(x, y):\n    return x * y\nz = 0\nprint(z)\n" in unwrapped


def test_dangling_names_are_scope_aware():
    tree = ast.parse("import os\ndef f(a):\n    return a + b\ng = lambda q: q + os.sep + z\n")
    assert passes.dangling_names(tree) == {(".f", "b"), (".lambda", "z")}


def test_property_spelling_and_cycles():
    assert parse_property("reentrant:a, b", STRATEGIES).names == ("a", "b")
    for bad, why in [("bogus", "unknown property"), ("error:", "regular expression"), ("error:(", "not a regular"),
                     ("differs:worklist", "two different"), ("differs:worklist,nope", "unknown strategy"),
                     ("memcheck:x", "takes no argument")]:
        with pytest.raises(ValueError, match=why):
            parse_property(bad, STRATEGIES)
    assert same_cycle(["a", "b", "c", "a"], ("b", "c", "a"))
    assert not same_cycle(["a", "b", "c", "a"], ("a", "c", "b"))
    kdebug_file = os.path.join(ROOT, "kdebug", "driver", "driver.py")
    assert through_kdebug(f'Traceback (most recent call last):\n  File "{kdebug_file}", line 3, in f\nX: y')
    assert not through_kdebug('Traceback (most recent call last):\n  File "/elsewhere/x.py", line 3, in f\nX: y')


def test_outcome_signature_is_what_differs_compares():
    a = Outcome([], 0, "ok", "1\n")
    b = Outcome([], 0, "ok", "2\n")
    assert a.signature() != b.signature() and a.signature() == Outcome([], 0, "ok", "1\n").signature()


# ---- the command line -------------------------------------------------------------------------------
def kdebug(*args, cwd, timeout=240):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "kdebug.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_cli_usage_errors(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    r = kdebug("reduce", "s.py", "--until", "bogus", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "unknown property 'bogus'" in r.stderr
    r = kdebug("reduce", "s.py", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "--until" in r.stderr
    r = kdebug("reduce", "missing.py", "--until", "duplicate", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "no such file: missing.py" in r.stderr
    r = kdebug("reduce", "s.py", "--until", "duplicate", "--jobs", "0", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "--jobs" in r.stderr


@pytest.mark.timeout(300)
def test_cli_reduces_to_the_default_out_in_the_cwd(tmp_path):
    (tmp_path / "prog.py").write_text(buried("error", small=True))
    r = kdebug("reduce", "prog.py", "--until", "error:no_such_intrinsic", "--backend", "cpu", "--jobs", "2",
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = (tmp_path / "prog.reduced.py").read_text()
    assert r.stdout == out  # the reduced script is printed
    assert "no_such_intrinsic" in out and "saxpy" not in out
    assert "shows the property when run plainly" in r.stderr and "error:no_such_intrinsic:" in r.stderr
    assert (tmp_path / "prog.reduced.jsonl").stat().st_size > 0  # the final run's trace
    replay = kdebug("replay", "--headless", "prog.reduced.jsonl", cwd=tmp_path, timeout=60)
    assert replay.returncode == 0 and "no_such_intrinsic" in replay.stdout


@pytest.mark.timeout(300)
def test_a_reproducer_fails_in_no_new_way_unless_asked(tmp_path):
    """R on recursive_launch's re-entrant alert once returned a script without the depth guard: it showed the
    cycle, and launched until a launch failed (a failure the original never had). Every candidate's end and
    error kinds now stay within the original's; --allow-new-failures lifts that."""
    from kdebug.reduce.trials import failures
    script = tmp_path / "recursive_launch.py"
    script.write_text(open(os.path.join(ROOT, "sample_kernels", "recursive_launch.py")).read())
    opts = RunOptions(script=str(script), backend="cpu", snapshots=False)
    props = [parse_property("reentrant", STRATEGIES)]
    runner = TrialRunner(opts, props, timeout=60, warm=False)
    try:
        original = runner.outcomes(script.read_text(), path=str(script), plain=True)
    finally:
        runner.close()
    r = reduce_script(opts, props, str(tmp_path / "out.py"), jobs=2, timeout=60)
    assert r.holds and r.lines < r.original_lines
    assert failures(r.final["worklist"]) <= failures(original["worklist"]), (failures(r.final["worklist"]), r.source)
    assert failures(original["worklist"]) == {("ended", "ok")}  # the sample ends well: so must its reproducer


def test_failures_name_the_end_and_the_errors_kinds():
    from kdebug import events as E
    from kdebug.reduce.trials import failures
    ok = Outcome([], 0, "ok")
    bad = Outcome([E.Diagnostic(severity="error", category="launch", message="m", text="t", job=None)], 1, "failed")
    assert failures(ok) == {("ended", "ok")}
    assert failures(bad) == {("ended", "failed"), ("error", "launch")}
    assert not failures(bad) <= failures(ok)
