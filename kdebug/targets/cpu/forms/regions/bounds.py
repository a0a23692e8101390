"""Thread-range narrowing of the region form's thread loops: the threads a region can change anything for.

A region often does its work under one guard on the thread's x index, ``if t < step: s[t] += s[t + step]``
of a tree reduction, ``if t == 0: partial[b] = s[0]`` at its end: the other threads only run on to the
next barrier. Looping over every thread then costs the whole block for a few threads' work, and LLVM's
runtime alias check, which compares the ranges the whole loop may touch (``s[0:256]`` written,
``s[step:step+256]`` read), fails whenever ``step`` is below the block size, so the vector loop never runs.

``analyse`` reads the optimised step function (regions.py) and decides, for each region, whether every
effect it can have (a store other than to the thread's own context, its stack or an updated block-uniform
variable's next entry; a call other than a pure intrinsic; an atomic) lies under a *guard*: a branch on
``threadIdx.x + c < V`` (``<=``, ``==``; signed, or unsigned with ``c`` 0; also a conjunct of an ``and``)
with ``V`` and ``c`` the same for the whole block (constants, arguments, the block's indices and sizes,
the values updated block-uniform variables start the region with). Every other branch of the region must
then be block-uniform too, so that every thread the guards leave out (an *idle* thread) takes the same
path to the same stop. The region's *bound* is the greatest ``V - c`` of its guards (``+ 1`` for ``<=``
and ``==``): no thread with ``x >= bound`` changes anything.

A guard may also test that ``x`` is a multiple: ``x & M == 0`` or ``x % D == 0`` (``srem``/``urem``, and
Python's ``%`` as kdebug lowers it: the remainder plus a block-uniform adjustment, which for ``x >= 0`` and
``D > 0`` is 0), with ``M`` and ``D`` block-uniform; numba's reduction example writes ``tid % (2 * s) == 0``.
Its *stride* is ``M + 1`` where that is a power of two (``D`` where ``D`` is one), else 1; where the
guard's block is also entered by an edge under a block-uniform condition (``x % 0`` is 0: every thread),
that condition gives every thread at run time. The region's stride is the least of its guards' (a guard
``x < V`` counts 1, or nothing where ``V <= 1``: thread 0 is a multiple of any stride), and the threads
it lets in are the multiples of the stride below the bound.

``bound_module`` writes that as a function, ``<kernel>.bound(ctx, region, args...)``, and the stride as
``<kernel>.stride(...)``, which the launcher (region_scheduler.py) calls before each thread loop: it runs
the loop for the multiples of the stride below the bound only, and one idle thread for the stop of the
rest (their state is the idle thread's). A region it cannot decide on has the
bound of every thread (``ALL``), which is the plain thread loop. Kernels with votes
(``syncthreads_count/and/or``) are never narrowed: an idle thread's vote is its own.
"""
from __future__ import annotations

import dataclasses
import re

import llvmlite.binding as llvm
from llvmlite import ir

from kdebug.targets.cpu.ir_helpers import const
from kdebug.runtime.record import REGION_INDEX  # a thread loop starts a thread at region k with k | REGION_INDEX
from kdebug.targets.cpu.checks.memcheck import FRESH  # a failed check that ended its thread's step (cut.fail_fresh)
from kdebug.targets.cpu.layout import (CONTEXT, CTX_BAR_LINE, CTX_BARRIER, CTX_CTAID, CTX_DYN_BYTES, CTX_DYN_SHARED,
                                       CTX_EXIT_LINE, CTX_FAIL_SLOTS, CTX_FRAME, CTX_NCTAID, CTX_NTID, CTX_SHARED,
                                       CTX_TID, CTX_VOTE,
                                       CTX_WKIND)

ALL = 1 << 62  # the bound of a region whose threads cannot be narrowed: every thread
BOUND_SUFFIX = ".bound"  # the bound function's name: the kernel's and this (launcher.py declares it)
STRIDE_SUFFIX = ".stride"  # the stride function's: a power of two, 1 where the region has none
ALIKE_SUFFIX = ".stops_alike"  # i1 (i32 region): whether a region's threads all stop alike (Region.alike)

_QUIET_INTRINSICS = re.compile(
    r"llvm\.(smax|smin|umax|umin|abs|assume|lifetime\.|dbg\.|experimental\.noalias|fabs|copysign|minnum|"
    r"maxnum|minimum|maximum|ctpop|ctlz|cttz|fshl|fshr|bswap|bitreverse|sqrt|fma|fmuladd|floor|ceil|trunc|"
    r"round|rint|nearbyint|[su](add|sub|mul)\.with\.overflow|[su](add|sub)\.sat|is\.fpclass|invariant\.)")
_BINOPS = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr"}
_DIVS = {"udiv", "sdiv", "urem", "srem"}
ONE = ("const", 64, 1)
_FEW = ("const", 64, 1 << 30)  # a stride no guard asks for: the least of the strides is taken
_CASTS = {"zext", "sext", "trunc"}
# what a block on the way to a failed check's record may hold (no store, no call)
_PASSIVE = _BINOPS | _DIVS | _CASTS | {"br", "getelementptr", "phi", "select", "icmp", "freeze", "bitcast",
                                       "extractvalue", "insertvalue", "load"}
_MINMAX = {"smax": (True, ">"), "smin": (True, "<"), "umax": (False, ">"), "umin": (False, "<")}
# a guard's predicate with threadIdx.x on the left, and the side where x is bounded above
_UPPER = {"slt": ("slt", True), "sle": ("sle", True), "ult": ("ult", True), "ule": ("ule", True),
          "eq": ("eq", True), "sge": ("slt", False), "sgt": ("sle", False), "uge": ("ult", False),
          "ugt": ("ule", False), "ne": ("eq", False)}
_SWAP = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "ult": "ugt", "ule": "uge", "ugt": "ult",
         "uge": "ule", "eq": "eq", "ne": "ne"}


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the analysis needs of a region-form kernel, made on the compiling thread (tier 1 analyses its own
    optimised code from the same facts, in its own LLVM context): its entry, its number of barriers, whether
    it votes (cut.RegionLowering), its updated uniform variables' entries (cut.RegionCut.uniform_copy) and
    their names, the context's field offsets and the kernel's function type."""
    entry: str
    nsites: int
    votes: bool
    uniform_copy: tuple | None
    entry_names: tuple  # ((frame offset, name), ...)
    offsets: tuple  # ((context field, byte offset), ...)
    kernel_type: ir.FunctionType
    starts: tuple = ()  # each region's first source line: the kernel's (0) for region 0, then each cut's line

    @classmethod
    def of(cls, entry: str, rk, frame, target_data, kernel_type: ir.FunctionType) -> Facts:
        """``rk``: the kernel's cut.RegionLowering; ``frame``: its cut.RegionCut."""
        return cls(entry, len(rk.sites), rk.votes, frame.uniform_copy, frame.entry_names,
                   tuple(sorted(_context_offsets(target_data).items())), kernel_type, (0,) + tuple(rk.lines))


