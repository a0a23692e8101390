"""The CPU runtime: packs parameters, runs grid launchers, spreads blocks over cores."""
from __future__ import annotations

import ctypes
import os

import numpy as np

from kdebug.errors import KernelRuntimeWarning, LaunchError
from kdebug.lang import types as T
from kdebug.lang.device import max_cooperative_grid_blocks
from kdebug.lang.host import DeviceNDArray
from kdebug.runtime import launch_context
from kdebug.runtime.artifacts import CpuArtifact
from kdebug.runtime.launch_context import LaunchContext
from kdebug.runtime.memcheck import error_from_record, warning_from_record
from kdebug.runtime.kernel_params import element_strides
from kdebug.runtime.param_packing import plan_for
from kdebug.runtime.record import I32P, LAUNCHER, RuntimeRecord
from kdebug.runtime.sanitizers import Hazard, LaunchChecks

Finding = Hazard | KernelRuntimeWarning  # what a launch reports besides an error (CpuRuntime.launch)

_SCALAR_CTYPES = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_uint16, "float32": ctypes.c_float, "float64": ctypes.c_double, "boolean": ctypes.c_bool,
}
_struct_cache: dict = {}
_pool = None  # the ThreadPoolExecutor blocks run on, made by the first launch big enough to need it
_NCPU = os.cpu_count() or 1
SHUFFLE_PERMUTATIONS = 8  # --shuffle-threads: thread orders drawn per launch, used in turn per block and phase
# Below this many threads one core is faster: handing blocks to the pool costs ~0.25 ms, and saxpy's
# break-even on a quiet 2-core machine was between 2^20 and 2^22 threads (benchmarks/README.md).
PARALLEL_MIN_THREADS = 1 << 21


def cores_idle(ncpu: int) -> bool:
    """Whether another core is free for the pool: on a machine kept busy by other work a pool thread
    waits for a time slice (measured at a load of 19 on 2 cores: saxpy on 2^19-2^23 threads 1.3-14x
    slower through the pool), so blocks then stay on this thread."""
    try:
        return os.getloadavg()[0] < ncpu - 0.5
    except OSError:
        return True


def ctype_of(t: T.Type):
    """The ctypes mirror of a kernel-language value (LLVM's natural layout on the host)."""
    hit = _struct_cache.get(t)
    if hit is not None:
        return hit
    if isinstance(t, T.EnumMember):  # its value
        return ctype_of(t.dtype)
    if isinstance(t, T.Scalar) and t.is_complex:  # numpy's layout: the real part, then the imaginary
        part = _SCALAR_CTYPES[str(t.underlying_float)]
        c = type(str(t), (ctypes.Structure,), {"_fields_": [("re", part), ("im", part)]})
    elif isinstance(t, T.Scalar) and t.is_datetime:
        c = ctypes.c_int64
    elif isinstance(t, T.Scalar):
        c = _SCALAR_CTYPES[str(T.Scalar(t.kind, t.bits))]  # an IntEnum member: its int
    elif isinstance(t, T.Array):  # a strided one (numba's 'A' and 'F') also carries its strides in elements
        dims = [("shape", ctypes.c_int64 * t.ndim)] + ([("strides", ctypes.c_int64 * t.ndim)] if t.strided else [])
        c = type(f"Array{t.ndim}", (ctypes.Structure,), {"_fields_": [("data", ctypes.c_void_p)] + dims})
    elif isinstance(t, T.Tuple):
        c = type("Tuple", (ctypes.Structure,), {"_fields_": [(f"f{k}", ctype_of(x)) for k, x in enumerate(t.types)]})
    elif isinstance(t, (T.FunctionPointer, T.CPointer, T.Record)):  # a record: the address of its bytes
        c = ctypes.c_void_p
    else:
        raise TypeError(f"cannot pass {t} to a kernel")
    _struct_cache[t] = c
    return c


def params_type(argtypes: tuple):
    key = ("params",) + tuple(argtypes)
    hit = _struct_cache.get(key)
    if hit is None:
        hit = type("Params", (ctypes.Structure,),
                   {"_fields_": [(f"a{k}", ctype_of(t)) for k, t in enumerate(argtypes)]})
        _struct_cache[key] = hit
    return hit


