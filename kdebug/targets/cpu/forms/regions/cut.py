"""The region form: a kernel with block barriers cut at its barriers, each region run as a loop over the
block's threads (MCUDA, PoCL's work-group functions, CuPBoP), instead of one coroutine per thread.

Lowering (hooks of target.py) makes the kernel a *step function*: called with a thread's context, it
runs that thread from where it stopped to its next barrier or its end, and returns. Its entry block
reads the site the thread waits at (the context's ``barrier`` field, 0 at the start) and switches to
the code after that barrier (``region.start`` for 0); a barrier stores its site, its reach line and the
thread's vote in the context, exactly as a coroutine's barrier does, and returns; the end stores the
exit line and 0. Which threads wait where is then what the block scheduler reads for coroutines, so
the launcher (region_scheduler.py) decides divergence, the exit rule and votes with the same code.

The ``regions`` stage (``cut``) then gives the thread's state a place that outlives a call: every stack
slot whose value may be read after a barrier before it is written again (a variable live across a
barrier, found by a walk of the control flow from each region's start), and every slot whose address
is taken (arrays, records), becomes a per-thread *column*: ``LANES`` entries of its type side by side
in the block's region frame (the context's ``frame`` field), entry ``lane`` for thread number
``lane``. A thread loop that runs one region for consecutive threads then loads and stores its columns
contiguously, and LLVM vectorises it across threads. Slots written before every read in each region
stay stack slots (registers after optimisation). Two kinds of variable need no column: one stored once
with a value of the thread's indices, its block's, constants and arguments (``t = cuda.threadIdx.x``,
``i = cuda.grid(1)``, an argument's slot, a shared array) is computed again where a region needs it
(``_rematerialisable``), so that the thread loop sees ``t`` as its own induction variable; and one
updated alike in every thread (``updated_uniform_variables``: ``step //= 2`` of a tree reduction, the
counter of a ``for`` over a uniform ``range`` around barriers) has two entries, the value its regions
start from and the value they leave at the barrier, which the launcher makes the next region's when
the barrier completes. Values in registers never cross a cut: barriers
stand only as statements (``region_reason``), and a range loop keeps its bounds in slots
(``Target.keeps_loop_bounds_in_slots``); ``cut`` checks it.

A grid-stride loop (one the coroutines would run in lockstep, over a range whose step is not 1) runs in
*rounds* (``emit_rounds``): its iteration region runs a few iterations of every thread per thread loop,
and the launcher runs it again while a thread has iterations left.

Where the form does not apply, the kernel is lowered as coroutines (coroutines.py) and
``region_reason`` says why; the job's record shows which form it got.
"""
from __future__ import annotations

import ast
from dataclasses import field as dc_field

from llvmlite import ir

from kdebug.frontend import grid_stride
from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines.barrier_lines import in_branch, reach_line
from kdebug.targets.cpu.ir_helpers import const, field
from kdebug.runtime.record import LOCKSTEP_FLAG, REGION_INDEX, ROUND_DONE, ROUND_START  # the barrier field's bits
from kdebug.targets.cpu.forms.coroutines.lockstep_rules import loop_reason, own_ranges, pure_call, writes_arrays
from kdebug.targets.cpu.checks.memcheck import FAILED_STEP, FRESH, fail_slot_fields, oob_function
from kdebug.targets.cpu import warp as W
from kdebug.targets.cpu.layout import (CTX_BAR_LINE, CTX_BARRIER, CTX_CTAID, CTX_DYN_BYTES, CTX_DYN_SHARED,
                                       CTX_EXIT_LINE, CTX_FAIL_SLOTS, CTX_FRAME, CTX_NCTAID, CTX_NTID, CTX_SHARED, CTX_TID,
                                       CTX_VOTE, CTX_WKIND, END_OF_KERNEL, IN_BRANCH, WARP_FLAG, i32, i64)

ROUND_ITERATIONS = 4  # the iterations a thread runs in one round of a loop in rounds (emit_rounds): fewer
# rounds, each with its thread loop and the thread's stop (sample_kernels/warp_reduce.py, 2^24 floats: 6.7 ms
# with 1, 5.7 with 4, memcheck off; 14 and 10 ms with it)
FRESH_EXIT_BLOCK = "memcheck.failed"  # the block a failed check ends its thread's step in (block_limits.py)
LANES = 1024  # threads a column holds: the most a block has (launches of more are refused)
COLUMN_ALIGN = 64  # each column starts on a cache line

BLOCK_BARRIERS = frozenset({"syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or"})
WARP_OPERATIONS = frozenset({"shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync",
                             "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync", "activemask", "syncwarp"})
ALL_LANES = (0xFFFFFFFF, -1)  # a warp operation's mask naming all 32 lanes


@dataclass
class RegionLowering:
    """What the lowering of one region-form kernel records (its hooks fill it in, ``begin`` first), for the
    regions stage's ``cut`` and the launcher (``CpuModuleState.regions``)."""
    dispatch: object = None  # the entry block's switch on the site the thread waits at
    start: object = None  # the block where a thread's first region begins
    sites: list = dc_field(default_factory=list)  # the barriers' values (site | IN_BRANCH), in source order
    conts: list = dc_field(default_factory=list)  # the block after each barrier
    returns: list = dc_field(default_factory=list)  # the block that returns at each barrier
    lines: list = dc_field(default_factory=list)  # each barrier's source line
    votes: bool = False  # a syncthreads_count/and/or: the launcher sums the votes
    uniform: set = dc_field(default_factory=set)  # id() of the slots of block-uniform variables (one entry)
    updated: set = dc_field(default_factory=set)  # id() of uniform variables assigned again (two entries)
    uniform_names: set = dc_field(default_factory=set)  # the block-uniform variables' names
    parents: dict = dc_field(default_factory=dict)  # the kernel's syntax tree: each node's parent
    warp_slots: tuple | None = None  # the slots of a warp operation's operands and their copies, and a shuffle's source lane
    rounds: list = dc_field(default_factory=list)  # (line, number of the iteration region) of each loop run in rounds
    round_slot: object = None  # the round counter of the loops in rounds (one entry, written by the launcher)
    failure_accesses: list = dc_field(default_factory=list)  # the loads and stores of the threads' failure records
    direct: set = dc_field(default_factory=set)  # id() of slots that are their column entries (no spill, no reload)
    fresh: bool = False  # memcheck: a failed check ends the thread's step, reported after the loop (fail_fresh)
    fresh_why: str | None = None  # memcheck on and ``fresh`` False: why (the regions snapshot shows it)
    fresh_exit: object = None  # the block that returns from a failed check (no state stored)
    notes: list = dc_field(default_factory=list)  # what keeps a loop off the fast path, with its line (the snapshot)


@dataclass(frozen=True)
class RegionCut:
    """What the regions stage's ``cut`` adds to a region-form kernel's ``RegionLowering``: the region frame's
    layout (``CpuModuleState.cuts``; its absence there means the kernel is not cut yet)."""
    frame_bytes: int = 0  # the region frame of one block
    columns: tuple = ()  # (slot name, bytes per thread: 0 one entry, -1 two) of each column
    recomputed: tuple = ()  # the slots computed again where a region needs them
    entry_names: tuple = ()  # ((frame offset of an updated uniform variable's current entry, its name), ...)
    uniform_copy: tuple | None = None  # (current, next, bytes, ((offset, bytes) of each variable...)): the
    # launcher copies each variable's next entry to its current one at a barrier
    warp_columns: tuple | None = None  # (operands, copies): the warp slots' columns' frame offsets
    round_entry: int | None = None  # the round counter's frame offset (RegionLowering.round_slot)


