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

    def request(self, driver, comp: Compilation, requester: JobRecord, job: CompilerJob, reason: str,
                loc) -> JobRecord:
        """``requester``'s code needs ``job``'s entry: the record its marker resolves to."""
        raise NotImplementedError

    def expand(self, driver, comp: Compilation, irmod):
        """The toplevel's expand_deferred phase: compile the requested jobs, return the linked module."""
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

    def request(self, driver, comp, requester, job, reason, loc):
        key = job.key
        path = driver.graph.path(key, requester.key)
        driver.graph.add(requester.key, key)
        existing = comp.table.get(key)
        if existing is None and key in driver.by_key and driver.target.supports_cross_module_references:
            existing = driver.by_key[key]
            driver.cache_hit(existing)
        if existing is None:
            existing = driver.new_record(job, requester.id, reason)
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
        "end of the toplevel compilation.")

    def expand(self, driver, comp, irmod):
        top = comp.top
        mod = deferred.parse_expanded(driver, irmod, top)
        comp.finish_list.append(top)
        while comp.queue:
            job = comp.queue.popleft()
            driver.start(job)
            jir = driver.front(job)
            # the nested job expands its own markers, through the same table
            jmod = driver.run_phase(job, "expand_deferred", lambda: deferred.parse_expanded(driver, jir, job))
            mod.link_in(jmod)
            comp.finish_list.append(job)
        return mod


@register
class Toplevel(SharedTable):
    name = "toplevel"
    summary = "GPUCompiler.jl's design: only the toplevel expands markers, nested ones in later rounds"
    description = (
        "toplevel (historical): only the toplevel job expands deferred-codegen markers. Markers inside "
        "nested jobs are linked in unexpanded and resolved in later rounds, so a nested consumer that "
        "must see resolved IR (an AD transform) finds an opaque marker instead, and jobs discovered late "
        "can miss the finish passes.")

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


@register
class Recursive(Strategy):
    name = "recursive"
    summary = "the naive fix: each nested job expands its own markers with a fresh table"
    description = (
        "recursive (the naive fix): every nested job expands its own markers with a fresh job table. "
        "Nested IR is resolved, but the toplevel's list of jobs is incomplete, so finish passes silently "
        "skip nested jobs, and a cycle (a kernel that launches itself, a -> b -> c -> a) recurses "
        "forever. kdebug stops it at the first re-entry and shows the cycle path instead of hanging.")

    def request(self, driver, comp, requester, job, reason, loc):
        cycle = driver.ancestor_cycle(requester, job.key)
        if cycle is not None:
            driver.reentrant(requester, cycle, "stopped", loc)
            names = " \u2192 ".join(driver.records[j].name for j in cycle)
            raise ReentrantLoopError(
                f"{names} (job #{requester.id} asks for {job.name} while it is being compiled)",
                loc, "the recursive strategy gives each nested job a fresh job table, so a cycle never ends; "
                     "--strategy worklist shares one table and resolves the request to a reference")
        return driver.new_record(job, requester.id, reason)  # a fresh table: always a new job

    def expand(self, driver, comp, irmod):
        top = comp.top
        comp.finish_list.append(top)

        def nested(job: JobRecord, jir):
            mod = parse(str(jir))
            for child_id in comp.requests.get(job.id, []):
                child = driver.records[child_id]
                if child.state != "queued":
                    continue
                driver.start(child)
                cir = driver.front(child)
                cmod = driver.run_phase(child, "expand_deferred", lambda: nested(child, cir))
                mod.link_in(cmod)
                if job is top:  # the naive fix: the toplevel only ever knows the jobs it asked for itself
                    comp.finish_list.append(child)
            return parse(resolve_markers(driver, str(mod), job))

        return nested(top, irmod)
