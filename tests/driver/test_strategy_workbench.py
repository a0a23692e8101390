"""The driver workbench: strategies from the user (``--strategy FILE.py:Class``), the invariants checked on
every compilation (kdebug/driver/invariants.py) and ``kdebug check-strategy``.

The fast tests compile the stub-target hazards of tests/driver/test_strategies.py in process; the slow one runs
``kdebug check-strategy`` over part of the sample corpus in child processes, bounded by timeouts."""
from __future__ import annotations

import os
import textwrap

import pytest

from kdebug import cli
from kdebug.driver import invariants, strategies
from kdebug.errors import CompileError
from test_strategies import F64_1D, I64_1D, T, chain_a, compile_with, diamond, nest_top, of_kind, second_order, \
    via_pointer

from conftest import ROOT
EXAMPLE = os.path.join("docs", "examples", "my_worklist.py")
EXAMPLE_SPEC = os.path.join(ROOT, EXAMPLE) + ":MyWorklist"
HAZARDS = [(diamond, (I64_1D,)), (chain_a, (I64_1D, T.int64)), (nest_top, (I64_1D,)), (second_order, (F64_1D,)),
           (via_pointer, (F64_1D,))]

# a deliberately wrong strategy, written against the documented interface: the finish list holds only the
# toplevel job, so nested jobs end in the module unfinished
SKIPS_NESTED = '''
from kdebug.driver.strategies import Worklist


class SkipsNested(Worklist):
    name = "skips-nested"
    description = "a worklist that hands only the toplevel job to the finish passes"

    def expand(self, cx, comp, irmod):
        mod = super().expand(cx, comp, irmod)
        comp.finish_list[:] = [comp.top]
        return mod
'''


def broken(events) -> set[str]:
    return {invariants.broken_in(d.message) for d in of_kind(events, "diagnostic") if d.category == "invariant"}


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


# ---- a user strategy, loaded like a built-in -------------------------------------------------------------
def test_the_shipped_example_strategy_loads_and_keeps_every_invariant():
    strategy = strategies.get(EXAMPLE_SPEC)
    assert strategy.name == "my-worklist" and strategy.description
    assert strategies.get(EXAMPLE_SPEC) is strategy  # loaded once
    assert invariants.claims(strategy) == invariants.NAMES
    for kernel, argtypes in HAZARDS:
        driver, target, events, error = compile_with(EXAMPLE_SPEC, kernel, argtypes)
        assert error is None, (kernel, error)
        assert broken(events) == set(), kernel
        assert sorted(target.finished) == sorted(driver.records)  # finish on every job


def test_a_user_strategy_is_offered_like_a_builtin():
    from kdebug.tui import teaching
    strategy = strategies.get(EXAMPLE_SPEC)
    assert teaching.strategy_help(EXAMPLE_SPEC) == strategy.description  # the Strategy tab
    assert strategies.origin(EXAMPLE_SPEC) == f"class MyWorklist in {os.path.join(ROOT, EXAMPLE)}"
    assert strategies.origin("worklist") == "built-in"
    last = strategies.names()[-1]
    assert strategies.next_after(last) == EXAMPLE_SPEC and strategies.next_after(EXAMPLE_SPEC) == "worklist"
    opts = cli.parse_args(["run", "--strategy", f"{EXAMPLE}:MyWorklist", "x.py"])
    assert opts.strategy == EXAMPLE_SPEC  # made absolute: a rerun or a child process finds the same file


def test_a_wrong_strategy_has_its_broken_invariants_reported_on_the_job_and_the_request(tmp_path):
    spec = write(tmp_path, "skips.py", SKIPS_NESTED) + ":SkipsNested"
    driver, target, events, error = compile_with(spec, diamond, (I64_1D,))
    assert isinstance(error, CompileError) and "missed the finish passes" in str(error)
    assert broken(events) == {"finish-once"}
    (left,) = [d for d in of_kind(events, "diagnostic") if d.category == "invariant"
               and driver.records[d.job].name == "left"]
    assert left.message.startswith("invariant finish-once broken: job #")
    assert "requested by job #1 diamond (launch) at" in left.text and "skips-nested strategy" in left.text
    assert left.location["file"].endswith("test_strategies.py")  # the site of the request


