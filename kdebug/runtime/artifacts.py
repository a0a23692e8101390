"""What a target's ``emit`` makes, as the driver, the runtimes and the sessions read it.

The targets make these and the runtimes load and launch them, so the types live here, below both
(the layers: session > driver > targets > runtime). Every artifact has ``text``: its text form, the
emit snapshot (the host assembly, the PTX).
"""
from __future__ import annotations

from dataclasses import field

from kdebug.lazy_dataclasses import dataclass


@dataclass(eq=False)
class CpuArtifact:
    """The CPU target's emitted module (kdebug/targets/cpu/target.py)."""

    object: bytes  # machine code, an object file for the process's JIT engine
    asm: str  # its assembly, or a note where the session records none
    grid_sync: frozenset = frozenset()  # kernel entries with a grid barrier: one launcher call runs every block
    racecheck: bool = False  # the code carries racecheck's and initcheck's instrumentation
    initcheck: bool = False
    tiers: object = None  # targets/cpu/tiers.py's Tiers: quick code now, the optimised code once ready
    # the compiling target's tables, whose ids are compiled into the code: a device-side launch's site
    # (device_launch.LaunchSite), a print call's format ([(kind, constant text)]) and memcheck's source
    # sites (runtime/memcheck.SiteTable: a failed check's, a barrier's, a raise's, a while loop's... as the
    # reports name them); shared by every module of the target (a kernel launched from the device may
    # come from an earlier module)
    launch_sites: list = field(default_factory=list)
    print_formats: list = field(default_factory=list)
    check_sites: object = None

    @property
    def text(self) -> str:
        return self.asm

    @property
    def sanitized(self) -> bool:
        return self.racecheck or self.initcheck


@dataclass(eq=False)
class PtxArtifact:
    """The PTX target's emitted module (kdebug/targets/ptx/target.py)."""

    ptx: str
    arch: str  # sm_XY
    needs_cudadevrt: bool  # device-side launches: linked with the CUDA device runtime
    cudadevrt_dir: str | None  # where the loader finds libcudadevrt.a (None: no toolkit, or not needed)
    kernels: dict  # job id -> the kernel's entry name
    ptxas: dict | None = None  # ptxas's report, made on first request (PtxTarget.ptxas_report)

    @property
    def text(self) -> str:
        return self.ptx


Artifact = CpuArtifact | PtxArtifact  # what CompiledKernel.artifact holds
