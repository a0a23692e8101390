"""An LLVM pipeline run pass by pass, the module kept after every pass that changed it.

llvmlite 0.50 builds the -O pipelines whole (``PassBuilder.getModulePassManager``) and cannot add
most of their passes by name (no loop vectoriser, GVN, LICM, inliner...), so the pipeline is not
rebuilt here: the same pipeline runs, and LLVM's own instrumentation (``-print-after-all``) writes
what each pass ran on into a directory of its own (``-ir-dump-directory``), one file per pass, numbered
in the order the passes ran; the whole module is printed after the passes that may have changed it
(pass_dumps.py). The compiled module is the one an unrecorded run makes (the instrumentation only
prints; tests compare both).

Those options are process-wide and llvmlite registers the printing callbacks on every
PassBuilder, so every pipeline of the process runs under ``PIPELINE_LOCK``: an unrecorded
pipeline never runs while the options are on. The CPU target's background compiles (tiers.py) run
outside that lock, so as not to hold a foreground compile up; ``GATE`` keeps them and a recorded run
apart.

Recorded on demand (``PassLog.on_demand``, the live TUI's default), a pipeline runs unrecorded and
keeps only its input module as bitcode, its target machine's making and its tuning, and a digest of
its result (``PipelineInput``): the compile costs what a plain one does. ``replay`` runs the same
pipeline on a copy of that input, recorded as above, where and when someone looks at the passes,
and compares the digests.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import sys
import tempfile
import threading

import llvmlite.binding as llvm

from kdebug.passes import PassCut, PassLog, PipelineInput, ReplayMismatch
from kdebug.targets import pass_dumps

PIPELINE_LOCK = threading.RLock()


class BackgroundGate:
    """Background LLVM work and recorded pipelines never at once: a recorded run waits for the
    background work in progress and keeps new work from starting until it is done."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._running = 0
        self._recording = 0

    # A count goes up and its try begins with no call between (Python runs a signal's handler, the
    # script's KeyboardInterrupt, only at a call or a jump back): a ^C while waiting never leaves a
    # count up, which would hold the other side back for good (the tier-1 thread, and the exit with it).
    @contextlib.contextmanager
    def background(self):
        counted = False
        try:
            with self._cv:
                while self._recording:
                    self._cv.wait()
                self._running += 1; counted = True  # noqa: E702 - one step, see above
            yield
        finally:
            if counted:
                with self._cv:
                    self._running -= 1
                    self._cv.notify_all()

    @contextlib.contextmanager
    def recording(self):
        counted = False
        try:
            with self._cv:
                self._recording += 1; counted = True  # noqa: E702 - one step, see above
                while self._running:
                    self._cv.wait()
            yield
        finally:
            if counted:
                with self._cv:
                    self._recording -= 1
                    self._cv.notify_all()


GATE = BackgroundGate()


def module_pass_manager(pb, passes: tuple[str, ...] | None):
    """The -O pipeline of ``pb``, or a module pass manager of ``passes`` (llvmlite's ``add_<name>_pass``)."""
    if passes is None:
        return pb.getModulePassManager()
    mpm = llvm.create_new_module_pass_manager()
    for name in passes:
        getattr(mpm, f"add_{name}_pass")()
    return mpm


# ---- target machines a replay can make again ----------------------------------------------------
_machines: dict[tuple, object] = {}  # a replay's twins, by how they are made
_made: dict[int, tuple] = {}  # id(machine) -> (machine, how make_machine made it); machines live as long
_initialised = False


def init_llvm() -> None:
    """LLVM's targets and assembly printers, once per process."""
    global _initialised
    if not _initialised:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialised = True


def make_machine(triple: str, cpu: str, features: str, opt: int):
    """``create_target_machine`` for ``triple`` that remembers how it was made (``machine_of``), so
    that a replay makes its twin."""
    target = llvm.Target.from_triple(triple)
    tm = target.create_target_machine(cpu=cpu, features=features, opt=opt)
    _made[id(tm)] = (tm, [triple, cpu, features, opt])  # the machine held: its id stays its own
    return tm


def machine_of(tm) -> list | None:
    """How ``make_machine`` made ``tm``; None for a machine made otherwise."""
    made = _made.get(id(tm))
    return made[1] if made is not None and made[0] is tm else None


def _twin(machine: list):
    key = tuple(machine)
    tm = _machines.get(key)
    if tm is None:
        init_llvm()
        tm = _machines[key] = make_machine(*machine)
    return tm


TUNING = ("loop_vectorization", "slp_vectorization", "loop_unrolling", "loop_interleaving")


def tuning_of(pto, speed_level: int) -> dict:
    """The settings of ``pto`` a replay sets again (kdebug changes no others)."""
    return {"speed_level": speed_level, **{name: bool(getattr(pto, name)) for name in TUNING}}


def _tuning(d: dict):
    pto = llvm.create_pipeline_tuning_options(speed_level=d["speed_level"])
    for name in TUNING:
        if name in d:
            setattr(pto, name, d[name])
    return pto


