"""``kdebug fuzz-strategy``'s findings shrunk to standalone reproducers.

A random program that breaks an invariant (or whose cycle the strategy stops, where the worklist strategy
answers it with a reference: ``reentrant-loop``) is shrunk in two steps, each candidate judged by a trial run
under the strategy (``TrialRunner``: a warm debuggee child per trial) that must still show the same
violation, the same way: the same invariant broken with the same words (job ids and names aside), and no
failure the original did not have.

1. The job graph (``Graph.smaller``, kdebug/driver/workbench.py): another kernel as the entry, kernels and
   device functions dropped, then launch, pointer and derivative edges, derivative orders, the launch depth,
   greedily to a fixed point.
2. The script, through kdebug's reducer (``reduce_script``, as ``kdebug reduce --until error:...`` runs it).

Scratch work happens in a temporary folder; only the reproducer is written where asked (``out``), under a
name no file there has yet, with a header that says the strategy, what broke, the seed and the command.
"""
from __future__ import annotations

import os
import re
import tempfile
import time

from kdebug.driver import invariants, strategies, workbench
from kdebug.reduce import passes
from kdebug.reduce.job import NothingToReduce, reduce_script
from kdebug.reduce.properties import Property
from kdebug.reduce.trials import TrialRunner
from kdebug.session.options import RunOptions

MIN_TRIAL_S = 10.0  # a trial's limit: at least this, else four times the original's run


class Finding:
    """One kind of violation the fuzzer found, on the first program (by number) that showed it."""

    def __init__(self, kind: str, message: str, result: workbench.Result) -> None:
        self.kind, self.message, self.result = kind, message, result
        self.path: str | None = None  # the reproducer written
        self.lines_before = self.lines = 0  # code lines, of the random program and of the reproducer
        self.graph_before = self.graph_after = ""
        self.shrink_s = 0.0
        self.shown: str | None = None  # what a plain run of the reproducer showed, or None where it did not
        self.note: str | None = None  # why it was not shrunk (all the way)

    @property
    def what(self) -> str:
        if self.kind == workbench.LOOP:
            return ("a re-entrant loop, stopped at a located error (no invariant: the worklist strategy answers "
                    "the same request with a reference to the job in progress)")
        return f"invariant {self.kind} broken ({invariants.DESCRIPTIONS[self.kind]})"


def pattern(kind: str, message: str) -> str:
    """The ``error:`` regular expression a shrunk program must still match: the violation's message with its
    job ids (and the name of the job it is reported on) left open."""
    if kind == workbench.LOOP:
        return r"^re-entrant request: .+ \(stopped\)$"
    m = re.match(r"^invariant (\S+) broken: job #\d+ (.*?): (.*)$", message)
    if m is None:
        return "^" + re.escape(message)
    detail = re.sub(r"\d+", r"\\d+", re.escape(m.group(3)))
    # the detail may name other jobs (job #3 f1): ids left open, the words kept
    return rf"^invariant {re.escape(kind)} broken: job #\d+ .+?: {detail}$"


def first_findings(results: list[workbench.Result], kinds: list[str] | None = None) -> list[Finding]:
    """Each kind of violation once, on the first program (by number) that showed it."""
    out: dict[str, Finding] = {}
    for res in sorted(results, key=lambda r: r.index):
        for kind, message in workbench.findings(res).items():
            if kind not in out and (not kinds or kind in kinds):
                out[kind] = Finding(kind, message, res)
    order = list(invariants.NAMES) + [workbench.LOOP]
    return sorted(out.values(), key=lambda f: order.index(f.kind))


