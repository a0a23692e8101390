"""The deferred-codegen strategies, as objects behind one small interface.

A strategy answers two questions the driver asks (GPUCompiler.jl's ``toplevel``
flag and its job table, made explicit):

- ``request``: ``lower`` found a marker; which job record will it become?
- ``expand``: the toplevel's ``expand_deferred`` phase; how are the markers of
  the compilation (the toplevel's and the nested jobs') expanded?

Every strategy is registered by name in ``REGISTRY``; the command line, the
TUI's rerun, dumps and the docs read the names and descriptions from there.

A strategy sees the driver only through a ``CompilationContext`` (``cx``, kdebug/driver/context.py):
the job table, the request graph, the front half of the compiler, timed phases, marker resolution.
"""
from __future__ import annotations

from kdebug import markers
from kdebug.driver.builtin_strategies import SUMMARIES, Choices  # noqa: F401 - Choices re-exported
from kdebug.driver import deferred
from kdebug.driver.context import CompilationContext
from kdebug.driver.deferred import Compilation, parse
from kdebug.driver.invariants import NAMES as INVARIANTS
from kdebug.driver.job import CompilerJob, JobRecord
from kdebug.errors import ReentrantLoopError


class Strategy:
    """How deferred requests are answered and a compilation's markers expanded."""

    name = ""
    summary = ""  # one line: --help, the table in docs/internals/architecture.md
    description = ""  # the TUI's Strategy tab
    # the invariants (kdebug/driver/invariants.py) this strategy claims to keep: kdebug check-strategy
    # fails when one of these is broken on its hazard corpus
    invariants: tuple[str, ...] = INVARIANTS

    # said when a derivative job's transform meets a marker this strategy left unexpanded
    unresolved_markers = "the strategy left it unexpanded"

    def request(self, cx: CompilationContext, comp: Compilation, requester: JobRecord, job: CompilerJob, reason: str,
                loc, needs: str = "address") -> JobRecord:
        """``requester``'s code needs ``job``'s entry (``needs``: its ``address``, or its ``body`` for a
        derivative of it): the record its marker resolves to."""
        raise NotImplementedError

    def expand(self, cx: CompilationContext, comp: Compilation, irmod):
        """The toplevel's expand_deferred phase: compile the requested jobs, return the linked module."""
        raise NotImplementedError

    def resolve_primal(self, cx: CompilationContext, comp: Compilation, job: JobRecord, text: str) -> str:
        """A derivative job's primal (IR text, markers in place): what the transform gets to read."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


REGISTRY: dict[str, Strategy] = {}
USER: dict = {}  # FILE.py:Class or MODULE:Class (its path absolute) -> the user's strategy, loaded once


def register(cls: type[Strategy]) -> type[Strategy]:
    REGISTRY[cls.name] = cls()
    return cls


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(strategy: "str | Strategy") -> Strategy:
    """A built-in by name, or a user's strategy by ``path/to/file.py:Class`` or ``module:Class``
    (loaded and checked once: kdebug/driver/loading.py; a bad one raises its located StrategyError)."""
    if isinstance(strategy, Strategy):
        return strategy
    try:
        return REGISTRY[strategy]
    except KeyError:
        pass
    if isinstance(strategy, str) and ":" in strategy:
        from kdebug.driver import loading  # kept lazy for start-up time: only a named user strategy reads its file
        if loading.is_spec(strategy):
            return loading.load(strategy, Strategy, USER)
    raise ValueError(f"strategy must be one of {names()} or FILE.py:Class or MODULE:Class, "
                     f"not {strategy!r}") from None


def origin(strategy: str) -> str:
    """Where a strategy comes from, in words: ``built-in``, or its file (or module) and class."""
    return "built-in" if strategy in REGISTRY else f"class {strategy.rpartition(':')[2]} in " \
                                                     f"{strategy.rpartition(':')[0]}"


def description(strategy: str) -> str:
    """The strategy's description (the TUI's Strategy tab), or why it cannot be had."""
    try:
        return get(strategy).description
    except ValueError as exc:
        return f"{strategy}: {exc}"


def next_after(current: str) -> str:
    """The strategy a rerun takes after ``current``: the built-ins in turn, then the user's strategies loaded
    in this process (``--strategy FILE.py:Class``), like theirs."""
    order = list(names()) + list(USER)
    if current not in order:
        return order[0]
    return order[(order.index(current) + 1) % len(order)]


def cli_value(value: str) -> str:
    """``--strategy``'s type: a built-in's name as it is; a user's strategy loaded and checked now (its
    located error is the usage error), its file's path made absolute for reruns and child processes."""
    import argparse
    if value in REGISTRY:
        return value
    if ":" not in value:
        raise argparse.ArgumentTypeError(f"no strategy {value!r}: a built-in ({', '.join(names())}), "
                                         f"FILE.py:Class or MODULE:Class")
    from kdebug.driver import loading  # kept lazy for start-up time: only a named user strategy reads its file
    if not loading.is_spec(value):
        raise argparse.ArgumentTypeError(f"{value!r}: a user strategy is FILE.py:Class or MODULE:Class")
    spec = loading.normalized(value)
    try:
        loading.load(spec, Strategy, USER)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return spec