@pytest.mark.parametrize("name", strategies.names())
def test_the_builtins_break_exactly_the_invariants_they_do_not_claim(name):
    strategy = strategies.get(name)
    seen: set[str] = set()
    for kernel, argtypes in HAZARDS:
        seen |= broken(compile_with(name, kernel, argtypes)[2])
    assert seen == set(invariants.NAMES) - set(invariants.claims(strategy))
    if seen:  # and the description says which
        said = "invariants " + " and ".join(sorted(seen)) if len(seen) > 1 else "invariant " + seen.pop()
        assert said in strategy.description
    else:
        assert "keeps every invariant" in strategy.description


def test_gpucompiler2_resolves_every_marker_once_and_decides_the_entry_points_after_codegen():
    driver, target, events, error = compile_with("gpucompiler2", nest_top, (I64_1D,))
    assert error is None and broken(events) == set()
    resolved = [(driver.records[e.job].name, driver.records[e.target_job].name, e.round)
                for e in of_kind(events, "deferred_resolved")]
    assert resolved == [("nest_top", "nest_mid", 1), ("nest_top", "leaf", 1)]  # one pass, on the toplevel
    nested = [driver.records[i] for i in target.finished[1:]]
    assert driver.records[target.finished[0]].name == "nest_top" and [r.key for r in nested] == \
        sorted(r.key for r in nested)  # decided once, by key
    driver, target, events, error = compile_with("gpucompiler2", chain_a, (I64_1D, T.int64))
    assert error is None and [e.resolution for e in of_kind(events, "reentrant")] == ["reference"]


def test_a_looping_user_strategy_is_stopped_with_a_located_answered_violation(tmp_path):
    spec = write(tmp_path, "loops.py", '''
        from kdebug.driver.strategies import Recursive


        class Loops(Recursive):
            name = "loops"
            description = "recursive, without its stop at the first re-entry"

            def request(self, cx, comp, requester, job, reason, loc, needs="address"):
                return cx.new_record(job, requester.id, reason, loc)
    ''') + ":Loops"
    driver, target, events, error = compile_with(spec, chain_a, (I64_1D, T.int64))
    assert isinstance(error, CompileError) and "invariant answered broken" in str(error) and error.loc is not None
    assert "answered" in broken(events)


def test_a_user_strategy_that_raises_is_a_located_compile_error_in_its_file(tmp_path):
    path = write(tmp_path, "raises.py", '''
        from kdebug.driver.strategies import Worklist


        class Raises(Worklist):
            name = "raises"
            description = "raises in expand"

            def expand(self, cx, comp, irmod):
                return comp.no_such_thing
    ''')
    driver, target, events, error = compile_with(path + ":Raises", nest_top, (I64_1D,))
    assert isinstance(error, CompileError) and "internal compiler error" not in str(error)
    assert error.loc.file == path and error.loc.line == 10 and "AttributeError" in str(error)


# ---- located errors for a strategy that does not fit the interface ----------------------------------------
BAD = {
    "missing": ('''
        from kdebug.driver.strategies import Strategy


        class Bad(Strategy):
            description = "no expand"

            def request(self, cx, comp, requester, job, reason, loc, needs="address"):
                return None

            def resolve_primal(self, cx, comp, job, text):
                return text
    ''', 5, "has no method 'expand'"),
    "signature": ('''
        class Bad:
            description = "request takes too little"

            def request(self, cx, comp):
                return None

            def expand(self, cx, comp, irmod):
                return irmod

            def resolve_primal(self, cx, comp, job, text):
                return text
    ''', 5, "does not take what the driver passes"),
    "claims": ('''
        from kdebug.driver.strategies import Worklist


        class Bad(Worklist):
            description = "claims what is not an invariant"
            invariants = ("fast",)
    ''', 5, "'fast'"),
    "syntax": ('''
        class Bad:
            def request(self, cx, comp
    ''', 3, ""),
}


