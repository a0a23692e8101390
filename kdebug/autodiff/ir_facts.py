"""The primal's functions as plain Python records, read from llvmlite.binding once.

The transforms (forward_mode.py, reverse_mode.py, reverse_barriers.py) walk a function's
instructions many times: reverse mode's activity, its shadow candidates and the thread-index
analysis run to fixed points, and each pass asked llvmlite.binding again for every opcode,
name and operand (a foreign call each, ~500,000 for ten small gradient programs). Here each
function is read once, when the transform first needs it: a record per instruction (its
opcode, name and operands, its type's and its own text read the first time they are asked
for), the operands that are the function's own instructions or arguments are those records,
and the constants and globals it uses are records of their own.

The records answer as the binding's values do (``opcode``, ``name``, ``value_kind``,
``operands``, ``incoming_blocks``, ``str()``, ``get_constant_value``), with one difference:
``type`` is the type's text (the binding gives a TypeRef, which the transforms only print).
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm

VK = llvm.ValueKind
_INSTRUCTION = VK.instruction
_ARGUMENT = VK.argument
# constants have no name (only globals, arguments, instructions and blocks have): not asked for
_NAMELESS = frozenset(k for k in VK if k.name.startswith("constant") or k.name in ("undef_value", "poison_value"))


def _key(ref) -> int:
    """The address of the LLVM value ``ref`` wraps (two wrappers of one value have the same)."""
    return ctypes.cast(ref._ptr, ctypes.c_void_p).value


class Value:
    """An operand that is not one of the function's instructions: an argument, a constant, a
    global, a block."""

    __slots__ = ("name", "value_kind", "_ref", "_type", "_text")

    def __init__(self, ref, name: str, kind) -> None:
        self._ref, self.name, self.value_kind = ref, name, kind
        self._type = self._text = None

    @property
    def type(self) -> str:
        """The type's text (``double``, ``{ptr, [1 x i64]}``)."""
        t = self._type
        if t is None:
            t = self._type = str(self._ref.type)
        return t

    def __str__(self) -> str:
        t = self._text
        if t is None:
            t = self._text = str(self._ref)
        return t

    def get_constant_value(self, **kw):
        return self._ref.get_constant_value(**kw)

    @property
    def operands(self):
        """A constant aggregate's elements, as the binding answers (not cached: rare)."""
        return self._ref.operands

    def __repr__(self) -> str:
        return f"<{self.value_kind.name} {self.name or str(self)}>"


class Inst(Value):
    """One instruction."""

    __slots__ = ("opcode", "operands", "_incoming")

    def __init__(self, ref, name: str, opcode: str) -> None:
        super().__init__(ref, name, _INSTRUCTION)
        self.opcode = opcode
        self.operands: tuple = ()
        self._incoming = None

    @property
    def incoming_blocks(self) -> tuple:
        """A phi's incoming blocks, beside its operands."""
        got = self._incoming
        if got is None:
            got = self._incoming = tuple(Value(b, b.name, VK.basic_block) for b in self._ref.incoming_blocks)
        return got


class Block:
    """A basic block: its name and its instructions."""

    __slots__ = ("name", "instructions")

    def __init__(self, name: str, instructions: tuple) -> None:
        self.name, self.instructions = name, instructions

    def __repr__(self) -> str:
        return f"<block {self.name}>"


class Function:
    """A function of the module: its name, type, arguments and (a definition's) blocks."""

    __slots__ = ("name", "is_declaration", "_ref", "_gvt", "_arguments", "_blocks", "_by_name")

    def __init__(self, ref) -> None:
        self._ref = ref
        self.name = ref.name
        self.is_declaration = ref.is_declaration
        self._gvt = self._arguments = self._blocks = self._by_name = None

    @property
    def global_value_type(self) -> str:
        """The function's type's text."""
        t = self._gvt
        if t is None:
            t = self._gvt = str(self._ref.global_value_type)
        return t

    @property
    def arguments(self) -> tuple:
        if self._arguments is None:
            self._read()
        return self._arguments

    @property
    def blocks(self) -> tuple:
        if self._blocks is None:
            self._read()
        return self._blocks

    def instruction(self, name: str) -> Inst:
        """The instruction named ``name`` (KeyError if none)."""
        if self._by_name is None:
            self._by_name = {}
            for blk in self.blocks:
                for i in blk.instructions:
                    self._by_name.setdefault(i.name, i)
        return self._by_name[name]

    def _read(self) -> None:
        """One pass over the function: every instruction's opcode, name and operands."""
        known: dict[int, Value] = {}
        args = []
        for a in self._ref.arguments:
            rec = Value(a, a.name, _ARGUMENT)
            known[_key(a)] = rec
            args.append(rec)
        self._arguments = tuple(args)
        blocks, pending = [], []
        for blk in self._ref.blocks:
            insts = []
            for i in blk.instructions:
                rec = Inst(i, i.name, i.opcode)
                known[_key(i)] = rec
                insts.append(rec)
                pending.append(rec)
            blocks.append(Block(blk.name, tuple(insts)))
        self._blocks = tuple(blocks)
        for rec in pending:  # operands after every instruction has its record (a phi uses later ones)
            ops = []
            for o in rec._ref.operands:
                k = _key(o)
                got = known.get(k)
                if got is None:  # a constant, a global, a block: a record of its own, shared by its uses
                    kind = o.value_kind
                    got = known[k] = Value(o, "" if kind in _NAMELESS else o.name, kind)
                ops.append(got)
            rec.operands = tuple(ops)


class Facts:
    """The functions of one module as records, each read the first time it is asked for."""

    def __init__(self, module) -> None:
        self.module = module
        self._functions: dict[str, Function] = {}

    def function(self, name: str) -> Function:
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = Function(self.module.get_function(name))
        return fn