class Undecided(Exception):
    """The region's code has a shape the analysis does not follow: its bound is every thread."""


def _context_offsets(target_data) -> dict:
    ty = llvm.parse_assembly(f"@x = external global {CONTEXT}").get_global_variable("x").global_value_type
    return {k: target_data.get_element_offset(ty, k) for k in range(len(CONTEXT.elements))}


def _width(ty) -> int:
    """The width of integer type ``ty`` (a type or its text, ``iN``); anything else is undecided."""
    s = str(ty)
    if not re.fullmatch(r"i\d+", s):
        raise Undecided(f"a value of type {s}")
    return int(s[1:])


def _wrap(v: int, w: int) -> int:
    return v & ((1 << w) - 1)


def _signed(v: int, w: int) -> int:
    v = _wrap(v, w)
    return v - (1 << w) if v >> (w - 1) else v


_ATTACHMENTS = re.compile(r"(?:,\s*![\w.]+\s+!\d+)+\s*$")  # ", !dbg !36, !tbaa !5" after an instruction


def _text(v) -> str:
    """An instruction's text without its metadata attachments (a build with debug locations has ``!dbg``
    on every instruction: what is read off the text must not depend on them)."""
    if isinstance(v, _Value):
        if v._text is None:
            v._text = _ATTACHMENTS.sub("", str(v.ref).strip())
        return v._text
    return _ATTACHMENTS.sub("", str(v).strip())


class _Value:
    """A value of the step function as the analysis reads it: llvmlite's ValueRef, with what was read of it
    kept. Each read through llvmlite is a call into LLVM (a new Python object for every operand, opcode and
    type), and the analysis reads the same instructions once per region, and again for each question: kept,
    a region-form kernel's analysis takes a fraction of the time. One ``_Value`` per LLVM value
    (``StepFunction.value``), so that identity is LLVM's (a constant is unique in its context)."""
    __slots__ = ("ref", "sf", "is_instruction", "_opcode", "_ops", "_text", "_type", "_name", "_is_constant",
                 "_value_kind", "_constant", "_instructions", "_incoming")

    def __init__(self, ref, sf) -> None:
        self.ref, self.sf = ref, sf
        self.is_instruction = ref.is_instruction
        self._opcode = self._ops = self._text = self._type = self._name = self._is_constant = None
        self._value_kind = self._instructions = self._incoming = None
        self._constant = {}

    @property
    def opcode(self) -> str:
        if self._opcode is None:
            self._opcode = self.ref.opcode
        return self._opcode

    @property
    def operands(self) -> tuple:
        """The operands, each the ``_Value`` of the instruction, argument, block or constant it names."""
        if self._ops is None:
            self._ops = tuple(self.sf.value(o) for o in self.ref.operands)
        return self._ops

    @property
    def type(self) -> str:
        if self._type is None:
            self._type = str(self.ref.type)
        return self._type

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = self.ref.name
        return self._name

    @property
    def is_constant(self) -> bool:
        if self._is_constant is None:
            self._is_constant = self.ref.is_constant
        return self._is_constant

    @property
    def value_kind(self):
        if self._value_kind is None:
            self._value_kind = self.ref.value_kind
        return self._value_kind

    def get_constant_value(self, signed_int: bool = False):
        if signed_int not in self._constant:
            self._constant[signed_int] = self.ref.get_constant_value(signed_int=signed_int)
        return self._constant[signed_int]

    @property
    def instructions(self) -> tuple:
        """A block's instructions."""
        if self._instructions is None:
            self._instructions = tuple(self.sf.value(i) for i in self.ref.instructions)
        return self._instructions

    @property
    def incoming_blocks(self) -> tuple:
        """A phi's incoming blocks."""
        if self._incoming is None:
            self._incoming = tuple(self.sf.value(b) for b in self.ref.incoming_blocks)
        return self._incoming

    def __str__(self) -> str:
        return str(self.ref)


def _flags(ins) -> set:
    head = _text(ins).split("=", 1)[-1].split(",")[0]
    return set(head.split())


def _predicate(ins) -> str:
    m = re.search(r"icmp\s+(?:samesign\s+)?(\w+)", _text(ins))
    if m is None:
        raise Undecided("an icmp without a predicate")
    return m.group(1)