class SharedTable(Strategy):
    """One job table for the compilation: a key is compiled once; a request for a job in progress
    or done resolves to a reference (a re-entrant one when it closes a cycle)."""

    def request(self, cx: CompilationContext, comp, requester, job, reason, loc, needs="address"):
        key = job.key
        path = cx.request_path(key, requester.key)
        if path is not None and needs == "body":
            # the job asked, through its deferred jobs, for this one: a reference cannot give its body
            ids = [cx.record_for_key(k).id for k in path] + [cx.record_for_key(key).id]
            stop(cx, requester, ids, loc, "a derivative needs the body of a job that is still being "
                                              "compiled on the same path; differentiate a function that does "
                                              "not take its own derivative")
        cx.add_request(requester.key, key)
        existing = comp.table.get(key)
        if existing is None:
            existing = cx.compiled_before(key)
        if existing is None:
            existing = cx.new_record(job, requester.id, reason, loc)
            comp.table[key] = existing
            comp.queue.append(existing)
        if path is not None:
            ids = [cx.record_for_key(k).id for k in path] + [existing.id]
            cx.reentrant(requester, ids, "reference", loc)
        return existing


@register
class Worklist(SharedTable):
    name = "worklist"
    summary = SUMMARIES[name]
    description = (
        "worklist (the correct design): one job table shared by the whole toplevel compilation and a "
        "worklist over it. Each job key is compiled once; a request for a job already in progress or "
        "done resolves to a reference to its entry (reported as a re-entrant request when it closes a "
        "cycle); nested jobs may expand their own markers through the same table, so a consumer that "
        "needs resolved IR sees it; and the finish passes run exactly once on every job's entry at the "
        "end of the toplevel compilation. A launch or a function pointer needs only the address of the job "
        "it asks for, but a derivative (kdebug.grad) needs the body of the function it differentiates, with "
        "that function's own markers already resolved: here a derivative job gets it, at any order. "
        "It keeps every invariant (kdebug check-strategy worklist).")

    def expand(self, cx: CompilationContext, comp, irmod):
        top = comp.top
        mod = cx.parse_expanded(irmod, top)
        comp.finish_list.append(top)
        while comp.queue:
            job = comp.queue.popleft()
            self.compile_nested(cx, job)
            keep = job.kind == "derivative"  # a derivative of it may need its body later
            mod.link_in(job.resolved_module, preserve=keep)
            if not keep:
                job.resolved_module = None  # linked away
            comp.finish_list.append(job)
        return mod

    def compile_nested(self, cx: CompilationContext, job: JobRecord) -> None:
        """Compile a nested job now, if it is not compiled yet: the job expands its own markers,
        through the same table (``job.resolved_module``)."""
        if job.resolved_module is not None:
            return
        cx.start(job)
        jir = cx.front(job)
        job.resolved_module = cx.run_phase(job, "expand_deferred",
                                               lambda: cx.parse_expanded(jir, job))

    def resolve_primal(self, cx: CompilationContext, comp, job, text):
        # markers become references; a job whose body the transform needs is compiled first and linked in
        view = cx.parse_expanded(text, job)
        for jid in comp.requests.get(job.id, []):
            dep = cx.record(jid)
            if dep.kind == "derivative" and job.job.function.primal == dep.job.function:
                self.compile_nested(cx, dep)
                view.link_in(dep.resolved_module, preserve=True)
        return str(view)


@register
class Toplevel(SharedTable):
    name = "toplevel"
    summary = SUMMARIES[name]
    description = (
        "toplevel (historical): only the toplevel job expands deferred-codegen markers. Markers inside "
        "nested jobs are linked in unexpanded and resolved in later rounds, so a nested consumer that "
        "must see resolved IR (an AD transform) finds an opaque marker instead (each round's jobs do reach "
        "the finish list here). Expanding late is fine for a launch or a pointer, which need only an "
        "address; a derivative needs its primal's body, so a derivative through a pointer or of a derivative "
        "fails, explained: Enzyme.jl#1707 and GPUCompiler.jl#629. It breaks the invariant primal-resolved.")
    invariants = tuple(n for n in INVARIANTS if n != "primal-resolved")

    def expand(self, cx: CompilationContext, comp, irmod):
        top = comp.top
        mod = parse(str(irmod))
        comp.finish_list.append(top)
        round_no = 0
        while True:
            visible = set(markers.ids_in(str(mod)))  # the markers this round expands
            if not visible:
                return mod
            round_no += 1
            for job in [j for j in comp.queue if j.id in visible]:
                comp.queue.remove(job)
                cx.start(job)
                # linked with its own markers still in place: the next round expands them
                mod.link_in(parse(str(cx.front(job))))
                comp.finish_list.append(job)
            mod = parse(cx.resolve_markers(str(mod), top, round_no, only=visible))

    unresolved_markers = ("the toplevel strategy expands markers only in the toplevel job, so a nested "
                          "derivative job sees its primal's markers unresolved")

    def resolve_primal(self, cx: CompilationContext, comp, job, text):
        return str(parse(text))  # a nested job never expands its own markers: they stay in place


