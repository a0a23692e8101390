"""GPU architectures (sm_90...) and LLVM's NVPTX target machine for each."""
from __future__ import annotations

import re

from kdebug.targets.base import init_llvm
from kdebug.targets.pass_record import make_machine


TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"


def arch_of(cc) -> str:
    """(9, 0) or "sm_90" or "90" -> "sm_90"; None -> the default."""
    if cc is None:
        return DEFAULT_ARCH
    if isinstance(cc, (tuple, list)):
        arch = f"sm_{cc[0]}{cc[1]}"
    else:
        cc = str(cc)
        arch = cc if cc.startswith("sm_") else f"sm_{cc.replace('.', '')}"
    if not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
        raise ValueError(f"{cc!r} is not a GPU architecture: write it like sm_90, 9.0 or (9, 0)")
    return arch


def sm_number(arch: str) -> int:
    """"sm_90a" -> 90."""
    return int(re.sub(r"\D", "", arch) or 0)


def ptx_features(arch: str) -> str:
    """The PTX ISA the arch needs (LLVM's default, 7.8, stops at sm_90)."""
    n = sm_number(arch)
    if n >= 120:
        return "+ptx87"
    if n >= 100:
        return "+ptx86"
    if n >= 90:
        return "+ptx80"
    return ""


_machines: dict = {}


def target_machine(arch: str):
    tm = _machines.get(arch)
    if tm is None:
        init_llvm()
        tm = _machines[arch] = make_machine(TRIPLE, arch, ptx_features(arch), 3)
    return tm