# ---- which kernels take the form -----------------------------------------------------------------
def region_reason(lc, options) -> str | None:
    """Why the kernel being lowered (one with block barriers) cannot take the region form; None when it can."""
    tf = lc.tf
    if not options.regions:
        return "the region form is turned off (regions=False or KDEBUG_REGIONS=0)"
    if lc.debug:
        return "debug=True: the kernel keeps numba's python error model, lowered as coroutines"
    if options.shuffle:
        return ("--shuffle-threads: the region launcher's shuffled order is not yet the coroutine scheduler's "
                "(a memcheck report could name another thread), so shuffled runs keep the coroutines")
    if options.racecheck or options.initcheck:
        return ("racecheck/initcheck: their shadow-memory epochs and access order are kept per coroutine; "
                "the region form does not carry them yet")
    if "grid_sync" in tf.features:
        return "a grid barrier (cuda.cg.this_grid().sync()) keeps every block of the grid alive at once"
    if "warp" in tf.features:
        why = _warp_reason(tf)
        if why is not None:
            return why
    return _barrier_shape_reason(tf, set())


def _barrier_callee(tf, call):
    """The barrier intrinsic's name or the device function (with barriers) that ``call`` calls, else None."""
    name = tf.intrinsic_called(call)
    if name in BLOCK_BARRIERS:
        return name
    callee = tf.callees.get(call)
    if callee is not None and "barrier" in callee.features:
        return callee
    return None


def _barrier_shape_reason(tf, seen: set) -> str | None:
    """A barrier (or a call of a device function with one) must be a statement of its own: an expression
    statement, ``x = barrier(...)`` or ``x += barrier(...)``. Then nothing computed before it in the
    statement is needed after it (no value in a register crosses the cut)."""
    if id(tf) in seen:
        return None
    seen.add(id(tf))
    parents = {}
    for n in ast.walk(tf.source.tree):
        for c in ast.iter_child_nodes(n):
            parents[c] = n
    for n in ast.walk(tf.source.tree):
        if not isinstance(n, ast.Call):
            continue
        what = _barrier_callee(tf, n)
        if what is None:
            continue
        p = parents.get(n)
        own = (isinstance(p, ast.Expr)
               or (isinstance(p, ast.Assign) and p.value is n and len(p.targets) == 1
                   and isinstance(p.targets[0], ast.Name))
               or (isinstance(p, ast.AugAssign) and p.value is n and isinstance(p.target, ast.Name)))
        if not own:
            loc = tf.source.loc(n)
            label = f"cuda.{what}()" if isinstance(what, str) else f"{what.name}() (it has a barrier)"
            return (f"{label} inside an expression at {loc.file.rsplit('/', 1)[-1]}:{loc.line}: the region "
                    "form cuts only at barriers that are statements of their own")
        if not isinstance(what, str):
            inner = _barrier_shape_reason(what, seen)
            if inner is not None:
                return inner
    return None


def _own_statement(call, parents) -> bool:
    """Whether ``call`` is a statement of its own: an expression statement, ``x = call`` or ``x += call``."""
    p = parents.get(call)
    return (isinstance(p, ast.Expr)
            or (isinstance(p, ast.Assign) and p.value is call and len(p.targets) == 1
                and isinstance(p.targets[0], ast.Name))
            or (isinstance(p, ast.AugAssign) and p.value is call and isinstance(p.target, ast.Name)))


def _constant(tf, node):
    """The value of a constant expression (a literal, a module global, a negated literal), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if node in tf.consts:
        return tf.consts[node]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _constant(tf, node.operand)
        return -v if isinstance(v, int) else None
    return None


_ALIKE = "the region form cuts at a warp operation only where every thread of the block reaches it alike"


def _warp_reason(tf) -> str | None:
    """Warp operations are cuts of the region form where every thread of the block waits at the same one
    with every lane of its warp: each is a statement of its own, over all 32 lanes, at a uniform position
    (block-uniform branches and loops), with no thread-dependent exit (a return, raise or assert), break or
    continue anywhere in the kernel and every block barrier at a uniform position too. Then every warp
    operation finds all its warp's existing lanes there, and the launcher hands each lane its peers'
    operands when the block's threads all wait at it (region_scheduler.py). None when that holds."""
    tree = tf.source.tree
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    uniform = uniform_variables(tf)
    known = uniform | updated_uniform_variables(tf, uniform)

    def where(n) -> str:
        loc = tf.source.loc(n)
        return f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}"

    for callee in {id(c): c for c in tf.callees.values()}.values():
        if "warp" in callee.features:
            return f"{callee.name}() has warp operations: the region form cuts only at the kernel's own"
        if any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(callee.source.tree)):
            return f"{callee.name}() may raise, which ends a thread: {_ALIKE}"
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = tf.intrinsic_called(n)
            if name in WARP_OPERATIONS:
                label = f"cuda.{name}() at {where(n)}"
                if not _own_statement(n, parents):
                    return f"{label}: the region form cuts only at warp operations that are statements of their own"
                mask = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "mask"), None)
                if name != "activemask" and mask is not None and _constant(tf, mask) not in ALL_LANES:
                    return f"{label}: the region form cuts only at warp operations over all 32 lanes (mask 0xffffffff)"
                if not _uniform_position(tf, parents[n], parents, known):
                    return f"{label}: {_ALIKE} (block-uniform branches and loops)"
            elif _barrier_callee(tf, n) is not None and not _uniform_position(tf, parents.get(n), parents, known):
                what = _barrier_callee(tf, n)
                label = f"cuda.{what}()" if isinstance(what, str) else f"{what.name}() (it has a barrier)"
                return f"{label} at {where(n)} under thread-dependent control, beside warp operations: {_ALIKE}"
        elif isinstance(n, (ast.Return, ast.Raise, ast.Assert)) and not _uniform_position(tf, n, parents, known):
            return f"a thread-dependent exit at {where(n)}: {_ALIKE}"
        elif isinstance(n, (ast.Break, ast.Continue)) and not _uniform_position(tf, n, parents, known):
            return f"a thread-dependent {'break' if isinstance(n, ast.Break) else 'continue'} at {where(n)}: {_ALIKE}"
    return None


# ---- block-uniform variables ------------------------------------------------------------------------
_BLOCK_REGISTERS = ("blockIdx", "blockDim", "gridDim")


def _assigned_names(tree) -> dict:
    """How many times each name is bound in the function (assignments, loop targets, ...)."""
    count: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            count[n.id] = count.get(n.id, 0) + 1
    return count


def _uniform_expr(tf, node, uniform: set) -> bool:
    """Whether ``node`` has one value for every thread of a block: constants, the block's special
    registers, block-uniform variables, shared arrays, and pure arithmetic of them."""
    if node in tf.consts:
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in uniform
    if isinstance(node, ast.Attribute):
        chain, v = [], node
        while isinstance(v, ast.Attribute):
            chain.append(v.attr)
            v = v.value
        chain.reverse()
        if isinstance(v, ast.Name) and v.id not in tf.locals and len(chain) == 2 and chain[0] in _BLOCK_REGISTERS:
            return True  # cuda.blockIdx.x and the like
        if isinstance(v, ast.Name) and v.id in uniform and chain in (["shape"], ["size"], ["ndim"]):
            return True
        return False
    if isinstance(node, ast.Subscript):  # a uniform tuple's element (x.shape[0])
        return _uniform_expr(tf, node.value, uniform) and isinstance(node.value, ast.Attribute) \
            and _uniform_expr(tf, node.slice, uniform)
    if isinstance(node, ast.BinOp):
        return _uniform_expr(tf, node.left, uniform) and _uniform_expr(tf, node.right, uniform)
    if isinstance(node, ast.UnaryOp):
        return _uniform_expr(tf, node.operand, uniform)
    if isinstance(node, ast.BoolOp):
        return all(_uniform_expr(tf, v, uniform) for v in node.values)
    if isinstance(node, ast.Compare):
        return _uniform_expr(tf, node.left, uniform) and all(_uniform_expr(tf, c, uniform) for c in node.comparators)
    if isinstance(node, ast.IfExp):
        return all(_uniform_expr(tf, v, uniform) for v in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Tuple):
        return all(_uniform_expr(tf, v, uniform) for v in node.elts)
    if isinstance(node, ast.Call):
        name = tf.intrinsic_called(node)
        if name is not None:  # the block's own shared memory has one address for all its threads;
            return name == "shared.array"  # cuda.grid(1) and the like differ between them
        return pure_call(tf, node) and not node.keywords and all(_uniform_expr(tf, a, uniform) for a in node.args)
    return False


