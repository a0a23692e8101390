"""Settings: the compile options frozen into every job, and every ``KDEBUG_*`` variable, read here only.

``CompileOptions`` is GPUCompiler.jl's ``CompilerConfig`` for kdebug: one frozen, hashable value
(the target, the strategy, the checks compiled into the code, the shuffled-thread path, lockstep
loops, tiers, the PTX architecture, the host CPU model) built once from the run's options and the
environment (``compile_options``). Its digest is part of every job's key (``kdebug/driver/job.py``),
so code made under other options is another job: ``kdebug.set_options(memcheck=False)``, a rerun
with another strategy or sanitizer give new keys and new jobs, and no target is ever changed
under a compilation. The driver derives the target and the stage list from it
(``Driver.configure``). Edited stages (``kdebug run --override``, ``kdebug/driver/overrides.py``) are
part of it too: a hash of the edits enters the digest, so an edited run's jobs have other keys.
What is recorded for whoever looks (snapshots, pass records) is a second value, ``Recording``, kept
out of the key: it does not change the code made (docs/internals/options.md).

The environment is read through ``variable``; ``VARIABLES`` is the list of every variable kdebug
reads (a test fails on a ``KDEBUG_`` read anywhere else).
"""
from __future__ import annotations

import dataclasses
import functools
import os

from kdebug.lazy_dataclasses import dataclass

try:  # CPython's own SHA-1 (hashlib loads OpenSSL first: ~2 ms of start-up)
    from _sha1 import sha1
except ImportError:  # another Python
    from hashlib import sha1

VARIABLES = {
    "KDEBUG_BACKEND": "the backend of a session started without --backend (cpu, gpu, auto)",
    "KDEBUG_MEMCHECK": "0/off/false/no: bounds checks off where no option says otherwise",
    "KDEBUG_LOCKSTEP": "0/off/false/no: the CPU backend runs every loop thread by thread",
    "KDEBUG_REGIONS": "0/off/false/no: the CPU backend runs every kernel with barriers as coroutines",
    "KDEBUG_NARROW": "0/off/false/no: the region form's thread loops run every thread, not only those a "
                     "region's guards let in",
    "KDEBUG_TIERED": "0/off/false/no: no quick first tier; emit compiles the optimised code at once",
    "KDEBUG_HOST_CPU": "an LLVM CPU model (x86-64-v2, x86-64-v4, skylake-avx512...) the CPU target compiles "
                       "for instead of this host's (its features only: the code must still run here)",
    "KDEBUG_TIMEOUT": "headless: stop the script after SECONDS and report where it was",
    "KDEBUG_LIBDEVICE": "the libdevice.10.bc file of the PTX target",
    "KDEBUG_NUMBA": "set by kdebug run --numba for the Pythons its script starts: the numba mode (cuda-only, "
                    "all) kdebug's sitecustomize installs there, so their import numba.cuda is kdebug's too",
}

_OFF = ("0", "off", "false", "no")