def digest(mod) -> str:
    return hashlib.sha1(str(mod).encode()).hexdigest()


def run_kept(tm, pto, speed_level: int, mod, log: PassLog, passes: tuple[str, ...] | None = None) -> None:
    """Run the pipeline on ``mod`` unrecorded, keeping in ``log`` what a replay needs; a target machine
    ``make_machine`` did not make is recorded now (``run_recorded``)."""
    machine = machine_of(tm)
    if machine is None:
        return run_recorded(lambda: llvm.create_pass_builder(tm, pto), mod, log, passes)
    bitcode = base64.b64encode(_bitcode(mod)).decode("ascii")
    with PIPELINE_LOCK:
        pb = llvm.create_pass_builder(tm, pto)
        module_pass_manager(pb, passes).run(mod, pb)
    log.pipelines.append(PipelineInput(machine, tuning_of(pto, speed_level), list(passes) if passes else None,
                                       bitcode, digest(mod), mod.name))


_use_lists_kept = False


def _bitcode(mod) -> bytes:
    """``mod`` as bitcode that keeps the order of every value's uses: a pass walks a value's uses in
    that order (and the printer's ``; preds =`` lists follow it), so a copy without it could be
    optimised otherwise."""
    global _use_lists_kept
    if not _use_lists_kept:
        llvm.set_option("", "-preserve-bc-uselistorder=true")
        _use_lists_kept = True
    return mod.as_bitcode()


def faithful_copy(mod):
    """A copy of ``mod`` that LLVM treats as ``mod`` itself (its values' use lists in their order)."""
    copy = llvm.parse_bitcode(_bitcode(mod))
    copy.name = mod.name
    return copy



def replay(pipelines: list[PipelineInput], assembly: bool = False) -> PassLog:
    """The passes and remarks of pipelines kept on demand, recorded now on copies of their inputs
    (one log, pipeline after pipeline, as the compile's phase ran them). Raises ``ReplayMismatch``
    when a pipeline's result is not the module the compile made. ``assembly``: the log's
    ``assembly`` is the assembly of the last pipeline's module for its target machine."""
    log = PassLog()
    mod = tm = None
    for p in pipelines:
        tm, pto = _twin(p.machine), _tuning(p.tuning)
        mod = llvm.parse_bitcode(base64.b64decode(p.bitcode))
        mod.name = p.name
        run_recorded(lambda: llvm.create_pass_builder(tm, pto), mod, log, tuple(p.passes) if p.passes else None)
        if digest(mod) != p.digest:
            raise ReplayMismatch(f"the replayed pipeline made another module than the compile did "
                                 f"(target machine {p.machine[0]} {p.machine[1]}): its passes are not shown")
    if assembly and mod is not None:
        log.assembly = tm.emit_assembly(mod)
    return log


def run_recorded(pass_builder, mod, log: PassLog, passes: tuple[str, ...] | None = None) -> None:
    """Run ``pass_builder()``'s module pipeline (or the pass list ``passes``) on ``mod``, appending each
    pass to ``log`` (the module after it, where it changed: pass_dumps.py), and LLVM's remarks of the same
    pipeline to ``log.remarks``."""
    with PIPELINE_LOCK, GATE.recording():
        log.remarks += collect_remarks(pass_builder, mod, passes, kinds=("passed", "analysis"))
    before = str(mod).rstrip("\n")

    def run(module) -> list[str]:  # the missed remarks come from the recorded run itself: one copy fewer
        printed: list[str] = []
        log.remarks.extend(remarks_of(pass_builder, module, passes, "missed", printed))
        return printed

    with PIPELINE_LOCK, GATE.recording():
        log.runs += pass_dumps.record(run, mod, before)


# ---- a pipeline cut after pass N (kdebug bisect) -------------------------------------------------
# LLVM prints "BISECT: running pass (k) NAME on UNIT" (or "NOT running pass") to fd 2 for every pass
# its gate is asked about while -opt-bisect-limit is set. Checked on LLVM 22: once set, the gate stays
# on for the process (no value turns it off again: -1 runs every pass and keeps counting) and k is
# never reset. So outside a cut the limit is -1 and the gate quiet (-opt-bisect-verbose=false), and
# each cut run first learns k from a one-pass probe, then sets its limit relative to it.
BISECT = re.compile(r"^BISECT: (?P<skip>NOT )?running pass \((?P<k>\d+)\) (?P<name>.+?) on (?P<unit>.*)$")
NO_CUT = 1 << 30  # a limit no compilation reaches
PROBE_IR = "define void @kdebug.bisect.probe() {\n  ret void\n}\n"


