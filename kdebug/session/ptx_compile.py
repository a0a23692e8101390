"""PTX without a GPU: numba's ``compile_ptx``, ``kdebug dump --target ptx`` and ``Session.ptx_of``
on the CPU backend.

PTX for a job that runs elsewhere is a second target's pipeline, not more stages of the first:
a job's target is part of what the job is (``CompilerJob.target``, its key), every stage from
lower on differs between targets (the thread-context parameter, special registers, finish,
emit), and the jobs a kernel requests are compiled for that target too. So the PTX of a CPU
session's kernels comes from one ``PtxPipeline``, a driver for the PTX target with its own job
table and a private event bus (the session's job tree shows every job once); the composition
root (``session/live.py``) builds it on first use and hands the session only its results: the
``ptx``/``ptxas`` snapshots of the session's own jobs, the PTX and ptxas figures ``ptx_of``
returns, and the target's notes (ptxas is missing) on the session's bus. On the gpu backend the
session's own target is the PTX target, whose ``ptx`` and ``ptxas`` stages run in the one driver.
"""
from __future__ import annotations

from kdebug import events as E
from kdebug.driver.driver import Driver
from kdebug.driver.job import toplevel_kind
from kdebug.errors import KdebugError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.lang.dispatcher import Dispatcher
from kdebug.lang.signature import parse_signature
from kdebug.runtime.artifacts import PtxArtifact
from kdebug.settings import CompileOptions, Recording, compile_options
from kdebug.targets.ptx.arch import arch_of
from kdebug.targets.ptx.ptxas import format_ptxas, ptx_function_text
from kdebug.targets.ptx.target import PtxTarget


def ptx_driver(arch, strategy: str = "worklist", notes: E.EventBus | None = None, snapshots: bool = False,
               options: CompileOptions | None = None) -> Driver:
    """A compile-only driver for the PTX target, with its own job table and event bus; the target's
    notes (ptxas is missing) go to ``notes``, else to that bus. Nobody watches that bus, so by
    default it records no snapshots (callers read the artifact). ``options``: a session's compile
    options, of which the PTX jobs keep what applies to them (memcheck...)."""
    bus = E.EventBus()
    base = options if options is not None else compile_options()
    ptx = base.replace(target="ptx", arch=arch, strategy=strategy, tiered=False, ptx_per_job=False, host_cpu="")
    return Driver(bus, lambda o: PtxTarget(o, bus=notes or bus), ptx, Recording(snapshots=snapshots))


def compile_ptx(pyfunc, sig, device: bool = False, cc=None, lineinfo: bool = False, fastmath: bool = False,
                **_options):
    """numba.cuda.compile_ptx: ``(ptx, resty)`` for a Python function and a signature, no GPU needed.
    ``lineinfo``: as numba's, ``.file``/``.loc`` lines naming the source lines (line tables only).
    ``fastmath``: as ``@cuda.jit(fastmath=True)`` (approximate float32 math, flush-to-zero libdevice)."""
    py = pyfunc.py_func if isinstance(pyfunc, Dispatcher) else pyfunc
    signature = parse_signature(sig)
    if not device and signature.restype not in (None, T.void):
        raise TypeError(f"a kernel returns nothing: its signature must be void(...), not {signature}")
    dispatcher = Dispatcher(py, device=device, **({"fastmath": True} if fastmath else {}))
    driver = ptx_driver(arch_of(cc), options=compile_options(lineinfo=bool(lineinfo)))
    compiled = driver.compile_kernel(dispatcher, signature.argtypes, kind="device" if device else "kernel")
    return compiled.artifact.ptx, compiled.record.typed.restype


def compile_ptx_for_current_device(pyfunc, sig, device: bool = False, **options):
    """As numba: for the current device's compute capability (sm_90 without a GPU)."""
    session = seam.current()
    cc = getattr(session.target, "arch", None) if session.backend == "gpu" else None
    return compile_ptx(pyfunc, sig, device=device, cc=cc, **options)


class PtxPipeline:
    """A CPU session's PTX target: its kernels compiled for PTX by a driver of their own (see the
    module's note), shared by ``kdebug dump --target ptx`` and ``Session.ptx_of``."""

    def __init__(self, session_bus: E.EventBus, options: CompileOptions) -> None:
        self.bus = session_bus
        # the one "ptxas is missing" note on the session's bus
        self.driver = ptx_driver(arch_of(options.arch), options.strategy, notes=session_bus, options=options)
        self.target = self.driver.target
        self.snapshotted: set[int] = set()  # the session's jobs that have their ptx snapshots

    def compile(self, dispatcher, argtypes: tuple):
        """The job compiled for PTX (once: the pipeline's driver caches it)."""
        return self.driver.compile_kernel(dispatcher, argtypes, toplevel_kind(dispatcher))

    def ptx_of(self, dispatcher, argtypes: tuple) -> tuple[str, dict | None]:
        """The kernel's PTX and ptxas's report for its entry (None without ptxas)."""
        compiled = self.compile(dispatcher, argtypes)
        return entry_ptx(self.target, compiled.artifact, compiled.record.id)

    def add_snapshots(self, main: Driver, compiled) -> None:
        """``kdebug dump --target ptx``: after a toplevel compilation of the session's driver ``main``,
        its job and the deferred jobs it compiled get ``ptx`` and ``ptxas`` snapshots."""
        rec = compiled.record
        if rec.id in self.snapshotted:
            return
        self.snapshotted.add(rec.id)
        before = set(self.driver.records)
        try:
            side = self.compile(rec.job.function, rec.argtypes)
        except KdebugError as exc:
            self.bus.emit(E.Diagnostic(severity="warning", category="compile", job=rec.id,
                                       message=f"no PTX for {rec.name}: {exc.message}", text=str(exc)))
            return
        artifact = side.artifact
        self.snapshot(main, rec, artifact.ptx, artifact)
        # the deferred jobs of this compilation: their part of the module
        fresh = [r for i, r in self.driver.records.items() if i not in before and r is not side.record]
        for srec in fresh:
            for mrec in main.records.values():
                if mrec.id not in self.snapshotted and _same_job(mrec, srec) and mrec.state == "done":
                    self.snapshotted.add(mrec.id)
                    name = self.target.deferred_entry_name(srec)
                    self.snapshot(main, mrec, ptx_function_text(artifact.ptx, name) or artifact.ptx, artifact)

    def snapshot(self, main: Driver, rec, ptx: str, artifact: PtxArtifact) -> None:
        main.snapshot(rec, "ptx", ptx, "ptx")
        report = self.target.ptxas_report(artifact)  # dump shows the report: assemble now
        if report is not None:
            main.snapshot(rec, "ptxas", format_ptxas(report), "text")


def entry_ptx(target, artifact: PtxArtifact, job: int) -> tuple[str, dict | None]:
    """A PTX artifact's text and ptxas's report for job ``job``'s kernel entry (None without ptxas)."""
    report = target.ptxas_report(artifact) or {}  # the resource figures come from ptxas: assemble now
    entry = artifact.kernels.get(job)
    return artifact.ptx, report.get("functions", {}).get(entry) if report.get("ok") else None


def _same_job(a, b) -> bool:
    return (a.job.function == b.job.function and tuple(a.argtypes) == tuple(b.argtypes)  # == : grad(f) is new each time
            and a.kind == b.kind)
