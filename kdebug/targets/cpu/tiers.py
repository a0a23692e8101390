"""Tiered compiles on the CPU target: a kernel runs before its optimised code is ready.

Where nobody looks at the code (a session without snapshots: a plain ``python script.py``, a headless
run without ``--trace``), the compile makes *tier 0*: optimize runs LLVM's -O1 on the kernel instead of
-O2 (three passes where the module has no loop and no barrier: ``straight_line``), and emit runs the -O0 pipeline over the launcher (the always-inliner and the coroutine lowering,
nothing else) and the fast instruction selector. For saxpy that is runnable machine code ~20 ms sooner
than the optimised code (-O2 on the kernel, -O2 again over the launcher with the kernel inlined and
vectorised, full code generation), running 2-3x slower; matmul_tiled's tier 0 runs ~1.7x slower.
``optimize`` keeps a bitcode copy of the module it got and finish notes what it linked (a ``Plan``, kept
in the compilation's ``CompilationState``, which the driver hands to those hooks); ``load`` loads tier 0
and holds the plan for the target's ``Worker``. Tier 1 is asked for when the module's kernels are launched
a second time, by a launch that waits for it, or by whoever waits for it (``inspect_llvm``, the tests'
and benchmarks' ``wait_all``): a kernel launched once, as in most short scripts and tests, never pays for
it (it costs what the untiered compile does). The worker, one background thread, compiles *tier 1* — the same
steps the untiered compile runs, so the same code — in an LLVM context and target machine of its own,
loads it under new names (``<entry>.grid.tier1``) and swaps the launch addresses in one assignment;
the jobs' after-finish copies (``inspect_llvm``) become tier 1's then. A launch takes the best tier
ready; a launch of at least ``WAIT_THREADS`` threads waits for tier 1.

llvmlite serialises every call into LLVM under one process-wide lock; the background thread makes its
two long calls (the pass pipeline, code generation) on the raw ctypes functions, which release the
GIL and take no lock, so a foreground compile never waits for them. Everything else it does is short
and goes through llvmlite's locked calls. A pipeline that records its passes (pass_record.py) sets
process-wide print options: ``pass_record.GATE`` keeps it and the background's LLVM work apart.

A failed tier 1 is never lost: it is kept (``Tiers.error``) and reported as a RuntimeWarning, and
the kernel keeps running tier 0. At interpreter exit each worker's thread finishes the compile in
progress (a fraction of a second) and drops the rest; a worker whose target is gone compiles what it
has queued and ends. ``KDEBUG_TIERED=0`` turns tiers off (emit compiles
tier 1 synchronously, as a session with snapshots always does).
"""
from __future__ import annotations

import collections
import ctypes
import dataclasses
import os
import threading
import time
import warnings
import weakref
from typing import Callable

import llvmlite.binding as llvm
import llvmlite.binding.ffi as ffi
from llvmlite import ir

from kdebug.targets import pass_record
from kdebug.targets.base import tuning_options
from kdebug.targets.cpu.forms.regions import bounds as region_bounds
from kdebug.targets.cpu.machines import new_machine

TIER0_SPEED_LEVEL = 1  # optimize's pipeline in a tiered compile (tier 1 runs the session's, -O2)
# ... and these passes instead where the module has no loop and no barrier (``straight_line``): what -O1 adds
# there (its loop passes, the inliner's walk of the call graph, the fixed cost of some sixty passes a
# function) buys tier 0 nothing. Measured (benchmarks/README.md): saxpy's tier 0 ran as fast either way
# (2^16 float32, 0.194 ms) and its warm compile to runnable code took 10.0 ms instead of 11.7. A kernel with
# loops keeps -O1: matmul_tiled's tier 0 ran 3x slower with these passes alone (128x128: 12.6 against 4.3 ms).
TIER0_STRAIGHT_PASSES = ("sroa", "instruction_combine", "simplify_cfg")
TIER1_SUFFIX = ".tier1"
# Launches of at least this many threads wait for tier 1. Measured (one core, process CPU time): saxpy
# runs ~1.4 ns a thread slower on tier 0 with ~35 ms of tier 1 left to compile (break-even ~2^24
# threads); matmul_tiled (barriers) ~0.2 us a thread slower with ~175 ms left (break-even ~2^20).
WAIT_THREADS = 1 << 20


def _raw(name: str):
    """llvmlite's ctypes function ``name`` without its process-wide lock (its argtypes are set)."""
    return getattr(ffi.lib, name)._cfn


