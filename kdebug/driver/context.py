"""What a strategy sees of the driver: the compilation context, and nothing more.

A strategy (``kdebug/driver/strategies.py``) answers requests and expands markers. It needs the
job table (look a job up, make one, find one compiled by an earlier compilation), the request
graph, the compiler's front half for a nested job, timed phases, marker resolution and the
re-entrance report; not the driver's caches, its event plumbing or its options. This class is
that interface, and the only thing the driver hands a strategy (a test checks that every
attribute a strategy reads is one of these).
"""
from __future__ import annotations

from kdebug.driver import deferred
from kdebug.driver.job import CompilerJob, JobRecord


class CompilationContext:
    """The driver, as far as a deferred-codegen strategy may reach into it."""

    __slots__ = ("_driver",)

    def __init__(self, driver) -> None:
        self._driver = driver

    # ---- the job table ------------------------------------------------------------
    def record(self, job_id: int) -> JobRecord:
        return self._driver.records[job_id]

    def record_for_key(self, key: str) -> JobRecord:
        """The record of ``key`` in this compilation's table, else the one a finished compilation made."""
        return self._driver.record_for_key(key)

    def compiled_before(self, key: str) -> JobRecord | None:
        """The job ``key`` as an earlier compilation left it loaded, where the target can refer to it
        from another module (reported as a cache hit), else None."""
        d = self._driver
        rec = d.by_key.get(key)
        if rec is None or not d.target.supports_cross_module_references:
            return None
        d.cache_hit(rec)
        return rec

    def new_record(self, job: CompilerJob, parent: int, reason: str, loc) -> JobRecord:
        return self._driver.new_record(job, parent, reason, loc)

    # ---- the request graph and re-entrance ----------------------------------------------
    def request_path(self, from_key: str, to_key: str) -> list[str] | None:
        """The keys from ``from_key`` to ``to_key`` through earlier requests, or None."""
        return self._driver.graph.path(from_key, to_key)

    def add_request(self, requester_key: str, key: str) -> None:
        self._driver.graph.add(requester_key, key)

    def ancestor_cycle(self, requester: JobRecord, key: str) -> list[int] | None:
        return self._driver.ancestor_cycle(requester, key)

    def reentrant(self, requester: JobRecord, cycle: list[int], resolution: str, loc) -> None:
        self._driver.reentrant(requester, cycle, resolution, loc)

    # ---- compiling nested jobs --------------------------------------------------------
    def start(self, job: JobRecord) -> None:
        self._driver.start(job)

    def front(self, job: JobRecord):
        """parse, typeinfer and lower ``job``: its own module, markers in place."""
        return self._driver.front(job)

    def run_phase(self, job: JobRecord, phase: str, work):
        return self._driver.run_phase(job, phase, work)

    def parse_expanded(self, irmod, expander: JobRecord):
        """``irmod`` parsed, every marker resolved to its job's entry."""
        return deferred.parse_expanded(self._driver, irmod, expander)

    def resolve_markers(self, text: str, expander: JobRecord, round_no: int = 0, only=None) -> str:
        return deferred.resolve_markers(self._driver, text, expander, round_no, only)
