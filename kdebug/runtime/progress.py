"""Where the CPU launches running in this process are, said while they run.

``CpuRuntime.launch`` notes each launch in its context's ``running`` (kdebug/runtime/launch_context.py)
for as long as the launcher runs, and registers the context while it runs; a device-side launch
notes itself in the same context. The compiled code keeps two marks in the runtime record
(kdebug/targets/cpu/progress_ir.py): the first block of the range a launcher runs, and the while
loop a thread entered last with that thread's block. ``describe()`` reads them from another
thread — the launcher runs without the GIL (a ctypes call), so the debuggee's control thread can
answer "where are you?" while a kernel never ends (only a while loop can run forever).
"""
from __future__ import annotations

import ctypes

from kdebug.runtime import launch_context


def started(context, name: str, grid, block, record) -> tuple:
    """Note a launch in ``context`` for as long as its launcher runs; returns what ``finished`` takes.
    (CpuRuntime.launch does the same inline: a list append and remove cost the launch path least.)"""
    entry = (name, grid, block, record)
    context.running.append(entry)
    return entry


def finished(context, entry: tuple) -> None:
    try:
        context.running.remove(entry)
    except ValueError:
        pass


_MARKS = ("at_block", "at_site", "at_site_block")


def saved_marks(record) -> tuple:
    """A device-side launch writes its marks into its parent's record: the parent's, to put back after."""
    return tuple(getattr(record, f) for f in _MARKS)


def restore_marks(record, marks) -> None:
    for f, v in zip(_MARKS, marks):
        setattr(record, f, v)


def _dim3(v) -> str:
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


def _unlinear(linear: int, dims) -> tuple[int, int, int]:
    nx, ny = max(dims[0], 1), max(dims[1], 1)
    return linear % nx, linear // nx % ny, linear // (nx * ny)


def describe_launch(name: str, grid, block, record, sites=None) -> str:
    """One line: the block (and thread) running and the kernel's while loop, where the record says;
    ``sites``: the launch's memcheck.SiteTable (its context's ``check_sites``), which names the loop."""
    nblocks = grid[0] * grid[1] * grid[2]
    at = min(max(int(record.at_block), 0), max(nblocks - 1, 0))
    text = f"{name}: no thread entered a while loop (running the blocks from {_dim3(_unlinear(at, grid))} on, of {nblocks})"
    site_id = int(record.at_site)
    try:
        site = sites.site(site_id) if site_id > 0 and sites is not None else None
    except IndexError:
        site = None
    if site is None or site.kind != "loop":
        return text
    where = "" if site.function == name else f" of {site.function_kind} function {site.function}"
    blk = _unlinear(int(record.at_site_block) & 0xFFFFFFFF, grid)
    return f"{name}: a thread of block {_dim3(blk)} last entered the while loop{where} at {site.loc.file}:{site.loc.line}"


def describe() -> list[str]:
    """A line per launch running now, outermost first. A launch waiting for its device-side launch
    (which writes into the same record) is only named."""
    entries = [(entry, context.check_sites) for context in launch_context.running() for entry in list(context.running)]
    lines, seen = [], set()
    for (name, grid, block, record), sites in reversed(entries):
        addr = ctypes.addressof(record)
        lines.append(f"{name} waiting for its device-side launch" if addr in seen
                     else describe_launch(name, grid, block, record, sites))
        seen.add(addr)
    return lines[::-1]
