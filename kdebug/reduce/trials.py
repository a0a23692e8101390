"""Trials: one candidate script run in its own debuggee child, with a timeout, judged from its events.

Each trial writes the candidate to a file of its own and runs it exactly as ``kdebug run --headless``
would (the same ``RunOptions``, the same debuggee), once per strategy its properties need. Trials run
on threads (each waits on its child process), so ``--jobs N`` runs N children at once. A candidate is
known by the hash of its normalised source (``ast.unparse``): one tried before is answered from the
cache, never run again.
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kdebug import events as E
from kdebug.processes import kill_group
from kdebug.reduce.properties import Outcome, Property
from kdebug.session.debuggee import Debuggee
from kdebug.session.options import RunOptions


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class WarmStarts:
    """The client of ``kdebug.reduce.warm``: starts trials' debuggee children by fork, from threads.

    Each child runs in a process group of its own, which the server kills when the child ends (what the
    script started goes with it); ``close()`` ends the server, which kills every child still running."""

    def __init__(self, cwd: str | None = None) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path)
        self.proc = subprocess.Popen([sys.executable, "-m", "kdebug.reduce.warm"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
        self._lock = threading.Lock()
        self._next = 0
        self._answers: dict[int, queue.Queue] = {}
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True, name="kdebug-warm-starts")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self._lock:
                box = self._answers.get(msg["id"])
            if box is not None:
                box.put(msg)
        with self._lock:  # the server is gone: nobody waits for ever
            for box in self._answers.values():
                box.put({"status": None})

    def run(self, options: RunOptions, timeout: float | None, cwd: str | None, folder: str) -> Outcome:
        files = {name: os.path.join(folder, f"{name}.txt") for name in ("events", "stdout", "stderr", "fault")}
        box: queue.Queue = queue.Queue()
        with self._lock:
            if self.closed:  # the reduction is stopping: no new child
                return Outcome([E.SessionEnded(status="killed", exit_code=1, error="not run: stopping")], 1, "killed")
            self._next += 1
            rid = self._next
            self._answers[rid] = box
            request = dict(files, id=rid, options=options.to_json(), cwd=cwd)
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        started = box.get(timeout=60)
        status, killed = None, False
        if "pid" in started:
            try:
                status = box.get(timeout=timeout).get("status")
            except queue.Empty:
                killed = True
                try:
                    os.killpg(started["pid"], signal.SIGKILL)
                except OSError:
                    pass
                status = box.get(timeout=60).get("status")
        with self._lock:
            del self._answers[rid]
        got = []
        with open(files["events"], encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    got.append(E.event_from_json(json.loads(line)))
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
        ended = next((ev for ev in reversed(got) if isinstance(ev, E.SessionEnded)), None)
        if ended is None:  # the child died without saying so (as Debuggee reports it)
            code = 1 if status is None else (128 - status if status < 0 else status)
            ended = E.SessionEnded(status="killed" if killed else "crashed", exit_code=code,
                                   error=f"the debuggee ended with status {status} before the session ended")
            got.append(ended)
        texts = {}
        for name in ("stdout", "stderr"):
            with open(files[name], encoding="utf-8", errors="replace") as f:
                texts[name] = f.read()
        return Outcome(got, ended.exit_code, "timeout" if killed else ended.status, texts["stdout"], texts["stderr"])

    def close(self) -> None:
        """End the server: it kills the process group of every child still running, then exits."""
        with self._lock:
            self.closed = True
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            self.proc.wait()


def run_once(options: RunOptions, timeout: float | None, cwd: str | None = None,
             running: set | None = None) -> Outcome:
    """One headless run of ``options.script`` in a debuggee child started as ``kdebug run`` starts it:
    its events, exit status, stdout and stderr. The child runs in a session of its own: once it ends
    (or is killed at ``timeout``), its whole process group is killed, so nothing the script started
    outlives the run. ``running``: a set that holds the child while it runs (to kill it from elsewhere)."""
    events: queue.Queue = queue.Queue()
    out: list[str] = []
    err: list[str] = []
    child = Debuggee(options.replace(breakpoints=frozenset(), trace=None), events.put,
                     on_output=out.append, on_stderr=err.append, cwd=cwd)
    if running is not None:
        running.add(child)
    deadline = time.monotonic() + timeout if timeout else None
    got: list[E.Event] = []
    timed_out = ended = False
    try:
        while child.reading or not events.empty():
            try:
                got.append(events.get(timeout=0.05))
            except queue.Empty:
                pass
            if not ended and child.proc.poll() is not None:
                # the child is gone; what it started and left in its group (holding its output pipes
                # open) goes too
                ended = True
                kill_group(child.proc.pid)
            if deadline is not None and not timed_out and time.monotonic() > deadline:
                timed_out = True
                child.kill()
    finally:
        child.close()
        kill_group(child.proc.pid)
        if running is not None:
            running.discard(child)
    while not events.empty():
        got.append(events.get())
    ended = next((ev for ev in reversed(got) if isinstance(ev, E.SessionEnded)), None)
    status = "timeout" if timed_out else (ended.status if ended is not None else "crashed")
    exit_code = ended.exit_code if ended is not None else 1
    return Outcome(got, exit_code, status, "\n".join(out) + ("\n" if out else ""), "\n".join(err))


class Trials:
    """Candidates judged once each (by the hash of their normalised source), ``jobs`` at a time; the
    judging itself is ``judge``'s (a debuggee run in ``TrialRunner``)."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(1, jobs)
        self.cache: dict[str, bool] = {}
        self.trials = 0  # candidates judged (a cache hit is not one)
        self.cache_hits = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="kdebug-trial")

    def judge(self, source: str) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def test(self, source: str) -> bool:
        """Whether every property holds for ``source`` (judged at most once per normalised source)."""
        key = source_hash(source)
        with self._lock:
            if key in self.cache:
                self.cache_hits += 1
                return self.cache[key]
            self.trials += 1
        ok = self.judge(source)
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


