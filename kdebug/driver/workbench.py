"""``kdebug check-strategy STRATEGY``: a strategy against the hazard corpus, hazard x invariant.

The corpus is every sample under ``sample_kernels/`` that exercises deferred jobs (a device-side launch,
``kdebug.deferred``, a derivative), plus a few generated programs (a diamond, a long cycle, a deep chain,
derivatives through pointers and of derivatives). Each hazard runs headless in its own process under the
strategy, with a trace, bounded by a timeout; the invariant diagnostics in the trace
(``kdebug/driver/invariants.py``) say which invariant broke. A cell is ``held``, ``broken``, or
``stopped`` (the compilation ended at a located error before the invariant could be checked). The command
exits 1 when an invariant the strategy claims (its ``invariants`` attribute) is broken.

``kdebug fuzz-strategy STRATEGY`` does the same over seeded random programs (``random_program``).
"""
from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from kdebug.driver import invariants, strategies

HELD, BROKEN, STOPPED = "held", "broken", "stopped"
TIMEOUT_S = 120.0  # one hazard's run: a strategy that loops without a located stop breaks "answered"
DEFERRED_CALLS = ("deferred", "grad", "gradient", "adjoint")


class Hazard:
    def __init__(self, name: str, path: str) -> None:
        self.name, self.path = name, path


class Result:
    def __init__(self, hazard: Hazard) -> None:
        self.hazard = hazard
        self.cells: dict[str, str] = {}
        self.broken: dict[str, str] = {}  # invariant -> the first violation's text
        self.stop: str | None = None  # the located error the run stopped at
        self.note: str | None = None  # a run that ended without answer (a timeout, a crash)
        self.after: str | None = None  # the script's own failure, after its compilations


