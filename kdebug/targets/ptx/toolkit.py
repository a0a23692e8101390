"""The CUDA toolkit, found through PATH and CUDA_HOME: ptxas, nvlink, libcudadevrt.a, libdevice."""
from __future__ import annotations

import os
import re
import shutil

from kdebug import settings


def _follow_wrapper(path: str) -> str:
    """Some installs put a one-line shell script on PATH that execs the real tool: follow it."""
    try:
        if os.path.getsize(path) < 4096:
            with open(path, "rb") as f:
                head = f.read(4096)
            if head.startswith(b"#!"):
                m = re.search(rb'exec\s+"?([^\s"]+)"?', head)
                if m and os.path.isfile(m.group(1)):
                    return os.path.realpath(m.group(1).decode())
    except OSError:
        pass
    return path


def cuda_home() -> str | None:
    """The CUDA toolkit: $CUDA_HOME / $CUDA_PATH / $CUDA_ROOT, else the folder above ptxas or nvcc."""
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        d = os.environ.get(var)
        if d and os.path.isdir(d):
            return d
    for tool in ("ptxas", "nvcc", "nvlink"):
        exe = shutil.which(tool)
        if exe:
            return os.path.dirname(os.path.dirname(_follow_wrapper(os.path.realpath(exe))))
    return None


def cuda_tool(name: str) -> str | None:
    """ptxas or nvlink: on PATH, else in the toolkit's bin."""
    exe = shutil.which(name)
    if exe:
        return exe
    home = cuda_home()
    path = os.path.join(home, "bin", name) if home else None
    return path if path and os.access(path, os.X_OK) else None


def cuda_libdir() -> str | None:
    """The folder holding libcudadevrt.a (the device runtime, for device-side launches)."""
    home = cuda_home()
    if home is None:
        return None
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"),
                os.path.join("targets", "sbsa-linux", "lib")):
        d = os.path.join(home, sub)
        if os.path.isfile(os.path.join(d, "libcudadevrt.a")):
            return d
    return None


def libdevice_path() -> str | None:
    """libdevice.10.bc: $KDEBUG_LIBDEVICE, the toolkit's nvvm/libdevice, or the nvidia pip wheels'."""
    env = settings.variable("KDEBUG_LIBDEVICE")
    if env and os.path.isfile(env):
        return env
    candidates = []
    home = cuda_home()
    if home:
        candidates.append(os.path.join(home, "nvvm", "libdevice", "libdevice.10.bc"))
    try:
        import nvidia  # the cuda-nvcc wheels numba-cuda installs
        for root in nvidia.__path__:
            for sub in ("cu13", "cuda_nvcc", "cu12"):
                candidates.append(os.path.join(root, sub, "nvvm", "libdevice", "libdevice.10.bc"))
    except ImportError:
        pass
    return next((c for c in candidates if os.path.isfile(c)), None)