@contextlib.contextmanager
def captured_stderr():
    """What LLVM writes to fd 2 inside this block (Python's own stderr is not the same stream):
    yields a list that holds its lines once the block ends."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            lines += f.read().decode("utf-8", errors="replace").splitlines()


def _gate_count() -> int:
    """LLVM's pass-gate counter now: the number a one-pass probe run gets, less one."""
    probe = llvm.parse_assembly(PROBE_IR)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    tm = llvm.Target.from_default_triple().create_target_machine()
    with captured_stderr() as lines:
        llvm.set_option("", "-opt-bisect-limit=-1")
        llvm.set_option("", "-opt-bisect-verbose=true")
        try:
            pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
            mpm.run(probe, pb)
        finally:
            llvm.set_option("", "-opt-bisect-verbose=false")
    ks = [int(m.group("k")) for m in map(BISECT.match, lines) if m is not None]
    if not ks:
        raise RuntimeError("LLVM's opt-bisect gate printed nothing for the probe pass: this LLVM cannot bisect")
    return ks[-1]


def run_cut(pass_builder, mod, cut: PassCut, passes: tuple[str, ...] | None = None) -> None:
    """Run ``pass_builder()``'s pipeline (or ``passes``) on ``mod`` with the passes after ``cut.limit``
    skipped; every pass LLVM's gate was asked about joins ``cut.runs``. A cut with no limit also
    prints each pass's header (``-print-after-all``, function scope) to learn its class name."""
    remaining = cut.remaining()
    survey = remaining is None
    with PIPELINE_LOCK, GATE.recording():
        base = _gate_count()
        with captured_stderr() as lines:
            llvm.set_option("", f"-opt-bisect-limit={base + (NO_CUT if survey else remaining)}")
            llvm.set_option("", "-opt-bisect-verbose=true")
            if survey:
                llvm.set_option("", "-print-after-all=true")
            try:
                pb = pass_builder()
                module_pass_manager(pb, passes).run(mod, pb)
            finally:
                llvm.set_option("", "-opt-bisect-limit=-1")  # every later pass runs (counted, quietly)
                llvm.set_option("", "-opt-bisect-verbose=false")
                if survey:
                    llvm.set_option("", "-print-after-all=false")
    last = None
    for line in lines:
        m = BISECT.match(line)
        if m is not None:
            last = [len(cut.runs) + 1, m.group("name"), m.group("unit"), m.group("skip") is None, cut.phase, ""]
            cut.runs.append(last)
            continue
        h = pass_dumps.HEADER.match(line)
        if h is not None and last is not None and not last[5]:
            last[5] = h.group("name")  # the first header after a gated pass is its own
        if h is not None:
            last = None
    cut.text = str(mod)


# ---- optimisation remarks ---------------------------------------------------------------------
# LLVM prints a remark as "remark: FILE:LINE:COL: MESSAGE" to fd 2, the same for every kind and with
# no pass name. So each kind gets a run of its own: missed ones the recorded run itself, passed and
# analysis ones a copy of the module each (the pipelines are deterministic: the copy meets what the
# module meets), and the pass gate's quiet-no-more lines
# ("BISECT: running pass (k) NAME", limit -1: every pass runs) say which pass was running. A remark
# of a pass LLVM requires (never gated) is named after the gated pass before it.
REMARK_OPTIONS = {"passed": "-pass-remarks", "missed": "-pass-remarks-missed", "analysis": "-pass-remarks-analysis"}
REMARK = re.compile(r"^remark: (?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<message>.*)$")
NOTHING = "^$"  # a regular expression no pass name matches: the option off (an empty one is ignored)


def collect_remarks(pass_builder, mod, passes: tuple[str, ...] | None = None,
                    kinds: tuple[str, ...] = tuple(REMARK_OPTIONS)) -> list[list]:
    """LLVM's remarks of the pipeline on ``mod`` (run on copies; ``mod`` is untouched):
    ``[file, line, col, kind, pass, message]`` each, kind by kind. The caller holds ``PIPELINE_LOCK``."""
    bitcode = mod.as_bitcode()
    found: list[list] = []
    for kind in kinds:
        found += remarks_of(pass_builder, llvm.parse_bitcode(bitcode), passes, kind)
    return found


def remarks_of(pass_builder, mod, passes: tuple[str, ...] | None, kind: str, printed: list | None = None) -> list[list]:
    """Run the pipeline on ``mod`` with LLVM's remarks of one kind on: those remarks (``printed``: gets every
    line LLVM printed meanwhile)."""
    option = REMARK_OPTIONS[kind]
    with captured_stderr() as lines:
        llvm.set_option("", f"{option}=.*")
        llvm.set_option("", "-opt-bisect-limit=-1")
        llvm.set_option("", "-opt-bisect-verbose=true")
        try:
            pb = pass_builder()
            module_pass_manager(pb, passes).run(mod, pb)
        finally:
            llvm.set_option("", "-opt-bisect-verbose=false")
            llvm.set_option("", f"{option}={NOTHING}")
    if printed is not None:
        printed += lines
    found, running = [], ""
    for line in lines:
        m = BISECT.match(line)
        if m is not None:
            running = m.group("name")
            continue
        r = REMARK.match(line)
        if r is not None:
            found.append([r.group("file"), int(r.group("line")), int(r.group("col")), kind, running,
                          r.group("message")])
    return found
