"""``kdebug check-strategy STRATEGY``: a strategy against the hazard corpus, hazard x invariant.

The corpus is every sample under ``sample_kernels/`` that exercises deferred jobs (a device-side launch,
``kdebug.deferred``, a derivative), plus a few generated programs (a diamond, a long cycle, a deep chain,
derivatives through pointers and of derivatives). Each hazard runs headless in its own process under the
strategy, with a trace, bounded by a timeout; the invariant diagnostics in the trace
(``kdebug/driver/invariants.py``) say which invariant broke. A cell is ``held``, ``broken``, or
``stopped`` (the compilation ended at a located error before the invariant could be checked). The command
exits 1 when an invariant the strategy claims (its ``invariants`` attribute) is broken.

``kdebug fuzz-strategy STRATEGY`` does the same over seeded random programs: job graphs (``Graph``,
``random_graph``) rendered to scripts, which ``Graph.smaller`` and ``shrink`` cut down a step at a time;
kdebug/reduce/fuzz.py shrinks a finding with them, then with kdebug's reducer.
``job_graphs`` draws the same graphs as a Hypothesis strategy, for the test suite's property tests.
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
        self.messages: dict[str, str] = {}  # invariant -> the first violation's message (its diagnostic's)
        self.loop: str | None = None  # a re-entrant request the strategy stopped (a located stop), its message
        self.graph: Graph | None = None  # a random program's job graph (fuzz)
        self.index, self.found_s = 0, 0.0  # its number among the programs; seconds from the start to its end


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


class Kernel:
    """A kernel of a random program: the kernels it launches (by name), the derivative it takes (a device
    function's name and the order), or None."""

    def __init__(self, name: str, launches: list[str], grad: tuple[str, int] | None = None) -> None:
        self.name, self.launches, self.grad = name, list(launches), grad


class Function:
    """A device function of a random program: the functions it reaches through ``kdebug.deferred`` pointers."""

    def __init__(self, name: str, pointers: list[str]) -> None:
        self.name, self.pointers = name, list(pointers)


class Graph:
    """A random program's job graph: kernels (the first is the one the host launches, ``depth`` counting the
    device-side launches down so every run ends), device functions, launch, pointer and derivative edges.
    ``render`` writes it as a script; ``smaller`` gives the graphs one step smaller, to shrink a finding."""

    def __init__(self, kernels: list[Kernel], functions: list[Function], depth: int = 3) -> None:
        self.kernels, self.functions, self.depth = kernels, functions, depth

    def copy(self) -> "Graph":
        return Graph([Kernel(k.name, k.launches, k.grad) for k in self.kernels],
                     [Function(f.name, f.pointers) for f in self.functions], self.depth)

    def size(self) -> int:
        """Kernels, functions, edges, derivative orders and the depth: every shrinking step lowers it."""
        return (len(self.kernels) + len(self.functions) + self.depth
                + sum(len(k.launches) + (k.grad[1] if k.grad else 0) for k in self.kernels)
                + sum(len(f.pointers) for f in self.functions))

    def describe(self) -> str:
        edges = sum(len(k.launches) for k in self.kernels), sum(len(f.pointers) for f in self.functions)
        grads = sum(1 for k in self.kernels if k.grad)
        return (f"{len(self.kernels)} kernel(s), {len(self.functions)} device function(s), {edges[0]} launch, "
                f"{edges[1]} pointer and {grads} derivative edge(s)")

    def pruned(self) -> "Graph":
        """Without what is never compiled: kernels no launch from the entry reaches, functions no derivative
        of a reached kernel reaches (the same compilations, a shorter script)."""
        g = self.copy()
        by_name = {k.name: k for k in g.kernels}
        seen, todo = set(), [g.kernels[0].name] if g.kernels else []
        while todo:
            name = todo.pop()
            if name in seen or name not in by_name:
                continue
            seen.add(name)
            todo.extend(by_name[name].launches)
        g.kernels = [k for k in g.kernels if k.name in seen]
        funcs = {f.name: f for f in g.functions}
        reached, todo = set(), [k.grad[0] for k in g.kernels if k.grad]
        while todo:
            name = todo.pop()
            if name in reached or name not in funcs:
                continue
            reached.add(name)
            todo.extend(funcs[name].pointers)
        g.functions = [f for f in g.functions if f.name in reached]
        return g

    def smaller(self) -> list["Graph"]:
        """The graphs one step smaller, the biggest cuts first: another kernel as the entry, a kernel or a
        function dropped (with the edges to it), then one edge, one derivative order, the launch depth."""
        out: list[Graph] = []

        def add(g: Graph) -> None:
            g = g.pruned()
            if g.kernels and g.size() < self.size():
                out.append(g)
        if self.kernels:
            entry = self.kernels[0]
            for t in dict.fromkeys(entry.launches):
                if t != entry.name:  # re-rooted: the kernel it launches is the one the host launches
                    g = self.copy()
                    g.kernels = [k for k in g.kernels if k.name == t] + [k for k in g.kernels[1:] if k.name != t]
                    add(g)
        for k in self.kernels[1:]:
            g = self.copy()
            g.kernels = [x for x in g.kernels if x.name != k.name]
            for x in g.kernels:
                x.launches = [t for t in x.launches if t != k.name]
            add(g)
        for f in self.functions:
            g = self.copy()
            g.functions = [x for x in g.functions if x.name != f.name]
            for x in g.functions:
                x.pointers = [p for p in x.pointers if p != f.name]
            for x in g.kernels:
                if x.grad and x.grad[0] == f.name:
                    x.grad = None
            add(g)
        for i, k in enumerate(self.kernels):
            for j in range(len(k.launches)):
                g = self.copy()
                del g.kernels[i].launches[j]
                add(g)
            if k.grad:
                g = self.copy()
                g.kernels[i].grad = None
                add(g)
                if k.grad[1] > 1:
                    g = self.copy()
                    g.kernels[i].grad = (k.grad[0], k.grad[1] - 1)
                    add(g)
        for i, f in enumerate(self.functions):
            for j in range(len(f.pointers)):
                g = self.copy()
                del g.functions[i].pointers[j]
                add(g)
        for depth in range(self.depth):  # no device-side launch runs at all (0), one, ...
            g = self.copy()
            g.depth = depth
            add(g)
        return out

    def render(self) -> str:
        """The script: the device functions, the kernels (kernel i adds to ``out[i]``), the host's launch."""
        lines = [GENERATED_HEAD]
        for f in self.functions:
            body = " + ".join(["x * x"] + [f"kdebug.deferred({p})(x)" for p in f.pointers])
            lines.append(f"@cuda.jit(device=True)\ndef {f.name}(x):\n    return {body}\n")
        for i, k in enumerate(self.kernels):
            body = [f"    if n > 0:\n        {t}[1, 1](out, n - 1)" for t in k.launches]
            if k.grad:
                fn = k.grad[0]
                for _ in range(k.grad[1]):
                    fn = f"kdebug.grad({fn})"
                body.append(f"    out[{i}] += {fn}(1.5)")
            if not body:
                body.append(f"    out[{i}] += 1.0")
            lines.append(f"@cuda.jit\ndef {k.name}(out, n):\n" + "\n".join(body) + "\n")
        if self.kernels:
            lines.append(f"{self.kernels[0].name}[1, 1](np.zeros({len(self.kernels)}), {self.depth})\n")
        return "\n".join(lines)


def shrink(graph: Graph, first_passing, on_step=None) -> Graph:
    """``graph`` shrunk greedily to a fixed point: each step takes the first of ``graph.smaller()`` that
    ``first_passing`` (a list of graphs -> the index of the first that still shows the finding, or None)
    accepts."""
    while True:
        smaller = graph.smaller()
        hit = first_passing(smaller) if smaller else None
        if hit is None:
            return graph
        graph = smaller[hit]
        if on_step is not None:
            on_step(graph)


def random_graph(rng) -> Graph:
    """A random hazard's job graph: two to five kernels that launch each other over a random graph (cycles
    included), one to four device functions that reach later ones through pointers (no cycle: a derivative
    needs bodies), derivatives of them at random orders."""
    n_k, n_f = rng.randint(2, 5), rng.randint(1, 4)
    functions = [Function(f"f{i}", [f"f{j}" for j in range(i + 1, n_f) if rng.random() < 0.5]) for i in range(n_f)]
    kernels = []
    for i in range(n_k):
        targets = rng.sample(range(n_k), rng.randint(0, min(3, n_k)))
        grad = None
        if rng.random() < 0.6:
            grad = (f"f{rng.randrange(n_f)}", rng.randint(1, 2))
        kernels.append(Kernel(f"k{i}", [f"k{t}" for t in targets], grad))
    return Graph(kernels, functions, depth=3)


def random_program(rng) -> str:
    """A random hazard (``random_graph``) as a script (``kdebug fuzz-strategy``)."""
    return random_graph(rng).render()


def job_graphs(max_kernels: int = 5, max_functions: int = 4, max_order: int = 2, max_depth: int = 3):
    """A Hypothesis strategy of job graphs (``Graph``), ``random_graph``'s twin for property tests: one to
    ``max_kernels`` kernels, each launching up to three of them (self-launches and cycles included), none to
    ``max_functions`` device functions that reach later ones through pointers (no cycle: a derivative needs
    bodies), a derivative of one of them at order 1 to ``max_order`` in a kernel or not, a launch depth of 0
    to ``max_depth``. Hypothesis shrinks a failing graph towards one kernel, no function, no edge, order 1 and
    depth 0. Only the test suite calls it (Hypothesis is a dev dependency)."""
    # kept lazy for start-up time: hypothesis is a test dependency
    from hypothesis import strategies as st

    # each kernel and function drawn as an element of a list, its edges as numbers taken modulo the graph's
    # size: Hypothesis shrinks a list by deleting elements, so any kernel or function can go, not only the last
    kernel = st.tuples(st.lists(st.integers(0, max_kernels - 1), max_size=3),
                       st.none() | st.tuples(st.integers(0, max(0, max_functions - 1)), st.integers(1, max_order)))
    function = st.lists(st.integers(1, max(1, max_functions - 1)), max_size=max(0, max_functions - 1))

    @st.composite
    def graphs(draw) -> Graph:
        kernels_drawn = draw(st.lists(kernel, min_size=1, max_size=max_kernels))
        functions_drawn = draw(st.lists(function, max_size=max_functions))
        n_k, n_f = len(kernels_drawn), len(functions_drawn)
        functions = [Function(f"f{i}", [f"f{i + d}" for d in sorted(set(later)) if i + d < n_f])
                     for i, later in enumerate(functions_drawn)]  # to later functions only: no pointer cycle
        kernels = []
        for i, (targets, grad) in enumerate(kernels_drawn):
            launches = [f"k{t}" for t in dict.fromkeys(t % n_k for t in targets)]
            kernels.append(Kernel(f"k{i}", launches, (f"f{grad[0] % n_f}", grad[1]) if grad and n_f else None))
        return Graph(kernels, functions, depth=draw(st.integers(0, max_depth)))
    return graphs()


def fuzz(strategy: str, count: int, seed: int, jobs: int = 2, timeout: float = TIMEOUT_S,
         keep: str | None = None) -> list[Result]:
    """``count`` random hazards (seeded: the same seed, the same programs) under ``strategy``; ``keep``: a
    folder to leave the programs in, to rerun one. Each result holds its program's ``graph`` and ``found_s``,
    the seconds from the start until its run ended."""
    import random
    import time
    rng = random.Random(seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kdebug-fuzz-") as scratch:
        folder = keep or scratch
        os.makedirs(folder, exist_ok=True)
        corpus, graphs = [], []
        for i in range(count):
            path = os.path.join(folder, f"fuzz_{seed}_{i}.py")
            graphs.append(random_graph(rng))
            with open(path, "w", encoding="utf-8") as f:
                f.write(graphs[-1].render())
            corpus.append(Hazard(os.path.basename(path), path))

        def one(i: int) -> Result:
            res = run_hazard(corpus[i], strategy, scratch, timeout)
            res.graph, res.index, res.found_s = graphs[i], i, time.monotonic() - started
            return res
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(one, range(count)))


LOOP = "reentrant-loop"  # a finding that is no invariant: a cycle the strategy stopped where worklist answers it


def findings(res: Result) -> dict[str, str]:
    """What a run broke, by kind (an invariant's name, or ``reentrant-loop``): the first message of each."""
    out = dict(res.messages)
    if res.loop is not None:
        out.setdefault(LOOP, res.loop)
    return out


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
            res.messages.setdefault(name, ev.get("message", ""))
            continue
        if ev.get("category") == "reentrant" and ev.get("message", "").endswith("(stopped)") and res.loop is None:
            res.loop = ev["message"]
        if ev.get("location") and ev.get("category") in ("compile", "reentrant") and res.stop is None:
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