def uniform_variables(tf) -> set:
    """Variables with one value for the whole block wherever they are read: arguments never assigned,
    and variables assigned exactly once, by a statement of the kernel's own body (not in a loop or a
    branch), from a block-uniform expression. Their slot needs one entry, not one per thread: every
    thread writes it the same value before any thread reads it."""
    count = _assigned_names(tf.source.tree)
    uniform = {a for a in tf.argnames if count.get(a, 0) == 0}
    for st in tf.source.tree.body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and count.get(st.targets[0].id) == 1 and st.targets[0].id not in tf.argnames
                and _uniform_expr(tf, st.value, uniform)):
            uniform.add(st.targets[0].id)
    return uniform


def _uniform_position(tf, node, parents, uniform: set) -> bool:
    """Whether every thread of the block that has not exited reaches ``node`` alike: every statement it
    is nested in is an ``if`` or ``while`` with a block-uniform test or a ``for`` over a block-uniform
    ``range``, up to the kernel's own body."""
    p = parents.get(node)
    while p is not None and p is not tf.source.tree:
        if isinstance(p, (ast.If, ast.While)):
            if not _uniform_expr(tf, p.test, uniform):
                return False
        elif isinstance(p, ast.For):
            it = p.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                    and it.func.id not in tf.locals and not it.keywords
                    and all(_uniform_expr(tf, a, uniform) for a in it.args)):
                return False
        else:
            return False
        p = parents.get(p)
    return p is tf.source.tree


def updated_uniform_variables(tf, uniform: set) -> set:
    """Variables assigned more than once but always alike in every thread (``step = TPB // 2`` ...
    ``step //= 2`` of a tree reduction): every binding is ``v = e`` or ``v op= e`` with ``e`` block-uniform
    (of constants, block registers and such variables), at a uniform position (``_uniform_position``),
    and no ``break`` or ``continue`` of the kernel is under thread-dependent control (a thread that
    skipped an update would differ). Every thread that waits at a barrier then holds the same value, so
    the region form keeps one entry for the value a region starts with and one for the value its
    threads leave at the barrier, made the next region's when the barrier completes."""
    tree = tf.source.tree
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    binds: dict = {}
    bad: set = set(tf.argnames) | set(uniform)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            p = parents.get(n)
            if (isinstance(p, ast.Assign) and len(p.targets) == 1 and p.targets[0] is n) \
                    or (isinstance(p, ast.AugAssign) and p.target is n):
                binds.setdefault(n.id, []).append(p)
            else:
                bad.add(n.id)
    cands = {v for v in binds if v not in bad and len(binds[v]) > 1}
    changed = True
    while changed and cands:
        changed = False
        known = set(uniform) | cands
        if not _jumps_uniform(tf, parents, known):
            return set()
        for v in sorted(cands):
            if not all(_uniform_expr(tf, st.value, known) and _uniform_position(tf, st, parents, known)
                       for st in binds[v]):
                cands.discard(v)
                changed = True
                break
    return cands


def _jumps_uniform(tf, parents, known) -> bool:
    """Whether every ``break`` and ``continue`` of the kernel is at a uniform position."""
    return all(_uniform_position(tf, j, parents, known) for j in ast.walk(tf.source.tree)
               if isinstance(j, (ast.Break, ast.Continue)))


def note_range_loop(lc, node, slots) -> None:
    """A range loop's counter and held bounds are block-uniform values updated alike in every thread
    (``updated_uniform_variables``'s rule) when the loop is at a uniform position over a block-uniform
    ``range`` and no ``break`` or ``continue`` is thread-dependent: ``for t in range(tiles):`` around
    the barriers of a tiled matrix product."""
    rk = lc.state.regions.get(lc.fn.name)
    if rk is None or lc.tf is None or node not in rk.parents:
        return
    known = rk.uniform_names
    it = node.iter
    if (isinstance(it, ast.Call) and not it.keywords and all(_uniform_expr(lc.tf, a, known) for a in it.args)
            and _uniform_position(lc.tf, node, rk.parents, known) and _jumps_uniform(lc.tf, rk.parents, known)):
        rk.updated |= {id(s) for s in slots}


def has_barrier(tf, node) -> bool:
    """Whether a cut lies inside ``node``: a barrier, a call of a device function with one, a warp operation."""
    return any(isinstance(n, ast.Call) and (_barrier_callee(tf, n) is not None
                                            or tf.intrinsic_called(n) in WARP_OPERATIONS) for n in ast.walk(node))


# ---- lowering hooks -------------------------------------------------------------------------------
def begin(lc) -> RegionLowering:
    """Before the kernel's arguments are stored: the entry block's switch on the waiting site."""
    b = lc.builder
    rk = lc.state.regions[lc.fn.name] = RegionLowering()
    slots = lc.slots[0]
    uniform = uniform_variables(lc.tf)
    updated = updated_uniform_variables(lc.tf, uniform)
    rk.uniform = {id(slots[n]) for n in uniform if n in slots}
    rk.updated = {id(slots[n]) for n in updated if n in slots}
    rk.uniform_names = uniform | updated
    rk.parents = {c: n for n in ast.walk(lc.tf.source.tree) for c in ast.iter_child_nodes(n)}
    slot = field(b, lc.thread_ctx, CTX_BARRIER)
    waiting = b.load(slot, name="waits.at")
    b.store(const(0), slot)
    rk.start = lc.new_block("region.start")
    rk.dispatch = b.switch(waiting, rk.start)
    rk.dispatch.add_case(const(REGION_INDEX), rk.start)
    b.position_at_end(rk.start)
    return rk


def emit_barrier(lc, node, what: str, vote=None):
    """A block barrier of a region-form kernel: the thread's state as a coroutine leaves it, then return;
    the code after it is where the dispatch switch sends the thread next time."""
    rk = lc.state.regions[lc.fn.name]
    b = lc.builder
    site = lc.state.check_sites.add(M.Site("barrier", lc.tf.name, lc.src.loc(node), what=what, function_kind=lc.tf.kind))
    value = site | IN_BRANCH if in_branch(lc, node) else site
    _cut(lc, rk, node, value, vote if vote is not None else const(0), "barrier")
    rk.votes = rk.votes or vote is not None
    return b.load(field(b, lc.thread_ctx, CTX_VOTE))


def _cut(lc, rk: RegionLowering, node, value: int, vote, what: str) -> None:
    """The thread stops at ``value`` (its state as a coroutine's barrier leaves it) and returns; the builder
    goes on in the block after the cut, where the entry's switch sends the thread next time."""
    # the region the thread goes on in: the launcher's thread loops are numbered, not named by site
    _stop(lc, rk, node, const(value), vote, const(len(rk.sites) + 1))
    _goes_on(lc, rk, node, value, what)


def _stop(lc, rk: RegionLowering, node, value, vote, region) -> None:
    """The thread's state at a stop (waiting at ``value``, to go on in region number ``region``), and return."""
    b = lc.builder
    b.store(value, field(b, lc.thread_ctx, CTX_BARRIER))
    b.store(const(reach_line(lc, node)), field(b, lc.thread_ctx, CTX_BAR_LINE))
    b.store(vote, field(b, lc.thread_ctx, CTX_VOTE))
    b.store(region, field(b, lc.thread_ctx, CTX_WKIND))
    rk.returns.append(b.block)
    b.ret_void()


def _goes_on(lc, rk: RegionLowering, node, value: int, what: str) -> None:
    """The region after stop ``value``, the next by number: the builder goes on in its first block."""
    line = lc.src.loc(node).line
    cont = lc.new_block(f"region.after.{what}.line{line}")
    rk.dispatch.add_case(const(value), cont)
    rk.dispatch.add_case(const((len(rk.sites) + 1) | REGION_INDEX), cont)
    rk.sites.append(value)
    rk.conts.append(cont)
    rk.lines.append(line)
    lc.builder.position_at_end(cont)