_machines: dict = {}
_machines_lock = threading.Lock()


def machine(opt: int, host_cpu: str = ""):
    """A target machine for ``host_cpu`` (machines.py) at code-generation level ``opt`` (0: the fast
    instruction selector, tier 0's, used in the foreground through llvmlite's lock; tier 1's are each
    worker's own, ``Worker.machine``). Kept for the process's lifetime: code and modules made with them
    may outlive any thread."""
    with _machines_lock:
        tm = _machines.get((opt, host_cpu))
        if tm is None:
            tm = _machines[(opt, host_cpu)] = new_machine(host_cpu, opt)
        return tm


_KNOWN_TERMINATORS = (ir.Branch, ir.ConditionalBranch, ir.SwitchInstr, ir.Ret, ir.Unreachable)


def straight_line(module: ir.Module) -> bool:
    """Whether no function of ``module`` (llvmlite.ir, as lowered) has a cycle in its control flow. A block
    without a terminator, or with one this does not follow (indirectbr, invoke...), counts as a cycle."""
    for fn in module.functions:
        succ: dict = {}
        for bb in fn.blocks:
            term = bb.terminator
            if not isinstance(term, _KNOWN_TERMINATORS):
                return False
            succ[id(bb)] = [term.default] + [b for _, b in term.cases] if isinstance(term, ir.SwitchInstr) \
                else [op for op in term.operands if isinstance(op, ir.Block)]
        state: dict = {}  # id(block) -> 1 on the path being walked, 2 done
        for first in fn.blocks:  # depth first, without recursion; an edge back onto the path is a cycle
            if id(first) in state:
                continue
            state[id(first)] = 1
            path = [(first, iter(succ[id(first)]))]
            while path:
                bb, rest = path[-1]
                nxt = next(rest, None)
                if nxt is None:
                    state[id(bb)] = 2
                    path.pop()
                elif state.get(id(nxt)) == 1:
                    return False
                elif id(nxt) not in state:
                    state[id(nxt)] = 1
                    path.append((nxt, iter(succ[id(nxt)])))
    return True


def tierable(mod) -> bool:
    """Tier 1 is loaded next to tier 0 under new function names: a module whose own global variables
    other modules could see would get two copies of them, so it is compiled at once instead."""
    return all(gv.is_declaration or gv.linkage in (llvm.Linkage.internal, llvm.Linkage.private)
               for gv in mod.global_variables)


@dataclasses.dataclass
class Steps:
    """The CPU target's own steps that tier 1 repeats (target.py): how a pipeline runs, and finish's linking."""
    optimise: Callable  # (target machine, module, speed level, unroll, interleave) -> None
    link_launcher: Callable  # (module, entry, launcher module) -> None
    name_entry: Callable  # (cached launcher module, entry) -> None
    internalise: Callable  # (module, names kept) -> None
    emit_unroll: bool
    emit_interleave: bool


@dataclasses.dataclass
class Plan:
    """What tier 1 compiles: the module as optimize got it, and what finish did to it."""
    source: bytes  # bitcode of the module before optimize
    name: str  # its name (bitcode does not keep it)
    speed_level: int
    host_cpu: str = ""  # the CPU model of the code (machines.py)
    # (entry, bitcode of its cached launcher, or a function that gives it: target.py's finish_ir)
    launchers: list = dataclasses.field(default_factory=list)
    keep: set = dataclasses.field(default_factory=set)  # what finish_module left visible
    bounds: list = dataclasses.field(default_factory=list)  # region_bounds.Facts of its region-form kernels

    def finished_module(self, context, tm, steps: Steps):
        """The module after optimize and finish, as the untiered compile has it, in ``context``."""
        mod = llvm.parse_bitcode(self.source, context=context)
        mod.name = self.name
        steps.optimise(tm, mod, self.speed_level, True, True)  # optimize's pipeline (base.run_pipeline's defaults)
        for entry, bitcode in self.launchers:
            launcher = llvm.parse_bitcode(bitcode() if callable(bitcode) else bitcode, context=context)
            steps.name_entry(launcher, entry)
            steps.link_launcher(mod, entry, launcher)
        for facts in self.bounds:  # made from this tier's own optimised step functions, as untiered
            region_bounds.link_bounds(mod, facts, context)
        steps.internalise(mod, self.keep)
        return mod


