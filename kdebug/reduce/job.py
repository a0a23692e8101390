"""One ``kdebug reduce``: check the original, reduce it, write the result, check it once more plainly."""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import field
from typing import Callable

from kdebug.lazy_dataclasses import dataclass
from kdebug.reduce import passes
from kdebug.reduce.properties import Outcome, Property
from kdebug.reduce.reducer import Progress, Reducer
from kdebug.reduce.trials import TrialRunner, run_once
from kdebug.session.options import RunOptions

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
                  cancel: threading.Event | None = None, new_failures: bool = False) -> Result:
    """Reduce ``options.script`` to the smallest script found that still shows every property; the
    original file is only read. Raises NothingToReduce when the original does not show them, and
    Cancelled once ``cancel`` is set (checked between trials; the trials in flight finish first).
    ``new_failures``: a candidate may fail in ways the original did not (by default it may not: the
    session's end and its errors' kinds stay within the original's)."""
    with open(options.script, encoding="utf-8") as f:
        original = f.read()
    if os.path.abspath(out) == os.path.abspath(options.script):
        raise ValueError(f"--out {out}: is the script itself; the original is never overwritten")
    started = time.monotonic()
    cwd = os.getcwd()
    with _script_folder_on_path(options.script):
        runner = TrialRunner(options, properties, timeout, jobs=jobs, cwd=cwd, warm=warm)
        try:
            t0 = time.monotonic()
            first = runner.outcomes(original, path=os.path.abspath(options.script))
            if not runner.holds(first):
                raise NothingToReduce(_not_shown(properties, first, options.strategy))
            if not new_failures:
                runner.keep_failures_to(first)
            if timeout is None:
                runner.timeout = max(MIN_TRIAL_TIMEOUT, 4 * (time.monotonic() - t0) / max(1, len(first)))
            normalised = passes.unparse(passes.ast.parse(original))
            if not runner.test(normalised):
                raise NothingToReduce("the script shows the property only with its comments and layout as they "
                                      "are (it reads its own source?): kdebug reduce rewrites the syntax tree")
            def report(progress: Progress) -> None:
                if cancel is not None and cancel.is_set():
                    raise _Stop
                if on_progress is not None:
                    on_progress(progress)

            reducer = Reducer(runner, report)
            try:
                source = reducer.reduce(normalised)
            except _Stop:
                with open(out, "w", encoding="utf-8") as f:
                    f.write(reducer.source)
                raise Cancelled(out, passes.code_lines(reducer.source)) from None
            except KeyboardInterrupt:  # Ctrl-C: keep what was reached (every accepted step showed it)
                with open(out, "w", encoding="utf-8") as f:
                    f.write(reducer.source)
                print(f"\nkdebug reduce: interrupted; the smallest script so far is in {out} (it showed the "
                      "property in its trial; not checked again)", file=sys.stderr, flush=True)
                raise
            with open(out, "w", encoding="utf-8") as f:
                f.write(source)
            # plainly: the written file itself, in a debuggee child started as kdebug run starts it
            final = runner.outcomes(source, path=os.path.abspath(out), plain=True)
            holds = runner.holds(final)
            shown = [p.describe(final, options.strategy) if p.holds(final, options.strategy)
                     else f"{p.spec}: NOT shown by the final run" for p in properties]
            if trace:
                _write_trace(trace, final[options.strategy if options.strategy in final else sorted(final)[0]])
            p = reducer.progress
            return Result(source, out, holds, shown, runner.trials, runner.runs, runner.cache_hits, p.accepted,
                          p.original_lines, passes.code_lines(source), time.monotonic() - started, trace, final)
        finally:
            runner.close()


class _Stop(Exception):
    """Raised from the progress report when ``cancel`` is set, out through the reducer's passes."""


def _not_shown(properties: list[Property], runs: dict[str, Outcome], strategy: str) -> str:
    missing = [p.spec for p in properties if not p.holds(runs, strategy)]
    run = runs[strategy] if strategy in runs else next(iter(runs.values()))
    kinds = sorted({d.category for d in run.diagnostics()})
    return (f"the script does not show {', '.join(missing)} (its run ended {run.status}, exit status "
            f"{run.exit_code}, diagnostics: {', '.join(kinds) or 'none'}); check the property and the run "
            "options (kdebug run --headless with the same options shows what it does)")


def _write_trace(path: str, outcome: Outcome) -> None:
    from kdebug.session.trace import TraceWriter  # kept lazy for start-up time
    writer = TraceWriter(path)
    for ev in outcome.events:
        writer(ev)
    writer.close()
    if writer.error:
        raise OSError(writer.error)


class _script_folder_on_path:
    """The candidates run from a folder of their own: the script's folder goes on PYTHONPATH, so its
    imports of modules beside it still resolve (as ``sys.path[0]`` does for the original)."""

    def __init__(self, script: str) -> None:
        self.folder = os.path.dirname(os.path.abspath(script))

    def __enter__(self):
        self.saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (self.saved, self.folder) if p)
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.saved
