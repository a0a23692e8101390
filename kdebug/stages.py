"""The stages of one toplevel compilation, in order: the one list that the driver runs and that
the dump, the TUI and docs/internals/architecture.md read. Each stage's name is the name of its phase events and of
its snapshot. A target adds its own stages (``Target.stages()``): those marked with its name
here, which run between ``emit`` and ``load``.

At the bottom of the layers with the event schema: a face that only reads events (the TUI,
replay) orders snapshots without loading the compiler.
"""
from __future__ import annotations

from kdebug.lazy_dataclasses import dataclass



@dataclass(frozen=True)
class Stage:
    name: str
    language: str  # what its snapshot holds: llvm, python, text, asm, ptx ("" when it records none)
    what: str  # one line, for listings
    every_job: bool = False  # a snapshot of every job's IR at this point, not a timed phase
    target: str = ""  # the target that adds it ("": every compilation has it)
    job_kind: str = ""  # only jobs of this kind record it ("": every kind)


PARSE = Stage("parse", "python", "the job's Python source, parsed")
TYPEINFER = Stage("typeinfer", "text", "every variable's type, from the argument types (numba's rules)")
LOWER = Stage("lower", "llvm", "LLVM IR in a module of the job's own; deferred jobs are still markers")
REGIONS = Stage("regions", "llvm", "a kernel with barriers cut at them: per-thread columns for the values "
                                   "live across a barrier (the region form)", target="cpu")
PRIMAL = Stage("primal", "llvm", "a derivative job's primal as compiled: its own deferred markers in place",
               job_kind="derivative")
PRIMAL_RESOLVED = Stage("primal_resolved", "llvm", "the primal after the strategy expanded its markers: what "
                                                   "the transform reads", job_kind="derivative")
DERIVATIVE = Stage("derivative", "llvm", "the forward-mode transform (dual numbers) of the resolved primal",
                   job_kind="derivative")
ACTIVITY = Stage("activity", "text", "a reverse-mode job's activity analysis: the float values that carry "
                                    "adjoints and those that are constants", job_kind="derivative")
AUGMENTED_FORWARD = Stage("augmented_forward", "llvm", "a reverse-mode job's augmented forward sweep: the primal, "
                                                       "each block pushing its record on the tape", job_kind="derivative")
REVERSE = Stage("reverse", "llvm", "the reverse-mode transform: the augmented forward sweep, then the reverse sweep "
                                   "popping the tape", job_kind="derivative")
TAPE = Stage("tape", "text", "a reverse-mode job's tape: every cached value (IR name, why), bytes per thread, "
                             "recomputed calls, atomics", job_kind="derivative")
EXPAND_DEFERRED = Stage("expand_deferred", "llvm", "markers replaced by the requested jobs' entries, "
                                                   "their modules linked in")
LINK_RUNTIME = Stage("link_runtime", "llvm", "the target's runtime libraries linked in")
OPTIMIZE = Stage("optimize", "llvm", "LLVM's optimisation pipeline over the linked module")
BEFORE_FINISH = Stage("before_finish", "llvm", "every job's IR just before the finish passes", every_job=True)
FINISH = Stage("finish", "llvm", "the target's finish passes, exactly once on every job's entry")
AFTER_FINISH = Stage("after_finish", "llvm", "every job's IR after the finish passes", every_job=True)
VALIDATE = Stage("validate", "llvm", "no marker left, nothing the target cannot run")
EMIT = Stage("emit", "asm", "machine code: host assembly on the CPU, PTX on the GPU")
PTX = Stage("ptx", "ptx", "each job's own PTX functions (kdebug dump --target ptx)", target="ptx")
PTXAS = Stage("ptxas", "text", "ptxas -v: registers, shared memory, stack and spills", target="ptx")
LOAD = Stage("load", "", "the code loaded, each entry's address looked up")

STAGES = (PARSE, TYPEINFER, LOWER, REGIONS, PRIMAL, PRIMAL_RESOLVED, DERIVATIVE, ACTIVITY, AUGMENTED_FORWARD,
          REVERSE, TAPE, EXPAND_DEFERRED, LINK_RUNTIME, OPTIMIZE,
          BEFORE_FINISH, FINISH, AFTER_FINISH, VALIDATE, EMIT, PTX, PTXAS, LOAD)


def pipeline(target_stages: tuple[Stage, ...] = ()) -> tuple[Stage, ...]:
    """The stages of a compilation for a target that adds ``target_stages``, in order."""
    unknown = [s.name for s in target_stages if s not in STAGES]
    if unknown:
        raise ValueError(f"stages {unknown} are not in kdebug/stages.py's list")
    return tuple(s for s in STAGES if (not s.target or s in target_stages) and not s.job_kind)


def after_lower(target_stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """Of a target's stages, those that run on a job's lowered module (before ``emit``), in order."""
    return tuple(s for s in target_stages if STAGES.index(s) < STAGES.index(EMIT))


def after_emit(target_stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """Of a target's stages, those that run on the emitted artifact, in order."""
    return tuple(s for s in target_stages if STAGES.index(s) > STAGES.index(EMIT))


def of_job_kind(kind: str) -> tuple[Stage, ...]:
    """The stages only jobs of ``kind`` record (a derivative job's primal, resolved primal, derivative)."""
    return tuple(s for s in STAGES if s.job_kind == kind)


# an overridden stage's snapshot as the driver made it, before the edited file replaced it
# (``kdebug run --override``): ``optimize.original`` next to ``optimize``, the edited text
ORIGINAL = ".original"


def original_of(name: str) -> str:
    """The name of the snapshot of stage ``name`` before its edit replaced it."""
    return name + ORIGINAL


def in_stage_order(names) -> list[str]:
    """Snapshot names in stage order (a stage's original, ``ORIGINAL``, just before the stage);
    names of no stage come last, alphabetically."""
    order = [n for s in STAGES for n in (original_of(s.name), s.name)]
    return [n for n in order if n in names] + sorted(set(names) - set(order))