# ---- memcheck in the region form: a failed check ends the thread's step ----------------------------------
def fresh_checks_reason(lc) -> str | None:
    """Why the region-form kernel being lowered keeps memcheck's stopping check (the cold ``kdebug.rt.oob``
    call, which leaves the launcher at once and keeps LLVM from vectorising a thread loop), or None: then a
    failed check of the kernel's own code records the access in its thread's failure slot with the ``FRESH``
    bit and returns from the step function (``fail_fresh``), and the launcher reports the first such thread
    in thread order after the thread loop (region_scheduler.py): the same thread, index and line as the
    stopping check, for a kernel where nothing but its own checks can stop the launch mid-loop."""
    tf = lc.tf
    for node in ast.walk(tf.source.tree):
        if isinstance(node, ast.Call) and node in tf.callees:
            line = lc.src.loc(node).line
            return (f"the call of line {line} (a device function's checks stop the launch at once, so the "
                    f"kernel's own do too, to report the same thread)")
    if "warp" in tf.features:
        return ("a warp operation (its errors stop the launch at once, so the kernel's checks do too, to report "
                "the same thread)")
    return None


def fail_fresh(lc, b, site: int, idx, ext) -> None:
    """A failed check of a region-form kernel with ``RegionLowering.fresh``: the access into the thread's failure
    record, its site with the ``FRESH`` bit, and the thread's step ends (no state stored: the launcher reports
    the failure before it reads any thread's state)."""
    rk = lc.state.regions[lc.fn.name]
    fields = _failure_record(lc)
    b.store(const(site | FRESH), fields[0])
    for k, (i, e) in enumerate(zip(idx, ext)):  # the access's dimensions (the record's report reads no more)
        b.store(i, fields[1 + k])
        b.store(e, fields[4 + k])
    b.branch(_fresh_exit(lc, rk))


def _fresh_exit(lc, rk: RegionLowering):
    if rk.fresh_exit is None:
        rk.fresh_exit = lc.new_block(FRESH_EXIT_BLOCK)
        b = ir.IRBuilder(rk.fresh_exit)
        # the launcher's sign that the step ended so (an or over its thread loop, vectorised with it)
        b.store(const(FAILED_STEP), field(b, lc.thread_ctx, CTX_BARRIER))
        b.ret_void()
    return rk.fresh_exit


def emit_warp_op(lc, node, op):
    """A warp operation of a region-form kernel (``_warp_reason`` holds): a cut, as a barrier is. The
    thread leaves its operand in its entry of a column (and a shuffle its source lane in a slot) and
    returns waiting at ``site | WARP_FLAG``; when the block's threads all wait there the launcher copies
    the operands' column to their copies' (region_scheduler.py), and each lane then reads its peers' from
    that copy, where a lane that goes on to its next warp operation cannot change them. The lanes that
    take part are those of the warp that exist (``_warp_reason``: the mask names all 32)."""
    rk = lc.state.regions[lc.fn.name]
    b = lc.builder
    if rk.warp_slots is None:
        here = b.block
        b.position_at_start(lc.fn.entry_basic_block)
        rk.warp_slots = (b.alloca(i64, name="warp.operands"), b.alloca(i64, name="warp.copies"),
                         b.alloca(i32, name="warp.source"))
        b.position_at_end(here)
    operands, copies, source = rk.warp_slots
    site = lc.state.check_sites.add(M.Site("warp barrier", lc.tf.name, lc.src.loc(node), what=op.what,
                                  function_kind=lc.tf.kind))
    lane = b.urem(W.linear_tid(b, lc.thread_ctx), const(32))
    value = op.value
    xin = const(0, i64) if value is None else b.zext(value, i64) if value.type.width < 64 else value
    b.store(xin, operands)
    if op.kind.startswith("shfl."):
        b.store(W.source_lane(b, op.kind[5:], lane, op.b, op.c), source)
    _cut(lc, rk, node, site | WARP_FLAG, const(0), "warp")
    # after the cut: nothing computed before it (no register crosses a cut)
    tid = W.linear_tid(b, lc.thread_ctx)
    lane = b.urem(tid, const(32))
    nt = b.mul(b.mul(b.load(field(b, lc.thread_ctx, CTX_NTID, 0)), b.load(field(b, lc.thread_ctx, CTX_NTID, 1))),
               b.load(field(b, lc.thread_ctx, CTX_NTID, 2)))
    present = b.sub(nt, b.sub(tid, lane))  # the warp's lanes that exist
    group = b.select(b.icmp_unsigned(">=", present, const(32)), const(-1), b.sub(b.shl(const(1), present), const(1)))
    own = b.load(copies)
    return W.result(lc, op, site, lane, group, own, const(-1),
                    peer=lambda j: b.load(b.gep(copies, [b.sext(b.sub(j, lane), i64)])),
                    gather=lambda what: b.call(W._gather_function(lc.module, what, columns=True),
                                               [copies, lane, group, own]),
                    source=b.load(source) if op.kind.startswith("shfl.") else None)


# ---- loops run in rounds: a grid-stride loop's iteration c for every thread of the block at once ----------
def runs_in_rounds(lc, node) -> bool:
    """Whether the region-form kernel's loop ``node`` runs in rounds (``emit_rounds``): a loop the coroutine
    form would run in lockstep (lockstep_rules.py) over a range whose step is not the constant 1, a
    grid-stride loop ``for k in range(i, n, stride)``. Run thread after thread, each thread's loop walks
    its own elements a stride apart (measured: a 2^24-element grid-stride sum with a block reduction after
    it, 68 ms, against 11 ms in lockstep as coroutines); in rounds, iteration c of the block's consecutive
    threads reads consecutive elements. A loop of step 1 (each thread its own contiguous chunk, or a loop
    every thread runs alike) stays inside its region, and so does a loop that writes a shared or global
    array over a range that is not the thread's own (lockstep_rules.own_ranges)."""
    it = node.iter
    if not (isinstance(it, ast.Call) and len(it.args) == 3) or _constant(lc.tf, it.args[2]) == 1:
        return False
    why = loop_reason(lc.tf, node, lc.state.lockstep_reasons)
    if why is None and writes_arrays(lc.tf, node) and not own_ranges(lc.tf, node):
        why = ("it writes array elements and its range is not the thread's own (start cuda.grid(1) or threadIdx.x, "
               "step cuda.gridsize(1) or blockDim.x): in rounds a thread's later iteration could come before "
               "another's earlier one at the same element")
    if why is not None:
        kind = "while" if grid_stride.stands_for(node) is not None else "for"
        _note(lc, f"the {kind} loop of line {lc.src.loc(node).line} runs thread by thread in its region, not in "
                  f"rounds: {why}")
    return why is None


def note_while(lc, node) -> None:
    """A ``while`` loop without a cut in a region-form kernel's own code: each thread runs it alone in its
    region's thread loop. Where it looks like a grid-stride loop (its test's variable advanced by a value that
    is not a constant), the regions snapshot says why it was not read as its range (grid_stride.py), which
    would run in rounds (``runs_in_rounds``)."""
    test = node.test
    if lc.tf is not lc.function_tf or not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)):
        return
    var = test.left.id
    for n in ast.walk(node):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == var \
                and isinstance(n.op, ast.Add) and not isinstance(n.value, ast.Constant):
            why = grid_stride.why_not(lc.tf, node)
            if why is None:  # read as its range, which the rounds refused: runs_in_rounds said why
                return
            _note(lc, f"the while loop of line {lc.src.loc(node).line} runs thread by thread in its region, "
                      f"each thread its own iterations: not read as `for {var} in range({var}, stop, step)`, "
                      f"which runs in rounds, as {why} (kdebug/frontend/grid_stride.py)")
            return


def _note(lc, text: str) -> None:
    rk = lc.state.regions.get(lc.fn.name)
    if rk is not None and text not in rk.notes:
        rk.notes.append(text)