@dataclasses.dataclass
class CompilationState:
    """The CPU target's record of one toplevel compilation (``Target.compilation_state``), which the driver
    keeps with the compilation and hands to optimize, finish_ir, finish_module and emit: tier 1's plan,
    made by optimize where the compile is tiered, filled in by finish, taken by emit. A failed compile
    drops it with the compilation, and two compilations (two threads, two targets) never share one."""
    plan: Plan | None = None


class Tiers:
    """The launch addresses of one compiled module's kernels, tier 0 until tier 1 is loaded."""

    def __init__(self, plan: Plan, kernels: dict, steps: Steps, load) -> None:
        self.plan = plan  # freed once compiled
        self.kernels = kernels  # job id -> the launcher's name
        self._steps = steps
        self._load = load  # (object bytes, names) -> {name: address}
        self._records: list = []  # the jobs whose inspect_llvm copy tier 1 replaces
        self.tier0: dict = {}
        self.tier1: dict | None = None
        self.best: dict = {}  # what launches use: tier0, then tier1 (one assignment swaps them)
        self.error: BaseException | None = None
        self.ready = threading.Event()  # tier 1 loaded, or failed, or given up
        self.submitted = self.finished = None  # perf_counter times
        self._worker: Worker | None = None  # compiles tier 1 once it is asked for (``_submit``)
        self._launches = 0
        self.cpu_s = None  # the background thread's CPU time for tier 1

    @property
    def tier(self) -> int:
        return 1 if self.best is self.tier1 else 0

    def address(self, job_id: int, threads: int) -> int:
        """The launch address of ``job_id``'s launcher for a launch of ``threads`` threads. A module's second
        launch asks for tier 1 (a kernel launched once never pays for it), as does a launch that waits for it."""
        if self.submitted is None:
            self._launches += 1
            if self._launches > 1 or threads >= WAIT_THREADS:
                self._submit()
        if threads >= WAIT_THREADS and not self.ready.is_set():
            self.ready.wait()
        return self.best[job_id]

    def wait(self, timeout: float | None = None) -> bool:
        """Until tier 1 is loaded (True) or failed (False); asked for now if no launch has yet."""
        self._submit()
        self.ready.wait(timeout)
        return self.tier1 is not None

    def use(self, tier: int) -> None:
        """Benchmarks and tests: launch ``tier``'s code from now on (after tier 1 is done, so that its
        swap does not undo the choice; tier 0 where tier 1 failed)."""
        self.wait()
        self.best = self.tier1 if tier == 1 and self.tier1 is not None else self.tier0

    def start(self, tier0: dict, records, worker: "Worker") -> None:
        """load: tier 0 runs from now on; ``worker`` (the compiling target's) compiles tier 1 when it is asked
        for: at the module's second launch, a launch that waits for it, or a ``wait`` (inspect_llvm, the
        tests' and benchmarks' ``wait_all``). A script that launches each kernel once (most tests, a short
        script) never compiles tier 1: it cost as much CPU as the untiered compile, on the other core."""
        self.tier0 = self.best = tier0
        self._records = list(records)
        self._worker = worker
        worker.hold(self)

    def _submit(self) -> None:
        worker = self._worker
        if worker is not None and worker.take(self):  # only the first asking thread submits
            self.submitted = time.perf_counter()
            worker.submit(self)

    def compile(self, worker: "Worker") -> None:
        """Tier 1, on ``worker``'s thread."""
        c = time.thread_time()
        try:
            tm, steps = worker.machine(self.plan.host_cpu), self._steps
            with pass_record.GATE.background():
                mod = self.plan.finished_module(worker.context(), tm, steps)
                try:
                    after_finish = mod.as_bitcode()  # what inspect_llvm shows once tier 1 runs
                    for fn in mod.functions:  # tier 0's symbols stay; tier 1's are its own
                        if not fn.is_declaration and fn.linkage == llvm.Linkage.external:
                            fn.name = fn.name + TIER1_SUFFIX
                    steps.optimise(tm, mod, self.plan.speed_level, steps.emit_unroll, steps.emit_interleave)
                    obj = _emit_object(tm, mod)
                finally:
                    mod.close()  # now, on this thread: never later from a garbage collection elsewhere
            addresses = self._load(obj, [name + TIER1_SUFFIX for name in self.kernels.values()])
            self.tier1 = {jid: addresses[name + TIER1_SUFFIX] for jid, name in self.kernels.items()}
            self.best = self.tier1
            self._show(after_finish)
        except BaseException as exc:  # noqa: BLE001 - reported, and tier 0 keeps running
            self.fail(exc)
        finally:
            self.plan = None
            self._records = []
            self.cpu_s = time.thread_time() - c
            self.finished = time.perf_counter()
            self.ready.set()

    def _show(self, bitcode: bytes) -> None:
        """The jobs' after-finish copies (inspect_llvm) become tier 1's, in LLVM's global context."""
        records = [r for r in self._records if r.after_finish is not None and r.after_finish[0] is not None]
        if records:
            mod = llvm.parse_bitcode(bitcode)
            mod.name = self.plan.name
            for r in records:
                r.after_finish = (mod, r.after_finish[1])

    def fail(self, exc: BaseException) -> None:
        self.error = exc
        names = ", ".join(sorted(n.removesuffix(".grid") for n in self.kernels.values()))
        warnings.warn(f"kdebug: the optimised code of {names} did not compile ({type(exc).__name__}: {exc}); "
                      "the kernel keeps running its unoptimised code (KDEBUG_TIERED=0 compiles the "
                      "optimised code before the first launch)", RuntimeWarning, stacklevel=1)

