"""How to run one script: parsed once from the command line, handed to the runner as data.

The debuggee child gets these as one JSON object, so it never parses a command
line itself (and never imports the CLI).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import field

from kdebug import settings
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime.sanitizer_names import SANITIZERS

BREAKPOINTS = ("deferred", "reentrant", "finish", "launch")


def parse_names(text, choices: tuple[str, ...], what: str) -> frozenset[str]:
    """A comma list of names (or a list) -> the set; ``all`` means every choice; unknown names raise."""
    if not text:
        return frozenset()
    items = text.split(",") if isinstance(text, str) else list(text)
    names = {k.strip() for k in items if k.strip()}
    if "all" in names:
        return frozenset(choices)
    unknown = names - set(choices)
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(sorted(unknown))}; choose from {', '.join(choices)}")
    return frozenset(names)


def parse_breakpoints(text) -> frozenset[str]:
    """``"reentrant,finish"`` -> {"reentrant", "finish"}."""
    return parse_names(text, BREAKPOINTS, "breakpoint")


def parse_sanitizers(text) -> frozenset[str]:
    """``"memcheck,racecheck"`` -> {"memcheck", "racecheck"}."""
    return parse_names(text, SANITIZERS, "sanitizer")


@dataclass(frozen=True)
class RunOptions:
    script: str
    args: tuple[str, ...] = ()
    backend: str = "auto"  # cpu, gpu, auto
    strategy: str = "worklist"
    numba: bool = False  # numba.cuda and numba's types resolve to kdebug's
    numba_mode: str = "auto"  # --numba=MODE: cuda-only (a real numba keeps its CPU JIT), all, auto
    trace: str | None = None  # where the parent writes the event stream
    memcheck: bool = True
    racecheck: bool = False  # --sanitize ...,racecheck
    initcheck: bool = False  # --sanitize ...,initcheck
    shuffle_seed: int | None = None  # --shuffle-threads[=SEED]
    breakpoints: frozenset[str] = field(default_factory=frozenset)
    target: str = "cpu"  # ptx: also emit every job's PTX (launches still run on the CPU)
    arch: str | None = None  # the GPU architecture of target ptx
    # every phase's IR and the host assembly, printed only where someone can look at them
    snapshots: bool = True
    # the passes of each pipeline kept for a replay where someone looks, not recorded (the live TUI)
    passes_on_demand: bool = False
    passes: bool = True  # False: no pass by pass at all (kdebug dump --no-passes)
    timeout: float | None = None  # headless: stop the script after this many seconds
    kernel_print_stdout: bool = True  # kernels' print() lines to stdout (the TUI shows them from events)
    theme: str = "dark"  # the TUI's colours: dark, light, high-contrast (the debuggee ignores it)
    cut_kernel: str = ""  # kdebug bisect: this kernel's optimisation pipelines cut after pass_limit passes
    pass_limit: int = -1
    module: str | None = None  # kdebug run -m MODULE: run as ``python -m`` (script is the module's file)
    report: str = "auto"  # the headless report: auto, summary (launch counts per kernel), full (every launch)
    json_summary: str | None = None  # --json-summary PATH: the run's summary as JSON too (- for stdout)
    override: str | None = None  # --override DIR: edited stage files the driver continues from (overrides.py)

    def replace(self, **changes) -> RunOptions:
        return dataclasses.replace(self, **changes)

    @property
    def recording(self) -> settings.Recording:
        """What the run records for whoever looks: no part of a job's key (docs/internals/options.md)."""
        return settings.Recording(snapshots=self.snapshots, passes_on_demand=self.passes_on_demand,
                                  passes=self.passes)

    def compile_options(self, overrides=None) -> settings.CompileOptions:
        """What the run's jobs are compiled with, the environment's for what the command line leaves open
        (``--no-memcheck``, else ``KDEBUG_MEMCHECK``); ``overrides``: the edits of ``--override`` as loaded.
        The session passes the value whole to its driver and target, setting only what its backend
        decides (the target, the GPU architecture)."""
        return settings.compile_options(
            self.recording, strategy=self.strategy, memcheck=None if self.memcheck else False,
            racecheck=self.racecheck, initcheck=self.initcheck, cut_kernel=self.cut_kernel,
            pass_limit=self.pass_limit, overrides=overrides)

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["args"], d["breakpoints"] = list(self.args), sorted(self.breakpoints)
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> RunOptions:
        d = json.loads(text)
        d["args"], d["breakpoints"] = tuple(d["args"]), frozenset(d["breakpoints"])
        return cls(**d)