class StepFunction:
    """The optimised step function of a region-form kernel, read region by region."""

    def __init__(self, fn, facts: Facts) -> None:
        self.fn = fn
        self.off = dict(facts.offsets)
        # every value the analysis reads, one _Value each: an operand is its own kind of reference in
        # llvmlite, mapped here to the instruction, argument or block it names (found by LLVM's pointer)
        self.values: dict = {}
        arguments = [self._add(a) for a in fn.arguments]
        self.ctx = arguments[0]
        self.args = {a: k for k, a in enumerate(arguments)}
        self.blocks = [self._add(b) for b in fn.blocks]
        self.by_name = {b.name: b for b in self.blocks if b.name}
        self.canon = {b: b for b in self.blocks}  # a branch's operand -> the block itself
        for b in self.blocks:
            b._instructions = tuple(self._add(i) for i in b.ref.instructions)
        self.block_of = {i: b for b in self.blocks for i in b.instructions}
        self._places: dict = {}  # pointer -> place(pointer)
        self._quiet: dict = {}  # instruction -> quiet(instruction)
        self._fresh: dict = {}  # instruction -> fresh_failure(instruction)
        self.uniform_cur = None
        if facts.uniform_copy is not None:
            cur, nxt, size, _ = facts.uniform_copy
            self.uniform_cur, self.uniform_next = (cur, cur + size), (nxt, nxt + size)
        self.invariant_fields = {self.off[f] + 4 * k for f in (CTX_NTID, CTX_CTAID, CTX_NCTAID) for k in range(3)}
        self.invariant_fields |= {self.off[CTX_SHARED], self.off[CTX_DYN_SHARED], self.off[CTX_DYN_BYTES]}

    def _add(self, ref) -> _Value:
        v = self.values[ref] = _Value(ref, self)
        return v

    def value(self, ref) -> _Value:
        """The ``_Value`` of an LLVM value read off the step function (an operand: what it names)."""
        v = self.values.get(ref)
        if v is None:
            v = self._add(ref)
        return v

    def ops(self, v) -> tuple:
        """``v``'s operands, each as the instruction, argument or block it names (or the constant)."""
        return v.operands

    # ---- pointers -------------------------------------------------------------------------------
    def place(self, p):
        """('ctx', offset), ('frame', offset), ('alloca', None) or None (anything else) for pointer ``p``."""
        if p not in self._places:
            self._places[p] = self._place(p)
        return self._places[p]

    def _place(self, p):
        off = 0
        while p.is_instruction and p.opcode == "getelementptr":
            ops = self.ops(p)
            if not re.search(r"getelementptr\s+(?:inbounds\s+|nuw\s+|nusw\s+)*i8,", _text(p)) or len(ops) != 2 \
                    or not ops[1].is_constant:
                return None
            off += ops[1].get_constant_value(signed_int=True)
            p = ops[0]
        if p == self.ctx:
            return ("ctx", off)
        if p.is_instruction and p.opcode == "alloca":
            return ("alloca", None)
        if p.is_instruction and p.opcode == "load" and self.place(self.ops(p)[0]) == ("ctx", self.off[CTX_FRAME]):
            return ("frame", off)
        return None

    def quiet(self, ins) -> bool:
        """Whether ``ins`` changes nothing another thread (or the block's state after the region) can see."""
        if ins not in self._quiet:
            self._quiet[ins] = self._quiet_instruction(ins)
        return self._quiet[ins]

    def _quiet_instruction(self, ins) -> bool:
        op = ins.opcode
        if op == "store":
            where = self.place(self.ops(ins)[1])
            if where is None:
                return False
            kind, off = where
            if kind in ("ctx", "alloca"):
                return True
            return self.uniform_cur is not None and self.uniform_next[0] <= off < self.uniform_next[1]
        if op == "call":
            callee = self.ops(ins)[-1]
            return bool(callee.name) and _QUIET_INTRINSICS.match(callee.name) is not None
        return op not in ("atomicrmw", "cmpxchg", "fence", "invoke", "callbr", "va_arg")

    # ---- memcheck's failed checks that end the thread's step (cut.fail_fresh) ------------------------
    def fresh_failure(self, ins) -> bool:
        """Whether ``ins`` stores a failed check's site with the ``FRESH`` bit into the thread's failure slot:
        the launcher reports that failure after the thread loop, before it reads any thread's state."""
        if ins not in self._fresh:
            self._fresh[ins] = self._fresh_failure(ins)
        return self._fresh[ins]

    def _fresh_failure(self, ins) -> bool:
        if ins.opcode != "store":
            return False
        value, ptr = self.ops(ins)
        for _ in range(8):
            if not (ptr.is_instruction and ptr.opcode in ("getelementptr", "bitcast")):
                break
            ptr = self.ops(ptr)[0]
        if not (ptr.is_instruction and ptr.opcode == "load"
                and self.place(self.ops(ptr)[0]) == ("ctx", self.off[CTX_FAIL_SLOTS])):
            return False
        return self._fresh_site(value, 0)

    def _fresh_site(self, v, depth: int) -> bool:
        if depth > 4:
            return False
        if v.is_constant:
            return v.value_kind == llvm.ValueKind.constant_int and bool(v.get_constant_value() & FRESH)
        if not v.is_instruction:
            return False
        ops = self.ops(v)
        if v.opcode == "or":
            return any(self._fresh_site(o, depth + 1) for o in ops)
        if v.opcode == "phi":
            return all(self._fresh_site(o, depth + 1) for o in ops if o not in self.canon)
        if v.opcode == "select":
            return self._fresh_site(ops[1], depth + 1) and self._fresh_site(ops[2], depth + 1)
        return False

    # ---- the region's blocks: the dispatch on the waiting site folded ------------------------------
    def successors(self, blk, site: int) -> list:
        return [self.canon[s] for s in self._successors(blk, site)]

    def _successors(self, blk, site: int) -> list:
        term = list(blk.instructions)[-1]
        ops = self.ops(term)
        if term.opcode == "br":
            if len(ops) == 1:
                return [ops[0]]
            c = self.evaluate(ops[0], site)
            if c is None:
                return [ops[2], ops[1]]
            return [ops[2] if c else ops[1]]
        if term.opcode == "switch":
            text = _text(term)
            cases = [(int(v), self._block(n)) for v, n in re.findall(r"i\d+\s+(-?\d+),\s*label\s+%([\w.$-]+|\"[^\"]+\")", text)]
            default = ops[1]
            x = self.evaluate(ops[0], site)
            if x is None:
                return [default] + [b for _, b in cases]
            w = _width(ops[0].type)
            for v, b in cases:
                if _wrap(v, w) == _wrap(x, w):
                    return [b]
            return [default]
        if term.opcode in ("ret", "unreachable"):
            return []
        raise Undecided(f"a {term.opcode} terminator")

    def _block(self, name: str):
        name = name.strip('"')
        if name not in self.by_name:
            raise Undecided(f"a branch to block {name}")
        return self.by_name[name]

    def evaluate(self, v, site: int, depth: int = 0):
        """The value of ``v`` when the thread enters at ``site``, where it depends only on the site, else None."""
        if depth > 12:
            return None
        if v.is_constant and v.value_kind == llvm.ValueKind.constant_int:
            return v.get_constant_value()
        if not v.is_instruction:
            return None
        op = v.opcode
        ops = self.ops(v)
        if op == "load":
            return site if self.place(ops[0]) == ("ctx", self.off[CTX_BARRIER]) else None
        vals = [self.evaluate(o, site, depth + 1) for o in ops] if op != "select" else None
        try:
            w = _width(v.type)
        except Undecided:
            return None
        if op == "icmp":
            if None in vals:
                return None
            ow = _width(ops[0].type)
            a, b = vals
            p = _predicate(v)
            sa, sb, ua, ub = _signed(a, ow), _signed(b, ow), _wrap(a, ow), _wrap(b, ow)
            return int({"eq": ua == ub, "ne": ua != ub, "slt": sa < sb, "sle": sa <= sb, "sgt": sa > sb,
                        "sge": sa >= sb, "ult": ua < ub, "ule": ua <= ub, "ugt": ua > ub, "uge": ua >= ub}[p])
        if op == "select":
            c = self.evaluate(ops[0], site, depth + 1)
            return None if c is None else self.evaluate(ops[1] if c else ops[2], site, depth + 1)
        if op in ("and", "or", "xor", "add", "sub") and None not in vals:
            a, b = vals
            return _wrap({"and": a & b, "or": a | b, "xor": a ^ b, "add": a + b, "sub": a - b}[op], w)
        if op in ("zext", "trunc") and vals[0] is not None:
            return _wrap(vals[0], w)
        return None

    def region(self, k: int):
        """Region k's blocks (reached from the entry with the thread waiting at region k's start) and edges."""
        site = k | REGION_INDEX
        entry = self.blocks[0]
        succ, order, seen = {}, [], {entry}
        work = [entry]
        while work:
            b = work.pop()
            order.append(b)
            succ[b] = self.successors(b, site)
            for s in succ[b]:
                if s not in seen:
                    seen.add(s)
                    work.append(s)
        return order, succ, site