def variable(name: str) -> str | None:
    """The value of one of ``VARIABLES`` in the environment (None when unset)."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not one of kdebug's variables: add it to kdebug/settings.py")
    return os.environ.get(name)


def set_variable(name: str, value: str) -> None:
    """Set one of ``VARIABLES`` for the processes this one starts (``kdebug run -m pytest``'s workers)."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not one of kdebug's variables: add it to kdebug/settings.py")
    os.environ[name] = value


def python_path_with(folder: str) -> str:
    """PYTHONPATH with ``folder`` first (for the Pythons this process starts), as this process has it."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != folder]
    return os.pathsep.join([folder] + rest)


def restore_environment(saved: dict) -> None:
    """Put back the variables of ``saved`` ({name: value, None for unset}) that this process changed."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def flag(name: str, default: bool = True) -> bool:
    """An on/off variable: off for 0/off/false/no, on for anything else, ``default`` when unset."""
    text = variable(name)
    if text is None:
        return default
    return text.strip().lower() not in _OFF


@dataclass(frozen=True)
class Recording:
    """What a session records for whoever looks at the compilation: not part of the code made, so not of
    a job's key (a run with snapshots and one without compile the same jobs under the same keys). Only
    the driver (snapshots, pass records) and the target (the host assembly) read it."""

    snapshots: bool = True  # every phase's IR and the host assembly, printed for the TUI, dump, a trace
    passes_on_demand: bool = False  # passes kept for a replay, not recorded (the live TUI); only with snapshots
    passes: bool = True  # False: the stages' snapshots only, no pass by pass (``kdebug dump --no-passes``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshots", bool(self.snapshots))
        object.__setattr__(self, "passes_on_demand", bool(self.passes_on_demand) and self.snapshots)
        object.__setattr__(self, "passes", bool(self.passes) and self.snapshots)


@dataclass(frozen=True)
class CompileOptions:
    """What a job's code is made with. Frozen: change one by ``replace``, which gives other keys."""

    target: str = "cpu"  # what the code is made for: cpu (the host, grid emulated) or ptx
    strategy: str = "worklist"  # how deferred jobs are expanded (kdebug/driver/strategies.py)
    memcheck: bool = True  # bounds checks in every array access
    racecheck: bool = False  # the CPU backend's shadow-memory sanitizers
    initcheck: bool = False
    lockstep: bool = True  # a coroutine kernel's loops run by its threads together (CPU)
    regions: bool = True  # kernels with block barriers cut at them, regions run as thread loops (CPU)
    narrow: bool = True  # a region's thread loop only over the threads its guards let in (region_bounds.py)
    shuffle: bool = False  # launchers carry the shuffled-thread path (--shuffle-threads)
    # quick code first, optimised code from the background (CPU); only where nothing is recorded (set by
    # compile_options, the one place it is derived)
    tiered: bool = False
    arch: str | None = None  # the GPU architecture of the ptx target (None: its default)
    ptx_per_job: bool = False  # the ptx target's ptx stage gives every job its own PTX
    host_cpu: str = ""  # the CPU target's LLVM CPU model ("": this host's, with its features)
    lineinfo: bool = True  # !dbg source locations on every instruction the frontend emits (remarks' lines)
    cut_kernel: str = ""  # kdebug bisect: this kernel's optimize and emit pipelines are cut ...
    pass_limit: int = -1  # ... after this many passes (-1: none skipped, only counted)
    # kdebug run --override DIR: edited stages the driver continues from (kdebug/driver/overrides.py's
    # Overrides, hashable by content; None: none). Its digest, a hash of the edited texts, enters the key
    overrides: object = None

    def replace(self, **changes) -> CompileOptions:
        return dataclasses.replace(self, **changes)

    @functools.cached_property
    def digest(self) -> str:
        """Eight hex digits of every field: the options' part of a job key."""
        text = ";".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                        if f.name != "overrides" or self.overrides)  # no edits: the digest as before they existed
        return sha1(text.encode()).hexdigest()[:8]

    def summary(self) -> str:
        """The options that differ from the defaults, for people: ``memcheck=False, shuffle=True``."""
        default = CompileOptions()
        return ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                         if getattr(self, f.name) != getattr(default, f.name))


# the options whose None means "as the environment says" (on unless the variable is 0/off/false/no)
FROM_ENVIRONMENT = {"memcheck": "KDEBUG_MEMCHECK", "lockstep": "KDEBUG_LOCKSTEP", "regions": "KDEBUG_REGIONS",
                    "narrow": "KDEBUG_NARROW", "tiered": "KDEBUG_TIERED"}


def compile_options(recording: Recording | None = None, **given) -> CompileOptions:
    """The compile options of a session: ``given`` (``CompileOptions``' fields), the environment for
    those of ``FROM_ENVIRONMENT`` and ``host_cpu`` given as None or not at all, ``lineinfo`` (None: where
    ``recording`` has snapshots, as LLVM's remarks are shown there). ``tiered`` is derived here, once:
    only where nothing records the host assembly (what is shown is always the code that runs), no
    pipeline is cut and no stage is edited (the background tier would compile them uncut, unedited)."""
    recording = recording if recording is not None else Recording()
    values = {name: value for name, value in given.items() if value is not None}
    for name, variable_name in FROM_ENVIRONMENT.items():
        values[name] = bool(values[name]) if name in values else flag(variable_name)
    if "host_cpu" not in values:
        values["host_cpu"] = (variable("KDEBUG_HOST_CPU") or "").strip()
    values["lineinfo"] = bool(values.get("lineinfo", recording.snapshots))
    values["tiered"] = (values["tiered"] and not recording.snapshots and not values.get("cut_kernel")
                        and not values.get("overrides"))
    for name in ("racecheck", "initcheck", "shuffle", "ptx_per_job"):
        if name in values:
            values[name] = bool(values[name])
    if "pass_limit" in values:
        values["pass_limit"] = int(values["pass_limit"])
    return CompileOptions(**values)


def key_identity(key: str) -> str:
    """A job key without its options' digest: the same function, types and kind under any options
    (how two runs' job trees are matched, kdebug/session/compare.py)."""
    return key.split("@", 1)[0]
