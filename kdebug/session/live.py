"""The live debug session of this process: the composition root.

It assembles the event bus, the driver, the target and the runtime, and installs
itself as the seam ``lang`` reaches the session through (``kdebug/lang/seam.py``).
A script run as ``python script.py`` gets a default session (no subscribers);
``kdebug run`` configures one before the script starts.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
import time

import numpy as np

from kdebug import events as E
from kdebug import settings
from kdebug.driver import strategies
from kdebug.driver.driver import Driver
from kdebug.driver.job import toplevel_kind
from kdebug.errors import BackendUnavailable, KdebugError
from kdebug.lang import seam
from kdebug.lang.args import ArgHint
from kdebug.lang.host import DeviceNDArray
from kdebug.runtime.artifacts import PtxArtifact
from kdebug.runtime.cpu import CpuRuntime
from kdebug.runtime.gpu import GpuRuntime
from kdebug.runtime.launch_context import LaunchContext
from kdebug.runtime.sanitizers import Hazard
from kdebug.settings import CompileOptions, Recording, compile_options
from kdebug.targets.cpu import CpuTarget

BACKENDS = ("cpu", "gpu", "auto")
# argument classes a launch passes on unstaged (Session._stage_arguments)
_AS_GIVEN = frozenset((DeviceNDArray, float, int, bool, np.float32, np.float64, np.int32, np.int64))
PRINT_LIMIT = 10_000  # print() lines kept per launch
STRATEGIES = strategies.names()
BY_BACKEND = frozenset(("target", "arch", "ptx_per_job"))  # the options a session's backend decides


def gpu_available() -> tuple[bool, str]:
    """Whether pycuda imports and a CUDA device is present, and if not, why."""
    try:
        import pycuda.driver as drv  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means no GPU backend
        return False, f"pycuda is not importable ({exc.__class__.__name__}: {exc})"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return False, "pycuda found no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return False, f"the CUDA driver failed to start ({exc})"
    return True, ""


def session_options(recording: Recording | None = None, **given) -> tuple[CompileOptions, Recording]:
    """The two values of ``Session``'s keywords: ``given`` names ``Recording``'s fields (``snapshots``,
    ``passes_on_demand``) and ``CompileOptions``' (``strategy``, ``memcheck``, ``racecheck``,
    ``initcheck``, ``lockstep``, ``regions``, ``narrow``, ``tiered``, ``host_cpu``, ``lineinfo``,
    ``cut_kernel``, ``pass_limit``...; None or left out: the environment's, ``settings.compile_options``).
    ``snapshots``: print every phase's IR and the host assembly for whoever looks (the TUI, dump, a
    trace); a session nobody watches turns it off and compiles faster. ``passes_on_demand``: the
    optimisation pipelines keep what a replay needs instead of recording every pass (kdebug/passes.py;
    the live TUI's default). What the other options do: ``settings.CompileOptions``,
    docs/internals/options.md."""
    recorded = {f.name: given.pop(f.name) for f in dataclasses.fields(Recording) if f.name in given}
    if recorded and recording is not None:
        raise TypeError(f"Session: give recording= or {', '.join(recorded)}, not both")
    unknown = set(given) - {f.name for f in dataclasses.fields(CompileOptions)} | (set(given) & BY_BACKEND)
    if unknown:
        raise TypeError(f"Session: unknown option(s) {', '.join(sorted(unknown))}")
    recording = recording if recording is not None else Recording(**recorded)
    return compile_options(recording, **given), recording


class Session:
    def __init__(self, backend: str = "auto", *, options: CompileOptions | None = None,
                 recording: Recording | None = None, bus: E.EventBus | None = None, emit_ptx: bool = False,
                 ptx_arch: str | None = None, **given) -> None:
        """A debug session on ``backend`` (cpu, gpu, auto). ``options``: what its jobs are compiled with
        (``settings.compile_options`` made them; the session sets only what its backend decides: the
        target, the GPU architecture, PTX per job), passed whole to the driver and the target;
        ``recording``: what is recorded for whoever looks, no part of a job's key. A script or a test may
        give the options' fields as keywords instead (``Session(backend="cpu", memcheck=False,
        snapshots=False)``: ``session_options`` builds the two values). ``emit_ptx``: on the CPU backend,
        every job's PTX and ptxas report beside it (on the gpu backend: the PTX target's, per job);
        ``ptx_arch``: that PTX's architecture."""
        if options is None:
            options, recording = session_options(recording, **given)
        elif given:
            raise TypeError(f"Session: give options= or {', '.join(sorted(given))}, not both")
        recording = recording if recording is not None else Recording()
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}")
        if options.strategy not in strategies.Choices(STRATEGIES):  # a built-in, or a user's FILE.py:Class (loaded later)
            raise ValueError(f"strategy must be one of {STRATEGIES}, or FILE.py:Class or MODULE:Class")
        self.bus = bus or E.EventBus()
        self.requested_backend = backend
        self.backend = self._resolve_backend(backend)
        self.strategy = options.strategy
        self._shuffle_seed: int | None = None  # --shuffle-threads[=SEED] (CPU backend)
        self.runtime = GpuRuntime() if self.backend == "gpu" else CpuRuntime()
        self.recording = recording
        # what the backend decides of the options; the target and its stages follow from them
        # (Driver.configure, make_target)
        gpu = self.backend == "gpu"
        self.options = options.replace(target="ptx" if gpu else "cpu",
                                       arch=(ptx_arch or self.runtime.arch) if gpu else ptx_arch,
                                       ptx_per_job=emit_ptx and gpu)
        self.hazards: list = []  # what racecheck and initcheck found, launch after launch
        self.driver = Driver(self.bus, self.make_target, self.options, recording)
        # emit_ptx on the CPU backend: every job's PTX and ptxas report beside it, launches unchanged
        self.emit_ptx = emit_ptx and self.backend != "gpu"
        self.ptx_arch = ptx_arch
        self._ptx_pipeline = None  # the CPU backend's PTX target (a PtxPipeline), built on first use
        self._launches = 0
        self._launch_lock = threading.Lock()
        # (dispatcher, id of each argument type) -> Session._launch_plan's plan (the CPU backend's)
        self._plans: dict | None = {} if self.backend == "cpu" else None
        self.failed = False
        self.kernel_print_stdout = True  # False under the TUI, which shows the KernelOutput events

    @staticmethod
    def _resolve_backend(backend: str) -> str:
        if backend == "cpu":
            return "cpu"
        ok, why = gpu_available()
        if backend == "gpu" and not ok:
            raise BackendUnavailable(f"the gpu backend needs pycuda and a CUDA device: {why}",
                                     hint="install kdebug[gpu] where an NVIDIA driver and GPU are present, "
                                          "or run with --backend cpu")
        return "gpu" if ok else "cpu"

    def make_target(self, options: CompileOptions):
        """The target of a set of compile options (the driver asks once per set)."""
        if options.target == "ptx":
            # kept lazy for start-up time: a CPU session loads the PTX target only when it shows PTX
            from kdebug.targets.ptx.target import PtxTarget
            # ptx_per_job (kdebug dump --target ptx): the target's ptx stage gives every job its PTX
            return PtxTarget(options, loader=self.runtime.load_module, bus=self.bus)
        return CpuTarget(options, self.recording)

    @property
    def target(self):
        """The target of the session's compile options now."""
        return self.driver.target

    # the checks compiled into kernels: read from the options (set_options makes new ones)
    memcheck = property(lambda self: self.options.memcheck)
    racecheck = property(lambda self: self.options.racecheck)
    initcheck = property(lambda self: self.options.initcheck)
    lockstep = property(lambda self: self.options.lockstep)
    regions = property(lambda self: self.options.regions)

    # ---- compilation ---------------------------------------------------------------
    def compile_kernel(self, dispatcher, argtypes: tuple):
        try:
            compiled = self.driver.compile_kernel(dispatcher, argtypes, toplevel_kind(dispatcher))
        except KdebugError:
            self.failed = True
            raise
        if self.emit_ptx:
            self.ptx_pipeline().add_snapshots(self.driver, compiled)
        return compiled

    def ptx_pipeline(self):
        """PTX beside the CPU backend's run: a second target's pipeline (kdebug/session/ptx_compile.py),
        one per session, shared by ``kdebug dump --target ptx`` and ``ptx_of``."""
        if self._ptx_pipeline is None:
            # kept lazy for start-up time: the PTX target loads with the first request for PTX
            from kdebug.session.ptx_compile import PtxPipeline
            self._ptx_pipeline = PtxPipeline(self.bus, self.options.replace(arch=self.ptx_arch))
        return self._ptx_pipeline

    def ptx_of(self, dispatcher, argtypes: tuple) -> tuple[str, dict | None]:
        """The PTX of a kernel and ptxas's report for its entry: the GPU's module on the gpu backend, else the
        session's PTX pipeline's (each kernel is compiled for PTX once)."""
        compiled = self.compile_kernel(dispatcher, argtypes)
        if isinstance(compiled.artifact, PtxArtifact):
            # kept lazy for start-up time (the gpu backend's PTX target is loaded already)
            from kdebug.session.ptx_compile import entry_ptx
            return entry_ptx(self.target, compiled.artifact, compiled.record.id)
        return self.ptx_pipeline().ptx_of(dispatcher, argtypes)

    def warn(self, message: str, loc=None, category: str = "numba") -> None:
        text = f"{loc}: warning: {message}" if loc else f"warning: {message}"
        self.bus.emit(E.Diagnostic(severity="warning", message=message, category=category,
                                   location=loc.to_json() if loc else None, text=text))

    def gpu_runtime(self):
        """The GPU runtime when kernels run on a GPU, else None (device memory is host memory)."""
        return self.runtime if self.backend == "gpu" else None

    def job_name(self, job_id: int) -> str:
        return self.driver.records[job_id].name

    def compiled_for(self, dispatcher) -> dict:
        found = {c.record.argtypes: c for c in self.driver.cache.values() if c.record.job.function is dispatcher}
        # a second dispatcher of the same function and code-changing options (cuda.jit(f) twice) shares the
        # first one's compiled job: the launch cache, keyed by dispatcher, has it
        found.update((key[1], c) for key, c in self.driver.launch_cache.items() if key[0] is dispatcher)
        return found

    # ---- launches ---------------------------------------------------------------------
    def launch(self, dispatcher, args, argtypes, grid, block, shared) -> None:
        listening = self.bus.has_subscribers  # nobody listening (a plain python run): no event objects
        plan = None
        if not listening and self._plans is not None and not self.emit_ptx:  # emit_ptx: compile_kernel adds PTX
            plan = self._launch_plan(dispatcher, argtypes)
        compiled = self.compile_kernel(dispatcher, argtypes) if plan is None else plan[1]
        lid = self.next_launch_id()
        if listening:
            self.bus.emit(E.LaunchStarted(launch=lid, job=compiled.record.id, name=dispatcher.__name__,
                                          grid=list(grid), block=list(block), backend=self.backend))
        t0 = time.perf_counter()
        copy_back = ()
        error = foreign = None
        found = ()
        # this launch's own: device-side launches report to this session, its prints and their errors
        # stay in it (kdebug/runtime/launch_context.py)
        context = LaunchContext(self, lid)
        try:
            staged, copy_back = self._stage_arguments(args)
            found = self.runtime.launch(compiled, staged, argtypes, grid, block, shared, shuffle=self._shuffle_seed,
                                        context=context, plan=None if plan is None else plan[2])
        except KdebugError as exc:
            error = exc
        except BaseException as exc:  # noqa: BLE001 - not kdebug's own (e.g. KeyboardInterrupt): still a failed launch
            foreign = exc
        warnings = ()
        if found:
            warnings = [w for w in found if not isinstance(w, Hazard)]
            self._report_hazards([h for h in found if isinstance(h, Hazard)], compiled.record.id)
        if error is None and context.errors:
            error = context.errors[0]
        for dst, src in copy_back:
            if isinstance(dst, np.void):  # a record argument: its fields, as numba copies it back
                for name in dst.dtype.names:
                    dst[name] = src[0][name]
            else:
                np.copyto(dst, src)
        if context.prints:
            self._flush_prints(lid, dispatcher.__name__, context)
        if listening or self.bus.has_subscribers:
            dt = time.perf_counter() - t0
            failure = str(error) if error else f"{type(foreign).__name__}: {foreign}" if foreign else None
            self.bus.emit(E.LaunchFinished(launch=lid, name=dispatcher.__name__, duration=dt, error=failure))
        for w in warnings:  # e.g. a barrier in a branch released by exited threads (runtime/memcheck.py)
            self.bus.emit(E.Diagnostic(severity="warning", message=w.message, category=w.category,
                                       job=compiled.record.id, location=w.loc.to_json() if w.loc else None,
                                       text=str(w)))
        if foreign is not None:
            self.failed = True
            raise foreign
        if error is not None:
            self.failed = True
            self.bus.emit(E.Diagnostic(severity="error", message=error.message, category=getattr(error, "category", "launch"),
                                       job=compiled.record.id, location=error.loc.to_json() if error.loc else None,
                                       text=str(error)))
            error.reported = True
            user = getattr(error, "user_exception", None)
            if user is not None:  # a debug=True kernel's exception: numba raises it at the launch
                raise user from None
            raise error

    def _launch_plan(self, dispatcher, argtypes) -> tuple:
        """(the driver's launch cache, the compiled kernel, the runtime's KernelPlan) of a kernel and its
        argument types, kept for the next launch. A launch nobody listens to takes it instead of asking
        the driver (whose launch cache hashes every argument type) and the runtime: its key holds the
        types by identity (a device array and a scalar class keep their type objects: see
        ``dispatcher.quick_type``), and the plan holds the types, so no id is reused while it is kept.
        The driver's cache for the session's compile options (a new dict when ``set_options`` changes
        them) never drops or replaces an entry: while it is the same dict, the compiled kernel is."""
        key = (dispatcher, *map(id, argtypes))
        cache = self.driver.launch_cache
        plan = self._plans.get(key)
        if plan is None or plan[0] is not cache:
            compiled = self.compile_kernel(dispatcher, argtypes)
            if len(self._plans) >= 256:
                self._plans.clear()
            plan = self._plans[key] = (cache, compiled, self.runtime.plan(compiled, argtypes), argtypes)
        return plan

    def _flush_prints(self, lid: int, name: str, context: LaunchContext) -> None:
        """The launch's print() lines to stdout in thread order, at most PRINT_LIMIT, then a note."""
        if self.backend != "cpu" or not context.prints:
            return  # the GPU's printf buffer is flushed by the CUDA driver; most launches print nothing
        lines = context.take_prints()
        if not lines:
            return
        shown, dropped = lines[:PRINT_LIMIT], max(0, len(lines) - PRINT_LIMIT)
        if self.kernel_print_stdout:
            out = sys.stdout
            out.write("".join(text + "\n" for _, _, text in shown))
            if dropped:
                out.write(f"kdebug: {dropped} more line(s) printed by {name} (launch {lid}) not shown: "
                          f"the limit is {PRINT_LIMIT} lines per launch\n")
            out.flush()
        self.bus.emit(E.KernelOutput(launch=lid, name=name, lines=[list(x) for x in shown], dropped=dropped))

    def _report_hazards(self, hazards, job: int) -> None:
        """Each hazard as an error diagnostic; the run fails, the script goes on (as under compute-sanitizer)."""
        for h in hazards:
            self.hazards.append(h)
            self.failed = True
            self.bus.emit(E.Diagnostic(severity="error", message=h.message, category=h.sanitizer, job=job,
                                       location=h.first.loc.to_json(), text=h.text, sanitizer=h.sanitizer,
                                       hazard=h.to_json()))
            if not self.bus.has_subscribers:  # a plain python run: nobody else shows it
                print(h.text, file=sys.stderr)

    @property
    def sanitizers(self) -> list[str]:
        """The sanitizers this session runs (synccheck always, on the CPU backend)."""
        on = {"memcheck": self.memcheck, "synccheck": True, "racecheck": self.racecheck,
              "initcheck": self.initcheck}
        return [name for name, active in on.items() if active]

    @staticmethod
    def _stage_arguments(args):
        """numpy arrays are copied to the device and back, as numba does; on the CPU, in place, strided ones
        (typed 'A' or 'F', as numba types them) with their strides; read-only ones as a copy."""
        if _AS_GIVEN.issuperset(map(type, args)):  # device arrays and plain scalars: passed as they are
            return args, ()
        staged, copy_back = [], []
        for a in args:
            if isinstance(a, ArgHint):  # cuda.In(a): a private copy; Out/InOut: the value itself
                a = a.staged()
            if isinstance(a, np.void) and a.dtype.fields:  # a record scalar: kernels write it by reference
                tmp = np.empty(1, dtype=a.dtype)
                tmp[0] = a
                staged.append(tmp)
                copy_back.append((a, tmp))
            elif isinstance(a, np.ndarray) and not a.flags.writeable:
                staged.append(np.array(a))  # kernels cannot write it (a read-only type): a private copy
            else:
                staged.append(a)
        return staged, copy_back

    def set_options(self, memcheck: bool | None = None, shuffle_threads=False, racecheck: bool | None = None,
                    initcheck: bool | None = None, lockstep: bool | None = None,
                    regions: bool | None = None, narrow: bool | None = None) -> None:
        """Change the checks compiled into kernels (None: unchanged) or the shuffle seed (None: off; False:
        unchanged): the one signature of ``kdebug.set_options`` (which forwards here through the seam,
        kdebug/lang/seam.py). New compile options give new job keys: a kernel launched next is a new job compiled with them (one compiled with the
        old options stays in the cache under its own key); no target is changed."""
        changes = {name: bool(value) for name, value in (("memcheck", memcheck), ("racecheck", racecheck),
                                                         ("initcheck", initcheck), ("lockstep", lockstep),
                                                         ("regions", regions), ("narrow", narrow))
                   if value is not None}
        if changes:
            self.configure(self.options.replace(**changes))
        if shuffle_threads is not False:
            self.shuffle_seed = None if shuffle_threads is None else int(shuffle_threads)

    def configure(self, options: CompileOptions) -> None:
        """Compile from now on with ``options`` (the driver takes them under its lock: never in the
        middle of a compilation)."""
        if options != self.options:
            self.options = options
            self.driver.configure(options)

    @property
    def shuffle_seed(self) -> int | None:
        """--shuffle-threads' seed (None: threads run in order)."""
        return self._shuffle_seed

    @shuffle_seed.setter
    def shuffle_seed(self, seed: int | None) -> None:
        self._shuffle_seed = seed
        if seed is not None and self.backend != "gpu" and not self.options.shuffle:
            # kernels compiled so far have no shuffled path: those launched from now on get one
            self.configure(self.options.replace(shuffle=True))

    def next_launch_id(self) -> int:
        with self._launch_lock:
            self._launches += 1
            return self._launches


def default_session() -> Session:
    """A plain ``python script.py``'s session: $KDEBUG_BACKEND (default auto). Nobody watches its
    events, so it records no snapshots."""
    backend = settings.variable("KDEBUG_BACKEND") or "auto"
    if backend not in BACKENDS:
        raise ValueError(f"KDEBUG_BACKEND={backend!r}: the backend must be one of {', '.join(BACKENDS)}")
    return Session(backend=backend, snapshots=False)


def get_session() -> Session:
    """The installed session, created on first use."""
    return seam.current()


def set_session(session: Session | None) -> None:
    """Install ``session`` (None: the next use creates a default one)."""
    seam.install(session)
