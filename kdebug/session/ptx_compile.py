"""PTX without a GPU: numba's ``compile_ptx`` and ``kdebug dump --target ptx``.

Both assemble a compile-only driver for the PTX target, so they live here with
the rest of the session's composition, above the driver and the targets.
"""
from __future__ import annotations

from kdebug import events as E
from kdebug.driver.driver import Driver
from kdebug.errors import KdebugError
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.lang.dispatcher import Dispatcher
from kdebug.lang.signature import parse_signature
from kdebug.targets.ptx.arch import arch_of
from kdebug.targets.ptx.ptxas import format_ptxas, ptx_function_text
from kdebug.targets.ptx.target import PtxTarget


def ptx_driver(arch, strategy: str = "worklist", notes: E.EventBus | None = None, snapshots: bool = False) -> Driver:
    """A compile-only driver for the PTX target, with its own job table and event bus; the target's
    notes (ptxas is missing) go to ``notes``, else to that bus. Nobody watches that bus, so by
    default it records no snapshots (callers read the artifact)."""
    bus = E.EventBus()
    return Driver(bus, PtxTarget(arch=arch, bus=notes or bus), strategy, snapshots=snapshots)


def compile_ptx(pyfunc, sig, device: bool = False, cc=None, **_options):
    """numba.cuda.compile_ptx: ``(ptx, resty)`` for a Python function and a signature, no GPU needed."""
    py = pyfunc.py_func if isinstance(pyfunc, Dispatcher) else pyfunc
    signature = parse_signature(sig)
    if not device and signature.restype not in (None, T.void):
        raise TypeError(f"a kernel returns nothing: its signature must be void(...), not {signature}")
    dispatcher = Dispatcher(py, device=device)
    driver = ptx_driver(arch_of(cc))
    compiled = driver.compile_kernel(dispatcher, signature.argtypes, kind="device" if device else "kernel")
    return compiled.artifact["ptx"], compiled.record.typed.restype


def compile_ptx_for_current_device(pyfunc, sig, device: bool = False, **options):
    """As numba: for the current device's compute capability (sm_90 without a GPU)."""
    session = seam.current()
    cc = getattr(session.target, "arch", None) if session.backend == "gpu" else None
    return compile_ptx(pyfunc, sig, device=device, cc=cc, **options)


class PtxSidePipeline:
    """``kdebug dump --target ptx`` on the CPU backend: after each CPU toplevel compilation the same
    job is compiled for PTX by a private driver (its own job table and event bus, so the job tree
    shows every job once), and its PTX and ptxas report become ``ptx``/``ptxas`` snapshots of the
    CPU session's jobs."""

    def __init__(self, session, arch: str | None = None) -> None:
        self.session = session
        # the one "ptxas is missing" note goes to the user's session
        self.driver = ptx_driver(arch_of(arch), session.strategy, notes=session.bus)
        self.target = self.driver.target
        self.done: set[int] = set()

    def after_compile(self, compiled) -> None:
        main = self.session.driver
        rec = compiled.record
        if rec.id in self.done:
            return
        self.done.add(rec.id)
        before = set(self.driver.records)
        try:
            side = self.driver.compile_kernel(rec.job.function, rec.argtypes)
        except KdebugError as exc:
            self.session.bus.emit(E.Diagnostic(severity="warning", category="compile", job=rec.id,
                                               message=f"no PTX for {rec.name}: {exc.message}", text=str(exc)))
            return
        artifact = side.artifact
        self.snapshot(main, rec, artifact["ptx"], artifact)
        # the deferred jobs of this compilation: their part of the module
        fresh = [r for i, r in self.driver.records.items() if i not in before and r is not side.record]
        for srec in fresh:
            for mrec in main.records.values():
                if mrec.id not in self.done and _same_job(mrec, srec) and mrec.state == "done":
                    self.done.add(mrec.id)
                    name = self.target.deferred_entry_name(srec)
                    self.snapshot(main, mrec, ptx_function_text(artifact["ptx"], name) or artifact["ptx"], artifact)

    def snapshot(self, main, rec, ptx: str, artifact: dict) -> None:
        main.snapshot(rec, "ptx", ptx, "ptx")
        report = self.target.ptxas_report(artifact)  # dump shows the report: assemble now
        if report is not None:
            main.snapshot(rec, "ptxas", format_ptxas(report), "text")


def _same_job(a, b) -> bool:
    return (a.job.function == b.job.function and tuple(a.argtypes) == tuple(b.argtypes)  # == : grad(f) is new each time
            and a.kind == b.kind)