class _RoundFrame:
    """While a loop in rounds lowers its body: a failed bounds check held back in the thread's failure record
    (``_failure_record``), and the thread's loop ends there (lockstep.Frame's rule). Every failed check of
    the round branches to one block (``finish``), which stores each field of the record once, runs ``then``
    and goes on at ``stop``: one (masked) store a field in the round's thread loop, however many checks."""

    def __init__(self, lc, stop, then=None) -> None:
        self.lc, self.stop, self.then = lc, stop, then
        self.incoming: list = []  # (block, site, indices, extents) of each failed check
        self.block = None

    def fail(self, b, site: int, idx, ext) -> None:
        if self.block is None:
            self.block = self.lc.new_block("rounds.failed")
        self.incoming.append((b.block, site, list(idx), list(ext)))
        b.branch(self.block)

    def finish(self, b) -> None:
        """The failure block: the record of whichever check failed, then ``stop``."""
        if self.block is None:
            return
        here = b.block
        b.position_at_end(self.block)
        values = []
        for k in range(7):
            vs = [(blk, const(site) if k == 0 else (idx + ext)[k - 1]) for blk, site, idx, ext in self.incoming]
            if k > 0 and all(isinstance(v, ir.Constant) and v.constant == (0 if k < 4 else 1) for _, v in vs):
                values.append(None)  # the dimensions no array here has keep the record's 0 and 1
                continue
            phi = b.phi(vs[0][1].type)
            for blk, v in vs:
                phi.add_incoming(v, blk)
            values.append(phi)
        fields = _failure_record(self.lc)
        for v, f in zip(values, fields):
            if v is not None:
                b.store(v, f)
        if self.then is not None:
            self.then()
        b.branch(self.stop)
        b.position_at_end(here)


def _failure_record(lc):
    """The fields of the thread's failure record in the launcher's failure slots (memcheck_ir.fail_slot_fields:
    an array per field, so that a round's masked stores to them are contiguous): pointers to its site (i32),
    index 0..2 and extent 0..2 (i64). Each field gets a scope of its own (``_scope_failures``)."""
    b = lc.builder
    ctx = lc.thread_ctx
    tid = [b.zext(b.load(field(b, ctx, CTX_TID, k)), i64) for k in range(3)]
    ntid = [b.zext(b.load(field(b, ctx, CTX_NTID, k)), i64) for k in range(3)]
    t = b.add(tid[0], b.mul(ntid[0], b.add(tid[1], b.mul(ntid[1], tid[2]))))
    nt = b.mul(b.mul(ntid[0], ntid[1]), ntid[2])
    sites, index, extent = fail_slot_fields(b, b.load(field(b, ctx, CTX_FAIL_SLOTS)), nt)
    fields = [b.gep(p, [t], inbounds=True) for p in [sites] + index + extent]
    lc.state.regions[lc.fn.name].failure_accesses += [(f, k) for k, f in enumerate(fields)]
    return fields


def _lead_iterations(lc, node, start, step, trips, held, iteration):
    """Before its rounds, a thread runs alone the iterations whose ``k`` is negative (Python's ``a[-1]``,
    read from the end), so that in the rounds ``k >= 0`` and ``a[k]`` is a plain contiguous access across
    threads: with a positive step, the first ``ceil(-start / step)`` iterations (none when ``start >= 0``);
    with a step that is not positive, all of them (the rounds then have none). Leaves the range in ``held``
    (start, step, trips, and lead: the iterations done here, which the rounds skip); a ``break`` or a failed
    check (held back) leaves the rounds none."""
    b = lc.builder
    ty = start.type
    zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
    up = b.icmp_signed(">", step, zero)
    behind = b.add(b.udiv(b.sub(b.neg(start), one), b.select(up, step, one)), one)  # ceil(-start / step)
    behind = b.select(b.icmp_signed("<", start, zero), b.select(b.icmp_unsigned("<", behind, trips), behind, trips), zero)
    lead = b.select(up, behind, trips)
    j_slot = lc.alloca(ty, name=f"{node.target.id}.lead")
    b.store(zero, j_slot)
    head, body, latch, stop, failed, end = (lc.new_block(f"rounds.lead.{n}") for n in
                                             ("head", "body", "latch", "stop", "failed", "end"))
    cut = lc.new_block("rounds.enter")
    b.branch(head)
    b.position_at_end(head)
    j = b.load(j_slot)
    b.cbranch(b.icmp_unsigned("<", j, lead), body, end).set_weights([1, 1 << 10])
    b.position_at_end(body)
    frame = _RoundFrame(lc, failed)
    outer, lc.state.lockstep_frame = lc.state.lockstep_frame, frame
    try:
        iteration(lc.slots[0], lc.thread_ctx, b.add(start, b.mul(j, step)), latch, stop, False)
    finally:
        lc.state.lockstep_frame = outer
    frame.finish(b)
    b.position_at_end(latch)
    b.store(b.add(b.load(j_slot), one), j_slot)
    b.branch(head)
    # a break, or a failure held back (in the thread's failure slot): no rounds
    for blk in (stop, failed):
        b.position_at_end(blk)
        b.store(zero, held["trips"])
        b.branch(cut)
    b.position_at_end(end)
    b.store(trips, held["trips"])
    b.branch(cut)
    b.position_at_end(cut)
    b.store(start, held["start"])  # stored once: computed again where the rounds need them (thread-constant)
    b.store(step, held["step"])
    b.store(lead, held["lead"])


def emit_rounds(lc, node, start, step, trips, iteration, memcheck: bool) -> ir.Block:
    """A loop of a region-form kernel run in rounds (``runs_in_rounds``), the lockstep loops of coroutines
    (lockstep.py) recast as regions. The thread keeps its range in slots (``_lead_iterations`` first runs
    alone the iterations with a negative ``k``) and stops at the loop's start (``site | LOCKSTEP_FLAG |
    ROUND_START``). The loop's *iteration region* runs, for a thread, the ROUND_ITERATIONS iterations that the
    block's round counter names (an entry of the region frame that only the launcher writes: 0 when the
    threads arrive, one more at each round), in order, and stops at the loop again (``site |
    LOCKSTEP_FLAG``), or, with no iteration left, at the loop's end (``| ROUND_DONE``), through one return.
    The launcher runs the region's thread loop again while some thread of the block waits at the loop
    (region_scheduler.py ``_round``), so that each thread loop runs a few iterations of every thread: with
    ``k = start + c * step`` and ``start`` a thread's index, consecutive threads read consecutive elements,
    and LLVM vectorises it. When every thread is at the loop's end, the region after it runs.

    A failed bounds check inside the loop is held back in the thread's failure record (``_failure_record``)
    and ends the thread's loop (its trip count becomes 0); the thread reports it at the start of the region
    after the loop, where threads run in thread order: the first failure in thread order, as when each thread
    ran its loop alone. A ``break`` ends the thread's loop too. ``iteration`` lowers one iteration of the body
    (lower.py's ``lockstep_iteration``). Returns the block after the loop, where the builder is."""
    rk = lc.state.regions[lc.fn.name]
    b = lc.builder
    ty = start.type
    var = node.target.id
    one = ir.Constant(ty, 1)
    held = {name: lc.alloca(ty, name=f"{var}.range.{name}") for name in ("start", "step", "trips", "lead")}
    if rk.round_slot is None:  # one counter for the kernel's loops in rounds (one runs at a time)
        rk.round_slot = lc.alloca(i64, name="rounds.c")
        rk.uniform.add(id(rk.round_slot))
    if memcheck:  # the thread's failure record: none yet, index 0 and extent 1 in every dimension
        for k, f in enumerate(_failure_record(lc)):
            b.store(const(0) if k == 0 else const(0 if k < 4 else 1, i64), f)
    # written on the rare paths of a round (a failure, a break): its column entry itself, so that no
    # return of the round writes it back
    rk.direct.add(id(held["trips"]))
    _lead_iterations(lc, node, start, step, trips, held, iteration)
    site = lc.state.check_sites.add(M.Site("lockstep loop", lc.tf.name, lc.src.loc(node), what="for loop (in rounds)",
                                  function_kind=lc.tf.kind))
    assert site < ROUND_START
    wait = site | LOCKSTEP_FLAG
    _cut(lc, rk, node, wait | ROUND_START, const(0), "rounds")
    region = len(rk.sites)  # the iteration region's number; the region after the loop is the next
    rk.dispatch.add_case(const(wait), b.block)
    rk.rounds.append((lc.src.loc(node).line, region))
    c = b.load(rk.round_slot, name=f"{var}.c")
    c = b.trunc(c, ty) if ty.width < 64 else c
    first = b.mul(c, ir.Constant(ty, ROUND_ITERATIONS))
    latch, done = lc.new_block("rounds.latch"), lc.new_block("rounds.done")
    # a failure leaves the thread no iterations: its trip count, which every round reads anyway (a check of
    # the failure record there, a column more a round, was 1.25x slower)
    frame = _RoundFrame(lc, done, lambda: b.store(ir.Constant(ty, 0), held["trips"]))
    for u in range(ROUND_ITERATIONS):  # the round's iterations, in order
        it = b.add(first, ir.Constant(ty, u))
        body, stop, nxt = (lc.new_block(f"rounds.{n}.{u}") for n in ("body", "stop", "next"))
        todo = b.and_(b.icmp_unsigned(">=", it, b.load(held["lead"])), b.icmp_unsigned("<", it, b.load(held["trips"])))
        b.cbranch(todo, body, nxt)
        b.position_at_end(body)
        k = b.add(b.load(held["start"]), b.mul(it, b.load(held["step"])))
        outer, lc.state.lockstep_frame = lc.state.lockstep_frame, frame
        try:
            iteration(lc.slots[0], lc.thread_ctx, k, nxt, stop, True)  # k >= 0 (_lead_iterations)
        finally:
            lc.state.lockstep_frame = outer
        b.position_at_end(stop)  # a break: this iteration is the thread's last
        b.store(b.add(it, one), held["trips"])
        b.branch(done)
        b.position_at_end(nxt)
    more = b.icmp_unsigned("<", b.add(first, ir.Constant(ty, ROUND_ITERATIONS)), b.load(held["trips"]))
    b.cbranch(more, latch, done)
    frame.finish(b)
    # one stop for both ways out of a round (the next round, or the loop's end): one return, so that the
    # thread loop stores the thread's state unconditionally, which LLVM vectorises
    out = lc.new_block("rounds.stop")
    b.position_at_end(latch)
    b.branch(out)
    b.position_at_end(done)
    b.branch(out)
    b.position_at_end(out)
    value, nxt = b.phi(i32, name="rounds.waits"), b.phi(i32, name="rounds.region")
    for blk, v, r in ((latch, wait, region), (done, wait | ROUND_DONE, region + 1)):
        value.add_incoming(const(v), blk)
        nxt.add_incoming(const(r), blk)
    _stop(lc, rk, node, value, const(0), nxt)
    _goes_on(lc, rk, node, wait | ROUND_DONE, "rounds.done")
    if memcheck:  # the thread's failure held back in the loop, reported in thread order
        report, ok = lc.new_block("rounds.report"), lc.new_block("rounds.ok")
        failed = b.icmp_signed("!=", b.load(_failure_record(lc)[0]), const(0))
        b.cbranch(failed, report, ok).set_weights([1, 1 << 20])
        b.position_at_end(report)
        if rk.fresh:  # the thread's step ends; the launcher reports the first such thread after the loop
            sites = _failure_record(lc)[0]
            b.store(b.or_(b.load(sites), const(FRESH)), sites)
            b.branch(_fresh_exit(lc, rk))
        else:
            fields = [b.load(f) for f in _failure_record(lc)]
            b.call(oob_function(lc.module), [lc.thread_ctx] + fields)
            b.unreachable()
        b.position_at_end(ok)
    return b.block


