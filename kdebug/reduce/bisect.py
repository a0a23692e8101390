"""``kdebug bisect``: the first optimisation pass after which a property of a run holds.

Each build is the whole script run headless in a debuggee child (as ``kdebug reduce``'s trials run),
with one kernel's ``optimize`` and ``emit`` pipelines cut after pass N (LLVM's opt-bisect limit,
``kdebug/passes.py``): LLVM's limit and its pass counter are process-wide, so every N needs a process
of its own. A first build with no limit counts and names the passes; a build with limit 0 is the
unoptimised one; the first N whose build shows the property is then found by binary search, and the
diff of the kernel's module between builds N-1 and N is that pass's change.
"""
from __future__ import annotations

import difflib
import re
import tempfile

from kdebug import events as E
from kdebug.lazy_dataclasses import dataclass
from kdebug.reduce.properties import Outcome, parse_property
from kdebug.reduce.trials import WarmStarts, run_once
from kdebug.session.options import RunOptions

KINDS = ("ir", "output-differs", "error", "memcheck", "race")
HELP = ("ir:REGEX (the kernel's optimised IR matches, e.g. ir:'<8 x float>'), output-differs (the script's "
        "stdout differs from the build with no optimisation passes), error:REGEX (an error diagnostic "
        "matches), memcheck, race (that sanitizer reports a finding)")


@dataclass(frozen=True)
class BisectProperty:
    kind: str
    argument: str = ""

    @property
    def spec(self) -> str:
        return self.kind + (f":{self.argument}" if self.argument else "")


def parse_bisect_property(text: str) -> BisectProperty:
    """``ir:<8 x float>`` -> BisectProperty; a bad spelling raises ValueError saying what is wanted."""
    kind, sep, arg = text.strip().partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(f"unknown property {text!r}; choose from {HELP}")
    if kind in ("ir", "error"):
        if not arg:
            raise ValueError(f"{kind}: give a regular expression, e.g. {kind}:'fmul'")
        try:
            re.compile(arg)
        except re.error as exc:
            raise ValueError(f"{text}: not a regular expression ({exc})") from None
        return BisectProperty(kind, arg)
    if sep:
        raise ValueError(f"{text}: {kind} takes no argument")
    return BisectProperty(kind)


@dataclass
class Build:
    """One build of the script with the kernel's pipelines cut after ``limit`` passes, and its run."""

    limit: int
    outcome: Outcome
    passes: list[list]  # [number, LLVM's pass name, unit, ran, phase, class name] of the kernel's cut phases
    text: str  # the kernel's module after its last cut pipeline ("" where it never got there)

    @property
    def compiled(self) -> bool:
        return bool(self.passes) or bool(self.text)


@dataclass
class BisectResult:
    property: BisectProperty
    total: int  # passes the uncut build ran in the kernel's optimize and emit pipelines
    builds: int  # child runs made
    unoptimised_holds: bool
    optimised_holds: bool
    first: list | None = None  # the pass found: [number, name, unit, ran, phase, class name]
    diff: str = ""  # the kernel's module before and after it
    unoptimised: Build | None = None
    optimised: Build | None = None

    def report(self) -> str:
        """What ``kdebug bisect`` prints."""
        p = self.property.spec
        if self.first is not None:
            n, name, unit, _, phase, cls = self.first
            head = f"first pass: #{n} {cls or name} ({phase}, {unit})"
            lines = [head, f"  ({p} holds after it, not before; {self.total} passes in all, {self.builds} builds)"]
            return "\n".join(lines + ["", self.diff.rstrip("\n") or "(the kernel's module text is unchanged)"]) + "\n"
        if self.unoptimised_holds:
            return (f"no pass makes {p} hold: it holds already in the build with no optimisation passes "
                    f"({self.total} passes in all, {self.builds} builds)\n")
        return (f"no pass makes {p} hold: neither the unoptimised build nor the fully optimised one shows it "
                f"({self.total} passes in all, {self.builds} builds)\n")


class BisectError(Exception):
    """The bisection cannot start (the kernel never compiles, the script fails in every build...), or
    was stopped."""


def options_for(prop: BisectProperty, options: RunOptions) -> RunOptions:
    """The run options a property needs: racecheck on for ``race``; ``memcheck`` needs bounds checks
    (a ValueError saying so where they are off)."""
    if prop.kind == "race":
        return options.replace(racecheck=True)
    if prop.kind == "memcheck" and not options.memcheck:
        raise ValueError("--until memcheck needs bounds checks: leave out --no-memcheck")
    return options


def _phase_order(phase: str) -> int:
    return {"optimize": 0, "emit": 1}.get(phase, 2)