def _dominators(order, succ, entry) -> dict:
    preds = {b: [] for b in order}
    for b in order:
        for s in succ[b]:
            preds[s].append(b)
    dom = {b: set(order) for b in order}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for b in order:
            if b == entry:
                continue
            new = set.intersection(*(dom[p] for p in preds[b])) if preds[b] else set()
            new = new | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom, preds


class Region:
    """One region's analysis: its guards, its effects, its bound (an expression over block-uniform values)."""

    def __init__(self, sf: StepFunction, k: int) -> None:
        self.sf, self.k = sf, k
        self.order, self.succ, self.site = sf.region(k)
        self.dom, self.preds = _dominators(self.order, self.succ, self.order[0])
        self.memo: dict = {}
        self.memo_blocks: dict = {}
        self.why: str | None = None  # what keeps every thread, where bound() found it (WHY)
        self.stride = ONE  # the stride of the threads it lets in (bound() sets it), and in words
        self.stride_text: str | None = None

    def live_incoming(self, phi):
        """The value phi ``phi`` takes in this region, where every edge of the region into its block brings
        the same one."""
        live = {}
        here = self.sf.block_of[phi]
        for val, blk in zip(self.sf.ops(phi), phi.incoming_blocks):
            blk = self.sf.canon.get(blk)
            if blk in self.succ and here in self.succ[blk]:  # an edge this region takes
                live.setdefault(blk, []).append(val)
        # a switch's cases to one block: one entry per case; several edges of the region bringing one
        # value (LLVM's constants are unique: the exit's line where the region's ways all end)
        vals = [v for vs in live.values() for v in vs]
        if not vals:
            return None
        return vals[0] if all(v == vals[0] for v in vals) else None

    # ---- values the same in every thread of the block ------------------------------------------------
    def invariant(self, v, depth: int = 0):
        """An expression for ``v`` if it has one value for the whole block at the region's start, else None."""
        if v in self.memo:
            return self.memo[v]
        self.memo[v] = None  # a cycle (a loop-carried phi) is not invariant
        e = self._invariant(v, depth)
        self.memo[v] = e
        return e

    def _invariant(self, v, depth: int):
        sf = self.sf
        if depth > 40:
            return None
        if v.is_constant and v.value_kind == llvm.ValueKind.constant_int:
            return ("const", _width(v.type), v.get_constant_value(signed_int=True))
        if v in sf.args and v != sf.ctx:
            return ("arg", sf.args[v], str(v.type), v.name.removeprefix("arg.")) \
                if re.fullmatch(r"i\d+", str(v.type)) else None
        if not v.is_instruction:
            return None
        op, ops = v.opcode, self.sf.ops(v)
        if op == "load":
            if not re.fullmatch(r"i\d+", str(v.type)):
                return None
            where = sf.place(ops[0])
            if where is None:
                return None
            kind, off = where
            if kind == "ctx" and off in sf.invariant_fields:
                return ("ctx", off, str(v.type))
            if kind == "frame" and sf.uniform_cur is not None and sf.uniform_cur[0] <= off < sf.uniform_cur[1]:
                return ("frame", off, str(v.type))
            return None
        if op == "phi":
            val = self.live_incoming(v)
            return None if val is None else self.invariant(val, depth + 1)
        if op == "freeze":
            return self.invariant(ops[0], depth + 1)
        if op == "extractvalue":  # a field of an argument passed by value (an array's shape)
            m = re.search(r",\s*(\d+(?:\s*,\s*\d+)*)\s*$", _text(v))
            if m is None or ops[0] not in sf.args or ops[0] == sf.ctx or not re.fullmatch(r"i\d+", str(v.type)):
                return None
            return ("field", sf.args[ops[0]], tuple(int(x) for x in m.group(1).split(",")), str(v.type),
                    ops[0].name.removeprefix("arg."))
        if op in _BINOPS or op in _DIVS:
            if op in _DIVS:
                d = ops[1]
                if not (d.is_constant and d.value_kind == llvm.ValueKind.constant_int) \
                        or d.get_constant_value(signed_int=True) in (0, -1):
                    return None  # a division that could trap in the bound function
            a, b = self.invariant(ops[0], depth + 1), self.invariant(ops[1], depth + 1)
            return None if a is None or b is None else (op, str(v.type), a, b)
        if op in _CASTS:
            a = self.invariant(ops[0], depth + 1)
            return None if a is None else (op, str(v.type), a)
        if op == "icmp":
            a, b = self.invariant(ops[0], depth + 1), self.invariant(ops[1], depth + 1)
            return None if a is None or b is None else ("icmp", _predicate(v), a, b)
        if op == "select":
            c, a, b = (self.invariant(o, depth + 1) for o in ops)
            return None if None in (c, a, b) else ("select", str(v.type), c, a, b)
        if op == "call":  # llvm.smax/smin/umax/umin of block-uniform values (a range's trip count)
            callee = ops[-1]
            m = re.fullmatch(r"llvm\.ctpop\.i\d+", callee.name or "")  # a power-of-two test of a divisor
            if m is not None and len(ops) == 2:
                a = self.invariant(ops[0], depth + 1)
                return None if a is None else ("ctpop", str(v.type), a)
            m = re.fullmatch(r"llvm\.([su]m(?:ax|in))\.i\d+", callee.name or "")
            if m is None or len(ops) != 3:
                return None
            a, b = self.invariant(ops[0], depth + 1), self.invariant(ops[1], depth + 1)
            return None if a is None or b is None else (m.group(1), str(v.type), a, b)
        return None

    # ---- guards --------------------------------------------------------------------------------------
    def thread_x(self, v, signed: bool):
        """``threadIdx.x + c`` as (c's expression or None for 0), if ``v`` is that, else raise/None."""
        sf = self.sf
        if v.is_instruction and v.opcode == "load" and sf.place(self.sf.ops(v)[0]) == ("ctx", sf.off[CTX_TID]):
            return ("const", 64, 0)
        if v.is_instruction and v.opcode == "phi":
            val = self.live_incoming(v)
            return None if val is None else self.thread_x(val, signed)
        if v.is_instruction and v.opcode in ("zext", "sext"):
            if v.opcode == "sext" and not signed:
                return None
            return self.thread_x(self.sf.ops(v)[0], signed)
        if v.is_instruction and v.opcode == "add":
            flags = _flags(v)
            if ("nsw" if signed else "nuw") not in flags:
                return None
            a, b = self.sf.ops(v)
            for t, c in ((a, b), (b, a)):
                tx = self.thread_x(t, signed)
                inv = self.invariant(c)
                if tx is not None and inv is not None:
                    if not signed:
                        return None  # an unsigned guard with an offset: not followed
                    return ("add", "i64", tx, ("sext", "i64", inv))
        return None

    def multiple_of(self, v, depth: int = 0):
        """Where ``v == 0`` means that threadIdx.x is a multiple of a block-uniform power of two: (that stride's
        expression, 1 where it is none at run time; its words), else None."""
        if v.is_constant and v.value_kind == llvm.ValueKind.constant_int:  # 0: every thread; else none
            return (ONE, None) if v.get_constant_value() == 0 else (_FEW, None)
        if depth > 6 or not v.is_instruction:
            return None
        op, ops = v.opcode, self.sf.ops(v)
        if op == "phi":
            val = self.live_incoming(v)
            if val is not None:
                return self.multiple_of(val, depth + 1)
            here = self.sf.block_of[v]
            vals = [val for val, blk in zip(ops, v.incoming_blocks)
                    if self.sf.canon.get(blk) in self.succ and here in self.succ[self.sf.canon.get(blk)]]
            return self._least([self.multiple_of(val, depth + 1) for val in vals]) if vals else None
        if op == "select":  # the stride of the value it picks, where the choice is the block's; else the least
            found = [self.multiple_of(o, depth + 1) for o in ops[1:]]
            c = self.invariant(ops[0])
            if c is None or None in found:
                return self._least(found)
            words = [w for _, w in found if w is not None]
            return ("select", "i64", c, found[0][0], found[1][0]), (words[0] if len(set(words)) == 1 else None)
        if op == "and":  # x & M, M = 2^j - 1
            for x, m in ((ops[0], ops[1]), (ops[1], ops[0])):
                if self.thread_x(x, True) == ("const", 64, 0):
                    mask = self.invariant(m)
                    if mask is None:
                        continue
                    step = ("add", "i64", ("sext", "i64", mask), ONE)
                    pow2 = ("icmp", "eq", ("and", "i64", ("sext", "i64", mask), step), ("const", 64, 0))
                    return self._positive_power(step, pow2), _stride_words(mask, plus_one=True)
            return None
        if op in ("srem", "urem") and self.thread_x(ops[0], True) == ("const", 64, 0):
            d = self.invariant(ops[1])
            if d is None:
                return None
            step = ("sext" if op == "srem" else "zext", "i64", d)
            pow2 = ("icmp", "eq", ("and", "i64", step, ("sub", "i64", step, ONE)), ("const", 64, 0))
            return self._positive_power(step, pow2), _stride_words(d)
        if op == "add":  # Python's x % d: srem(x, d') plus select(c, y, 0), y >= 0 (0 for x >= 0, d' > 0)
            for r, adj in ((ops[0], ops[1]), (ops[1], ops[0])):
                if not (r.is_instruction and r.opcode == "srem" and adj.is_instruction and adj.opcode == "select"):
                    continue
                zero = self.sf.ops(adj)[2]
                y = self.invariant(self.sf.ops(adj)[1])
                m = self.multiple_of(r, depth + 1)
                if m is None or y is None or not (zero.is_constant and zero.value_kind == llvm.ValueKind.constant_int
                                                  and zero.get_constant_value() == 0):
                    continue
                y64 = ("sext", "i64", y)
                return ("select", "i64", ("icmp", "sge", y64, ("const", 64, 0)), m[0], ONE), m[1]
        return None

    @staticmethod
    def _positive_power(step, pow2):
        return ("select", "i64", ("and", "i1", ("icmp", "sgt", step, ("const", 64, 0)), pow2), step, ONE)

    @staticmethod
    def _least(found):
        if not found or any(f is None for f in found):
            return None
        out, words = found[0]
        for e, w in found[1:]:
            out = ("umin", "i64", out, e)
            words = w if words is None else words if w in (None, words) else ("umin", "i64", words, w)
        return out, words

    def guard_bound(self, cond):
        """(bound expression, True when the branch's true side is the bounded one, stride expression and its
        words or None) of a guard condition."""
        if not cond.is_instruction:
            return None
        if cond.opcode == "icmp":
            p = _predicate(cond)
            a, b = self.sf.ops(cond)
            if p in ("eq", "ne"):
                for x, z in ((a, b), (b, a)):
                    if z.is_constant and z.value_kind == llvm.ValueKind.constant_int and z.get_constant_value() == 0:
                        m = self.multiple_of(x)
                        if m is not None:
                            return ("const", 64, ALL), p == "eq", m[0], m[1]
            for x, v, pred in ((a, b, p), (b, a, _SWAP[p])):
                upper, true_side = _UPPER[pred]
                signed = upper in ("slt", "sle") or upper == "eq"
                tx = self.thread_x(x, signed)
                inv = self.invariant(v)
                if tx is None or inv is None:
                    continue
                ext = "sext" if signed else "zext"
                bound = ("sub", "i64", (ext, "i64", inv), tx) if tx != ("const", 64, 0) else (ext, "i64", inv)
                if upper in ("sle", "ule", "eq"):
                    bound = ("add", "i64", bound, ("const", 64, 1))
                if not signed and _width(v.type) == 64:  # an i64 bound above 2^63 is every thread
                    bound = ("select", "i64", ("icmp", "slt", bound, ("const", 64, 0)), ("const", 64, ALL), bound)
                return bound, true_side, None, None
            return None
        conj = None
        if cond.opcode == "and":
            conj = self.sf.ops(cond)
        elif cond.opcode == "select":
            c, a, b = self.sf.ops(cond)
            if b.is_constant and b.value_kind == llvm.ValueKind.constant_int and b.get_constant_value() == 0:
                conj = [c, a]
        if conj is not None:  # both must hold on the true side: a guard on either bounds it
            for c in conj:
                g = self.guard_bound(c)
                if g is not None and g[1]:
                    return g
        return None

    def _entered_anyway(self, active, guard_block):
        """The condition (an expression) under which the guard's bounded block ``active`` is also entered by
        its other predecessors, each a branch on a block-uniform condition; None where one is not."""
        out = None
        for p in self.preds[active]:
            if p is guard_block:
                continue
            term = list(p.instructions)[-1]
            ops = self.sf.ops(term)
            if term.opcode != "br" or len(ops) != 3:
                return None
            c = self.invariant(ops[0])
            if c is None:
                return None
            if self.sf.canon[ops[2]] is active and self.sf.canon[ops[1]] is active:
                return None  # both ways: every thread
            taken = c if self.sf.canon[ops[2]] is active else ("xor", "i1", c, ("const", 1, 1))
            out = taken if out is None else ("or", "i1", out, taken)
        return out

    def _passive(self, ins) -> bool:
        """Does nothing a thread's state or memory sees: no store, no call but a debug or other quiet
        intrinsic (a build with debug locations holds llvm.dbg.* calls where one without holds none)."""
        if ins.opcode == "call":
            callee = self.sf.ops(ins)[-1]
            return bool(callee.name) and callee.name.startswith("llvm.dbg.")
        return ins.opcode in _PASSIVE

    def fresh_failures(self) -> set:
        """The blocks of the region's failed checks that end the thread's step (cut.fail_fresh): those that
        store such a failure, and those only they lead to (the step's return after it)."""
        if "fresh" in self.memo_blocks:
            return self.memo_blocks["fresh"]
        failed = {blk for blk in self.order if any(self.sf.fresh_failure(ins) for ins in blk.instructions)}
        grew = bool(failed)
        while grew:
            grew = False
            for blk in self.order:
                if blk in failed:
                    continue
                # reached only from a failure; or leading only to one, doing nothing on the way (LLVM sinks
                # the records' stores of several checks into one block, leaving each check's own block empty)
                if (self.preds[blk] and all(p in failed for p in self.preds[blk])) or \
                        (self.succ[blk] and all(s in failed for s in self.succ[blk])
                         and all(self._passive(ins) for ins in blk.instructions)):
                    failed.add(blk)
                    grew = True
        self.memo_blocks["fresh"] = failed
        return failed

    # ---- whether every thread stops alike ----------------------------------------------------------
    def alike(self) -> bool:
        """Whether every thread of the block leaves the region at the same stop with the same state (where it
        waits, the barrier's and the exit's lines, the next region's number): each branch whose condition is
        not block-uniform joins again (at its immediate post-dominator) before any store of that state and
        before any way out of the region, and every value stored there is block-uniform. The launcher then
        keeps one state for all the region's threads, the last thread's, instead of a column each
        (region_scheduler.py): no state stores in the thread loop, no least and greatest site to reduce."""
        sf = self.sf
        state = {sf.off[f] for f in (CTX_BARRIER, CTX_BAR_LINE, CTX_EXIT_LINE, CTX_VOTE, CTX_WKIND)}
        # a failed check's way out (cut.fail_fresh) is left out: the launcher reports it and stops
        # before it reads any thread's state, so the state the failed thread leaves does not matter
        failed = self.fresh_failures()
        order = [blk for blk in self.order if blk not in failed]
        succ = {blk: [s for s in self.succ[blk] if s not in failed] for blk in order}
        touches = set()  # blocks that store a thread's state or leave the region
        for blk in order:
            if not succ[blk]:
                touches.add(blk)
            for ins in blk.instructions:
                if ins.opcode != "store":
                    continue
                value, ptr = sf.ops(ins)
                where = sf.place(ptr)
                if where is None or where[0] != "ctx" or where[1] not in state:
                    continue
                if self.invariant(value) is None:
                    return False
                touches.add(blk)
        ipdom = _immediate_post_dominators(order, succ)
        for blk in order:
            if len(set(succ[blk])) < 2:
                continue
            term = list(blk.instructions)[-1]
            if self.invariant(sf.ops(term)[0]) is not None:
                continue  # every thread goes the same way
            join = ipdom.get(blk)
            if join is None:
                return False  # the ways part for good (different stops)
            seen, work = set(), list(succ[blk])
            while work:  # the blocks between the branch and where its ways join
                b = work.pop()
                if b is join or b in seen:
                    continue
                if b in touches:
                    return False
                seen.add(b)
                work.extend(succ[b])
        return True

    def bound(self):
        """Region k's bound expression (``ALL`` when it cannot be narrowed)."""
        every = ("const", 64, ALL)
        guards = {}  # a guard's bounded successor -> (the guard's block, its bound)
        for b in self.order:
            term = list(b.instructions)[-1]
            ops = self.sf.ops(term)
            if term.opcode == "br" and len(ops) == 3 and len(self.succ[b]) == 2:
                g = self.guard_bound(ops[0])
                if g is not None:
                    active = self.sf.canon[ops[2] if g[1] else ops[1]]
                    bound, stride, words = g[0], g[2], g[3]
                    if len(self.preds[active]) > 1:  # entered another way too: every thread, when it is
                        anyway = self._entered_anyway(active, b)
                        if anyway is None:
                            continue
                        if bound != ("const", 64, ALL):
                            bound = ("select", "i64", anyway, ("const", 64, ALL), bound)
                        if stride is not None:
                            stride = ("select", "i64", anyway, ONE, stride)
                    guards[active] = (b, bound, stride, words)
        used = set()
        failed = self.fresh_failures()
        for blk in self.order:
            for ins in blk.instructions:
                if ins.opcode in ("br", "switch") or self.sf.quiet(ins):
                    continue
                inside = [a for a in guards if a in self.dom[blk]]
                if not inside and blk in failed:
                    # failed checks' records, merged by LLVM into one block for checks under several guards:
                    # inside when each way into it is
                    ways = [[a for a in guards if a in self.dom[p]] for p in self.preds[blk]]
                    if ways and all(ways):
                        inside = [a for w in ways for a in w]
                if not inside:
                    self.why = WHY["effect"]
                    return every  # an effect every thread may have
                used.update(inside)
        outer = [a for a in self.order if a in used
                 and not any(o != a and o in self.dom[guards[a][0]] for o in used)]
        # the threads no outer guard lets in must all take one path to one stop: every branch they can
        # meet is an outer guard (which they fail) or has a block-uniform condition
        for blk in self.order:
            if any(a in self.dom[blk] for a in outer) or len(self.succ[blk]) < 2:
                continue
            if any(guards[a][0] == blk for a in outer):
                continue
            cond = self.sf.ops(list(blk.instructions)[-1])[0]
            if self.invariant(cond) is None:
                self.why = WHY["branch"]
                return every
        if not outer:
            return ("const", 64, 0)  # nothing any thread does outlives the region but its stop
        out = guards[outer[0]][1]
        for a in outer[1:]:
            every_ = ("const", 64, ALL)
            out = every_ if every_ in (out, guards[a][1]) else ("smax", "i64", out, guards[a][1])
        strided = [a for a in outer if guards[a][2] is not None]
        if strided:  # the least stride: a bound guard's 1, or none where it lets in thread 0 alone
            stride = _FEW
            for a in outer:
                _, bound, s, _ = guards[a]
                if s is None:
                    s = ("select", "i64", ("icmp", "sle", bound, ONE), _FEW, ONE)
                stride = ("umin", "i64", stride, s)
            self.stride = ("select", "i64", ("icmp", "eq", stride, _FEW), ONE, stride)
            words = {guards[a][3] for a in strided}
            self.stride_text = words.pop() if len(words) == 1 else None
        return out


