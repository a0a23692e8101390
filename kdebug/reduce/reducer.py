"""The reduction: delta debugging over every statement list of the syntax tree (outermost first), then
the local passes of ``passes`` to a fixed point, as C-Reduce runs its passes.

Every candidate is judged by ``TrialRunner`` (a debuggee child per trial, ``jobs`` at once, each
normalised source tried once). A candidate is kept only when every property still holds.
"""
from __future__ import annotations

import ast
import time
from dataclasses import field
from typing import Callable

from kdebug.lazy_dataclasses import dataclass
from kdebug.reduce import passes
from kdebug.reduce.trials import Trials


@dataclass
class Progress:
    """What the progress line shows."""

    trials: int = 0
    cached: int = 0
    skipped: int = 0  # candidates not run: they leave a name undefined
    accepted: int = 0
    lines: int = 0
    original_lines: int = 0
    jobs: int = 1
    stage: str = ""
    started: float = field(default_factory=time.monotonic)
    by_stage: dict[str, int] = field(default_factory=dict)  # trials run by ddmin, by each local pass

    def line(self) -> str:
        return (f"reduce: {self.trials} trials ({self.accepted} accepted, {self.cached} cached, "
                f"{self.skipped} skipped), "
                f"{self.original_lines} -> {self.lines} lines, {self.jobs} jobs, "
                f"{time.monotonic() - self.started:.0f} s  [{self.stage}]")


class Reducer:
    def __init__(self, runner: Trials, on_progress: Callable[[Progress], None] | None = None) -> None:
        self.runner = runner
        self.on_progress = on_progress
        self.progress = Progress(jobs=runner.jobs)
        self._mark = runner.trials

    def _report(self, stage: str | None = None) -> None:
        p = self.progress
        if stage is not None:
            group = p.stage.split(":")[0]
            if group:
                p.by_stage[group] = p.by_stage.get(group, 0) + self.runner.trials - self._mark
            self._mark = self.runner.trials
            p.stage = stage
        p.trials, p.cached = self.runner.trials, self.runner.cache_hits
        if self.on_progress is not None:
            self.on_progress(p)

    def _accept(self, source: str) -> ast.Module:
        self.source = source
        self.progress.accepted += 1
        self.progress.lines = passes.code_lines(source)
        self._report()
        return ast.parse(source)

    def reduce(self, source: str) -> str:
        """The smallest source found that keeps every property (``source``, normalised, must keep them)."""
        tree = ast.parse(source)
        self.source = passes.unparse(tree)
        self.progress.original_lines = self.progress.lines = passes.code_lines(self.source)
        tree = self.statement_lists(tree)
        tree = self.local_passes(tree)
        self._report("done")
        return self.source

    # ---- ddmin over statement lists ------------------------------------------------------------
    def statement_lists(self, tree: ast.Module) -> ast.Module:
        """The host code first (what it stops calling, the module then drops), then everything."""
        tree = self._statement_lists(tree, host_only=True)
        return self._statement_lists(tree, host_only=False)

    def _statement_lists(self, tree: ast.Module, host_only: bool) -> ast.Module:
        # lists are walked outermost first (breadth first); shrinking one moves only the nodes walked
        # after it, so the lists done are exactly those up to the last one
        last = (-1, -1)
        while True:
            todo = [w for w in passes.statement_lists(tree, host_only) if _order(w) > last]
            if not todo:
                return tree
            where = todo[0]
            last = _order(where)
            self._report(f"ddmin: statements of {self._name(tree, where)}")
            tree = self.ddmin(tree, where)

    @staticmethod
    def _name(tree: ast.AST, where: tuple[int, str]) -> str:
        node = passes.nodes(tree)[where[0]]
        if isinstance(node, ast.Module):
            return "the module"
        label = getattr(node, "name", None) or type(node).__name__.lower()
        return f"{label} (line {getattr(node, 'lineno', '?')}, {where[1]})"

    def ddmin(self, tree: ast.Module, where: tuple[int, str]) -> ast.Module:
        """Zeller's ddmin over the statements of one list: remove chunks, halving them until single
        statements, keeping each removal that keeps the properties."""
        keep = list(range(passes.statement_count(tree, where)))
        if not keep:
            return tree
        # a list whose every statement can go (a function's body that the bug does not need)
        source = passes.keep_statements(tree, where, [])
        if self._smaller(source) and self.runner.first_passing([source], self._report) == 0:
            return self._accept(source)
        granularity = 2
        while len(keep) >= 2:
            chunks = _split(keep, granularity)
            complements = [[k for k in keep if k not in set(chunk)] for chunk in chunks]
            sources = [passes.keep_statements(tree, where, c) for c in complements]
            ok = [i for i, s in enumerate(sources) if self._smaller(s)]
            hit = self.runner.first_passing([sources[i] for i in ok], self._report)
            if hit is not None:
                keep = complements[ok[hit]]
                granularity = max(granularity - 1, 2)
                tree = self._accept(sources[ok[hit]])
                keep = list(range(len(keep)))  # renumbered in the new tree
                continue
            if granularity >= len(keep):
                break
            granularity = min(granularity * 2, len(keep))
        return tree

    def _smaller(self, source: str) -> bool:
        """Whether a candidate is worth a trial: smaller than the current script, and leaving no name
        undefined that the current script defines (that run would end in a NameError)."""
        if source == self.source:
            return False
        if getattr(self, "_size_of", None) != self.source:
            tree = ast.parse(self.source)
            self._size, self._dangling, self._size_of = passes.size(tree), passes.dangling_names(tree), self.source
        tree = ast.parse(source)
        if passes.size(tree) >= self._size:
            return False
        if passes.dangling_names(tree) - self._dangling:
            self.progress.skipped += 1
            return False
        return True

    # ---- local passes to a fixed point ---------------------------------------------------------
    def local_passes(self, tree: ast.Module) -> ast.Module:
        changed = True
        while changed:
            changed = False
            for name, make in passes.LOCAL_PASSES:
                self._report(f"pass: {name}")
                start = 0
                while True:
                    candidates = [s for s in make(tree) if self._smaller(s)]
                    hit = self.runner.first_passing(candidates[start:], self._report)
                    if hit is None:
                        break
                    tree = self._accept(candidates[start + hit])
                    start += hit  # the next candidate of this pass sits where the accepted one was
                    changed = True
            if changed:  # a cut made by a local pass may let a whole statement go: ddmin again
                tree = self.statement_lists(tree)
        return tree


def _order(where: tuple[int, str]) -> tuple[int, int]:
    return where[0], passes.STMT_FIELDS.index(where[1])


def _split(items: list[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out, at = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        if step:
            out.append(items[at:at + step])
        at += step
    return out