def failures(run: Outcome) -> set[tuple[str, str]]:
    """The ways a run failed: how the session ended, and the category of each error it reported."""
    found = {("ended", run.status)}
    found |= {("error", d.category or "") for d in run.diagnostics() if d.severity == "error"}
    return found


class TrialRunner(Trials):
    """Runs candidates (source text) in debuggee children and says whether every property holds."""

    def __init__(self, options: RunOptions, properties: list[Property], timeout: float | None,
                 jobs: int = 1, cwd: str | None = None, warm: bool = True) -> None:
        super().__init__(jobs)
        self.options, self.properties = options, list(properties)
        self.timeout, self.cwd = timeout, cwd
        self.strategies = sorted({s for p in properties for s in p.strategies(options.strategy)})
        self.runs = 0  # debuggee children started (a differs: property runs two per trial)
        self._dir = tempfile.TemporaryDirectory(prefix="kdebug-reduce-")
        name = os.path.basename(options.script)
        self._stem = os.path.splitext(name)[0] or "candidate"
        self._count = 0
        self._running: set = set()  # the plain runs' debuggees in flight
        self.closing = False  # close() began: no trial starts any more
        self._warm = WarmStarts(cwd) if warm else None

    def close(self) -> None:
        """Kill every trial still running (its whole process group), then wait for the trial threads."""
        self.closing = True
        if self._warm is not None:
            self._warm.close()
        for child in list(self._running):
            child.kill()
        super().close()
        self._dir.cleanup()

    def outcomes(self, source: str, path: str | None = None, plain: bool = False) -> dict[str, Outcome]:
        """Every strategy's run of ``source`` (written to ``path``, else to a file of the trial's own);
        ``plain``: in a debuggee child started as ``kdebug run`` starts it, not by a warm fork."""
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
            if self.closing:
                runs[strategy] = Outcome([E.SessionEnded(status="killed", exit_code=1, error="not run: stopping")],
                                         1, "killed")
                continue
            with self._lock:
                self.runs += 1
            options = self.options.replace(script=path, strategy=strategy, breakpoints=frozenset(), trace=None)
            if self._warm is not None and not plain:
                with tempfile.TemporaryDirectory(prefix="kdebug-trial-", dir=self._dir.name) as files:
                    runs[strategy] = self._warm.run(options, self.timeout, self.cwd, files)
            else:
                runs[strategy] = run_once(options, self.timeout, self.cwd, running=self._running)
        return runs

    baseline: dict[str, set] | None = None  # the original's failures by strategy; None: any candidate's may be new

    def keep_failures_to(self, original: dict[str, Outcome]) -> None:
        """From now on a candidate holds only if it fails in no way the original did not (``failures``): a
        reproducer that drops a depth guard and launches forever shows the property, and a new bug."""
        self.baseline = {strategy: failures(run) for strategy, run in original.items()}

    def holds(self, runs: dict[str, Outcome]) -> bool:
        if not all(p.holds(runs, self.options.strategy) for p in self.properties):
            return False
        return self.baseline is None or all(failures(run) <= self.baseline.get(s, set()) for s, run in runs.items())

    def judge(self, source: str) -> bool:
        return self.holds(self.outcomes(source))