def exercises_deferred(path: str) -> bool:
    """Whether a script has a kernel that launches a kernel, takes a pointer or a derivative."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):  # a derivative or a pointer, made in a kernel or bound at module level
        if isinstance(node, ast.Attribute) and node.attr in DEFERRED_CALLS and \
                isinstance(node.value, ast.Name) and node.value.id == "kdebug":
            return True
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in fn.decorator_list):
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript) for n in ast.walk(fn)):
                return True  # a device-side launch: kernel[grid, block](...)
    return False


def sample_corpus(root: str) -> list[Hazard]:
    return [Hazard(os.path.basename(p), p) for p in sorted(glob.glob(os.path.join(root, "*.py")))
            if exercises_deferred(p)]


GENERATED_HEAD = '''import numpy as np
import kdebug
from kdebug import cuda
'''

GENERATED: dict[str, str] = {
    # a job requested twice on different paths: compiled once, finished once
    "gen_diamond": '''
@cuda.jit
def leaf(out):
    out[0] += 1

@cuda.jit
def left(out):
    leaf[1, 1](out)

@cuda.jit
def right(out):
    leaf[1, 1](out)

@cuda.jit
def top(out):
    left[1, 1](out)
    right[1, 1](out)

top[1, 1](np.zeros(1, dtype=np.int64))
''',
    # a cycle of five launches: a reference, or a located stop
    "gen_cycle5": '''
@cuda.jit
def k0(out, n):
    if n < 2:
        k1[1, 1](out, n + 1)

@cuda.jit
def k1(out, n):
    k2[1, 1](out, n)

@cuda.jit
def k2(out, n):
    k3[1, 1](out, n)

@cuda.jit
def k3(out, n):
    k4[1, 1](out, n)

@cuda.jit
def k4(out, n):
    k0[1, 1](out, n)

k0[1, 1](np.zeros(1, dtype=np.int64), 0)
''',
    # a chain of nested launches: every grandchild must reach finish
    "gen_deep_chain": "".join(
        f"\n@cuda.jit\ndef d{i}(out):\n    " + (f"d{i + 1}[1, 1](out)\n" if i < 5 else "out[0] += 1\n")
        for i in range(5, -1, -1)) + "\nd0[1, 1](np.zeros(1, dtype=np.int64))\n",
    # a derivative through a pointer, and a derivative of a derivative
    "gen_grad_orders": '''
@cuda.jit(device=True)
def cube(x):
    return x * x * x

@cuda.jit(device=True)
def through_pointer(x):
    return kdebug.deferred(cube)(x) + x

@cuda.jit
def orders(out):
    out[0] = kdebug.grad(kdebug.grad(cube))(2.0)
    out[1] = kdebug.grad(through_pointer)(2.0)

orders[1, 1](np.zeros(2))
''',
}


def generated_corpus(folder: str) -> list[Hazard]:
    out = []
    for name, body in GENERATED.items():
        path = os.path.join(folder, name + ".py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(GENERATED_HEAD + body)
        out.append(Hazard(name, path))
    return out


def random_program(rng) -> str:
    """A random hazard: kernels that launch each other over a random graph (cycles included; an argument
    counts the launches down so the run ends), and device functions that reach each other through pointers,
    differentiated at random orders (``kdebug fuzz-strategy``)."""
    n_k, n_f = rng.randint(2, 5), rng.randint(1, 4)
    lines = [GENERATED_HEAD]
    for i in range(n_f):  # f_i reaches only later functions: pointers form no cycle (a derivative needs bodies)
        calls = [j for j in range(i + 1, n_f) if rng.random() < 0.5]
        body = " + ".join(["x * x"] + [f"kdebug.deferred(f{j})(x)" for j in calls])
        lines.append(f"@cuda.jit(device=True)\ndef f{i}(x):\n    return {body}\n")
    for i in range(n_k):
        targets = rng.sample(range(n_k), rng.randint(0, min(3, n_k)))
        body = [f"    if n > 0:\n        k{t}[1, 1](out, n - 1)" for t in targets]
        if rng.random() < 0.6:
            f, order = rng.randrange(n_f), rng.randint(1, 2)
            fn = f"f{f}"
            for _ in range(order):
                fn = f"kdebug.grad({fn})"
            body.append(f"    out[{i}] += {fn}(1.5)")
        if not body:
            body.append(f"    out[{i}] += 1.0")
        lines.append(f"@cuda.jit\ndef k{i}(out, n):\n" + "\n".join(body) + "\n")
    lines.append(f"k0[1, 1](np.zeros({n_k}), 3)\n")
    return "\n".join(lines)


def fuzz(strategy: str, count: int, seed: int, jobs: int = 2, timeout: float = TIMEOUT_S,
         keep: str | None = None) -> list[Result]:
    """``count`` random hazards (seeded: the same seed, the same programs) under ``strategy``; ``keep``: a
    folder to leave the programs in, to rerun one."""
    import random
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="kdebug-fuzz-") as scratch:
        folder = keep or scratch
        os.makedirs(folder, exist_ok=True)
        corpus = []
        for i in range(count):
            path = os.path.join(folder, f"fuzz_{seed}_{i}.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(random_program(rng))
            corpus.append(Hazard(os.path.basename(path), path))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda h: run_hazard(h, strategy, scratch, timeout), corpus))


def run_hazard(hazard: Hazard, strategy: str, folder: str, timeout: float = TIMEOUT_S) -> Result:
    """One hazard under ``strategy``, headless in its own process; its trace read for the invariants."""
    res = Result(hazard)
    trace = os.path.join(folder, hazard.name + "." + str(abs(hash(strategy))) + ".jsonl")
    argv = [sys.executable, "-c", "import sys; from kdebug.cli import main; sys.exit(main(sys.argv[1:]))",
            "run", "--headless", "--backend", "cpu", "--no-memcheck", "--strategy", strategy, "--trace", trace,
            hazard.path]
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                              text=True)
    except subprocess.TimeoutExpired:
        res.broken["answered"] = f"no answer in {timeout:g}s: a loop without a located stop"
        res.note = "timed out"
        _cells(res)
        return res
    ended, status = False, None
    try:
        with open(trace, encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        events = []
    for ev in events:
        kind = ev.get("event")
        if kind == "session_ended":
            ended = True
            status = ev.get("status")
        if kind != "diagnostic" or ev.get("severity") != "error":
            continue
        name = invariants.broken_in(ev.get("message", ""))
        if name is not None:
            res.broken.setdefault(name, (ev.get("text") or ev.get("message")).replace(folder + os.sep, "generated/"))
        elif ev.get("location") and ev.get("category") in ("compile", "reentrant") and res.stop is None:
            loc = ev["location"]
            res.stop = f"{loc.get('file')}:{loc.get('line')}: {ev.get('message')}"
            res.stop = res.stop.replace(folder + os.sep, "generated/")
    if ended and status != "ok" and res.stop is None and not res.broken:
        failures = [ev.get("message") for ev in events if ev.get("event") == "diagnostic"
                    and ev.get("severity") == "error"] or [f"the session {status}"]
        if any(ev.get("event") == "job_failed" for ev in events):  # a compilation that ended unlocated
            res.note = f"a compilation failed without a located error: {failures[0]}"
            res.broken["answered"] = res.note
        else:  # compiled, then the script failed: no invariant's business, but said
            res.after = f"the script failed after its compilations: {failures[0]}"
    if not ended:
        tail = (proc.stdout or "").strip().splitlines()[-1:] or ["no trace"]
        res.note = f"the run ended without its trace (exit status {proc.returncode}): {tail[0]}"
        res.broken.setdefault("answered", res.note)
    _cells(res)
    return res


def _cells(res: Result) -> None:
    for name in invariants.NAMES:
        res.cells[name] = BROKEN if name in res.broken else STOPPED if (res.stop or res.note) else HELD


def check(strategy: str, root: str, generated: bool = True, jobs: int = 2, timeout: float = TIMEOUT_S,
          only: list[str] | None = None) -> list[Result]:
    """Every hazard under ``strategy`` (a name or a FILE.py:Class spec), in ``jobs`` processes at a time."""
    with tempfile.TemporaryDirectory(prefix="kdebug-check-") as folder:
        corpus = sample_corpus(root) + (generated_corpus(folder) if generated else [])
        if only:
            corpus = [h for h in corpus if any(o in h.name for o in only)]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(lambda h: run_hazard(h, strategy, folder, timeout), corpus))


def table(results: list[Result]) -> str:
    """The hazard x invariant table, as Markdown (it reads in a terminal and in the docs)."""
    head = ["hazard"] + list(invariants.NAMES)
    rows = [[r.hazard.name] + [r.cells[n] for n in invariants.NAMES] for r in results]
    widths = [max(len(str(row[i])) for row in [head] + rows) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def report(strategy: str, results: list[Result], command: str = "check-strategy") -> tuple[str, int]:
    """The command's output and exit status (1 when a claimed invariant is broken)."""
    obj = strategies.get(strategy)
    claimed = invariants.claims(obj)
    name = getattr(obj, "name", "") or type(obj).__name__
    out = [f"{command} {name} ({strategies.origin(strategy)}): claims "
           f"{', '.join(claimed) if claimed else 'no invariant'}", "", table(results), ""]
    failed = []
    for r in results:
        for inv, text in r.broken.items():
            mark = "CLAIMED, " if inv in claimed else ""
            out.append(f"{r.hazard.name}: {inv} broken ({mark}{invariants.DESCRIPTIONS[inv]}): {text}")
            if inv in claimed:
                failed.append(f"{inv} on {r.hazard.name}")
        if r.stop:
            out.append(f"{r.hazard.name}: stopped at {r.stop}")
        elif r.note:
            out.append(f"{r.hazard.name}: {r.note}")
        if r.after:
            out.append(f"{r.hazard.name}: {r.after}")
    out.append("")
    if failed:
        out.append(f"FAILED: {name} claims invariants it breaks: {'; '.join(failed)}")
    else:
        out.append(f"ok: every invariant {name} claims held (or stopped at a located error) on "
                   f"{len(results)} hazards")
    return "\n".join(out), 1 if failed else 0