def function_epilogue(lc) -> None:
    """In the exit block: the line the thread left by, and no waiting site (it has exited)."""
    b = lc.builder
    preds = [blk for blk in lc.fn.blocks if blk.is_terminated and lc.exit in _successors(blk)]
    if preds:
        line = b.phi(i32, name="exit.line")
        for blk in preds:
            line.add_incoming(const(lc.exit_lines.get(blk, END_OF_KERNEL)), blk)
        b.store(line, field(b, lc.thread_ctx, CTX_EXIT_LINE))
    b.store(const(0), field(b, lc.thread_ctx, CTX_BARRIER))


# ---- the regions stage: per-thread columns ----------------------------------------------------------
def _successors(blk) -> list:
    term = blk.terminator
    if term is None:
        return []
    if isinstance(term, ir.instructions.SwitchInstr):
        return [term.default] + [t for _, t in term.cases]
    return [op for op in term.operands if isinstance(op, ir.Block)]


def _operands(ins) -> list:
    if isinstance(ins, ir.instructions.PhiInstr):
        return [v for v, _ in ins.incomings]
    ops = list(ins.operands)
    if isinstance(ins, ir.instructions.SwitchInstr):
        ops += [v for v, _ in ins.cases]
    return ops


def _reachable(starts, blocked=None) -> set:
    seen, todo = set(), list(starts)
    while todo:
        blk = todo.pop()
        if id(blk) in seen or blk is blocked:
            continue
        seen.add(id(blk))
        todo.extend(_successors(blk))
    return seen


def cut(fn: ir.Function, rk: RegionLowering, target_data) -> RegionCut:
    """Give the step function ``fn``'s live-across-barrier slots their per-thread columns (module docstring);
    what that made of the region frame."""
    entry = fn.entry_basic_block
    starts = [rk.start] + rk.conts
    allocas = [ins for ins in entry.instructions if isinstance(ins, ir.instructions.AllocaInstr)]
    ids = {id(a): a for a in allocas}
    escaping: set = set()
    first: dict = {}  # (id(block), id(alloca)) -> "load" or "store": the block's first access of the slot
    for blk in fn.blocks:
        for ins in blk.instructions:
            ops = _operands(ins)
            for k, op in enumerate(ops):
                if id(op) not in ids:
                    continue
                if isinstance(ins, ir.instructions.LoadInstr) and k == 0:
                    first.setdefault((id(blk), id(op)), "load")
                elif isinstance(ins, ir.instructions.StoreInstr) and k == 1 and ops[0] is not op:
                    first.setdefault((id(blk), id(op)), "store")
                else:
                    escaping.add(id(op))
    live = {id(a): [s for s in starts[1:] if _live_at(a, s, first)] for a in allocas if id(a) not in escaping}
    remat = _rematerialisable(fn, [a for a in allocas if id(a) not in escaping])
    recomputed = []
    for a in allocas:
        if id(a) in remat and live[id(a)]:
            _recompute_at(a, remat, live[id(a)])
            recomputed.append(a._name)
    if rk.warp_slots is not None:  # the operands and their copies: columns, read at the peers' entries
        escaping |= {id(a) for a in rk.warp_slots[:2]}
    escaping |= rk.direct
    columns = [a for a in allocas if id(a) in escaping or (live[id(a)] and id(a) not in remat)]
    _check_no_register_crosses(fn, starts)
    placed, frame = _place_columns(fn, entry, columns, rk, target_data, escaping)
    warp_columns = None
    if rk.warp_slots is not None:
        warp_columns = (placed[id(rk.warp_slots[0])], placed[id(rk.warp_slots[1])])
    if rk.failure_accesses:
        _scope_failures(fn, rk)
    round_entry = placed[id(rk.round_slot)] if rk.round_slot is not None else None
    return RegionCut(**frame, recomputed=tuple(recomputed), warp_columns=warp_columns, round_entry=round_entry)


def _scope_failures(fn, rk: RegionLowering) -> None:
    """Tell LLVM that each field of the threads' failure records (loops in rounds with memcheck,
    ``_failure_record``) is touched by no other access of the step function (scoped noalias metadata, a
    scope per field): they are the launcher's own allocation, but its address passes through the context,
    so LLVM would check at run time whether every array a round reads or writes overlaps each field, more
    checks than it makes (measured: the rounds were not vectorised, 3x slower)."""
    m = fn.module
    domain = m.add_metadata([ir.MetaDataString(m, "kdebug.failure_records")])
    scopes = [m.add_metadata([ir.MetaDataString(m, f"kdebug.failure_record.{k}"), domain]) for k in range(7)]
    field_of = {id(p): k for p, k in rk.failure_accesses}
    own = [m.add_metadata([sc]) for sc in scopes]
    others = [m.add_metadata([sc for j, sc in enumerate(scopes) if j != k]) for k in range(7)]
    every = m.add_metadata(scopes)
    for blk in fn.blocks:
        for ins in blk.instructions:
            if isinstance(ins, (ir.instructions.LoadInstr, ir.instructions.StoreInstr)):
                ptr = ins.operands[0] if isinstance(ins, ir.instructions.LoadInstr) else ins.operands[1]
                k = field_of.get(id(ptr))
                if k is None:
                    ins.set_metadata("noalias", every)
                else:
                    ins.set_metadata("alias.scope", own[k])
                    ins.set_metadata("noalias", others[k])


