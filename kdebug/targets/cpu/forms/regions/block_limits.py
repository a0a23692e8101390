"""The block shape a region-form launcher keeps a copy of its thread loops for: memcheck's checks on the thread index.

A shared array indexed by the thread's index, ``sA[ty, k]`` of a tiled matmul with 16 x 16 tiles or
``sdata[tid]`` of a block reduction over 256 threads, gets a memcheck check ``ty < 16`` (``tid < 256``) in
every thread's step. In the launcher's thread loop ``ty`` runs up to the block's size, which LLVM only
knows to be at most 1,024 (the launch's limit): the check stays in the loop, a branch out of it on every
access, and the loop is not vectorised (measured: the tiled matmul ran 3x slower with memcheck than
without, Harris's reduction #4 2.5x).

``block_limits`` reads the optimised step function for those checks: a branch to a failed check's block
(memcheck's ``oob`` blocks, or the block a failed check ends the step in) on ``threadIdx.k < C`` (the index as the lowering leaves it: through casts,
numba's wraparound ``select`` for negative indices, an ``or`` of two indices InstCombine merged). For each
dimension it keeps the greatest such C (1,024 where there is none). The launcher (scheduler.py) then runs its
thread loops in two copies: one for blocks no larger than those limits, where it tells LLVM so
(``llvm.assume``) and the checks fold, and the plain one for every other block, whose checks report what
they find. Where the step function has no such check, the launcher has one copy, as before. What is
decided shows in the IR after finish (``kdebug.block_limits``) and the regions view.
"""
from __future__ import annotations

import re

from kdebug.targets.cpu.checks.memcheck import FAILED_CHECK_BLOCK
from kdebug.targets.cpu.forms.regions.bounds import Facts, StepFunction, Undecided
from kdebug.targets.cpu.forms.regions.cut import FRESH_EXIT_BLOCK
from kdebug.targets.cpu.layout import CTX_TID

ANY = 1024  # a dimension no check limits: every launch's block fits (CUDA's limit of threads in a block)
_CASTS = {"zext", "sext", "trunc"}
_PREDICATE = re.compile(r"icmp\s+(?:samesign\s+)?(\w+)")


def block_limits(fn, facts: Facts) -> tuple[int, int, int] | None:
    """(x, y, z): for each dimension of the block, the greatest C of a memcheck check ``threadIdx.k < C`` in
    the optimised step function ``fn`` (``ANY`` where none); None where it has no such check."""
    try:
        sf = StepFunction(fn, facts)
    except Undecided:
        return None
    tid = {sf.off[CTX_TID] + 4 * k: k for k in range(3)}
    found = [0, 0, 0]
    for blk in sf.blocks:
        term = blk.instructions[-1] if blk.instructions else None
        if term is None or term.opcode != "br" or len(sf.ops(term)) != 3:
            continue
        cond, if_false, if_true = sf.ops(term)  # LLVM keeps a branch's targets false first
        if _failed(if_false) and not _failed(if_true):
            checks = _parts(sf, cond, "and", passing=True)  # the condition of the access in bounds
        elif _failed(if_true) and not _failed(if_false):
            checks = _parts(sf, cond, "or", passing=False)  # InstCombine's inverted branch: the failure's
        else:
            continue
        for index, limit in checks:
            if 0 < limit <= ANY:
                for k in _thread_indices(sf, index, tid, 0):
                    found[k] = max(found[k], limit)
    if not any(found):
        return None
    import os
    return tuple(c or int(os.environ.get('KD_NOC', ANY)) for c in found)


def _failed(block) -> bool:
    """Whether ``block`` is where a failed check goes: its own block (memcheck.py), or the block a region-form
    step ends in after one (cut.fail_fresh), into which LLVM may have merged its own. (LLVM keeps the names
    it was given, with a suffix where it copies a block.)"""
    return block.name.startswith((FAILED_CHECK_BLOCK, FRESH_EXIT_BLOCK))


def _parts(sf, cond, join: str, passing: bool) -> list:
    """(index, C) of each ``index <u C`` that ``cond`` (a branch's condition, the conjunction or disjunction of
    ``join`` of its parts) holds, where it is the in-bounds condition (``passing``) or the failure's."""
    if not cond.is_instruction:
        return []
    ops = sf.ops(cond)
    if cond.opcode == join and cond.type == "i1":
        return _parts(sf, ops[0], join, passing) + _parts(sf, ops[1], join, passing)
    if cond.opcode != "icmp":
        return []
    m = _PREDICATE.search(str(cond.ref))
    if m is None:
        return []
    p = m.group(1)
    x, c = ops
    if x.is_constant and not c.is_constant:  # C on the left: the predicate seen from the index
        x, c = c, x
        p = {"ult": "ugt", "ule": "uge", "ugt": "ult", "uge": "ule"}.get(p, "")
    if not c.is_constant or c.is_instruction:
        return []
    try:
        n = c.get_constant_value()
    except (ValueError, TypeError):
        return []
    # in bounds: x < n (x <= n: n + 1); failed: x >= n (x > n: in bounds below n + 1)
    limit = {(True, "ult"): n, (True, "ule"): n + 1, (False, "uge"): n, (False, "ugt"): n + 1}.get((passing, p))
    return [(x, limit)] if limit is not None else []


def _thread_indices(sf, v, tid: dict, depth: int) -> set:
    """The dimensions k whose ``threadIdx.k`` ``v`` is, as the lowering leaves an index (casts, numba's
    wraparound ``select``, both sides of an ``or``)."""
    if depth > 6 or not v.is_instruction:
        return set()
    ops = sf.ops(v)
    if v.opcode == "load":
        where = sf.place(ops[0])
        return {tid[where[1]]} if where is not None and where[0] == "ctx" and where[1] in tid else set()
    if v.opcode in _CASTS:
        return _thread_indices(sf, ops[0], tid, depth + 1)
    if v.opcode == "or":
        return _thread_indices(sf, ops[0], tid, depth + 1) | _thread_indices(sf, ops[1], tid, depth + 1)
    if v.opcode == "select":  # numba's index + extent where it is negative, the index itself otherwise
        return _thread_indices(sf, ops[1], tid, depth + 1) | _thread_indices(sf, ops[2], tid, depth + 1)
    return set()
