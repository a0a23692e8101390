"""The CPU backend's sanitizers, host side: which run, what they watch, what they found.

``--sanitize memcheck,synccheck,racecheck,initcheck`` (default ``memcheck,synccheck``):

* memcheck: bounds checks on every array access (kdebug/runtime/memcheck.py);
* synccheck: divergent barriers. The block scheduler cannot run a block past a
  barrier that only part of it reached, so this check is always on;
* racecheck: shared-memory hazards between threads of a block with no barrier
  between them, and global-memory hazards between threads of a launch with no
  grid barrier (or, in one block, no block barrier) between them;
* initcheck: reads of global memory that neither the host nor a kernel wrote
  (``cuda.device_array`` is uninitialised, as on a GPU), and of shared memory
  that no thread of the block wrote before (in an earlier barrier epoch, or the
  reading thread itself).

The compiled side is kdebug/targets/cpu/checks/sanitizers.py; the structures both
share are in kdebug/runtime/record.py.
"""
from __future__ import annotations

import ctypes

import numpy as np

from kdebug.errors import SourceLocation, format_error
from kdebug.lang import types as T
from kdebug.lang.host import DeviceNDArray
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import record as R

from kdebug.runtime.sanitizer_names import DEFAULT, SANITIZERS  # noqa: F401 - DEFAULT re-exported
# hazard kinds (HazardSlot.kind)
RAW, WAR, WAW, UNINIT = 1, 2, 3, 4
KIND_NAMES = {RAW: "read-after-write", WAR: "write-after-read", WAW: "write-after-write",
              UNINIT: "uninitialised read"}
HAZARD_CAPACITY = 256


def ordered(names) -> list[str]:
    return [n for n in SANITIZERS if n in names]


@dataclass(frozen=True)
class Access:
    site: int
    loc: SourceLocation
    access: str  # read, write, atomic, update
    block: tuple
    thread: tuple


