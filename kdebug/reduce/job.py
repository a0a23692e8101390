"""One ``kdebug reduce``: check the original, reduce it, write the result, check it once more plainly."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import field
from typing import Callable

from kdebug import events as E
from kdebug.lazy_dataclasses import dataclass
from kdebug.reduce import passes
from kdebug.reduce.files import OutputError, Script, ScriptError, WriteError, check_outputs, read_script, write_result
from kdebug.reduce.properties import Outcome, Property
from kdebug.reduce.reducer import Progress, Reducer
from kdebug.reduce.scratch import Scratch, ScratchError
from kdebug.reduce.trials import TrialRunner
from kdebug.session.options import RunOptions

__all__ = ["Cancelled", "NothingToReduce", "OutputError", "Result", "ScratchError", "ScriptError", "Terminated",
           "WriteError", "default_out", "reduce_script"]

MIN_TRIAL_TIMEOUT = 10.0  # seconds: a trial's limit is at least this, else a few times the original's run


class NothingToReduce(Exception):
    """The original script does not show the property: there is nothing to keep while cutting."""


class Cancelled(Exception):
    """The reduction was asked to stop (``cancel`` set): the smallest script so far is in ``out``."""

    def __init__(self, out: str, lines: int) -> None:
        super().__init__(f"stopped; the smallest script so far ({lines} code lines) is in {out}")
        self.out, self.lines = out, lines


@dataclass
class Result:
    source: str
    out: str
    holds: bool  # the final, plain run of ``out`` still shows every property
    shown: list[str]  # what the final run showed, a line per property
    trials: int
    runs: int
    cached: int
    accepted: int
    original_lines: int
    lines: int
    seconds: float
    trace: str | None = None
    final: dict[str, Outcome] = field(default_factory=dict)


def default_out(script: str, cwd: str | None = None) -> str:
    """``<stem>.reduced.py`` in the current directory."""
    stem = os.path.splitext(os.path.basename(script))[0]
    return os.path.join(cwd or os.getcwd(), f"{stem}.reduced.py")



def reduce_script(options: RunOptions, properties: list[Property], out: str, jobs: int = 1,
                  timeout: float | None = None, trace: str | None = None,
                  on_progress: Callable[[Progress], None] | None = None, warm: bool = True,
                  cancel: threading.Event | None = None, new_failures: bool = False,
                  copy: str | None = None, on_copy: Callable[[str], None] | None = None) -> Result:
    """Reduce ``options.script`` to the smallest script found that still shows every property; the
    original file is only read, and no trial runs where the user's files are: every run (the original's
    first, each trial, the final check) runs in a scratch copy of the script's folder (or of ``copy``),
    removed at the end (``on_copy`` gets a line saying what was copied).

    Raises ScriptError (the script does not parse), OutputError (``out`` or ``trace`` is the script, or
    cannot be written) and ScratchError (the folder cannot be copied) before any trial; NothingToReduce
    when the original does not show the properties; Cancelled once ``cancel`` is set (checked between
    trials; the trials in flight are killed); WriteError where a result cannot be written at the end
    (it says where the result was saved instead). On KeyboardInterrupt (and ``Terminated``) the smallest
    script so far is written before it goes on. ``new_failures``: a candidate may fail in ways the
    original did not (by default it may not: the session's end and its errors' kinds stay within the
    original's)."""
    script = read_script(options.script)
    check_outputs(options.script, out, trace)
    started = time.monotonic()
    reducer: Reducer | None = None
    written = False
    scratch = Scratch(options.script, copy, cwd=os.getcwd())
    try:
        if on_copy is not None:
            on_copy(scratch.describe())
        with _script_folder_on_path(scratch.folder):
            runner = TrialRunner(options, properties, timeout, jobs=jobs, cwd=scratch.cwd, warm=warm)
            try:
                t0 = time.monotonic()
                first = runner.outcomes(script.text, path=scratch.script)
                if not runner.holds(first):
                    raise NothingToReduce(_not_shown(properties, first, options.strategy))
                if not new_failures:
                    runner.keep_failures_to(first)
                if timeout is None:
                    runner.timeout = max(MIN_TRIAL_TIMEOUT, 4 * (time.monotonic() - t0) / max(1, len(first)))
                normalised = passes.unparse(passes.ast.parse(script.text))
                if not runner.test(normalised):
                    raise NothingToReduce("the script shows the property only with its comments and layout as "
                                          "they are (it reads its own source?): kdebug reduce rewrites the "
                                          "syntax tree")

                def report(progress: Progress) -> None:
                    if cancel is not None and cancel.is_set():
                        raise _Stop
                    if on_progress is not None:
                        on_progress(progress)

                reducer = Reducer(runner, report)
                try:
                    source = reducer.reduce(normalised)
                except _Stop:
                    written = True
                    saved = _save_best(script, out, reducer.source)
                    raise Cancelled(saved, passes.code_lines(reducer.source)) from None
                write_result("--out", out, script.encode(source))
                written = True
                # plainly: the written script, in a debuggee child started as kdebug run starts it, from
                # the scratch copy (beside the script's copy, under the output's name)
                checked = os.path.join(scratch.folder, os.path.basename(out))
                with open(checked, "wb") as f:
                    f.write(script.encode(source))
                final = runner.outcomes(source, path=checked, plain=True)
                holds = runner.holds(final)
                shown = [p.describe(final, options.strategy) if p.holds(final, options.strategy)
                         else f"{p.spec}: NOT shown by the final run" for p in properties]
                shown = [line.replace(checked, os.path.abspath(out)) for line in shown]
                if trace:
                    run = final[options.strategy if options.strategy in final else sorted(final)[0]]
                    _write_trace(trace, run, checked, os.path.abspath(out))
                p = reducer.progress
                return Result(source, out, holds, shown, runner.trials, runner.runs, runner.cache_hits,
                              p.accepted, p.original_lines, passes.code_lines(source), time.monotonic() - started,
                              trace, final)
            except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: keep what was reached (every accepted step showed it)
                how = "terminated" if isinstance(exc, Terminated) else "interrupted"
                if written:
                    where = f"the reduced script is in {out} (not checked plainly)"
                elif reducer is not None:
                    try:
                        saved = _save_best(script, out, reducer.source)
                        where = (f"the smallest script so far is in {saved} (it showed the property in its "
                                 "trial; not checked again)")
                    except WriteError as err:
                        where = str(err)
                else:
                    where = "no smaller script was found yet; nothing written"
                print(f"\nkdebug reduce: {how}; {where}", file=sys.stderr, flush=True)
                raise
            finally:
                runner.close()
    finally:
        scratch.close()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt (``kdebug reduce`` installs
    the handler): the reduction stops as it does on Ctrl-C, the smallest script so far written."""


def _save_best(script: Script, out: str, source: str) -> str:
    """The best script so far written to ``out`` (or, where that fails, WriteError saying where instead)."""
    return write_result("--out", out, script.encode(source), what="the smallest script so far")


class _Stop(Exception):
    """Raised from the progress report when ``cancel`` is set, out through the reducer's passes."""


def _not_shown(properties: list[Property], runs: dict[str, Outcome], strategy: str) -> str:
    missing = [p.spec for p in properties if not p.holds(runs, strategy)]
    run = runs[strategy] if strategy in runs else next(iter(runs.values()))
    kinds = sorted({d.category for d in run.diagnostics()})
    return (f"the script does not show {', '.join(missing)} (its run ended {run.status}, exit status "
            f"{run.exit_code}, diagnostics: {', '.join(kinds) or 'none'}); check the property and the run "
            "options (kdebug run --headless with the same options shows what it does)")


def _write_trace(path: str, outcome: Outcome, ran: str, shown: str) -> None:
    """The final run's events as a trace file, naming the output (``shown``) where the run named the
    scratch copy it ran (``ran``)."""
    ran_json, shown_json = json.dumps(ran)[1:-1], json.dumps(shown)[1:-1]
    data = "".join(E.to_line(ev).replace(ran_json, shown_json) for ev in outcome.events)
    write_result("--trace", path, data.encode("utf-8"), what="the final run's trace")


class _script_folder_on_path:
    """The candidates run from a folder of their own: the script's folder (its scratch copy) goes on
    PYTHONPATH, so its imports of modules beside it still resolve (as ``sys.path[0]`` does for the
    original)."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.abspath(folder)

    def __enter__(self):
        self.saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (self.saved, self.folder) if p)
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.saved
