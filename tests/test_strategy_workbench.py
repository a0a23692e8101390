"""The driver workbench: strategies from the user (``--strategy FILE.py:Class``), the invariants checked on
every compilation (kdebug/driver/invariants.py) and ``kdebug check-strategy``.

The fast tests compile the stub-target hazards of tests/test_strategies.py in process; the slow one runs
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
def test_fuzz_strategy_holds_the_worklist_and_catches_the_wrong_one(tmp_path, capsys):
    assert cli.main(["fuzz-strategy", "worklist", "--count", "3", "--seed", "7", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fuzz-strategy worklist (built-in)") and len(rows_of(out)) == 3
    spec = write(tmp_path, "skips.py", SKIPS_NESTED) + ":SkipsNested"
    assert cli.main(["fuzz-strategy", spec, "--count", "3", "--seed", "7", "--keep", str(tmp_path / "kept")]) == 1
    out = capsys.readouterr().out
    assert "FAILED: skips-nested claims invariants it breaks: finish-once on fuzz_7_" in out
    assert sorted(os.listdir(tmp_path / "kept")) == ["fuzz_7_0.py", "fuzz_7_1.py", "fuzz_7_2.py"]