# why a region keeps every thread, in the regions snapshot and the IR after finish (describe)
WHY = {
    "effect": "what it does is under no guard `threadIdx.x < bound` or `threadIdx.x % m == 0`",
    "branch": "a branch on a per-thread value outside its guards: the threads left out could part ways",
    "votes": "the kernel votes (syncthreads_count, _and, _or): each thread's vote is its own",
    "shape": "its code has a shape the analysis does not follow",
}


def analyse(fn, facts: Facts, reasons: list | None = None) -> tuple[list, list, list]:
    """Each region's bound expression, whether its threads all stop alike and its stride (expression, words
    or None), for regions 0 .. facts.nsites of the optimised step function ``fn``. ``reasons``, where given,
    gets each region's reason to keep every thread (``WHY``; None for a narrowed region)."""
    n = facts.nsites + 1
    every, apart = [("const", 64, ALL)] * n, [False] * n
    strides: list = [(ONE, None)] * n
    if reasons is not None:
        reasons[:] = [WHY["votes"] if facts.votes else WHY["shape"]] * n
    if facts.votes:
        return every, apart, strides
    try:
        sf = StepFunction(fn, facts)
    except Undecided:
        return every, apart, strides
    bounds, alike, strides = [], [], []
    for k in range(n):
        why = WHY["shape"]
        try:
            r = Region(sf, k)
            both = r.bound(), r.alike()
            why = r.why
            stride = (r.stride, r.stride_text)
        except Undecided:
            both, stride = (("const", 64, ALL), False), (ONE, None)
        bounds.append(both[0])
        alike.append(both[1])
        strides.append(stride)
        if reasons is not None:
            reasons[k] = why if both[0] == ("const", 64, ALL) and stride[0] == ONE else None
    return bounds, alike, strides