def to_cvalue(t: T.Type, value):
    if isinstance(t, T.EnumMember):
        return to_cvalue(t.dtype, value.value)
    if isinstance(t, T.Array):
        c = ctype_of(t)()
        c.data = value.device_address() if isinstance(value, DeviceNDArray) else value.ctypes.data
        for k, n in enumerate(value.shape):
            c.shape[k] = n
        if t.strided:
            for k, n in enumerate(element_strides(value)):
                c.strides[k] = n
        return c
    if isinstance(t, T.Tuple):
        c = ctype_of(t)()
        for k, (x, v) in enumerate(zip(t.types, value)):
            setattr(c, f"f{k}", to_cvalue(x, v))
        return c
    if isinstance(t, T.Scalar) and t.is_complex:
        z = complex(t.np_dtype.type(value))
        return ctype_of(t)(z.real, z.imag)
    if isinstance(t, T.Scalar) and t.is_datetime:  # the count of the type's unit
        return int(np.array(value).astype(t.np_dtype).astype(np.int64))
    if t == T.float16:  # ctypes has no half: its bits
        return int(np.float16(value).view(np.uint16))
    if isinstance(t, T.Scalar):
        return t.np_dtype.type(value).item() if not t.is_bool else bool(value)
    if isinstance(t, (T.CPointer, T.Record)):  # a record argument is staged as a one-element array
        return pointer_value(value)
    return value


def pointer_value(value) -> int:
    """The address a CPointer argument holds: an int, or the data of an array (CUDA array interface)."""
    if isinstance(value, DeviceNDArray):
        return value.device_address()
    if isinstance(value, np.ndarray):
        return value.ctypes.data
    return int(value)