class Bisector:
    """Builds of ``options.script`` with kernel ``kernel`` cut after N passes, one child each."""

    def __init__(self, options: RunOptions, kernel: str, prop: BisectProperty, timeout: float | None,
                 cwd: str | None = None, warm: bool = True, on_step=None, cancel=None) -> None:
        """``on_step(limit, holds, builds)`` is called after each build is judged; once ``cancel`` (a
        ``threading.Event``) is set, the next build raises BisectError."""
        self.on_step, self.cancel = on_step, cancel
        self.options = options.replace(breakpoints=frozenset(), trace=None, snapshots=False, cut_kernel=kernel)
        self.kernel, self.property, self.timeout, self.cwd = kernel, prop, timeout, cwd
        self.builds: dict[int, Build] = {}
        self._warm = WarmStarts(cwd) if warm else None
        self._dir = tempfile.TemporaryDirectory(prefix="kdebug-bisect-")
        self._reference: Build | None = None
        self._judge = parse_property(prop.spec, ()) if prop.kind in ("error", "memcheck", "race") else None

    def close(self) -> None:
        if self._warm is not None:
            self._warm.close()
        self._dir.cleanup()

    def build(self, limit: int) -> Build:
        """The script's run with the kernel cut after ``limit`` passes (-1: none cut), made once."""
        if limit in self.builds:
            return self.builds[limit]
        if self.cancel is not None and self.cancel.is_set():
            raise BisectError(f"stopped after {len(self.builds)} builds")
        options = self.options.replace(pass_limit=limit)
        if self._warm is not None:
            with tempfile.TemporaryDirectory(prefix="kdebug-build-", dir=self._dir.name) as files:
                outcome = self._warm.run(options, self.timeout, self.cwd, files)
        else:
            outcome = run_once(options, self.timeout, self.cwd)
        cuts = [ev for ev in outcome.events if isinstance(ev, E.PassCut) and ev.name == self.kernel]
        first_job = cuts[0].job if cuts else None
        cuts = sorted((ev for ev in cuts if ev.job == first_job), key=lambda ev: _phase_order(ev.phase))
        passes = [run for ev in cuts for run in ev.passes]
        text = cuts[-1].text if cuts else ""
        build = self.builds[limit] = Build(limit, outcome, passes, text)
        return build

    def holds(self, build: Build) -> bool:
        kind = self.property.kind
        if kind == "ir":
            return re.search(self.property.argument, build.text, re.M) is not None
        if kind == "output-differs":
            reference = self.build(0)
            return build.outcome.stdout != reference.outcome.stdout
        assert self._judge is not None
        return self._judge.holds({"default": build.outcome}, "default")

    def run(self) -> BisectResult:
        survey = self.build(-1)
        if not survey.compiled:
            raise BisectError(self._never_compiled(survey))
        total = len(survey.passes)
        self.builds[total] = survey  # every pass runs: the same code (the survey only prints headers too)
        names = {run[0]: run for run in survey.passes}
        full_holds, low_holds = self._judged(total), self._judged(0)
        low = self.build(0)
        result = BisectResult(self.property, total, 0, low_holds, full_holds, unoptimised=low, optimised=survey)
        if low_holds or not full_holds:
            result.builds = len(self.builds)
            return result
        lo, hi = 0, total  # the property fails after lo passes and holds after hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._judged(mid):
                hi = mid
            else:
                lo = mid
        before, after = self.build(hi - 1), self.build(hi)
        result.first = list(names.get(hi) or after.passes[hi - 1])
        result.diff = "".join(difflib.unified_diff(before.text.splitlines(True), after.text.splitlines(True),
                                                   f"before #{hi}", f"after #{hi}", n=2))
        result.builds = len(self.builds)
        return result

    def _judged(self, limit: int) -> bool:
        holds = self.holds(self.build(limit))
        if self.on_step is not None:
            self.on_step(limit, holds, len(self.builds))
        return holds

    def _never_compiled(self, build: Build) -> str:
        o = build.outcome
        compiled = sorted({ev.name for ev in o.events if isinstance(ev, E.JobStarted)})
        if o.status not in ("ok", "failed") or not compiled:
            why = next((ev.error for ev in o.events if isinstance(ev, E.SessionEnded) and ev.error), "") or \
                o.stderr.strip().splitlines()[-1:] and o.stderr.strip().splitlines()[-1] or o.status
            return f"the script's run never compiled kernel {self.kernel!r} ({o.status}: {why})"
        return (f"no compilation of kernel {self.kernel!r} ran its optimisation pipelines; the script compiled "
                f"{', '.join(compiled)}: give one of those to --kernel")
