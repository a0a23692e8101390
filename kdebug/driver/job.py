"""CompilerJob: one function, specialised on argument types, for a target — and its record."""
from __future__ import annotations

import functools
from dataclasses import field

from kdebug.frontend.source import function_text
from kdebug.lang.derivative import Derivative
from kdebug.lang.types import Array
from kdebug.lazy_dataclasses import dataclass
from kdebug.settings import CompileOptions

try:  # CPython's own SHA-1, the digest hashlib's gives: hashlib loads OpenSSL first (~2 ms of start-up)
    from _sha1 import sha1
except ImportError:  # another Python
    from hashlib import sha1


def toplevel_kind(dispatcher) -> str:
    """The kind of the job that compiles ``dispatcher`` on its own: ``"device"`` for a ``device=True``
    function (``cuda.jit(sig, device=True)`` compiles it eagerly, as numba; its ``inspect_asm``), else
    ``"kernel"``."""
    return "device" if getattr(dispatcher, "device", False) else "kernel"


@dataclass(frozen=True)
class CompilerJob:
    """What to compile. Frozen and hashable; ``key`` is stable across runs. The compile options are
    part of the job (GPUCompiler.jl's ``CompilerJob`` holds its ``CompilerConfig``): the same function
    under other options is another job, with another key."""

    function: object  # the Dispatcher
    argtypes: tuple
    options: CompileOptions
    kind: str  # kernel or device

    @property
    def target(self) -> str:  # cpu or ptx
        return self.options.target

    @property
    def name(self) -> str:
        return self.function.__name__

    @property
    def key(self) -> str:
        return job_key(self.function, self.argtypes, self.options, self.kind)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.argtypes))}) [{self.kind}, {self.target}]"


_source_hash: dict = {}
_definitions: dict[tuple, list] = {}  # (module, qualname, source hash) -> function objects, in definition order


def job_key(function, argtypes, options: CompileOptions, kind: str) -> str:
    """``module.qualname(types)/kind/target#hash@options``: the hash of the function's source text,
    then the digest of the compile options (``settings.key_identity`` drops it).

    A def evaluated again (in a loop, or a closure factory) is a new function with
    its own frozen globals and closure values: its key gets ``.N``, its definition
    number, which is stable from run to run."""
    return f"{function_key(function, argtypes, options.target, kind)}@{options.digest}"


def function_key(function, argtypes, target: str, kind: str) -> str:
    """The key's first part: the function, its argument types, the kind and the target."""
    if isinstance(function, Derivative):  # (transform, argnum, function, argument types, target)
        inner = function_key(function.primal, argtypes, target, "device")
        return f"{function.transform}.grad[{function.argnum}]({inner})/{kind}/{target}"
    py = function.py_func
    h = _source_hash.get(py)
    if h is None:
        try:
            text = function_text(py)
        except (OSError, TypeError):
            text = py.__code__.co_code.hex()
        h = sha1(text.encode()).hexdigest()[:8]
        seen = _definitions.setdefault((py.__module__, py.__qualname__, h), [])
        seen.append(py)
        if len(seen) > 1:
            h += f".{len(seen) - 1}"
        _source_hash[py] = h
    # a strided array (numba's 'A' or 'F' argument) prints as a declared float64[:], compiled contiguous
    types = ", ".join(f"{t} strided" if isinstance(t, Array) and t.strided else str(t) for t in argtypes)
    # options that change the code: cuda.jit(f) and cuda.jit(debug=True)(f) are two kernels
    options = getattr(function, "options", None) or {}
    flags = "".join(f"/{name}" for name in ("fastmath", "debug") if options.get(name))
    return f"{py.__module__}.{py.__qualname__}({types})/{kind}/{target}{flags}#{h}"


@dataclass
class JobRecord:
    """A job as the driver tracks it: identity, tree position, state and artifacts."""

    id: int
    job: CompilerJob
    parent: int | None
    reason: str  # host, launch, pointer, grad
    state: str = "queued"  # queued, compiling, done, failed
    entry: str = ""  # name of the entry function in the IR
    typed: object = None  # TypedFunction
    module_ir: object = None  # llvmlite.ir.Module after lower
    target_state: object = None  # the target's record of module_ir, filled in by its lowering hooks
    snapshots: dict = field(default_factory=dict)  # phase -> text
    after_finish: tuple | None = None  # (module copy or None, is the toplevel) once finish has run on it
    finished: bool = False  # the finish passes ran on its entry
    compile_time: float = 0.0
    functions: list = field(default_factory=list)  # names of functions belonging to this job
    loc: object = None  # where it was first requested (SourceLocation), for errors about it
    resolved_module: object = None  # its ModuleRef after its own expand_deferred (worklist)
    form: tuple | None = None  # how the target runs the kernel: (form, why not a faster one or None)

    @property
    def name(self) -> str:
        return self.job.name

    def ir_after_finish(self) -> str:
        """The job's IR after the finish passes: its snapshot, else printed now from the driver's copy."""
        if "after_finish" in self.snapshots:
            return self.snapshots["after_finish"]
        mod, toplevel = self.after_finish or (None, False)
        if mod is None:
            return ""
        return str(mod) if toplevel else job_ir(mod, self)

    @property
    def kind(self) -> str:
        return self.job.kind

    @property
    def argtypes(self) -> tuple:
        return self.job.argtypes

    @functools.cached_property
    def key(self) -> str:  # every event about the job carries it: built once
        return self.job.key


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
