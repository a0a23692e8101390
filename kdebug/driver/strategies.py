"""The deferred-codegen strategies, as objects behind one small interface.

A strategy answers two questions the driver asks (GPUCompiler.jl's ``toplevel``
flag and its job table, made explicit):

- ``request``: ``lower`` found a marker; which job record will it become?
- ``expand``: the toplevel's ``expand_deferred`` phase; how are the markers of
  the compilation (the toplevel's and the nested jobs') expanded?

Every strategy is registered by name in ``REGISTRY``; the command line, the
TUI's rerun, dumps and the docs read the names and descriptions from there.
"""
from __future__ import annotations

from kdebug.driver import deferred
from kdebug.driver.deferred import Compilation, parse, resolve_markers
from kdebug.driver.job import CompilerJob, JobRecord
from kdebug.errors import ReentrantLoopError


class Strategy:
    """How deferred requests are answered and a compilation's markers expanded."""

    name = ""
    summary = ""  # one line: --help, the README table
    description = ""  # the TUI's Strategy tab

    # said when a derivative job's transform meets a marker this strategy left unexpanded
    unresolved_markers = "the strategy left it unexpanded"

    def request(self, driver, comp: Compilation, requester: JobRecord, job: CompilerJob, reason: str,
                loc, needs: str = "address") -> JobRecord:
        """``requester``'s code needs ``job``'s entry (``needs``: its ``address``, or its ``body`` for a
        derivative of it): the record its marker resolves to."""
        raise NotImplementedError

    def expand(self, driver, comp: Compilation, irmod):
        """The toplevel's expand_deferred phase: compile the requested jobs, return the linked module."""
        raise NotImplementedError

    def resolve_primal(self, driver, comp: Compilation, job: JobRecord, text: str) -> str:
        """A derivative job's primal (IR text, markers in place): what the transform gets to read."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


REGISTRY: dict[str, Strategy] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    REGISTRY[cls.name] = cls()
    return cls


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(strategy: "str | Strategy") -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    try:
        return REGISTRY[strategy]
    except KeyError:
        raise ValueError(f"strategy must be one of {names()}, not {strategy!r}") from None


class SharedTable(Strategy):
    """One job table for the compilation: a key is compiled once; a request for a job in progress
    or done resolves to a reference (a re-entrant one when it closes a cycle)."""

    def request(self, driver, comp, requester, job, reason, loc, needs="address"):
        key = job.key
        path = driver.graph.path(key, requester.key)
        if path is not None and needs == "body":
            # the job asked, through its deferred jobs, for this one: a reference cannot give its body
            ids = [driver.record_for_key(k).id for k in path] + [driver.record_for_key(key).id]
            stop(driver, requester, ids, loc, "a derivative needs the body of a job that is still being "
                                              "compiled on the same path; differentiate a function that does "
                                              "not take its own derivative")
        driver.graph.add(requester.key, key)
        existing = comp.table.get(key)
        if existing is None and key in driver.by_key and driver.target.supports_cross_module_references:
            existing = driver.by_key[key]
            driver.cache_hit(existing)
        if existing is None:
            existing = driver.new_record(job, requester.id, reason, loc)
            comp.table[key] = existing
            comp.queue.append(existing)
        if path is not None:
            ids = [driver.record_for_key(k).id for k in path] + [existing.id]
            driver.reentrant(requester, ids, "reference", loc)
        return existing


@register
class Worklist(SharedTable):
    name = "worklist"
    summary = "one job table for the session; each nested job expands its own markers through it; " \
              "finish runs once on every job"
    description = (
        "worklist (the correct design): one job table shared by the whole toplevel compilation and a "
        "worklist over it. Each job key is compiled once; a request for a job already in progress or "
        "done resolves to a reference to its entry (reported as a re-entrant request when it closes a "
        "cycle); nested jobs may expand their own markers through the same table, so a consumer that "
        "needs resolved IR sees it; and the finish passes run exactly once on every job's entry at the "
        "end of the toplevel compilation. A launch or a function pointer needs only the address of the job "
        "it asks for, but a derivative (kdebug.grad) needs the body of the function it differentiates, with "
        "that function's own markers already resolved: here a derivative job gets it, at any order.")

    def expand(self, driver, comp, irmod):
        top = comp.top
        mod = deferred.parse_expanded(driver, irmod, top)
        comp.finish_list.append(top)
        while comp.queue:
            job = comp.queue.popleft()
            self.compile_nested(driver, job)
            keep = job.kind == "derivative"  # a derivative of it may need its body later
            mod.link_in(job.resolved_module, preserve=keep)
            if not keep:
                job.resolved_module = None  # linked away
            comp.finish_list.append(job)
        return mod

    def compile_nested(self, driver, job: JobRecord) -> None:
        """Compile a nested job now, if it is not compiled yet: the job expands its own markers,
        through the same table (``job.resolved_module``)."""
        if job.resolved_module is not None:
            return
        driver.start(job)
        jir = driver.front(job)
        job.resolved_module = driver.run_phase(job, "expand_deferred",
                                               lambda: deferred.parse_expanded(driver, jir, job))

    def resolve_primal(self, driver, comp, job, text):
        # markers become references; a job whose body the transform needs is compiled first and linked in
        view = deferred.parse_expanded(driver, text, job)
        for jid in comp.requests.get(job.id, []):
            dep = driver.records[jid]
            if dep.kind == "derivative" and job.job.function.primal == dep.job.function:
                self.compile_nested(driver, dep)
                view.link_in(dep.resolved_module, preserve=True)
        return str(view)


@register
class Toplevel(SharedTable):
    name = "toplevel"
    summary = "GPUCompiler.jl's design: only the toplevel expands markers, nested ones in later rounds"
    description = (
        "toplevel (historical): only the toplevel job expands deferred-codegen markers. Markers inside "
        "nested jobs are linked in unexpanded and resolved in later rounds, so a nested consumer that "
        "must see resolved IR (an AD transform) finds an opaque marker instead, and jobs discovered late "
        "can miss the finish passes. Expanding late is fine for a launch or a pointer, which need only an "
        "address; a derivative needs its primal's body, so a derivative through a pointer or of a derivative "
        "fails, explained: Enzyme.jl#1707 and GPUCompiler.jl#629.")

    def expand(self, driver, comp, irmod):
        top = comp.top
        mod = parse(str(irmod))
        comp.finish_list.append(top)
        round_no = 0
        while True:
            visible = set(deferred.marker_ids(str(mod)))  # the markers this round expands
            if not visible:
                return mod
            round_no += 1
            for job in [j for j in comp.queue if j.id in visible]:
                comp.queue.remove(job)
                driver.start(job)
                # linked with its own markers still in place: the next round expands them
                mod.link_in(parse(str(driver.front(job))))
                comp.finish_list.append(job)
            mod = parse(resolve_markers(driver, str(mod), top, round_no, only=visible))

    unresolved_markers = ("the toplevel strategy expands markers only in the toplevel job, so a nested "
                          "derivative job sees its primal's markers unresolved")

    def resolve_primal(self, driver, comp, job, text):
        return str(parse(text))  # a nested job never expands its own markers: they stay in place


@register
class Recursive(Strategy):
    name = "recursive"
    summary = "the naive fix: each nested job expands its own markers with a fresh table"
    description = (
        "recursive (the naive fix): every nested job expands its own markers with a fresh job table. "
        "Nested IR is resolved, but the toplevel's list of jobs is incomplete, so finish passes silently "
        "skip nested jobs, and a cycle (a kernel that launches itself, a -> b -> c -> a) recurses "
        "forever. kdebug stops it at the first re-entry and shows the cycle path instead of hanging. "
        "Derivatives see resolved bodies and work where there is no cycle, at that price: shared jobs are "
        "compiled again and nested derivative jobs miss the finish passes.")

    def request(self, driver, comp, requester, job, reason, loc, needs="address"):
        cycle = driver.ancestor_cycle(requester, job.key)
        if cycle is not None:
            stop(driver, requester, cycle, loc, "the recursive strategy gives each nested job a fresh job table, "
                                                "so a cycle never ends; --strategy worklist shares one table and "
                                                "resolves the request to a reference")
        return driver.new_record(job, requester.id, reason, loc)  # a fresh table: always a new job

    def expand(self, driver, comp, irmod):
        comp.finish_list.append(comp.top)
        return self.nested(driver, comp, comp.top, irmod)

    def nested(self, driver, comp, job: JobRecord, jir):
        """``job``'s module with every job it asked for compiled, expanded and linked in, depth first."""
        mod = parse(str(jir))
        self.compile_children(driver, comp, job, mod)
        return parse(resolve_markers(driver, str(mod), job))

    def compile_children(self, driver, comp, job: JobRecord, mod) -> None:
        for child_id in comp.requests.get(job.id, []):
            child = driver.records[child_id]
            if child.state != "queued":
                continue
            driver.start(child)
            cir = driver.front(child)
            mod.link_in(driver.run_phase(child, "expand_deferred", lambda: self.nested(driver, comp, child, cir)))
            if job is comp.top:  # the naive fix: the toplevel only ever knows the jobs it asked for itself
                comp.finish_list.append(child)

    def resolve_primal(self, driver, comp, job, text):
        return str(self.nested(driver, comp, job, text))  # its own fresh expansion, before the transform


def stop(driver, requester: JobRecord, cycle: list[int], loc, hint: str):
    """A re-entrant request that cannot be resolved by reference: reported, then a located error."""
    driver.reentrant(requester, cycle, "stopped", loc)
    names = " \u2192 ".join(driver.records[j].name for j in cycle)
    asked = driver.records[cycle[-1]].name
    raise ReentrantLoopError(f"{names} (job #{requester.id} asks for {asked} while it is being compiled)", loc, hint)