def shrink(finding: Finding, strategy: str, seed: int, out_dir: str, jobs: int = 2, timeout: float = 120.0,
           command: str = "", on_step=None) -> Finding:
    """Shrink ``finding``'s program (its graph, then its script) and write the reproducer into ``out_dir``."""
    started = time.monotonic()
    res = finding.result
    graph = res.graph
    source = graph.render()
    finding.lines_before = passes.code_lines(source)
    finding.graph_before = graph.describe()
    prop = Property("error", pattern(finding.kind, finding.message))
    stem = f"fuzz_{seed}_{res.index}"
    with tempfile.TemporaryDirectory(prefix="kdebug-fuzz-shrink-") as scratch:
        script = os.path.join(scratch, stem + ".py")
        options = RunOptions(script=script, backend="cpu", strategy=strategy, memcheck=False, snapshots=False)
        _write(script, source)
        runner = TrialRunner(options, [prop], timeout, jobs=jobs, cwd=scratch)
        try:
            t0 = time.monotonic()
            first = runner.outcomes(source, path=script)
            if not runner.holds(first):
                finding.note = "the program did not show it again in a trial run: written as it was"
            else:
                runner.keep_failures_to(first)
                runner.timeout = min(timeout, max(MIN_TRIAL_S, 4 * (time.monotonic() - t0)))
                graph = workbench.shrink(graph, lambda gs: runner.first_passing([g.render() for g in gs]), on_step)
                source = graph.render()
        finally:
            runner.close()
        finding.graph_after = graph.describe()
        if finding.note is None:
            shrunk = os.path.join(scratch, "graph", stem + ".py")
            os.mkdir(os.path.dirname(shrunk))
            _write(shrunk, source)
            try:
                result = reduce_script(options.replace(script=shrunk), [prop],
                                       os.path.join(scratch, stem + ".reduced.py"), jobs=jobs,
                                       timeout=runner.timeout)
                source = result.source
            except NothingToReduce as exc:
                finding.note = f"kdebug reduce did not take it ({exc}): the shrunk job graph written"
    finding.shrink_s = time.monotonic() - started
    finding.lines = passes.code_lines(source)
    finding.path = write_reproducer(finding, strategy, seed, out_dir, source, command)
    return finding


def write_reproducer(finding: Finding, strategy: str, seed: int, out_dir: str, source: str, command: str) -> str:
    """The reproducer, under a name no file in ``out_dir`` has yet (nothing there is overwritten)."""
    os.makedirs(out_dir, exist_ok=True)
    obj = strategies.get(strategy)
    name = getattr(obj, "name", "") or type(obj).__name__
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{name}-{finding.kind}-seed{seed}")
    n = 1
    while True:
        path = os.path.join(out_dir, base + (f"-{n}" if n > 1 else "") + ".py")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            n += 1
    shown, spec = shown_path(path), shown_spec(strategy)
    head = [
        f"# kdebug fuzz-strategy finding: {finding.what}",
        f"# strategy: {name} ({strategies.origin(strategy)})",
        f"# the violation: {finding.message}",
        f"# seed {seed}: program {finding.result.index} of {command or f'kdebug fuzz-strategy {spec} --seed {seed}'}",
        f"#   found in {finding.result.found_s:.1f} s; shrunk from {finding.lines_before} to {finding.lines} code lines "
        f"in {finding.shrink_s:.1f} s ({finding.graph_before} -> {finding.graph_after}, then kdebug reduce)",
    ]
    if finding.note:
        head.append(f"#   {finding.note}")
    head += [f"# shows it: kdebug run --strategy {spec} {shown}   (--headless: the report)", ""]
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(head) + source)
    return path


def verify(finding: Finding, strategy: str, timeout: float = 120.0) -> Finding:
    """Run the written reproducer plainly (as ``kdebug run --headless --strategy S FILE`` does): ``shown`` is
    the violation's message, or None where the run did not show it."""
    with tempfile.TemporaryDirectory(prefix="kdebug-fuzz-check-") as scratch:
        res = workbench.run_hazard(workbench.Hazard(os.path.basename(finding.path), finding.path), strategy,
                                   scratch, timeout)
    finding.shown = workbench.findings(res).get(finding.kind)
    return finding


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def shown_spec(strategy: str) -> str:
    """The strategy as a command names it: a built-in's name, or its file relative to the current directory."""
    if strategy in strategies.REGISTRY or not strategy.rpartition(":")[0].endswith(".py"):
        return strategy
    head, _, cls = strategy.rpartition(":")
    return f"{shown_path(head)}:{cls}"


def shown_path(path: str) -> str:
    """``path`` relative to the current directory where it is inside it, else as it is."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
