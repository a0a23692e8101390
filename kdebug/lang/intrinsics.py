"""Host-side stand-ins for the names kernels use (``cuda.threadIdx``, ``cuda.grid``...).

The frontend recognises these objects by their ``name`` and compiles them; on
the host they only explain that they belong inside a kernel.
"""
from __future__ import annotations


class Intrinsic:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"cuda.{self.name}() can only be used inside a @cuda.jit kernel or device function")

    def __repr__(self) -> str:
        return f"<kdebug intrinsic cuda.{self.name}>"


class Dim3Intrinsic(Intrinsic):
    """threadIdx, blockIdx, blockDim, gridDim: read ``.x``, ``.y``, ``.z`` in a kernel."""

    def __getattr__(self, attr: str):
        if attr in ("x", "y", "z"):
            raise RuntimeError(f"cuda.{self.name}.{attr} can only be read inside a @cuda.jit kernel")
        raise AttributeError(attr)


class IntrinsicNamespace:
    """A group of intrinsics such as ``cuda.atomic`` or ``cuda.shared``."""

    def __init__(self, name: str, members: list[str]) -> None:
        self.name = name
        for m in members:
            setattr(self, m, Intrinsic(f"{name}.{m}"))

    def __repr__(self) -> str:
        return f"<kdebug intrinsic namespace cuda.{self.name}>"


threadIdx = Dim3Intrinsic("threadIdx")
blockIdx = Dim3Intrinsic("blockIdx")
blockDim = Dim3Intrinsic("blockDim")
gridDim = Dim3Intrinsic("gridDim")
grid = Intrinsic("grid")
gridsize = Intrinsic("gridsize")
laneid = Intrinsic("laneid")
warpsize = 32  # numba exposes cuda.warpsize as a constant in kernels
syncthreads = Intrinsic("syncthreads")
syncthreads_count = Intrinsic("syncthreads_count")
syncthreads_and = Intrinsic("syncthreads_and")
syncthreads_or = Intrinsic("syncthreads_or")
syncwarp = Intrinsic("syncwarp")
# warp operations (numba-cuda's intrinsics.py)
shfl_sync = Intrinsic("shfl_sync")
shfl_up_sync = Intrinsic("shfl_up_sync")
shfl_down_sync = Intrinsic("shfl_down_sync")
shfl_xor_sync = Intrinsic("shfl_xor_sync")
all_sync = Intrinsic("all_sync")
any_sync = Intrinsic("any_sync")
eq_sync = Intrinsic("eq_sync")
ballot_sync = Intrinsic("ballot_sync")
match_any_sync = Intrinsic("match_any_sync")
match_all_sync = Intrinsic("match_all_sync")
activemask = Intrinsic("activemask")
lanemask_lt = Intrinsic("lanemask_lt")
threadfence = Intrinsic("threadfence")
threadfence_block = Intrinsic("threadfence_block")
threadfence_system = Intrinsic("threadfence_system")
shared = IntrinsicNamespace("shared", ["array"])
local = IntrinsicNamespace("local", ["array"])
const = IntrinsicNamespace("const", ["array_like"])
atomic = IntrinsicNamespace("atomic", ["add", "sub", "max", "min", "nanmax", "nanmin", "exch", "cas",
                                       "compare_and_swap", "and_", "or_", "xor", "inc", "dec"])
# bit, integer and arithmetic intrinsics (numba-cuda's cudadecl.py)
popc = Intrinsic("popc")
brev = Intrinsic("brev")
clz = Intrinsic("clz")
ffs = Intrinsic("ffs")
fma = Intrinsic("fma")
cbrt = Intrinsic("cbrt")
selp = Intrinsic("selp")
# numba.cuda.libdevice's integer functions
libdevice = IntrinsicNamespace("libdevice", ["hadd", "uhadd", "rhadd", "urhadd", "mul24", "umul24", "mulhi",
                                             "umulhi", "mul64hi", "umul64hi", "sad", "usad"])


class _GridGroup:
    sync = Intrinsic("cg.this_grid.sync")


class _CooperativeGroups:
    """``cuda.cg`` in kernels: numba-cuda 0.30.4's cg module has only ``this_grid()``."""
    __name__ = "cuda.cg"
    this_grid = Intrinsic("cg.this_grid")

    @staticmethod
    def _missing_attribute(attr: str) -> tuple[str, str]:
        """The message and hint for ``cuda.cg.<attr>`` that numba lacks (``this_thread_block``...)."""
        return (f"cuda.cg.{attr} is not in numba-cuda 0.30.4: its cooperative groups module has only "
                f"this_grid() (a GridGroup with .sync())",
                "for the block use cuda.syncthreads(); its size is cuda.blockDim.x * cuda.blockDim.y * "
                "cuda.blockDim.z and a thread's rank in it cuda.threadIdx.x + cuda.blockDim.x * "
                "(cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)")


cg = _CooperativeGroups()


def literal_unroll(container):
    """numba's literal_unroll: on the host the container itself; in a kernel's ``for`` loop over a tuple of
    mixed types, the body runs once per element with that element's type (kdebug/frontend/unroll.py)."""
    return container


def deferred(fn):
    """In device code: the address of ``fn`` compiled as its own (deferred) job; call it like ``fn``."""
    raise RuntimeError("kdebug.deferred() can only be used inside a @cuda.jit kernel or device function")