def _stride_words(e, plus_one: bool = False):
    """The expression a stride shows as (``describe``): ``m + 1`` of a mask ``m = d - 1`` as ``d``, ``umax(d, 1)``
    (a divisor kept from 0) as ``d``."""
    while e[0] in _CASTS:
        e = e[2]
    if plus_one:
        if e[0] == "add" and e[3][0] == "const" and e[3][2] == -1:
            return e[2]
        return ("add", "i64", e, ONE)
    if e[0] == "umax" and e[3] == ("const", _width(e[1]), 1):
        return e[2]
    return e


def _immediate_post_dominators(order, succ) -> dict:
    """Each block's immediate post-dominator in the region's graph (blocks without successors lead to one
    virtual exit); a block whose ways only meet at that exit has none."""
    exit_ = object()
    nodes = list(order) + [exit_]
    after = {b: (list(succ[b]) or [exit_]) for b in order}
    pdom = {b: set(nodes) for b in order}
    pdom[exit_] = {exit_}
    changed = True
    while changed:
        changed = False
        for b in reversed(order):
            new = set.intersection(*(pdom[s] for s in after[b])) | {b}
            if new != pdom[b]:
                pdom[b], changed = new, True
    out = {}
    for b in order:
        strict = pdom[b] - {b}
        # the immediate one: the strict post-dominator that every other strict one post-dominates
        for c in strict:
            if c is not exit_ and strict <= pdom[c] | {c}:
                out[b] = c
                break
    return out