def _forget_pool_in_child() -> None:
    """A forked child has none of the pool's threads: it makes a pool of its own on its first big launch."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool_in_child)


def pool():
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor  # start-up time: a small launch needs no pool
        _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="kdebug-block")
    return _pool


class CpuRuntime:
    """Runs loaded CPU kernels. Arrays are host memory: C-contiguous, or strided where their type is."""

    name = "cpu"

    def __init__(self) -> None:
        self._funcs: dict[int, object] = {}
        self._plans: dict[tuple, object] = {}
        self._dims: dict[tuple, object] = {}

    def pack_params(self, argtypes: tuple, args):
        """The launcher's parameter buffer: packed by the signature's plan (param_packing.py), or
        through ctypes structures for arguments a plan cannot pack flat (tuples)."""
        return self._packer(argtypes)(args)

    def _packer(self, argtypes: tuple):
        """``args -> parameter buffer`` for a signature: its flat plan's ``pack``, made once, else the
        ctypes structures."""
        plan = self._plans.get(argtypes, False)
        if plan is False:
            plan = self._plans[argtypes] = plan_for(argtypes, params_type(argtypes))
        if plan is not None:
            return plan.pack
        return lambda args: ctypes.byref(params_type(argtypes)(*[to_cvalue(t, v) for t, v in zip(argtypes, args)]))

    def dims(self, grid, block):
        """gx gy gz bx by bz depth as the launcher reads them (read only: one array per configuration)."""
        key = (grid, block)
        hit = self._dims.get(key)
        if hit is None:
            if len(self._dims) > 256:
                self._dims.clear()
            hit = self._dims[key] = (ctypes.c_int32 * 7)(*grid, *block, 0)
        return hit

    def launcher(self, address: int):
        fn = self._funcs.get(address)
        if fn is None:
            fn = self._funcs[address] = LAUNCHER(address)
        return fn

    def plan(self, compiled, argtypes: tuple) -> "KernelPlan":
        """What every launch of ``compiled`` with arguments of ``argtypes`` reads alike: made once by a
        caller that launches it again (``Session.launch`` keeps it per kernel and argument types)."""
        return KernelPlan(self, compiled, argtypes)

    def launch(self, compiled, args, argtypes, grid, block, shared: int = 0, parallel: bool = True,
               shuffle: int | None = None, context: LaunchContext | None = None,
               plan: KernelPlan | None = None) -> list[Finding]:
        """Run a grid. ``shuffle`` (a seed) runs each block's threads in a random order between barriers.
        A failed bounds check or a divergent barrier raises KernelRuntimeError (see runtime/memcheck.py).
        ``context``: the launch's context (runtime/launch_context.py), where its device-side launches
        report and its prints and their errors go; the caller reads them after (None: the launch makes
        its own, and raises the first error of a device-side launch). ``plan``: ``self.plan(compiled,
        argtypes)``, kept by the caller (None: made for this launch).
        Returns what the launch found besides an error: a barrier warning (runtime/memcheck.py), the
        hazards racecheck and initcheck found (runtime/sanitizers.py), if they ran."""
        if plan is None:
            plan = KernelPlan(self, compiled, argtypes)
        params = plan.pack(args)
        dims = self._dims.get((grid, block)) or self.dims(grid, block)
        nblocks = grid[0] * grid[1] * grid[2]
        nt = block[0] * block[1] * block[2]
        threads = nblocks * nt
        tiers = plan.tiers  # the best code ready (targets/cpu/tiers.py)
        address = plan.entry_address if tiers is None else tiers.address(plan.job, threads)
        fn = self._funcs.get(address) or self.launcher(address)
        record = RuntimeRecord()
        if shared:
            record.dyn_shared = max(0, int(shared))
        perm = None
        if shuffle is not None:
            rng = np.random.default_rng(shuffle)
            perm = np.concatenate([rng.permutation(nt) for _ in range(SHUFFLE_PERMUTATIONS)]).astype(np.int32)
            record.perm, record.nperm, record.perm_nt = perm.ctypes.data_as(I32P), SHUFFLE_PERMUTATIONS, nt
        checks = None
        if plan.sanitized:
            # one thread of the host runs the whole grid: the shadow entries are not shared between cores
            checks = LaunchChecks(record, args, argtypes, plan.racecheck, plan.initcheck)
            parallel = False
        rt = ctypes.addressof(record)
        grid_sync = plan.grid_sync
        if grid_sync:
            _check_cooperative(plan.name, nblocks, nt)
        own = context is None
        if own:
            context = LaunchContext()
        context.sites, context.formats, context.launcher = plan.sites, plan.formats, self.launcher
        context.check_sites = plan.check_sites
        # for the callbacks (device-side launches, print) and a report while it runs (progress.started)
        running = (plan.name, grid, block, record)
        context.running.append(running)
        active = launch_context.ACTIVE
        active[rt] = context  # launch_context.enter, inline: the callbacks find the context by the record
        try:
            if (grid_sync or not parallel or threads < PARALLEL_MIN_THREADS or nblocks < 2 or _NCPU == 1
                    or not cores_idle(_NCPU)):
                fn(params, dims, 0, nblocks, rt)
            else:
                chunks = min(_NCPU * 4, nblocks)
                bounds = np.linspace(0, nblocks, chunks + 1).astype(np.int64)
                futures = [pool().submit(fn, params, dims, int(lo), int(hi), rt)
                           for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
                for f in futures:
                    f.result()
        finally:
            active.pop(rt, None)  # launch_context.leave
            context.running.remove(running)
        del perm
        if record.error or record.exc_site:  # a failed check, or a debug=True kernel's exception
            raise error_from_record(record, plan.name, plan.check_sites)
        if own and context.errors:
            raise context.errors[0]
        warning = warning_from_record(record, plan.name, plan.check_sites) if record.warn_site else None
        found: list[Finding] = [warning] if warning is not None else []
        if checks is not None:  # racecheck's and initcheck's hazards (runtime/sanitizers.py)
            found += checks.hazards_found(record, plan.name, grid, block, plan.check_sites)
        return found


class KernelPlan:
    """One compiled kernel's launches with one signature: the parameter packer and what the launch
    reads from the kernel's record and artifact, read once (none of it changes after the compile; the
    tier whose code runs is asked at each launch)."""

    __slots__ = ("pack", "tiers", "entry_address", "job", "name", "sanitized", "racecheck", "initcheck",
                 "grid_sync", "sites", "formats", "check_sites")

    def __init__(self, runtime: CpuRuntime, compiled, argtypes: tuple) -> None:
        artifact: CpuArtifact = compiled.artifact
        record = compiled.record
        self.pack = runtime._packer(argtypes)
        self.tiers, self.entry_address, self.job, self.name = artifact.tiers, compiled.entry_address, record.id, record.name
        self.sanitized, self.racecheck, self.initcheck = artifact.sanitized, artifact.racecheck, artifact.initcheck
        self.grid_sync = record.entry in artifact.grid_sync
        self.sites, self.formats, self.check_sites = artifact.launch_sites, artifact.print_formats, artifact.check_sites


def _check_cooperative(name: str, nblocks: int, nt: int) -> None:
    """A grid that syncs must fit on the device at once (numba's max_cooperative_grid_blocks)."""
    limit = max_cooperative_grid_blocks(nt)
    if nblocks > limit:
        raise LaunchError(f"{name} syncs its grid (cuda.cg.this_grid().sync()), so all of its blocks must be "
                          f"co-resident: {nblocks} blocks of {nt} threads exceed the {limit} that fit on the "
                          f"emulated device at once (max_cooperative_grid_blocks({nt}))", None,
                          "launch at most max_cooperative_grid_blocks(blockdim) blocks and loop over the data "
                          "inside the kernel")