def _emit_object(tm, mod) -> bytes:
    """``tm.emit_object(mod)`` without llvmlite's lock."""
    with ffi.OutputString() as err:
        mb = _raw("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
        if not mb:
            raise RuntimeError(str(err))
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(mb), ffi.lib.LLVMPY_GetBufferSize(mb))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(mb)


def optimise_unlocked(tm, mod, speed_level: int, unroll: bool, interleave: bool) -> None:
    """base.run_pipeline's pipeline (unrecorded), its run without llvmlite's lock."""
    pto = tuning_options(speed_level, unroll, interleave)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        _raw("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    finally:
        mpm.close()
        pb.close()


# ---- the background thread ------------------------------------------------------------------------
class Worker:
    """The background thread that compiles one CPU target's tier 1 (``CpuTarget.tier_worker``: made at the
    target's first tiered load, its thread at the first compile queued), waiting while nothing is queued.
    (A thread started for each compile cost every compile ~1-4 ms: ``Thread.start`` waits until the new
    thread runs, and on a busy machine that waits for a time slice.) Its thread ends at interpreter exit
    (``close``: the compile in progress finishes, the queued ones are dropped) or once its target is gone
    (``retire``: what is queued is compiled first). It has its own LLVM context and target machines: no
    other thread uses them."""

    def __init__(self, owner=None) -> None:
        self._cv = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self._running: Tiers | None = None  # the compile the thread is on
        self._closing = False  # interpreter exit: drop what is queued
        self._retiring = False  # the owner is gone: compile what is queued, then end
        self._forking = False  # a fork is about to happen: no compile starts until it has (_before_fork)
        self._context = None  # this thread's LLVM context (LLVM's global one is the foreground's)
        self._machines: dict = {}  # host CPU -> tier 1's target machine (code generation level 3)
        self._held: weakref.WeakSet = weakref.WeakSet()  # loaded, tier 1 not asked for yet (Tiers.start)
        if owner is not None:
            weakref.finalize(owner, self.retire).atexit = False  # at exit, _close ends it
        with _workers_lock:
            _workers.add(self)

    @property
    def thread(self) -> threading.Thread | None:
        """The thread compiling, or waiting for, tier 1 (None before the first compile, and after it ended)."""
        return self._thread

    def context(self):
        """The LLVM context tier 1 is parsed in, for the process's lifetime (one thread uses it)."""
        if self._context is None:
            self._context = llvm.create_context()
        return self._context

    def machine(self, host_cpu: str = ""):
        """Tier 1's target machine for ``host_cpu`` (machines.py): this thread's alone. Kept for the
        worker's lifetime: code made with it may outlive the thread."""
        tm = self._machines.get(host_cpu)
        if tm is None:
            tm = self._machines[host_cpu] = new_machine(host_cpu, 3)
        return tm

    def hold(self, t: Tiers) -> None:
        """``t``'s tier 1, until something asks for it (``take``, then ``submit``)."""
        with self._cv:
            self._held.add(t)

    def take(self, t: Tiers) -> bool:
        """True once for a held ``t``: the caller submits it."""
        with self._cv:
            if t not in self._held:
                return False
            self._held.discard(t)
            return True

    def submit(self, t: Tiers) -> None:
        with self._cv:
            if self._closing:
                t.fail(RuntimeError("the interpreter is exiting"))
                t.ready.set()
                return
            self._queue.append(t)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="kdebug-tier1", daemon=False)
                self._thread.start()
            else:
                self._cv.notify_all()

    def _work(self) -> None:
        dropped: list = []
        try:
            while True:
                with self._cv:
                    while (self._forking or not self._queue) and not self._closing and not self._retiring:
                        self._cv.wait()
                    if self._closing:
                        dropped = list(self._queue)
                        self._queue.clear()
                        break
                    if not self._queue:  # retired, and nothing left
                        break
                    t = self._running = self._queue.popleft()
                try:
                    t.compile(self)
                finally:
                    with self._cv:
                        self._running = None
                        self._cv.notify_all()  # wait_all, and a fork waiting for the compile in progress, may go on
        finally:
            with self._cv:
                if self._thread is threading.current_thread():
                    self._thread = None
                self._cv.notify_all()
        for t in dropped:  # at exit: tier 0 is what ran, and nothing will run any more
            t.ready.set()

    def pending(self) -> int:
        """Tier-1 compiles queued or running."""
        with self._cv:
            return len(self._queue) + (self._running is not None)

    def wait_all(self, timeout: float | None = None) -> bool:
        """Every tier 1 held is asked for; then until nothing is queued or compiling."""
        with self._cv:
            held = list(self._held)
        for t in held:
            t._submit()
        with self._cv:
            return self._cv.wait_for(lambda: (not self._queue and self._running is None) or self._thread is None,
                                     timeout)

    def close(self) -> None:
        """Interpreter exit: the compile in progress finishes, the queued ones are dropped."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()  # the thread, idle or between compiles, ends

    def retire(self) -> None:
        """The owning target is gone: the thread compiles what is queued, then ends."""
        with self._cv:
            self._retiring = True
            self._cv.notify_all()

    def _before_fork(self) -> None:
        with self._cv:
            self._forking = True
            deadline = time.monotonic() + 60.0
            while self._running is not None and time.monotonic() < deadline:
                self._cv.wait(1.0)

    def _after_fork_in_parent(self) -> None:
        with self._cv:
            self._forking = False
            self._cv.notify_all()

    def _after_fork_in_child(self) -> None:
        unfinished = ([self._running] if self._running is not None else []) + list(self._queue)
        self._cv, self._queue, self._thread, self._running, self._forking = (
            threading.Condition(), collections.deque(), None, None, False)
        # the parent's thread may have been in the middle of using them
        self._context, self._machines = None, {}
        for t in unfinished:
            self.submit(t)


# The live workers, for the process's events that reach all of them: interpreter exit (their threads are
# not daemons), a fork, and the tests' and benchmarks' wait_all. The targets own them.
_workers: weakref.WeakSet = weakref.WeakSet()
_workers_lock = threading.Lock()


def _all() -> list[Worker]:
    with _workers_lock:
        return list(_workers)


def pending() -> int:
    """Tier-1 compiles queued or running, in every target's worker."""
    return sum(w.pending() for w in _all())