# ---- variables recomputed where a region starts, rather than kept in columns --------------------------
# context fields that the launcher sets once for a thread and the step function never writes
_THREAD_CONSTANT_FIELDS = frozenset({CTX_TID, CTX_NTID, CTX_CTAID, CTX_NCTAID, CTX_SHARED, CTX_DYN_SHARED,
                                     CTX_DYN_BYTES})
_PURE_OPS = frozenset({"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "fadd", "fsub", "fmul",
                       "fneg"})
_DIVISIONS = frozenset({"udiv", "sdiv", "urem", "srem"})


def _rematerialisable(fn, slots) -> dict:
    """id(slot) -> the value stored, for each slot stored exactly once with a value computed, without
    branches, calls or memory other than such slots, from constants, the kernel's arguments and the
    context fields a thread keeps for its life (its and its block's indices and sizes, the shared memory):
    ``t = cuda.threadIdx.x``, ``i = cuda.grid(1)``, ``n = x.shape[0]``, ``s = cuda.shared.array(...)``,
    an argument's own slot. Such a variable has the same value wherever the thread reads it after that
    store, so a region that needs it computes it again instead of reading a column: the thread loop then
    sees ``t`` as its induction variable and an argument as loop-invariant, which it can vectorise."""
    ids = {id(a): a for a in slots}
    stores: dict = {}
    for blk in fn.blocks:
        for ins in blk.instructions:
            if isinstance(ins, ir.instructions.StoreInstr) and id(ins.operands[1]) in ids:
                stores.setdefault(id(ins.operands[1]), []).append(ins.operands[0])
    single = {k: v[0] for k, v in stores.items() if len(v) == 1}
    ctx = fn.args[0]
    verdict: dict = {}

    def pure(v, active) -> bool:
        if isinstance(v, (ir.Constant, ir.Argument)):
            return True
        if not isinstance(v, ir.Instruction):
            return False
        if id(v) in verdict:
            return verdict[id(v)]
        ok = False
        if isinstance(v, ir.instructions.LoadInstr):
            ptr = v.operands[0]
            if id(ptr) in single:
                if id(ptr) not in active:
                    ok = pure(single[id(ptr)], active | {id(ptr)})
            else:
                ok = _thread_constant_field(ptr, ctx)
        elif isinstance(v, ir.instructions.GEPInstr):
            ok = v.pointer is not ctx and all(pure(o, active) for o in v.operands)
        elif isinstance(v, (ir.instructions.CastInstr, ir.instructions.ICMPInstr, ir.instructions.SelectInstr,
                            ir.instructions.ExtractValue, ir.instructions.InsertValue)):
            ok = all(pure(o, active) for o in v.operands)
        elif type(v) is ir.Instruction and v.opname in _PURE_OPS:
            ok = all(pure(o, active) for o in v.operands)
        elif type(v) is ir.Instruction and v.opname in _DIVISIONS:  # never by zero: no trap to move
            d = v.operands[1]
            ok = isinstance(d, ir.Constant) and isinstance(d.constant, int) and d.constant not in (0, -1) \
                and pure(v.operands[0], active)
        verdict[id(v)] = ok
        return ok

    return {k: v for k, v in single.items() if pure(v, frozenset({k}))}


def _thread_constant_field(ptr, ctx) -> bool:
    """Whether ``ptr`` is the address of a thread-constant context field (an element of one)."""
    if not (isinstance(ptr, ir.instructions.GEPInstr) and ptr.pointer is ctx and len(ptr.indices) >= 2):
        return False
    idx = ptr.indices
    return (all(isinstance(i, ir.Constant) for i in idx) and idx[0].constant == 0
            and idx[1].constant in _THREAD_CONSTANT_FIELDS)


def _recompute_at(slot, remat, starts) -> None:
    """At each region start of ``starts``: the value of ``slot`` computed again and stored in it."""
    for s in starts:
        b = ir.IRBuilder(s)
        b.position_at_start(s)
        b.store(_clone(b, remat[id(slot)], remat, {}), slot)


def _clone(b, v, remat, done):
    """The pure value ``v`` (``_rematerialisable``) computed again at the builder's place."""
    if not isinstance(v, ir.Instruction):
        return v
    if id(v) in done:
        return done[id(v)]
    I = ir.instructions
    ops = v.operands
    if isinstance(v, I.LoadInstr) and id(ops[0]) in remat:
        new = _clone(b, remat[id(ops[0])], remat, done)
    elif isinstance(v, I.LoadInstr):
        new = b.load(_clone(b, ops[0], remat, done), typ=v.type)
    else:
        c = [_clone(b, o, remat, done) for o in ops]
        if isinstance(v, I.GEPInstr):
            new = b.gep(c[0], c[1:], inbounds=v.inbounds, source_etype=v.source_etype)
        elif isinstance(v, I.CastInstr):
            new = getattr(b, v.opname)(c[0], v.type)
        elif isinstance(v, I.ICMPInstr):
            new = I.ICMPInstr(b.block, v.op, c[0], c[1], flags=v.flags)
            b._insert(new)
        elif isinstance(v, I.SelectInstr):
            new = b.select(c[0], c[1], c[2])
        elif isinstance(v, I.ExtractValue):
            new = b.extract_value(c[0], v.indices)
        elif isinstance(v, I.InsertValue):
            new = b.insert_value(c[0], c[1], v.indices)
        else:
            new = ir.Instruction(b.block, v.type, v.opname, c, flags=v.flags)
            b._insert(new)
    done[id(v)] = new
    return new


def _live_at(a, s, first) -> bool:
    """Whether region start ``s`` reaches a load of slot ``a`` before any store to it."""
    seen, todo = set(), [s]
    while todo:
        blk = todo.pop()
        if id(blk) in seen:
            continue
        seen.add(id(blk))
        kind = first.get((id(blk), id(a)))
        if kind == "load":
            return True
        if kind is None:
            todo.extend(_successors(blk))
    return False


def _check_no_register_crosses(fn, starts) -> None:
    """Every value used outside its block is defined on every path from each region start to the use
    (else a register would have to cross a cut, which the lowering never leaves)."""
    entry = fn.entry_basic_block
    where = {}
    for blk in fn.blocks:
        for ins in blk.instructions:
            where[id(ins)] = blk
    reach = {id(s): _reachable([s]) for s in starts}
    around: dict = {}  # (start, defining block) -> what the start reaches without passing that block
    for blk in fn.blocks:
        for ins in blk.instructions:
            if isinstance(ins, ir.instructions.PhiInstr):
                uses = [(v, inc) for v, inc in ins.incomings]
            else:
                uses = [(v, blk) for v in _operands(ins)]
            for v, ub in uses:
                db = where.get(id(v))
                if db is None or db is ub or db is entry:
                    continue
                for s in starts:
                    if s is db or id(ub) not in reach[id(s)]:
                        continue
                    key = (id(s), id(db))
                    if key not in around:
                        around[key] = _reachable([s], blocked=db)
                    if id(ub) in around[key]:
                        raise AssertionError(f"{fn.name}: the value {v.get_reference()} of block {db.name} is used "
                                             f"in {ub.name}, after a barrier (a register crossing a cut)")