@register
class Recursive(Strategy):
    name = "recursive"
    summary = SUMMARIES[name]
    description = (
        "recursive (the naive fix): every nested job expands its own markers with a fresh job table. "
        "Nested IR is resolved, but the toplevel's list of jobs is incomplete, so finish passes silently "
        "skip nested jobs, and a cycle (a kernel that launches itself, a -> b -> c -> a) recurses "
        "forever. kdebug stops it at the first re-entry and shows the cycle path instead of hanging. "
        "Derivatives see resolved bodies and work where there is no cycle, at that price: shared jobs are "
        "compiled again and nested derivative jobs miss the finish passes. It breaks the invariants "
        "compiled-once and finish-once.")
    invariants = tuple(n for n in INVARIANTS if n not in ("compiled-once", "finish-once"))

    def request(self, cx: CompilationContext, comp, requester, job, reason, loc, needs="address"):
        cycle = cx.ancestor_cycle(requester, job.key)
        if cycle is not None:
            stop(cx, requester, cycle, loc, "the recursive strategy gives each nested job a fresh job table, "
                                                "so a cycle never ends; --strategy worklist shares one table and "
                                                "resolves the request to a reference")
        return cx.new_record(job, requester.id, reason, loc)  # a fresh table: always a new job

    def expand(self, cx: CompilationContext, comp, irmod):
        comp.finish_list.append(comp.top)
        return self.nested(cx, comp, comp.top, irmod)

    def nested(self, cx: CompilationContext, comp, job: JobRecord, jir):
        """``job``'s module with every job it asked for compiled, expanded and linked in, depth first."""
        mod = parse(str(jir))
        self.compile_children(cx, comp, job, mod)
        return parse(cx.resolve_markers(str(mod), job))

    def compile_children(self, cx: CompilationContext, comp, job: JobRecord, mod) -> None:
        for child_id in comp.requests.get(job.id, []):
            child = cx.record(child_id)
            if child.state != "queued":
                continue
            cx.start(child)
            cir = cx.front(child)
            mod.link_in(cx.run_phase(child, "expand_deferred", lambda: self.nested(cx, comp, child, cir)))
            if job is comp.top:  # the naive fix: the toplevel only ever knows the jobs it asked for itself
                comp.finish_list.append(child)

    def resolve_primal(self, cx: CompilationContext, comp, job, text):
        return str(self.nested(cx, comp, job, text))  # its own fresh expansion, before the transform


@register
class GPUCompiler2(Worklist):
    name = "gpucompiler2"
    summary = SUMMARIES[name]
    description = (
        "gpucompiler2 (GPUCompiler.jl 2.x's rework of deferred codegen): every requested job is compiled "
        "through one job table keyed by the job (so a key is one job, and its marker one symbol, wherever it "
        "is asked for) and linked into the toplevel module with its markers in place; only after deferred "
        "codegen is done are the markers resolved, in one pass over the whole module, and the entry points "
        "decided, once: the finish list is the toplevel job and every job of the table, in the order of their "
        "keys, not of their discovery. A derivative still needs its primal's body: it gets it from the table, "
        "resolved, as in the worklist. It keeps every invariant (kdebug check-strategy gpucompiler2).")

    def expand(self, cx: CompilationContext, comp, irmod):
        mod = parse(str(irmod))
        while comp.queue:  # deferred codegen: compile and link, markers in place
            job = comp.queue.popleft()
            if job.resolved_module is None:
                cx.start(job)
                mod.link_in(parse(str(cx.front(job))))
            else:  # compiled already, resolved, for a derivative that needed its body
                keep = job.kind == "derivative"
                mod.link_in(job.resolved_module, preserve=keep)
                if not keep:
                    job.resolved_module = None
        mod = parse(cx.resolve_markers(str(mod), comp.top, 1))  # every marker, once
        # the entry points, decided once after deferred codegen: stable, by key
        nested = sorted((j for j in comp.table.values() if j is not comp.top), key=lambda j: j.key)
        comp.finish_list[:] = [comp.top] + nested
        return mod


def stop(cx: CompilationContext, requester: JobRecord, cycle: list[int], loc, hint: str):
    """A re-entrant request that cannot be resolved by reference: reported, then a located error."""
    cx.reentrant(requester, cycle, "stopped", loc)
    names = " \u2192 ".join(cx.record(j).name for j in cycle)
    asked = cx.record(cycle[-1]).name
    raise ReentrantLoopError(f"{names} (job #{requester.id} asks for {asked} while it is being compiled)", loc, hint)