def wait_all(timeout: float | None = None) -> bool:
    """Until no tier 1 is queued or compiling in any target's worker (tests, benchmarks)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for w in _all():
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not w.wait_all(left):
            return False
    return True


def _close() -> None:
    """Interpreter exit: each worker's compile in progress finishes, the queued ones are dropped."""
    for w in _all():
        w.close()


def _before_fork() -> None:
    """Before ``os.fork``: let the compiles in progress finish and start no other, so that the child is
    not made while this process's workers hold LLVM's locks (the child would wait for them forever)."""
    for w in _all():
        w._before_fork()


def _after_fork_in_parent() -> None:
    for w in _all():
        w._after_fork_in_parent()


def _after_fork_in_child() -> None:
    """``os.fork`` (or a fork-based multiprocessing pool) copies this process without its background
    threads: each worker gets a lock of its own and a thread of its own, and compiles again what the
    parent's had queued or was compiling, so that a launch waiting for tier 1 does not wait forever."""
    global _workers_lock
    _workers_lock = threading.Lock()  # another thread may have held it at the fork
    for w in list(_workers):
        w._after_fork_in_child()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)

_register = getattr(threading, "_register_atexit", None)  # runs before non-daemon threads are joined
if _register is not None:
    _register(_close)
else:  # pragma: no cover - every supported Python has it
    import atexit
    atexit.register(_close)
