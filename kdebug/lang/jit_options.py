"""``cuda.jit``'s keywords as numba-cuda 0.30.4 takes them (numba/cuda/decorators.py).

Every numba keyword is accepted. Those that change nothing here say so once per session, as a warning
diagnostic at the decorator's line; a keyword numba does not have is a located error."""
from __future__ import annotations

import warnings

from kdebug.errors import CompileError, NumbaInvalidConfigWarning, UnavailableFeatureError
from kdebug.lang import numba_settings, seam

# keyword -> (the value that is the default / no change, why another value changes nothing here)
NO_EFFECT = {
    "inline": ("never", "kdebug leaves inlining to LLVM, which inlines device functions anyway"),
    "forceinline": (False, "kdebug leaves inlining to LLVM, which inlines device functions anyway"),
    "link": ((), "kdebug cannot link PTX or CUDA C/C++ files into kernels"),
    "opt": (None, "kdebug always optimises (-O2 on the CPU, -O3 for PTX)"),
    "cache": (False, "kdebug compiles in memory and keeps no on-disk cache"),
    "max_registers": (None, "the register limit applies only to a GPU's ptxas"),
    "launch_bounds": (None, "launch bounds apply only to a GPU's ptxas"),
    "shared_memory_carveout": (None, "the shared-memory carveout is a GPU setting"),
}
# keywords with an effect, or only checked: fastmath (the kernel language), debug (numba's python error model:
# kdebug/frontend/exceptions.py), extensions (launches), lineinfo (kdebug always has line information),
# device (the decorator), lto (False or None: kdebug links without nvJitLink; True: numba's error without it)
ACCEPTED = {"fastmath", "debug", "extensions", "lineinfo", "boundscheck", "lto"} | set(NO_EFFECT)

_said: set[tuple[int, str]] = set()


def check_options(options: dict, device: bool, loc) -> None:
    unknown = sorted(set(options) - ACCEPTED)
    if unknown:
        raise CompileError(f"cuda.jit has no keyword {unknown[0]!r}", loc,
                           f"numba-cuda's keywords: device, {', '.join(sorted(ACCEPTED))}")
    if options.get("boundscheck"):  # numba-cuda raises here too
        raise NotImplementedError("bounds checking is not supported for CUDA (kdebug's memcheck is on by default: "
                                  "--no-memcheck turns it off)")
    warn_invalid_config(options)
    if device and options.get("link"):
        raise ValueError("link keyword invalid for device function")
    if options.get("lto"):  # numba-cuda's decorator, on a machine without nvJitLink (_have_nvjitlink())
        raise UnavailableFeatureError("LTO requires nvjitlink, which is not available or not sufficiently recent "
                                      "(>=12.3): kdebug links device code without nvJitLink", loc,
                                      "leave lto out (inspect_asm() gives the kernel's PTX, device functions "
                                      "included)")
    for name, (default, why) in NO_EFFECT.items():
        value = options.get(name, default)
        if value in (default, None, (), []) or (name == "inline" and value in ("never", False)):
            continue
        # the session only for a warning: a plain @cuda.jit starts none (nor loads the compiler)
        session = seam.current()
        if (id(session), name) in _said:
            continue
        _said.add((id(session), name))
        session.warn(f"cuda.jit({name}={value!r}) has no effect under kdebug: {why}", loc)


def warn_invalid_config(options: dict) -> None:
    """numba-cuda's ``NumbaInvalidConfigWarning``s for ``cuda.jit``'s keywords, as its decorator gives them:
    ``debug`` (default ``config.CUDA_DEBUGINFO_DEFAULT``) with ``opt`` (default ``config.OPT != 0``), and
    ``debug`` with ``lineinfo``. At the ``cuda.jit`` call's line."""
    debug = options.get("debug")
    debug = numba_settings.setting("CUDA_DEBUGINFO_DEFAULT") if debug is None else debug
    opt = options.get("opt")
    opt = (numba_settings.setting("OPT") != 0) if opt is None else opt
    if debug and opt:
        # numba's words, with what they mean here: kdebug runs such a kernel, checks and all, on every backend
        warnings.warn(NumbaInvalidConfigWarning("debug=True with opt=True is not supported by CUDA: numba-cuda warns "
                                                "that it may crash on a GPU (kdebug runs it, with its checks) - set "
                                                "debug=False or opt=False."), stacklevel=4)
    if debug and options.get("lineinfo"):
        warnings.warn(NumbaInvalidConfigWarning("debug and lineinfo are mutually exclusive. Use debug to get full "
                                                "debug info (this disables some optimizations), or lineinfo for line "
                                                "info only with code generation unaffected."), stacklevel=4)
