"""The CPU target's LLVM target machines: this host's CPU model, or the one ``KDEBUG_HOST_CPU`` names.

LLVM's code depends on the CPU it is made for (the vectoriser picks masked loads on one model,
gathers on another), so the model is one of the compile options (``CompileOptions.host_cpu``,
part of every job's key). A named model gets that model's own features, nothing of this host's:
the suite can run for x86-64-v2 on an AVX-512 machine (docs/testing.md, "Tests on other CPU models"). The
code still runs here, so the model must be one this host can execute.
"""
from __future__ import annotations

import llvmlite.binding as llvm

from kdebug.targets.base import init_llvm
from kdebug.targets.pass_record import make_machine


def cpu_model(host_cpu: str = "") -> tuple[str, str]:
    """(LLVM CPU name, features) of the code: this host's, or the model ``host_cpu`` names."""
    if host_cpu:
        return host_cpu, ""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def new_machine(host_cpu: str = "", opt: int = 3):
    """A target machine for ``host_cpu`` (see ``cpu_model``) at code-generation level ``opt``."""
    init_llvm()
    cpu, features = cpu_model(host_cpu)
    return make_machine(llvm.get_process_triple(), cpu, features, opt)