def describe(bounds, alike=(), names: dict | None = None, reasons=(), starts=(), strides=()) -> list[str]:
    """One line per region: narrowed to what bound and stride, or every thread (and why: ``reasons``, with
    the line the region starts at: ``starts``, 0 for the kernel's start); and whether its threads all stop
    alike (one state for all of them). ``names``: ('ctx'|'frame', offset) -> what the value there is called
    (blockDim.x, a uniform variable's name)."""
    names = names or {}

    def threads(k: int, e) -> str:
        stride, words = strides[k] if k < len(strides) else (ONE, None)
        if e == ("const", 64, ALL) and stride == ONE:
            return "every thread" + why(k)
        out = [] if e == ("const", 64, ALL) else [f"threadIdx.x < {_show(e, names)}"]
        if stride != ONE:
            out.append(f"threadIdx.x a multiple of {_show(words, names)}" if words is not None
                       else "threadIdx.x a multiple of the least of its guards' strides")
        return ", ".join(out)

    def why(k: int) -> str:
        if k >= len(reasons) or not reasons[k]:
            return ""
        start = starts[k] if k < len(starts) else None
        where = "from the kernel's start" if start == 0 else f"from the cut of line {start}" if start else ""
        return f" ({where}: {reasons[k]})" if where else f" ({reasons[k]})"
    return [f"region {k}: " + threads(k, e) + ("; the threads stop alike (one state)" if k < len(alike) and alike[k]
                                                else "")
            for k, e in enumerate(bounds)]


def value_names(facts: Facts) -> dict:
    """('ctx', offset) and ('frame', offset) -> names, for ``describe``."""
    offsets = dict(facts.offsets)
    names = {("frame", off): name for off, name in facts.entry_names}
    for f, label in ((CTX_NTID, "blockDim"), (CTX_CTAID, "blockIdx"), (CTX_NCTAID, "gridDim")):
        for k, axis in enumerate("xyz"):
            names["ctx", offsets[f] + 4 * k] = f"{label}.{axis}"
    return names


def _show(e, names: dict) -> str:
    kind = e[0]
    if kind == "const":
        return str(e[2])
    if kind == "arg":
        return e[3] or f"argument {e[1]}"
    if kind == "field":  # an array argument's shape: its struct's field 1
        if len(e[2]) == 2 and e[2][0] == 1 and e[4]:
            return f"{e[4]}.shape[{e[2][1]}]"
        return f"{e[4] or 'argument ' + str(e[1])}{list(e[2])}"
    if kind in ("ctx", "frame"):
        return names.get((kind, e[1]), f"{kind}[{e[1]}]")
    if kind in _CASTS:
        return _show(e[2], names)
    if kind == "icmp":
        return f"({_show(e[2], names)} {e[1]} {_show(e[3], names)})"
    if kind == "select":
        return f"({_show(e[3], names)} if {_show(e[2], names)} else {_show(e[4], names)})"
    args = [_show(x, names) for x in e[2:]]
    if kind in ("add", "sub") and args[0] == "0":
        return args[1] if kind == "add" else f"-{args[1]}"
    if kind in ("add", "sub") and args[1] == "0":
        return args[0]
    if all(a.lstrip("-").isdigit() for a in args) and kind in ("add", "sub", "mul", "smax", "shl"):
        a, b = (int(x) for x in args)
        return str({"add": a + b, "sub": a - b, "mul": a * b, "smax": max(a, b), "shl": a << b}[kind])
    if kind in _MINMAX:
        return f"{kind[1:]}({args[0]}, {args[1]})"
    sym = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^", "shl": "<<", "lshr": ">>",
           "ashr": ">>", "sdiv": "//", "udiv": "//", "srem": "%", "urem": "%"}.get(kind)
    if sym:
        return f"({args[0]} {sym} {args[1]})"
    return f"{kind}({', '.join(args)})"


