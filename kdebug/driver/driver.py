"""The driver: jobs, the phase pipeline, the job table and cache.

One toplevel compilation reads top to bottom in ``compile_toplevel``:

    parse -> typeinfer -> lower -> expand_deferred -> link_runtime -> optimize
          -> finish (every job's entry) -> validate -> emit -> load

Each phase emits ``phase_started``/``phase_finished`` with its duration and a
snapshot of the IR it produced; ``before_finish``/``after_finish`` snapshots
are recorded for every job. Deferred jobs are expanded by the strategy in
``kdebug/driver/deferred.py``.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass

import llvmlite.binding as llvm

from kdebug.driver import events as E
from kdebug.driver.job import CompilerJob, JobRecord
from kdebug.errors import CompileError, KdebugError
from kdebug.frontend.lower import lower_function
from kdebug.frontend.source import parse_function
from kdebug.frontend.typeinfer import infer_function

PHASES = ("parse", "typeinfer", "lower", "expand_deferred", "link_runtime", "optimize",
          "finish", "validate", "emit", "load")


@dataclass
class CompiledKernel:
    """A loaded kernel: what a backend needs to launch it."""

    record: JobRecord
    entry_address: int  # backend-specific handle
    artifact: dict

    @property
    def argtypes(self) -> tuple:
        return self.record.argtypes


class Driver:
    def __init__(self, bus: E.EventBus, target, strategy: str = "worklist") -> None:
        self.bus = bus
        self.target = target
        self.strategy = strategy
        self.records: dict[int, JobRecord] = {}
        self.by_key: dict[str, JobRecord] = {}
        self.cache: dict[str, CompiledKernel] = {}
        self.compile_counts: dict[str, int] = {}
        self._next_id = 1
        self._next_snapshot = 1
        self.lock = threading.RLock()

    # ---- events -----------------------------------------------------------------
    def job_fields(self, rec: JobRecord) -> dict:
        return {"job": rec.id, "name": rec.name, "parent": rec.parent, "key": rec.key}

    def snapshot(self, rec: JobRecord, phase: str, text: str, language: str = "llvm") -> int:
        sid = self._next_snapshot
        self._next_snapshot += 1
        rec.snapshots[phase] = text
        self.bus.emit(E.Snapshot(**self.job_fields(rec), id=sid, phase=phase, language=language, text=text))
        return sid

    def run_phase(self, rec: JobRecord, phase: str, work, show=str, language: str = "llvm"):
        """Run one named phase of ``rec``: events, timing and the snapshot of its result."""
        self.bus.emit(E.PhaseStarted(**self.job_fields(rec), phase=phase))
        t0 = time.perf_counter()
        result = work()
        dt = time.perf_counter() - t0
        sid = self.snapshot(rec, phase, show(result), language) if show is not None else None
        self.bus.emit(E.PhaseFinished(**self.job_fields(rec), phase=phase, duration=dt, snapshot=sid))
        return result

    # ---- the job table --------------------------------------------------------------
    def new_record(self, job: CompilerJob, parent: int | None, reason: str) -> JobRecord:
        rec = JobRecord(self._next_id, job, parent, reason)
        self._next_id += 1
        self.records[rec.id] = rec
        py = job.function.py_func
        code = py.__code__
        self.bus.emit(E.JobRequested(**self.job_fields(rec), reason=reason,
                                     argtypes=[str(t) for t in job.argtypes], job_kind=job.kind,
                                     target=job.target, source_file=code.co_filename,
                                     source_line=code.co_firstlineno, source=_source_text(py)))
        return rec

    def entry_name(self, rec: JobRecord) -> str:
        return f"{rec.name}_j{rec.id}"

    # ---- toplevel compilation --------------------------------------------------------
    def compile_kernel(self, dispatcher, argtypes: tuple, parent: int | None = None) -> CompiledKernel:
        """Compile (or fetch from the cache) a kernel the host launches."""
        job = CompilerJob(dispatcher, tuple(argtypes), self.target.name, "kernel")
        key = job.key
        with self.lock:
            hit = self.cache.get(key)
            if hit is not None:
                self.bus.emit(E.CacheHit(**self.job_fields(hit.record)))
                return hit
            rec = self.new_record(job, parent, "host")
            try:
                compiled = self.compile_toplevel(rec)
            except KdebugError as exc:
                self.fail(rec, exc)
                raise
            except Exception as exc:  # a kdebug bug: keep the traceback for the report
                err = CompileError(f"internal compiler error while compiling {rec.name}: {exc!r}",
                                   hint="this is a bug in kdebug; the trace holds the Python traceback")
                self.fail(rec, err, traceback.format_exc())
                raise err from exc
            self.cache[key] = compiled
            return compiled

    def fail(self, rec: JobRecord, exc: KdebugError, detail: str = "") -> None:
        rec.state = "failed"
        self.bus.emit(E.JobFailed(**self.job_fields(rec), error=str(exc)))
        self.bus.emit(E.Diagnostic(severity="error", message=exc.message, category="compile", job=rec.id,
                                   location=exc.loc.to_json() if exc.loc else None,
                                   text=str(exc) + ("\n" + detail if detail else "")))

    def start(self, rec: JobRecord) -> None:
        rec.state = "compiling"
        rec.entry = self.entry_name(rec)
        self.compile_counts[rec.key] = self.compile_counts.get(rec.key, 0) + 1
        self.bus.emit(E.JobStarted(**self.job_fields(rec)))

    def front(self, rec: JobRecord):
        """parse, typeinfer and lower one job: its own module, markers still in place."""
        py = rec.job.function.py_func
        self.run_phase(rec, "parse", lambda: parse_function(py), lambda s: s.text, "python")
        rec.typed = self.run_phase(rec, "typeinfer", lambda: infer_function(py, rec.argtypes, rec.kind),
                                   lambda tf: tf.listing(), "text")
        rec.module_ir = self.run_phase(rec, "lower", lambda: lower_function(rec.typed, self.target, rec.entry))
        return rec.module_ir

    def compile_toplevel(self, rec: JobRecord) -> CompiledKernel:
        t0 = time.perf_counter()
        self.start(rec)
        target = self.target
        irmod = self.front(rec)
        mod, jobs = self.run_phase(rec, "expand_deferred", lambda: self.expand_deferred(rec, irmod),
                                   lambda r: str(r[0]))
        self.run_phase(rec, "link_runtime", lambda: target.link_runtime(mod, jobs) or mod)
        self.run_phase(rec, "optimize", lambda: target.optimize(mod) or mod)
        for job in jobs:
            self.snapshot(job, "before_finish", str(mod) if job is rec else self.job_ir(mod, job))
        self.run_phase(rec, "finish", lambda: self.finish(mod, jobs) or mod)
        for job in jobs:
            self.snapshot(job, "after_finish", str(mod) if job is rec else self.job_ir(mod, job))
        self.run_phase(rec, "validate", lambda: target.validate(mod, jobs) or mod)
        artifact = self.run_phase(rec, "emit", lambda: target.emit(mod, jobs),
                                  lambda a: a.get("asm") or a.get("ptx") or "", target.emit_language)
        entries = self.run_phase(rec, "load", lambda: target.load(artifact, jobs), None)
        dt = time.perf_counter() - t0
        for job in jobs:
            job.state = "done"
            job.compile_time = dt if job is rec else job.compile_time
            self.by_key[job.key] = job
            self.bus.emit(E.JobFinished(**self.job_fields(job), duration=job.compile_time))
        return CompiledKernel(rec, entries[rec.id], artifact)

    def expand_deferred(self, rec: JobRecord, irmod):
        """Parse the lowered module and resolve its deferred-codegen markers (see deferred.py)."""
        mod = llvm.parse_assembly(str(irmod))
        return mod, [rec]

    def finish(self, mod, jobs) -> None:
        """Run the target's finish passes exactly once on every job's entry."""
        for job in jobs:
            added = self.target.finish_ir(mod, job)
            job.functions = [job.entry] + list(added)
            job.finished = True
        self.target.finish_module(mod, jobs)

    @staticmethod
    def job_ir(mod, job: JobRecord) -> str:
        """The IR of one job's functions inside a linked module."""
        names = job.functions or [job.entry]
        parts = []
        for name in names:
            try:
                parts.append(str(mod.get_function(name)))
            except NameError:
                pass
        return "\n".join(parts)


def _source_text(py) -> str | None:
    import inspect
    try:
        return inspect.getsource(py)
    except (OSError, TypeError):
        return None