@pytest.mark.parametrize("case", BAD)
def test_a_strategy_file_that_does_not_fit_is_a_located_error_and_exit_2(tmp_path, capsys, case):
    text, line, said = BAD[case]
    path = write(tmp_path, "bad.py", text)
    with pytest.raises(ValueError) as caught:
        strategies.get(path + ":Bad")
    assert str(caught.value).startswith(f"{path}:{line}") and said in str(caught.value)
    script = os.path.join(ROOT, "sample_kernels", "nested_deferred.py")
    for argv in (["run", "--headless", "--strategy", f"{path}:Bad", script], ["check-strategy", f"{path}:Bad"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"{path}:{line}" in err and "Traceback" not in err, err


def test_a_spec_naming_no_file_or_class_is_a_usage_error(tmp_path, capsys):
    path = write(tmp_path, "ok.py", "x = 1\n")
    assert cli.main(["check-strategy", f"{path}:Nope"]) == 2
    assert "no class 'Nope'" in capsys.readouterr().err
    assert cli.main(["check-strategy", str(tmp_path / "none.py") + ":X"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["check-strategy", "eager"]) == 2


# ---- kdebug check-strategy over the corpus --------------------------------------------------------------
def test_the_corpus_is_the_samples_that_exercise_deferred_jobs():
    from kdebug.driver import workbench
    names = [h.name for h in workbench.sample_corpus(os.path.join(ROOT, "sample_kernels"))]
    for sample in ("recursive_launch.py", "nested_deferred.py", "self_launch.py", "mutual_pointers.py",
                   "grad_pointer.py", "adjoint_stencil.py"):
        assert sample in names
    assert "saxpy.py" not in names and "matmul_tiled.py" not in names


def rows_of(out: str) -> dict[str, list[str]]:
    """check-strategy's table: hazard -> its cells, in the order of invariants.NAMES."""
    table = out.split("\n\n")[1]
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table.splitlines()[2:]}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_check_strategy_passes_the_example_and_fails_the_wrong_one(tmp_path, capsys):
    spec = write(tmp_path, "skips.py", SKIPS_NESTED) + ":SkipsNested"
    only = ["--only", "nested_deferred", "--only", "gen_diamond", "--only", "grad_pointer", "--timeout", "120"]
    assert cli.main(["check-strategy", f"{EXAMPLE}:MyWorklist"] + only) == 0
    out = capsys.readouterr().out
    assert "broken" not in out.split("\n\n")[1] and "ok: every invariant my-worklist claims held" in out
    assert cli.main(["check-strategy", spec] + only) == 1
    out = capsys.readouterr().out
    rows = rows_of(out)
    finish = list(invariants.NAMES).index("finish-once")
    assert rows["nested_deferred.py"][finish] == "broken" and rows["gen_diamond"][finish] == "broken"
    assert rows["nested_deferred.py"][0] == "held"  # compiled-once
    assert "FAILED: skips-nested claims invariants it breaks: finish-once on" in out
    assert cli.main(["check-strategy", "recursive", "--only", "recursive_launch", "--only", "nested_deferred"]) == 0
    out = capsys.readouterr().out
    assert rows_of(out)["recursive_launch.py"] == ["stopped"] * len(invariants.NAMES)  # at a located error
    assert "recursive_launch.py: stopped at " in out and "kernel_a \u2192 kernel_b" in out


def test_the_strategy_tab_shows_a_user_strategys_description_origin_and_claims():
    import asyncio

    from kdebug.session.model import SessionModel
    from kdebug.tui.app import KdebugApp
    from kdebug.tui.synthetic import cycle_events

    async def go():
        app = KdebugApp(model=SessionModel().extend(cycle_events(strategy=EXAMPLE_SPEC)))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            app.detail.action_tab("strategy")
            await pilot.pause()
            text = " ".join(str(app.query_one("#strategy-help").render()).split())
            assert strategies.get(EXAMPLE_SPEC).description in text
            assert "(class MyWorklist in " in text and "claims (kdebug check-strategy): compiled-once," in text
    asyncio.run(go())


def test_fuzz_programs_are_seeded_python_with_launch_graphs_pointers_and_derivatives():
    import ast
    import random

    from kdebug.driver import workbench
    programs = [workbench.random_program(random.Random(seed)) for seed in range(30)]
    assert programs[:5] == [workbench.random_program(random.Random(seed)) for seed in range(5)]  # the seed: the program
    for text in programs:
        ast.parse(text)
    joined = "\n".join(programs)
    assert "[1, 1](out, n - 1)" in joined and "kdebug.deferred(f" in joined and "kdebug.grad(kdebug.grad(" in joined


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fuzz_strategy_holds_the_worklist_and_catches_the_wrong_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a finding's reproducer would go (fuzz-findings/): no shrinking asked here
    assert cli.main(["fuzz-strategy", "worklist", "--count", "3", "--seed", "7", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fuzz-strategy worklist (built-in)") and len(rows_of(out)) == 3
    spec = write(tmp_path, "skips.py", SKIPS_NESTED) + ":SkipsNested"
    assert cli.main(["fuzz-strategy", spec, "--count", "3", "--seed", "7", "--keep", str(tmp_path / "kept"),
                     "--no-shrink"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: skips-nested claims invariants it breaks: finish-once on fuzz_7_" in out
    assert sorted(os.listdir(tmp_path / "kept")) == ["fuzz_7_0.py", "fuzz_7_1.py", "fuzz_7_2.py"]
    assert sorted(os.listdir(tmp_path)) == ["kept", "skips.py"]  # --no-shrink: nothing written


# ---- fuzz-strategy's findings shrunk: the job graph, then the script ------------------------------------
def self_launch(graph) -> bool:
    return any(k.name in k.launches for k in graph.kernels)


def test_a_random_program_is_a_job_graph_that_shrinks_one_step_at_a_time():
    import ast
    import random

    from kdebug.driver import workbench
    for seed in range(20):
        graph = workbench.random_graph(random.Random(seed))
        assert graph.render() == workbench.random_program(random.Random(seed))
        for smaller in graph.smaller():
            assert smaller.size() < graph.size() and smaller.kernels
            ast.parse(smaller.render())
    # shrunk against a judge of graphs (here: some kernel launches itself) to the one kernel that does
    graph = next(g for g in (workbench.random_graph(random.Random(s)) for s in range(50)) if self_launch(g)
                 and len(g.kernels) > 2)
    steps = []
    small = workbench.shrink(graph, lambda gs: next((i for i, g in enumerate(gs) if self_launch(g)), None),
                             steps.append)
    assert steps and len(small.kernels) == 1 and small.functions == [] and small.depth == 0
    (k,) = small.kernels
    assert k.launches == [k.name] and k.grad is None
    assert small.render().endswith(f"def {k.name}(out, n):\n    if n > 0:\n        {k.name}[1, 1](out, n - 1)\n\n"
                                   f"{k.name}[1, 1](np.zeros(1), 0)\n")


def test_a_findings_pattern_keeps_the_invariant_and_its_words_and_leaves_the_ids_open():
    import re

    from kdebug.reduce import fuzz
    msg = "invariant finish-once broken: job #3 grad(f0): it ends in the module, but the finish passes never ran on it"
    pat = re.compile(fuzz.pattern("finish-once", msg), re.M)
    assert pat.search(msg) and pat.search(msg.replace("#3 grad(f0)", "#7 k2"))
    assert not pat.search(msg.replace("finish-once", "compiled-once"))
    assert not pat.search(msg.replace("never ran", "ran twice"))
    primal = "invariant primal-resolved broken: job #2 grad(grad(f0)): its primal still holds the marker of job #3 f1"
    assert re.search(fuzz.pattern("primal-resolved", primal), primal.replace("#3 f1", "#12 f1"), re.M)
    loop = fuzz.pattern("reentrant-loop", "re-entrant request: k0 \u2192 k0 (stopped)")
    assert re.search(loop, "re-entrant request: k1 \u2192 k2 \u2192 k1 (stopped)", re.M)
    assert not re.search(loop, "re-entrant request: k1 \u2192 k1 (reference)", re.M)


def test_a_reproducer_says_what_broke_and_how_to_see_it_and_overwrites_nothing(tmp_path, monkeypatch):
    import random

    from kdebug.driver import workbench
    from kdebug.reduce import fuzz
    monkeypatch.chdir(tmp_path)
    res = workbench.Result(workbench.Hazard("fuzz_7_2.py", "fuzz_7_2.py"))
    res.graph, res.index, res.found_s = workbench.random_graph(random.Random(7)), 2, 1.25
    finding = fuzz.Finding("finish-once", "invariant finish-once broken: job #3 k2: it ends in the module, but the "
                           "finish passes never ran on it", res)
    finding.lines_before, finding.lines, finding.shrink_s = 30, 4, 3.5
    (tmp_path / "found").mkdir()
    (tmp_path / "found" / "recursive-finish-once-seed7.py").write_text("mine\n")
    path = fuzz.write_reproducer(finding, "recursive", 7, "found", "k0[1, 1]()\n", "kdebug fuzz-strategy recursive "
                                 "--seed 7 --count 5")
    assert path == os.path.join("found", "recursive-finish-once-seed7-2.py")
    assert (tmp_path / "found" / "recursive-finish-once-seed7.py").read_text() == "mine\n"  # left alone
    text = open(path).read()
    assert text.startswith("# kdebug fuzz-strategy finding: invariant finish-once broken (the finish passes run")
    assert "# strategy: recursive (built-in)\n" in text and "# seed 7: program 2 of kdebug fuzz-strategy recursive " \
        "--seed 7 --count 5\n" in text and "found in 1.2 s; shrunk from 30 to 4 code lines in 3.5 s" in text
    assert f"# shows it: kdebug run --strategy recursive {path}" in text and text.endswith("\nk0[1, 1]()\n")


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_fuzz_strategy_shrinks_the_recursive_strategys_two_bugs_and_toplevels_to_scripts_that_show_them(
        tmp_path, monkeypatch, capsys):
    """The seed's two bugs (a finish miss on a nested job, a re-entrant loop), and toplevel's primal-resolved,
    each shrunk to a few lines in --out, nothing else written; ``kdebug run`` shows each."""
    from kdebug.reduce import passes
    monkeypatch.chdir(tmp_path)
    argv = ["fuzz-strategy", "recursive", "--count", "2", "--seed", "7", "--find", "finish-once", "--find",
            "reentrant-loop", "--out", "found", "--timeout", "60"]
    assert cli.main(argv) == 0  # recursive claims neither: the exit status stays 0
    out = capsys.readouterr().out
    assert "2 finding(s), each shrunk" in out and out.count("kdebug run shows it") == 2, out
    assert sorted(os.listdir(tmp_path)) == ["found"]
    assert sorted(os.listdir(tmp_path / "found")) == ["recursive-finish-once-seed7.py",
                                                      "recursive-reentrant-loop-seed7.py"]
    assert cli.main(["fuzz-strategy", "toplevel", "--count", "1", "--seed", "7", "--out", "found",
                     "--timeout", "60"]) == 0
    assert "found/toplevel-primal-resolved-seed7.py: " in capsys.readouterr().out
    shows = {"recursive-finish-once-seed7.py": ("recursive", "invariant finish-once broken"),
             "recursive-reentrant-loop-seed7.py": ("recursive", "re-entrant codegen loop"),
             "toplevel-primal-resolved-seed7.py": ("toplevel", "invariant primal-resolved broken")}
    for name, (strategy, said) in shows.items():
        path = os.path.join("found", name)
        text = open(path).read()
        assert passes.code_lines(text) <= 12, text
        assert f"# strategy: {strategy} (built-in)" in text and "seed 7" in text
        assert f"# shows it: kdebug run --strategy {strategy} {path}" in text
        cli.main(["run", "--headless", "--backend", "cpu", "--strategy", strategy, path])
        report = capsys.readouterr()
        assert said in report.out + report.err, report
    violation = open(os.path.join("found", "recursive-finish-once-seed7.py")).read().split("# the violation: ")[1]
    assert violation.startswith("invariant finish-once broken: job #") and \
        not violation.startswith("invariant finish-once broken: job #1 ")  # a nested job's miss, not the toplevel's


# ---- every run, trace and export names the strategy and where it came from -------------------------------
def test_session_started_names_the_strategys_origin_and_old_traces_still_read(tmp_path):
    import json

    from kdebug import events as E
    from kdebug.export.html import Page
    from kdebug.session.headless import render, summary_json
    from kdebug.session.model import SessionModel
    from kdebug.session.trace import load_model
    from kdebug.tui import status
    from kdebug.tui.synthetic import cycle_events

    lines = [json.loads(E.to_line(ev)) for ev in cycle_events(strategy=EXAMPLE_SPEC)]
    lines[0]["strategy_origin"] = strategies.origin(EXAMPLE_SPEC)
    recorded = tmp_path / "user.jsonl"
    recorded.write_text("".join(json.dumps(o) + "\n" for o in lines))
    model = load_model(str(recorded))
    assert model.started.origin == f"class MyWorklist in {os.path.join(ROOT, EXAMPLE)}"
    assert f"strategy={EXAMPLE_SPEC} (class MyWorklist in " in render(model).splitlines()[0]
    assert summary_json(model)["strategy_origin"] == model.started.origin
    assert "my_worklist.py:MyWorklist (user)" in status.header(model, None, True, str(recorded))
    assert "(class MyWorklist in " in Page(model).header()
    old = [dict(o) for o in lines]
    del old[0]["strategy_origin"]
    old[0]["strategy"] = "recursive"
    recorded.write_text("".join(json.dumps(o) + "\n" for o in old))  # recorded before kdebug said it
    model = load_model(str(recorded))
    assert model.started.strategy_origin is None and model.started.origin == "built-in"
    assert "strategy=recursive (built-in)" in render(model) and "backend cpu \u00b7 strategy recursive \u00b7" in \
        status.header(model, None, True, str(recorded))
    lines[0]["strategy_origin"] = 5
    recorded.write_text("".join(json.dumps(o) + "\n" for o in lines))
    with pytest.raises(ValueError, match=r"user.jsonl:1: .*strategy_origin"):
        load_model(str(recorded))
    assert E.SessionStarted(strategy="worklist").origin == "built-in"
    assert SessionModel().extend([E.SessionStarted(strategy="a.py:B")]).started.origin == "class B in a.py"


@pytest.mark.timeout(120)
def test_a_run_its_trace_and_its_dump_name_the_strategy_and_its_origin(tmp_path, capsys):
    script = os.path.join(ROOT, "sample_kernels", "nested_deferred.py")
    trace = tmp_path / "run.jsonl"
    assert cli.main(["run", "--headless", "--backend", "cpu", "--strategy", f"{EXAMPLE}:MyWorklist", "--trace",
                     str(trace), script]) == 0
    origin = f"class MyWorklist in {os.path.join(ROOT, EXAMPLE)}"
    assert f"strategy={EXAMPLE_SPEC} ({origin})" in capsys.readouterr().out
    import json
    started = json.loads(trace.read_text().splitlines()[0])
    assert started["event"] == "session_started" and started["strategy_origin"] == origin
    assert cli.main(["dump", script, "--backend", "cpu", "--strategy", "recursive", "--out", str(tmp_path / "d")]) == 1
    job_file = next(p for p in os.listdir(tmp_path / "d") if p.endswith("_00-job.txt"))
    assert "\nstrategy: recursive (built-in)\n" in (tmp_path / "d" / job_file).read_text()
