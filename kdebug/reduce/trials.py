"""Trials: one candidate script run in its own debuggee child, with a timeout, judged from its events.

Each trial writes the candidate to a file of its own and runs it exactly as ``kdebug run --headless``
would (the same ``RunOptions``, the same debuggee), once per strategy its properties need. Trials run
on threads (each waits on its child process), so ``--jobs N`` runs N children at once. A candidate is
known by the hash of its normalised source (``ast.unparse``): one tried before is answered from the
cache, never run again.
"""
from __future__ import annotations

import hashlib
import os
import queue
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kdebug import events as E
from kdebug.reduce.properties import Outcome, Property
from kdebug.session.debuggee import Debuggee
from kdebug.session.options import RunOptions


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def run_once(options: RunOptions, timeout: float | None, cwd: str | None = None) -> Outcome:
    """One headless run of ``options.script``: its events, exit status, stdout and stderr."""
    events: queue.Queue = queue.Queue()
    out: list[str] = []
    err: list[str] = []
    child = Debuggee(options.replace(breakpoints=frozenset(), trace=None), events.put,
                     on_output=out.append, on_stderr=err.append, cwd=cwd)
    deadline = time.monotonic() + timeout if timeout else None
    got: list[E.Event] = []
    timed_out = False
    try:
        while child.reading or not events.empty():
            try:
                got.append(events.get(timeout=0.05))
            except queue.Empty:
                pass
            if deadline is not None and not timed_out and time.monotonic() > deadline:
                timed_out = True
                child.kill()
    finally:
        child.close()
    while not events.empty():
        got.append(events.get())
    ended = next((ev for ev in reversed(got) if isinstance(ev, E.SessionEnded)), None)
    status = "timeout" if timed_out else (ended.status if ended is not None else "crashed")
    exit_code = ended.exit_code if ended is not None else 1
    return Outcome(got, exit_code, status, "\n".join(out) + ("\n" if out else ""), "\n".join(err))


class TrialRunner:
    """Runs candidates (source text) and says whether every property holds; counts what it did."""

    def __init__(self, options: RunOptions, properties: list[Property], timeout: float | None,
                 jobs: int = 1, cwd: str | None = None) -> None:
        self.options, self.properties = options, list(properties)
        self.timeout, self.jobs, self.cwd = timeout, max(1, jobs), cwd
        self.strategies = sorted({s for p in properties for s in p.strategies(options.strategy)})
        self.cache: dict[str, bool] = {}
        self.trials = 0  # candidates run (a cache hit is not one)
        self.runs = 0  # debuggee children started (a differs: property runs two per trial)
        self.cache_hits = 0
        self._lock = threading.Lock()
        self._dir = tempfile.TemporaryDirectory(prefix="kdebug-reduce-")
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="kdebug-trial")
        name = os.path.basename(options.script)
        self._stem = os.path.splitext(name)[0] or "candidate"
        self._count = 0

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._dir.cleanup()

    def outcomes(self, source: str, path: str | None = None) -> dict[str, Outcome]:
        """Every strategy's run of ``source`` (written to ``path``, else to a file of the trial's own)."""
        if path is None:
            with self._lock:
                self._count += 1
                n = self._count
            folder = os.path.join(self._dir.name, str(n))
            os.mkdir(folder)
            path = os.path.join(folder, self._stem + ".py")  # the script's own name: tracebacks read alike
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
        runs = {}
        for strategy in self.strategies:
            with self._lock:
                self.runs += 1
            runs[strategy] = run_once(self.options.replace(script=path, strategy=strategy), self.timeout, self.cwd)
        return runs

    def holds(self, runs: dict[str, Outcome]) -> bool:
        return all(p.holds(runs, self.options.strategy) for p in self.properties)

    def test(self, source: str) -> bool:
        """Whether every property holds for ``source`` (run at most once per normalised source)."""
        key = source_hash(source)
        with self._lock:
            if key in self.cache:
                self.cache_hits += 1
                return self.cache[key]
            self.trials += 1
        ok = self.holds(self.outcomes(source))
        with self._lock:
            self.cache[key] = ok
        return ok

    def first_passing(self, candidates: list[str], on_trial=None) -> int | None:
        """The index of the first candidate, in order, that keeps every property, or None. Candidates
        run ``jobs`` at a time; a batch stops at its first success (later batches never start)."""
        for start in range(0, len(candidates), self.jobs):
            batch = candidates[start:start + self.jobs]
            if len(batch) == 1:
                results = [self.test(batch[0])]
            else:
                results = list(self._pool.map(self.test, batch))
            if on_trial is not None:
                on_trial()
            for i, ok in enumerate(results):
                if ok:
                    return start + i
        return None
