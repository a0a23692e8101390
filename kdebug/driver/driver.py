"""The driver: jobs, the phase pipeline, the job table and cache.

One toplevel compilation reads top to bottom in ``compile_toplevel``:

    parse -> typeinfer -> lower -> expand_deferred -> link_runtime -> optimize
          -> finish (every job's entry) -> validate -> emit -> [the target's stages] -> load

The stages are data (``kdebug/stages.py``): ``self.stages`` is this
driver's list, the target's own stages included. Each phase emits ``phase_started``/``phase_finished`` with its duration and a
snapshot of the IR it produced; ``before_finish``/``after_finish`` snapshots
are recorded for every job. Deferred requests are answered and markers expanded
by the strategy object (``kdebug/driver/strategies.py``).

Snapshots print modules to text, which costs more than some phases themselves,
so a driver whose session nobody watches (``snapshots=False``: a plain
``python script.py``, a headless run without ``--trace``, compile_ptx) records
none and skips the target's stages; the module after finish is then kept as an
in-memory copy, printed only if someone asks (``JobRecord.ir_after_finish``).
"""
from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
import traceback


from kdebug import markers
from kdebug import events as E
from kdebug import gc_pause, passes, stack_room, stages
from kdebug.driver import deferred, invariants, overrides, strategies
from kdebug.driver.context import CompilationContext
from kdebug.driver.job import CompilerJob, JobRecord, job_ir
from kdebug.errors import CompileError, KdebugError
from kdebug.frontend.lower import lower_function
from kdebug.frontend.source import function_text, parse_function
from kdebug.frontend.typeinfer import infer_function
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime.artifacts import Artifact
from kdebug.settings import CompileOptions, Recording
from kdebug.driver.pass_events import pass_events

@dataclass
class CompiledKernel:
    """A loaded kernel: what a backend needs to launch it."""

    record: JobRecord
    entry_address: int  # backend-specific handle
    artifact: Artifact  # what the target's emit made (kdebug/runtime/artifacts.py)

    @property
    def argtypes(self) -> tuple:
        return self.record.argtypes