@dataclass(frozen=True)
class Hazard:
    """One distinct hazard of a launch: kind and site pair, with its first occurrence and count."""

    sanitizer: str  # racecheck or initcheck
    kind: str  # read-after-write, write-after-read, write-after-write, uninitialised read
    kernel: str
    array: str
    space: str  # shared or global
    index: tuple
    first: Access
    second: Access | None
    count: int

    @property
    def message(self) -> str:
        idx = str(self.index[0]) if len(self.index) == 1 else str(self.index)
        if self.second is None:
            return (f"{self.kind} of {self.space} array {self.array!r}[{idx}] in kernel {self.kernel}: "
                    f"{_who(self.first)} reads it before anything wrote it ({_times(self.count)})")
        return (f"{self.kind} hazard on {self.space} array {self.array!r}[{idx}] in kernel {self.kernel}: "
                f"{_who(self.first)} {_verb(self.first)} at {self.first.loc}, {_who(self.second)} "
                f"{_verb(self.second)} at {self.second.loc}, with no barrier between ({_times(self.count)})")

    @property
    def hint(self) -> str:
        if self.second is None:
            if self.space == "shared":
                return "write every element of the shared array (and call cuda.syncthreads()) before reading it"
            return "fill the array first (cuda.to_device, or a kernel that writes every element)"
        if self.space == "shared":
            return "put a cuda.syncthreads() between the two accesses, or give each thread its own elements"
        return ("use cuda.atomic.* for elements several threads update, split the kernel in two launches, "
                "or sync the grid (cuda.cg.this_grid().sync()) between the phases")

    @property
    def text(self) -> str:
        """The whole report: the message, both source lines with a caret, a hint."""
        lines = [format_error(self.sanitizer, self.message, self.first.loc, None)]
        if self.second is not None:
            lines.append(format_error("note", f"the other access ({self.second.access})", self.second.loc, None))
        lines.append(f"hint: {self.hint}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        def acc(a):
            return None if a is None else {"location": a.loc.to_json(), "access": a.access,
                                           "block": list(a.block), "thread": list(a.thread)}
        return {"sanitizer": self.sanitizer, "kind": self.kind, "kernel": self.kernel, "array": self.array,
                "space": self.space, "index": list(self.index), "first": acc(self.first),
                "second": acc(self.second), "count": self.count}


def _who(a: Access) -> str:
    return f"thread {_dim3(a.thread)} of block {_dim3(a.block)}"


def _verb(a: Access) -> str:
    return {"read": "reads it", "write": "writes it", "atomic": "updates it atomically",
            "update": "updates it"}.get(a.access, a.access)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _extent(host: np.ndarray) -> tuple[int, int]:
    """The lowest address and the byte span of an array's elements: a strided argument (numba's 'A', 'F')
    reaches past its first element's nbytes, or before it with negative strides."""
    lo = hi = 0
    for n, stride in zip(host.shape, host.strides):
        step = (n - 1) * stride
        lo, hi = lo + min(step, 0), hi + max(step, 0)
    return host.ctypes.data + lo, hi - lo + host.itemsize


def _dim3(v) -> str:
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


class LaunchChecks:
    """The sanitizers' part of one CPU launch: the regions and hazard table in the runtime record,
    kept alive for the launch, then read back."""

    def __init__(self, record: R.RuntimeRecord, args, argtypes, racecheck: bool, initcheck: bool) -> None:

        self._keep = []
        regions = []
        seen = set()
        for value, t in zip(args, argtypes):
            if not isinstance(t, T.Array):
                continue
            if isinstance(value, DeviceNDArray):
                host = value._host
                written = value._written_map() if initcheck and hasattr(value, "_written") else None
            else:
                host, written = value, None  # numpy arrays come from the host: written
            if host.size == 0:
                continue
            base, nbytes = _extent(host)
            if base in seen:
                continue
            seen.add(base)
            if written is not None and len(written) * host.itemsize != nbytes:
                written = None  # no map over this extent (cannot happen for kdebug's arrays): all written
            shadow = np.zeros(nbytes // host.itemsize * ctypes.sizeof(R.ShadowEntry), dtype=np.uint8)
            self._keep += [shadow, written]
            regions.append(R.Region(base, nbytes, host.itemsize, shadow.ctypes.data,
                                    written.ctypes.data if written is not None else None))
        self.regions = (R.Region * max(1, len(regions)))(*regions)
        self.hazards = (R.HazardSlot * HAZARD_CAPACITY)()
        record.regions, record.nregions = ctypes.addressof(self.regions), len(regions)
        record.hazards, record.hazard_cap = ctypes.addressof(self.hazards), HAZARD_CAPACITY

    def hazards_found(self, record: R.RuntimeRecord, kernel: str, grid, block, sites) -> list[Hazard]:
        # sites: the artifact's memcheck.SiteTable, where the instrumented accesses' ids were registered

        nt = block[0] * block[1] * block[2]
        out = []
        for k in range(record.nhazards):
            h = self.hazards[k]
            first = sites.site(h.site_a)
            second = sites.site(h.site_b) if h.kind != UNINIT else None
            index = tuple(int(h.index[j]) for j in range(max(1, first.ndim)))
            out.append(Hazard(
                sanitizer="initcheck" if h.kind == UNINIT else "racecheck", kind=KIND_NAMES[h.kind], kernel=kernel,
                array=first.array, space=first.space, index=index,
                first=_access(h.site_a, first, h.gid_a, nt, grid, block),
                second=_access(h.site_b, second, h.gid_b, nt, grid, block) if second is not None else None,
                count=int(h.count)))
        return sorted(out, key=lambda h: (h.sanitizer, h.first.loc.line, h.first.loc.col,
                                          h.second.loc.line if h.second else 0, h.kind))


def _access(site_id, s, gid, nt, grid, block) -> Access:
    blk, t = divmod(int(gid), nt)
    thread = (t % block[0], t // block[0] % block[1], t // (block[0] * block[1]))
    blocks = (blk % grid[0], blk // grid[0] % grid[1], blk // (grid[0] * grid[1]))
    return Access(site_id, s.loc, s.access, blocks, thread)
