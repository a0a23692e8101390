"""Short explanations shown beside the IR: one per phase, per finish pass, per strategy.

Plain data, no Textual: the headless printer or a dump could show them too.
"""
from __future__ import annotations

PHASES: dict[str, str] = {
    "parse": "The kernel's Python source is read and parsed into a syntax tree. Nothing has a type yet; "
             "this is what the job compiles.",
    "typeinfer": "Types flow from the argument types (part of the job's key) through every variable, "
                 "following numba's rules: integers widen to 64 bits, `/` gives a float, a variable's type "
                 "unifies across branches. The listing shows each variable's type.",
    "lower": "The typed function becomes LLVM IR in a module of its own. A device-side launch or a function "
             "pointer is still an opaque deferred-codegen marker call carrying the requested job's id.",
    "regions": "CPU target: a kernel with cuda.syncthreads() cut at its barriers. Each barrier stores where "
               "the thread waits and returns; the entry's switch sends the thread to the code after it next "
               "time, so a region (the code between two barriers) runs as one loop over the block's threads, "
               "which LLVM vectorises. Variables live across a barrier live in per-thread columns of the "
               "block's region frame (%lane-indexed); the header says which kernels got this form and why "
               "the others stay coroutines.",
    "primal": "A derivative job: the function it differentiates as compiled, its own deferred-codegen markers "
              "still in place (for a derivative of a derivative, a call through the inner job's marker).",
    "primal_resolved": "The primal after the strategy expanded its markers: what the forward-mode transform "
                       "reads. A launch or a pointer needs only an address, but a derivative needs the body, so "
                       "a marker left here is opaque to the transform (the toplevel strategy leaves them).",
    "derivative": "The forward-mode transform: every float value carries a tangent (dual numbers), local "
                  "memory gets shadow memory, math functions their derivatives, and a call to another job "
                  "asks for that job's derivative as a new deferred request (reason grad).",
    "activity": "A reverse-mode job's activity analysis: the float values that depend on a differentiated "
                "argument (or, in a kernel's adjoint, on its arrays) carry adjoints; the rest are constants.",
    "augmented_forward": "The reverse mode's forward sweep: the primal's code, each block pushing a record on the "
                         "tape (its number, the record before it, the values its reverse needs).",
    "reverse": "The reverse-mode transform: after the forward sweep, the records are popped newest first and each "
               "block's instructions run backwards, accumulating adjoints (atomically into a kernel's shadows). "
               "A barrier is met twice: in its place in the forward sweep, and again where the reverse sweep "
               "reaches it, so no thread runs the reverse of the code before it until every thread has "
               "reversed the code after it; a shared array's shadow lives in shared memory. "
               "Reverse mode needs the primal's body, and a forward job over a reverse one needs the reverse "
               "job's body too: the shared job table gives both at any nesting.",
    "tape": "What the reverse sweep reads from the tape: every cached value and why, the bytes per thread, "
            "what is recomputed instead, and the reads turned into atomic accumulations (or kept as plain adds: "
            "proved exclusive to a thread, or, where a block's threads run one at a time, inside the block's "
            "window).",
    "expand_deferred": "Each deferred-codegen marker is resolved: the requested job is compiled once, through the "
                       "session-wide job table, its module linked in, and the marker replaced by the address of "
                       "its entry function. A request for a job already in progress is re-entrant: it resolves "
                       "to a reference instead of compiling again.",
    "link_runtime": "The kernel runtime the code calls (barriers, atomics, device-side launch support) is linked "
                    "into the module.",
    "optimize": "LLVM's optimisation pipeline runs over the whole linked module: every job's entry together, "
                "so the compiler may inline across them.",
    "before_finish": "Every job's entry after optimisation, just before the finish passes run.",
    "finish": "The finish passes: target-specific post-processing that must run exactly once on every job's "
              "entry, after optimisation (see the Finish tab).",
    "after_finish": "Every job's entry after the finish passes: compare with before_finish in the Finish tab.",
    "validate": "The module is checked against what the target can run: no unresolved markers, no calls the "
                "target cannot make, every job finished.",
    "emit": "Machine code: host assembly on the CPU target, PTX on the GPU target.",
    "load": "The code is loaded (MCJIT on the CPU, a CUDA module on the GPU) and each entry's address looked up.",
    "ptx": "PTX, the virtual ISA that ptxas (or the driver) compiles for the GPU at hand.",
    "ptxas": "ptxas assembles the PTX for the architecture and reports what each kernel uses: registers, "
             "shared memory, stack frame and spills.",
}

FINISH_PASSES: dict[str, str] = {
    "finish_ir": "per job: on the CPU a grid launcher wraps the entry (loops over blocks and threads), "
                 "the kernel becomes internal; on PTX kernels are marked in nvvm.annotations",
    "finish_module": "once: all but the launchers is internalised, so LLVM may inline and drop it",
}

FINISH_INTRO = ("Finish passes run exactly once on every job's entry, after optimisation; a job missing here "
                "is a finish-coverage miss.")


def strategy_paragraphs() -> dict[str, str]:
    """The Strategy tab's paragraphs, from the built-in strategy objects themselves."""
    from kdebug.driver import strategies  # kept lazy for start-up time: the strategies import the compiler and numpy
    return {name: s.description for name, s in strategies.REGISTRY.items()}

# the Strategy tab's paragraph on reverse mode, after the strategy in use (it reads as the strategies'
# own sentences on kdebug.grad do)
REVERSE_MODE = (
    "Reverse mode (kdebug.gradient, kdebug.adjoint) needs the primal's body as forward mode does: the transform "
    "runs on the resolved primal's IR (the primal_resolved stage), sweeping it forward to fill the tape and then "
    "backwards block by block, so a deferred-codegen marker left unexpanded there is a call it cannot "
    "differentiate: the failure of Enzyme.jl#1707 and GPUCompiler.jl#629. Nested orders need the one shared job "
    "table: in forward over reverse, kdebug.grad(kdebug.gradient(f, 0), 1), the inner reverse job must be "
    "finished and resolved before the outer forward job can differentiate its body. The worklist compiles it "
    "first through the shared table and links its body in, at any nesting; the toplevel strategy expands markers "
    "only in the toplevel job, so the outer job meets the inner one's marker unexpanded (the located error); "
    "a table per nesting level (recursive) compiles the inner job again, misses its finish passes, and recurses "
    "forever through a recursive function (kdebug stops it at the first re-entry).")

BREAKPOINTS: dict[str, str] = {
    "deferred": "a deferred job is requested (device-side launch, function pointer, derivative)",
    "reentrant": "a job asks for a job already on its request chain",
    "finish": "just before the finish passes run",
    "launch": "just before a kernel launch",
}


def phase_help(phase: str) -> str:
    return PHASES.get(phase, "")


def strategy_help(strategy: str) -> str:
    """A built-in's paragraph, or a user strategy's own ``description`` (its FILE.py:Class loaded)."""
    from kdebug.driver import strategies  # kept lazy for start-up time: the strategies import the compiler and numpy
    return strategies.description(strategy)