class Driver:
    def __init__(self, bus: E.EventBus, targets, options: CompileOptions, recording: Recording | None = None) -> None:
        """``targets(options) -> Target`` makes the target of a set of options (the composition root's
        factory, called once per set). ``options``: what the jobs requested from now on are compiled
        with (``configure`` changes them). ``recording``: what is recorded for whoever looks (snapshots,
        pass records), the same for the driver's life and no part of a job's key."""
        self.bus = bus
        self.recording = recording if recording is not None else Recording()
        self.snapshots = self.recording.snapshots  # print every phase's IR for the trace, the TUI and dump
        self._make_target = targets
        self._targets: dict[CompileOptions, object] = {}  # options -> their target, made once
        self._launch_caches: dict[CompileOptions, dict] = {}
        self.records: dict[int, JobRecord] = {}
        self.by_key: dict[str, JobRecord] = {}
        self.cache: dict[str, CompiledKernel] = {}
        self.compile_counts: dict[str, int] = {}
        self._next_id = 1
        self._next_snapshot = 1
        self.lock = threading.RLock()
        self.graph = deferred.RequestGraph()
        self.current: deferred.Compilation | None = None
        self.context = CompilationContext(self)  # all a strategy sees of this driver
        self.configure(options)

    def configure(self, options: CompileOptions) -> None:
        """Compile the jobs requested from now on with ``options``: their target, stage list and strategy
        follow from them. Jobs made under other options keep their keys and their code (a later return to
        those options finds them in the cache); a compilation in progress keeps its own (the lock)."""
        with self.lock:
            target = self._targets.get(options)
            if target is None:
                target = self._targets[options] = self._make_target(options)
            self.options = options
            self.target = target
            # the strategy (a built-in, or a user's FILE.py:Class), its invariants checked around it
            self.strategy = invariants.Checked(strategies.get(options.strategy), self)
            self.stages = stages.pipeline(target.stages())  # every stage a compilation goes through, in order
            self.stage_names = frozenset(s.name for s in self.stages + stages.of_job_kind("derivative"))
            # (dispatcher, argtypes, kind) -> the cache's entry, for these options
            self.launch_cache = self._launch_caches.setdefault(options, {})

    # ---- events -----------------------------------------------------------------
    def job_fields(self, rec: JobRecord) -> dict:
        return {"job": rec.id, "name": rec.name, "parent": rec.parent, "key": rec.key}

    def snapshot(self, rec: JobRecord, phase: str, text, language: str = "llvm") -> int | None:
        """Record ``text`` (or what the callable ``text`` returns) as ``rec``'s snapshot of ``phase``;
        nothing, not even the text, when this driver records no snapshots."""
        if not self.snapshots:
            return None
        if callable(text):
            text = text()
        sid = self._next_snapshot
        self._next_snapshot += 1
        rec.snapshots[phase] = text
        self.bus.emit(E.Snapshot(**self.job_fields(rec), id=sid, phase=phase, language=language, text=text))
        return sid

    def run_phase(self, rec: JobRecord, phase: str, work, show=str, language: str = "llvm", by_pass: bool = False,
                  cut: passes.PassCut | None = None):
        """Run one named phase of ``rec``: events, timing and the snapshot of its result. ``by_pass``:
        the phase runs LLVM pipelines, recorded pass by pass when this driver records snapshots;
        ``cut``: they run cut after a number of passes (``kdebug bisect``), which then goes unrecorded."""
        if phase not in self.stage_names:
            raise AssertionError(f"{phase!r} is no stage of {self.target.name}: add it to kdebug/stages.py")
        self.bus.emit(E.PhaseStarted(**self.job_fields(rec), phase=phase))
        edit = self.edit_of(rec, phase)
        t0, paused = time.perf_counter(), self.bus.paused_seconds
        if cut is not None:
            with passes.cutting(cut, phase):
                log, result = None, work()
        elif by_pass and self.snapshots and self.recording.passes:
            with passes.recording(on_demand=self.recording.passes_on_demand) as log:
                result = work()
        else:
            log, result = None, work()
        if edit is not None:  # kdebug run --override: the driver continues from the edited text
            original, show_original = result, show  # what the stage made, before the edit replaced it
            result = overrides.take(edit, rec, phase, result, lambda: overrides.relying_on(self, rec, edit))
            show = lambda r: overrides.shown(edit, rec, phase, r)  # noqa: E731
            self.bus.emit(E.Diagnostic(severity="note", category="override", job=rec.id,
                                       message=edit.note(rec, phase)))
        dt = time.perf_counter() - t0 - (self.bus.paused_seconds - paused)  # not the time held at a breakpoint
        rec.compile_time += dt
        if cut is not None:
            self.bus.emit(E.PassCut(**self.job_fields(rec), phase=phase, limit=cut.limit, text=cut.text,
                                    passes=[run for run in cut.runs if run[4] == phase]))
        if edit is not None and show_original is not None:  # the original, diffable against the edit
            self.snapshot(rec, stages.original_of(phase), lambda: show_original(original), language)
        sid = self.snapshot(rec, phase, lambda: show(result), language) if show is not None else None
        if log is not None:  # after the phase's snapshot: a replay may make that snapshot's text
            later_asm = phase == "emit" and log.pipelines and getattr(self.target, "host_asm_on_demand", False)
            self.pass_snapshots(rec, phase, log, assembly=sid if later_asm else None)
        self.bus.emit(E.PhaseFinished(**self.job_fields(rec), phase=phase, duration=dt, snapshot=sid))
        return result

    def edit_of(self, rec: JobRecord, phase: str):
        """The edited file that replaces ``rec``'s ``phase`` (``kdebug run --override``), or None; a PTX
        target's ``ptx`` file replaces what its emit made."""
        edits = self.options.overrides
        if not edits:
            return None
        if self.target.name == "ptx" and phase in ("emit", "ptx"):  # the ptx stage shows what emit made
            return edits.find(rec, "ptx", "ptx") if phase == "emit" else None
        if phase == "primal":  # a derivative reads the edited body of the device function it differentiates
            return overrides.primal_edit(self, rec)
        return edits.find(rec, phase, self.target.name) if phase in overrides.LOWERED + overrides.LINKED else None

    def pass_snapshots(self, rec: JobRecord, phase: str, log, assembly: int | None = None) -> None:
        """The events of ``log``'s passes (kdebug/passes.py: a snapshot of every pass that changed the
        module, the phase's list of passes, its remarks; or what a replay needs)."""
        for ev in pass_events(self.job_fields(rec), phase, log, self._new_snapshot_id, assembly):
            self.bus.emit(ev)

    def _new_snapshot_id(self) -> int:
        sid = self._next_snapshot
        self._next_snapshot += 1
        return sid

    # ---- the job table --------------------------------------------------------------
    def new_record(self, job: CompilerJob, parent: int | None, reason: str, loc=None) -> JobRecord:
        rec = JobRecord(self._next_id, job, parent, reason, loc=loc)
        self._next_id += 1
        rec.entry = self.entry_name(rec)
        self.records[rec.id] = rec
        if self.current is not None:
            self.current.records.append(rec)
        py = job.function.py_func
        code = py.__code__
        self.bus.emit(E.JobRequested(**self.job_fields(rec), reason=reason,
                                     argtypes=[str(t) for t in job.argtypes], job_kind=job.kind,
                                     target=job.target, source_file=code.co_filename,
                                     source_line=code.co_firstlineno, source=_source_text(py),
                                     site=loc.to_json() if loc is not None else None,
                                     marker=markers.name(rec.id) if parent is not None else None))
        return rec

    def entry_name(self, rec: JobRecord) -> str:
        return re.sub(r"[^\w.]", "_", f"{rec.name}_j{rec.id}")  # grad(f) -> grad_f__j2

    # ---- toplevel compilation --------------------------------------------------------
    def compile_kernel(self, dispatcher, argtypes: tuple, kind: str = "kernel") -> CompiledKernel:
        """Compile (or fetch from the cache) a toplevel job: a kernel the host launches, or a
        device function compiled on its own (``cuda.compile_ptx(..., device=True)``)."""
        argtypes = tuple(argtypes)
        hit = self.launch_cache.get((dispatcher, argtypes, kind))  # the launch path: no key to build
        if hit is not None:
            if self.bus.has_subscribers:
                self.bus.emit(E.CacheHit(**self.job_fields(hit.record)))
            return hit
        # deep recursion, on a chunk of the frame stack with room; no garbage collection meanwhile (gc_pause.py)
        with self.lock, compiler_recursion_limit(), gc_pause.paused():
            return stack_room.call(self._compile_kernel, dispatcher, argtypes, kind)

    def _compile_kernel(self, dispatcher, argtypes: tuple, kind: str) -> CompiledKernel:
        job = CompilerJob(dispatcher, argtypes, self.options, kind)
        key = job.key
        hit = self.cache.get(key)
        if hit is not None:
            self.bus.emit(E.CacheHit(**self.job_fields(hit.record)))
            self.launch_cache[(dispatcher, argtypes, kind)] = hit
            return hit
        done = self.by_key.get(key)
        if done is not None and done.state == "done" and kind == "kernel" and \
                self.target.supports_cross_module_references:
            # compiled earlier as a deferred job of another kernel: its entry is loaded already
            self.bus.emit(E.CacheHit(**self.job_fields(done)))
            hit = self.cache[key] = CompiledKernel(done, self.target.entry_address(done), self.target.entry_artifact(done))
            self.launch_cache[(dispatcher, argtypes, kind)] = hit
            return hit
        # a toplevel compilation inside another on this thread (a signal handler's launch while the
        # script's first launch compiles): its own state, the outer one's again after it
        outer = self.current
        rec = self.new_record(job, None, "host") if outer is None else self._new_toplevel_record(job)
        self.current = deferred.Compilation(rec, table={key: rec}, records=[rec],
                                           target_state=self.target.compilation_state())
        try:
            compiled = self.compile_toplevel(rec)
        except KdebugError as exc:
            culprit = getattr(exc, "failed_job", None) or rec  # the job whose code is wrong
            self.fail(culprit, exc)
            if culprit is not rec:
                rec.state = "failed"
                self.bus.emit(E.JobFailed(**self.job_fields(rec),
                                          error=f"deferred job #{culprit.id} {culprit.name} failed to compile"))
            self.fail_rest(rec)
            raise
        except Exception as exc:  # a kdebug bug: keep the traceback for the report
            err = CompileError(f"internal compiler error while compiling {rec.name}: {exc!r}",
                               hint="this is a bug in kdebug; the trace holds the Python traceback")
            self.fail(rec, err, traceback.format_exc())
            self.fail_rest(rec)
            raise err from exc
        finally:
            self.current = outer
        self.cache[key] = self.launch_cache[(dispatcher, argtypes, kind)] = compiled
        return compiled

    def _new_toplevel_record(self, job: CompilerJob) -> JobRecord:
        """A toplevel job's record made while another compilation is in progress: not one of its jobs."""
        outer, self.current = self.current, None
        try:
            return self.new_record(job, None, "host")
        finally:
            self.current = outer

    def fail(self, rec: JobRecord, exc: KdebugError, detail: str = "") -> None:
        exc.reported = True
        rec.state = "failed"
        self.bus.emit(E.JobFailed(**self.job_fields(rec), error=str(exc)))
        self.bus.emit(E.Diagnostic(severity="error", message=exc.message, category="compile", job=rec.id,
                                   location=exc.loc.to_json() if exc.loc else None,
                                   text=str(exc) + ("\n" + detail if detail else "")))

    def fail_rest(self, top: JobRecord) -> None:
        """The toplevel failed: jobs it had pulled in that did not finish fail with it."""
        for rec in self.current.records if self.current else []:
            if rec is not top and rec.state in ("queued", "compiling"):
                rec.state = "failed"
                self.bus.emit(E.JobFailed(**self.job_fields(rec), error=f"abandoned: toplevel job #{top.id} failed"))

    def start(self, rec: JobRecord) -> None:
        rec.state = "compiling"
        n = self.compile_counts[rec.key] = self.compile_counts.get(rec.key, 0) + 1
        self.bus.emit(E.JobStarted(**self.job_fields(rec)))
        if n > 1:
            self.bus.emit(E.Diagnostic(
                severity="warning", category="duplicate", job=rec.id,
                message=f"duplicate codegen: {rec.job} is compiled for the {_nth(n)} time in this session (job #{rec.id})",
                text=f"duplicate codegen: job key {rec.key} compiled {n} times in this session; the last as job "
                     f"#{rec.id}. A shared job table would compile it once."))

    # ---- deferred requests ------------------------------------------------------------
    def request_deferred(self, requester: JobRecord, function, argtypes: tuple, kind: str, reason: str, loc,
                         needs: str = "address") -> int:
        """Called for each marker (by lower, and by the derivative transform): the id of the job whose
        entry the marker will become. ``needs`` is ``address`` (a launch, a pointer, a call) or ``body``
        (a derivative of that job's code)."""
        comp = self.current
        job = CompilerJob(function, tuple(argtypes), self.options, kind)
        asked = comp.requests.setdefault(requester.id, [])
        rec = self.strategy.request(self.context, comp, requester, job, reason, loc, needs)
        if rec.id not in asked:
            asked.append(rec.id)
        self.bus.emit(E.DeferredRequest(**self.job_fields(requester), target_job=rec.id, reason=reason,
                                        marker=markers.name(rec.id),
                                        site=loc.to_json() if loc is not None else None))
        return rec.id

    def cache_hit(self, rec: JobRecord) -> None:
        self.bus.emit(E.CacheHit(**self.job_fields(rec)))

    def record_for_key(self, key: str) -> JobRecord:
        return self.current.table.get(key) or self.by_key[key]

    def ancestor_cycle(self, requester: JobRecord, key: str) -> list[int] | None:
        """On the recursion chain, the job with ``key`` down to the requester, closed: or None."""
        chain = [requester]
        while chain[-1].parent is not None and chain[-1].key != key:
            chain.append(self.records[chain[-1].parent])
        if chain[-1].key != key:
            return None
        ids = [r.id for r in reversed(chain)]
        return ids + [ids[0]]

    def reentrant(self, requester: JobRecord, cycle: list[int], resolution: str, loc) -> None:
        """Report a request that closes a cycle: resolved to a reference, or stopped."""
        names = [self.records[j].name for j in cycle]
        self.bus.emit(E.Reentrant(**self.job_fields(requester), target_job=cycle[-1], cycle=cycle,
                                  cycle_names=names, resolution=resolution,
                                  site=loc.to_json() if loc is not None else None,
                                  # a stopped request puts no marker: lowering stops there
                                  marker=markers.name(cycle[-1]) if resolution == "reference" else None))
        path = " \u2192 ".join(names)
        what = "resolved to a reference to its entry" if resolution == "reference" else "stopped"
        self.bus.emit(E.Diagnostic(severity="warning" if resolution == "reference" else "error", category="reentrant",
                                   job=requester.id, location=loc.to_json() if loc else None,
                                   message=f"re-entrant request: {path} ({what})",
                                   text=f"re-entrant codegen request: {path}; {what}"))

    def front(self, rec: JobRecord):
        """parse, typeinfer and lower one job: its own module, markers still in place."""
        if rec.kind == "derivative":
            # kept lazy for start-up time: the forward-mode transform loads with the first kdebug.grad job
            from kdebug.autodiff import derivative
            return derivative.front(self, rec)
        py = rec.job.function.py_func
        options = getattr(rec.job.function, "options", {})
        fastmath, debug = bool(options.get("fastmath")), bool(options.get("debug"))
        try:
            src = self.run_phase(rec, "parse", lambda: parse_function(py), lambda s: s.text, "python")
            rec.typed = self.run_phase(rec, "typeinfer", lambda: infer_function(py, rec.argtypes, rec.kind, src=src),
                                       lambda tf: tf.listing(), "text")
            requester = lambda fn, argtypes, kind, reason, loc: self.request_deferred(rec, fn, argtypes, kind, reason, loc)  # noqa: E731
            rec.target_state = self.target.module_state()
            rec.module_ir = self.run_phase(rec, "lower", lambda: lower_function(rec.typed, self.target, rec.entry,
                                                                                requester=requester, fastmath=fastmath,
                                                                                debug=debug, target_state=rec.target_state,
                                                                                lineinfo=self.options.lineinfo))
            for stage in stages.after_lower(self.target.stages()):  # the CPU target's regions
                show = (lambda m: self.target.stage_header(stage, rec.target_state) + str(m)) \
                    if self.target.shows_stage(stage, rec.target_state) else None
                work = lambda: self.target.transform_lowered(stage, rec.module_ir, rec.target_state, rec.kind)  # noqa: E731
                if isinstance(rec.module_ir, str):  # an edited lower stage: text, no module to transform
                    if overrides.lowered_text_blocked(rec.target_state):
                        raise overrides.not_cut(self.edit_of(rec, "lower"), stage.name)
                    work = lambda: rec.module_ir  # noqa: E731
                rec.module_ir = self.run_phase(rec, stage.name, work, show, stage.language)
            rec.form = self.target.code_form(rec.target_state, rec.entry)
        except KdebugError as exc:
            if getattr(exc, "failed_job", None) is None:
                exc.failed_job = rec  # the innermost job whose own code failed: it is reported on that job
            raise
        return rec.module_ir

    def compile_toplevel(self, rec: JobRecord) -> CompiledKernel:
        t0, paused = time.perf_counter(), self.bus.paused_seconds
        comp = self.current
        self.start(rec)
        target = self.target
        irmod = self.front(rec)
        mod = self.run_phase(rec, "expand_deferred", lambda: self.strategy.expand(self.context, comp, irmod))
        jobs = comp.finish_list
        mod = self.run_phase(rec, "link_runtime", lambda: target.link_runtime(mod, jobs) or mod)
        # kdebug bisect: this kernel's optimize and emit pipelines cut after pass N, counted over both
        cut = passes.PassCut(self.options.pass_limit) if self.options.cut_kernel == rec.name else None
        mod = self.run_phase(rec, "optimize", lambda: target.optimize(mod, jobs, comp.target_state) or mod, by_pass=True, cut=cut)
        for job in comp.records:
            self.snapshot(job, "before_finish", lambda: str(mod) if job is rec else self.job_ir(mod, job))
        mod = self.run_phase(rec, "finish", lambda: self.finish(mod, jobs, comp.target_state) or mod)
        finished = self.clone_after_finish(mod) if not self.snapshots else None
        for job in jobs:
            self.snapshot(job, "after_finish", lambda: str(mod) if job is rec else self.job_ir(mod, job))
            job.after_finish = (finished, job is rec)
        invariants.check_finished(self, comp, mod)  # violations are diagnostics (category "invariant")
        self.check_finish_coverage(mod, comp)
        self.run_phase(rec, "validate", lambda: self.validate(mod, comp) or mod)
        artifact = self.run_phase(rec, "emit", lambda: target.emit(mod, jobs, comp.target_state),
                                  lambda a: a.text, target.emit_language, by_pass=True, cut=cut)
        # the target's own stages on the emitted artifact (ptxas...) make only what someone looks at:
        # without snapshots they do not run (ptxas then runs when its report is asked for)
        for stage in stages.after_emit(target.stages()) if self.snapshots else ():
            self.run_target_stage(rec, comp, stage, artifact)
        entries = self.run_phase(rec, "load", lambda: target.load(artifact, jobs), None)
        dt = time.perf_counter() - t0 - (self.bus.paused_seconds - paused)
        for job in comp.records:
            job.state = "done"
            if job is rec:
                job.compile_time = dt
            self.by_key[job.key] = job
            form, why = job.form or ("", None)
            self.bus.emit(E.JobFinished(**self.job_fields(job), duration=job.compile_time, form=form,
                                        form_why=why or ""))
        return CompiledKernel(rec, entries.get(rec.id), artifact)  # device functions have no launch entry

    def run_target_stage(self, rec: JobRecord, comp, stage, artifact: Artifact) -> None:
        """One of the target's stages, timed on the toplevel job; each job it shows gets its snapshot."""
        texts = self.run_phase(rec, stage.name, lambda: self.target.run_stage(stage, artifact, comp.records), None)
        for job in comp.records:
            if job.id in texts:
                self.snapshot(job, stage.name, texts[job.id], stage.language)

    def finish(self, mod, jobs, compilation) -> None:
        """Run the target's finish passes exactly once on every job's entry (``compilation``: the target's
        record of this compilation)."""
        for job in jobs:
            if job.finished:
                continue
            added = self.target.finish_ir(mod, job, compilation)
            job.functions = [job.entry] + list(added)
            job.finished = True
        self.target.finish_module(mod, jobs, compilation)

    def check_finish_coverage(self, mod, comp) -> None:
        """Every job of the compilation must have its before/after-finish snapshots and a finished entry."""
        missed = [j for j in comp.records
                  if not j.finished or j.after_finish is None or not self.target.entry_finished(mod, j)]
        for j in missed:
            self.bus.emit(E.Diagnostic(
                severity="error", category="finish", job=j.id,
                message=f"finish coverage: job #{j.id} {j.job} missed the finish passes",
                text=f"finish coverage: job #{j.id} {j.job} missed the finish passes: it was compiled inside a "
                     f"nested job, and the toplevel job #{comp.top.id}'s list of jobs never included it "
                     f"({self.strategy} strategy)"))
        if any(j.kind == "kernel" for j in missed):
            names = ", ".join(f"#{j.id} {j.name}" for j in missed)
            raise CompileError(f"cannot load {comp.top.name}: {len(missed)} job(s) missed the finish passes ({names})",
                               hint="nested jobs must reach the toplevel's finish list; --strategy worklist does that")

    def validate(self, mod, comp) -> None:
        # markers keep their declarations until expanded: only a module that declares one is printed
        declared = any(markers.job_of(fn.name) is not None for fn in mod.functions)
        left = deferred.marker_ids(str(mod)) if declared else []
        if left:
            names = ", ".join(f"#{j} {self.records[j].name}" for j in dict.fromkeys(left))
            raise CompileError(f"deferred-codegen markers remain after expand_deferred for job(s) {names}",
                               hint="this is a bug in the expansion strategy")
        self.target.validate(mod, comp.finish_list)

    @staticmethod
    def clone_after_finish(mod):
        """An in-memory copy of the finished module (emit optimises ``mod`` in place)."""
        return mod.clone()

    job_ir = staticmethod(job_ir)


COMPILER_RECURSION_LIMIT = 30_000  # the frontend's visitors recurse as deep as the kernel's expressions


@contextlib.contextmanager
def compiler_recursion_limit():
    """The compiler's own recursion limit, whatever the script set (``sys.setrecursionlimit(50)`` must not
    break kdebug's frontend; a 2,000-term expression CPython compiles must compile here too); the
    script's limit again afterwards."""
    before = sys.getrecursionlimit()
    if before >= COMPILER_RECURSION_LIMIT:
        yield
        return
    sys.setrecursionlimit(COMPILER_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def _nth(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _source_text(py) -> str | None:
    try:
        return function_text(py)
    except (OSError, TypeError):
        return None