def _place_columns(fn, entry, columns, rk: RegionLowering, target_data, escaping) -> tuple[dict, dict]:
    """Each column's entry ``lane`` in the region frame. A slot whose address is taken becomes that entry;
    a variable keeps its stack slot within a region (a register after optimisation), read from its
    column where a region that needs it starts and written back where a region that stores it returns at a
    barrier (_spill_and_reload). Returns each slot's column's frame offset (by id()) and the frame's
    ``RegionCut`` fields: frame_bytes, columns, entry_names, uniform_copy."""
    placed: dict = {}  # id(slot) -> its column's frame offset
    placed_columns: list = []  # RegionCut.columns
    entry_names: dict = {}  # RegionCut.entry_names
    uniform_copy = None
    if not columns:
        return placed, dict(frame_bytes=0)
    ctx = fn.args[0]
    b = ir.IRBuilder(entry)
    b.position_at_start(entry)
    frame = b.load(field(b, ctx, CTX_FRAME), name="region.frame")
    tid = [b.zext(b.load(field(b, ctx, CTX_TID, k)), i64) for k in range(3)]
    ntid = [b.zext(b.load(field(b, ctx, CTX_NTID, k)), i64) for k in range(2)]
    lane = b.add(tid[0], b.mul(ntid[0], b.add(tid[1], b.mul(ntid[1], tid[2]))), name="lane")
    # a block has at most LANES threads (launches of more are refused): with that, LLVM's alias analysis
    # tells a column's entries from the block-uniform entries after the columns
    assume = b.module.declare_intrinsic("llvm.assume")
    b.call(assume, [b.icmp_unsigned("<", lane, const(LANES, i64))])
    offset = 0
    updated = [a for a in columns if id(a) in rk.updated and id(a) not in escaping]
    for a in columns:
        if any(a is u for u in updated):
            continue
        ty = a.type.pointee
        count = a.operands[0].constant if a.operands else 1
        size, align = abi_layout(ty, target_data)
        size *= count
        align = max(align, a.align or 1)
        stride = -(-size // align) * align
        offset = -(-offset // COLUMN_ALIGN) * COLUMN_ALIGN
        b.position_before(a)
        uniform = id(a) in rk.uniform  # one entry that every thread writes alike
        at = const(offset, i64) if uniform else b.add(const(offset, i64), b.mul(lane, const(stride, i64)))
        ptr = b.bitcast(b.gep(frame, [at], inbounds=True), a.type)
        if id(a) in escaping:
            entry.instructions.remove(a)
            ptr._name = a._name  # the users refer to the slot by its name
        else:
            ptr.name = a._name + ".column"
            _spill_and_reload(a, ptr, ptr, rk.conts, rk.returns)
        placed_columns.append((a._name, 0 if uniform else stride))
        placed[id(a)] = offset
        offset += stride if uniform else stride * LANES
    if updated:  # the entries regions start from, then those their threads leave at a barrier
        offset = -(-offset // COLUMN_ALIGN) * COLUMN_ALIGN
        places, size = [], 0
        for a in updated:
            n, al = abi_layout(a.type.pointee, target_data)
            size = -(-size // al) * al
            places.append((a, size))
            size += n
        size = -(-size // COLUMN_ALIGN) * COLUMN_ALIGN
        for a, at in places:
            b.position_before(a)
            cur = b.bitcast(b.gep(frame, [const(offset + at, i64)], inbounds=True), a.type, name=a._name + ".current")
            entry_names[offset + at] = a._name
            nxt = b.bitcast(b.gep(frame, [const(offset + size + at, i64)], inbounds=True), a.type,
                            name=a._name + ".next")
            _spill_and_reload(a, cur, nxt, rk.conts, rk.returns)
            placed_columns.append((a._name, -1))
        uniform_copy = (offset, offset + size, size,
                           tuple((at, abi_layout(a.type.pointee, target_data)[0]) for a, at in places))
        offset += 2 * size
    return placed, dict(frame_bytes=-(-offset // COLUMN_ALIGN) * COLUMN_ALIGN, columns=tuple(placed_columns),
                        entry_names=tuple(sorted(entry_names.items())), uniform_copy=uniform_copy)


def abi_layout(ty, target_data) -> tuple[int, int]:
    """(size, alignment) in bytes of an llvmlite type on x86-64 (LLVM's own answer for anything else: it
    prints and parses a module, which a compile without snapshots otherwise never does)."""
    if isinstance(ty, ir.IntType):
        n = 1 if ty.width <= 8 else 2 if ty.width <= 16 else 4 if ty.width <= 32 else 8 if ty.width <= 64 else 16
        return n, n
    if isinstance(ty, ir.HalfType):
        return 2, 2
    if isinstance(ty, ir.FloatType):
        return 4, 4
    if isinstance(ty, ir.DoubleType):
        return 8, 8
    if isinstance(ty, ir.PointerType):
        return 8, 8
    if isinstance(ty, ir.ArrayType):
        size, align = abi_layout(ty.element, target_data)
        return size * ty.count, align
    if isinstance(ty, ir.LiteralStructType) and not ty.packed:
        offset, most = 0, 1
        for el in ty.elements:
            size, align = abi_layout(el, target_data)
            offset = -(-offset // align) * align + size
            most = max(most, align)
        return -(-offset // most) * most, most
    return ty.get_abi_size(target_data), ty.get_abi_alignment(target_data)


def _spill_and_reload(slot, column, back, starts, returns) -> None:
    """``slot`` from ``column`` where each region after a barrier starts, to ``back`` (the same column, or
    an updated uniform variable's next entry) at the barriers' returns that a store to the slot can reach
    within its region. A region that leaves the variable alone writes nothing back: its column already
    holds the value, and a next entry holds its region's own value (the launcher made the current entries
    copies of the next ones when the barrier before completed). Fewer stores, and none to a next entry
    (the same address for every thread) in a thread loop whose region does not assign it, which would
    keep LLVM from vectorising the loop (its accesses to the frame could depend on each other)."""
    fn = slot.parent.parent
    preds: dict = {}
    for blk in fn.blocks:
        for succ in _successors(blk):
            preds.setdefault(id(succ), []).append(blk)
    writers = {id(ins.parent) for blk in fn.blocks for ins in blk.instructions
               if isinstance(ins, ir.instructions.StoreInstr) and ins.operands[1] is slot}
    for s in starts:
        b = ir.IRBuilder(s)
        b.position_at_start(s)
        b.store(b.load(column), slot)
    for r in returns:
        seen, todo = set(), [r]
        while todo:  # the blocks that reach r: in its region (a barrier's return ends the others)
            blk = todo.pop()
            if id(blk) in seen:
                continue
            seen.add(id(blk))
            todo.extend(preds.get(id(blk), ()))
        if not seen & writers:
            continue
        b = ir.IRBuilder(r)
        b.position_before(r.terminator)
        b.store(b.load(slot), back)


def describe(rk: RegionLowering, frame: RegionCut, name: str) -> str:
    """A few comment lines above the regions snapshot: the cut and the columns."""
    kinds = [k for k, there in (("barriers", any(not s & (WARP_FLAG | LOCKSTEP_FLAG) for s in rk.sites)),
                                ("warp operations", any(s & WARP_FLAG for s in rk.sites)),
                                ("loops in rounds", bool(rk.rounds))) if there]
    cuts = " and ".join(kinds) or "barriers"
    lines = [f"; {name}: region form, {len(rk.sites) + 1} regions (cut at the {cuts} of lines "
             f"{', '.join(map(str, rk.lines)) or '-'})",
             f"; region 0 starts at %\"{rk.start.name}\"; after each barrier the entry's switch goes on at its block",
             f"; per-thread columns ({LANES} threads each, {frame.frame_bytes} bytes per block): "
             + (", ".join(f"{n} ({s} B)" if s > 0 else f"{n} (block-uniform: one entry)" if s == 0 else
                          f"{n} (block-uniform, updated: the region's and the next one's)" for n, s in frame.columns)
                or "none"),
             "; computed again where a region needs them (thread-constant): " + (", ".join(frame.recomputed) or "none")]
    for line, region in rk.rounds:
        lines.append(f"; the loop of line {line} runs in rounds (its iterations: region {region}; the launcher "
                     "runs that region's thread loop again while a thread has an iteration left)")
    if rk.fresh:
        lines.append("; memcheck: a failed check ends its thread's step and is reported after the thread loop "
                     "(the first failing thread in thread order), so the thread loops keep no early exit")
    elif rk.fresh_why:
        lines.append(f"; memcheck: a failed check stops the launch at once, so the thread loops with checks are "
                     f"not vectorised: {rk.fresh_why}")
    lines.extend(f"; {text}" for text in rk.notes)
    return "\n".join(lines) + "\n"