# ---- the bound function --------------------------------------------------------------------------------
def bound_function(m: ir.Module, name: str, kernel_type: ir.FunctionType, bounds, frame_offset: int,
                   default=("const", 64, ALL)) -> ir.Function:
    """``i64 name(ctx, i32 region, kernel args...)``: region k's bound (or stride: ``default`` 1), computed
    from the context's block fields, the frame's current uniform entries and the arguments."""
    i32, i64 = ir.IntType(32), ir.IntType(64)
    fty = ir.FunctionType(i64, [kernel_type.args[0], i32] + list(kernel_type.args[1:]))
    fn = ir.Function(m, fty, name=name)
    fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, region, args = fn.args[0], fn.args[1], fn.args[2:]
    i8p = ir.IntType(8).as_pointer()
    ctx8 = b.bitcast(ctx, i8p)
    every = fn.append_basic_block("every.thread")
    sw = b.switch(region, every)
    ir.IRBuilder(every).ret(const(default[2], i64))

    def at(base, off, ty):
        return b.load(b.bitcast(b.gep(base, [const(off, i64)]), ir.IntType(int(ty[1:])).as_pointer()))

    def emit(e):
        kind = e[0]
        if kind == "const":
            return ir.Constant(ir.IntType(e[1]), e[2])
        if kind == "arg":
            return args[e[1] - 1]
        if kind == "field":
            return b.extract_value(args[e[1] - 1], list(e[2]))
        if kind == "ctx":
            return at(ctx8, e[1], e[2])
        if kind == "frame":
            frame = b.load(b.bitcast(b.gep(ctx8, [const(frame_offset, i64)]), i8p.as_pointer()))
            return at(frame, e[1], e[2])
        ty = ir.IntType(int(e[1][1:])) if kind not in ("icmp",) else None
        if kind in _CASTS:
            v = emit(e[2])
            if v.type.width == ty.width:
                return v
            if v.type.width > ty.width:
                return b.trunc(v, ty)
            return b.sext(v, ty) if kind == "sext" else b.zext(v, ty)
        if kind == "icmp":
            x, y = emit(e[2]), emit(e[3])
            x, y = _same_width(b, x, y)
            p = e[1]
            cmp = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "ult": "<",
                   "ule": "<=", "ugt": ">", "uge": ">="}[p]
            return b.icmp_unsigned(cmp, x, y) if p[0] == "u" else b.icmp_signed(cmp, x, y)
        if kind == "select":
            c, x, y = emit(e[2]), emit(e[3]), emit(e[4])
            return b.select(c, x, y)
        if kind == "ctpop":
            x = emit(e[2])
            return b.call(m.declare_intrinsic("llvm.ctpop", [x.type]), [x])
        x, y = emit(e[2]), emit(e[3])
        x, y = _same_width(b, x, y)
        if kind in _MINMAX:
            signed, cmp = _MINMAX[kind]
            return b.select((b.icmp_signed if signed else b.icmp_unsigned)(cmp, x, y), x, y)
        return getattr(b, {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor",
                           "shl": "shl", "lshr": "lshr", "ashr": "ashr", "sdiv": "sdiv", "udiv": "udiv",
                           "srem": "srem", "urem": "urem"}[kind])(x, y)

    for k, e in enumerate(bounds):
        if e == default:
            continue
        blk = fn.append_basic_block(f"region.{k}")
        sw.add_case(const(k), blk)
        b.position_at_end(blk)
        v = emit(e)
        if v.type.width != 64:
            v = b.sext(v, i64)
        b.ret(v)
    return fn


def alike_function(m: ir.Module, name: str, alike) -> ir.Function:
    """``i1 name(i32 region)``: whether region k's threads all stop alike (``Region.alike``); a constant in
    each of the launcher's thread loops once inlined, so LLVM keeps only the code of the answer."""
    i1, i32 = ir.IntType(1), ir.IntType(32)
    fn = ir.Function(m, ir.FunctionType(i1, [i32]), name=name)
    fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    no, yes = fn.append_basic_block("apart"), fn.append_basic_block("alike")
    sw = b.switch(fn.args[0], no)
    for k, a in enumerate(alike):
        if a:
            sw.add_case(const(k), yes)
    ir.IRBuilder(no).ret(ir.Constant(i1, 0))
    ir.IRBuilder(yes).ret(ir.Constant(i1, 1))
    return fn


def _same_width(b, x, y):
    if x.type.width == y.type.width:
        return x, y
    if x.type.width < y.type.width:
        return b.sext(x, y.type), y
    return x, b.sext(y, x.type)


def bound_module(fn, facts: Facts, triple: str, layout: str) -> tuple[str, list]:
    """The text of a module defining ``<entry>.bound`` and ``<entry>.stride`` for the optimised step function
    ``fn``, and each region's bound in words."""
    reasons: list = []
    bounds, alike, strides = analyse(fn, facts, reasons)
    name = facts.entry + BOUND_SUFFIX
    m = ir.Module(name=name)
    m.triple, m.data_layout = triple, layout
    frame = dict(facts.offsets)[CTX_FRAME]
    bound_function(m, name, facts.kernel_type, bounds, frame)
    bound_function(m, facts.entry + STRIDE_SUFFIX, facts.kernel_type, [e for e, _ in strides], frame, default=ONE)
    alike_function(m, facts.entry + ALIKE_SUFFIX, alike)
    # what was decided, for whoever reads the IR after finish (the IR view, kdebug dump)
    md = m.add_named_metadata("kdebug.thread_bounds")
    lines = describe(bounds, alike, value_names(facts), reasons, facts.starts, strides)
    md.add(m.add_metadata([ir.MetaDataString(m, name)] + [ir.MetaDataString(m, line) for line in lines]))
    return str(m), lines


def link_bounds(mod, facts: Facts, context=None) -> list:
    """``<entry>.bound`` made from ``mod``'s optimised step function and linked into ``mod`` (an llvmlite
    ModuleRef in ``context``); each region's bound in words."""
    text, lines = bound_module(mod.get_function(facts.entry), facts, mod.triple, mod.data_layout)
    mod.link_in(llvm.parse_assembly(text, context=context) if context is not None else llvm.parse_assembly(text))
    return lines
