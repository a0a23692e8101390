"""Small llvmlite building blocks used by the CPU target's IR generators."""
from __future__ import annotations

import contextlib

from llvmlite import ir

from kdebug.targets.cpu.layout import i32


class TokenType(ir.Type):
    """LLVM's ``token`` type (llvmlite.ir has none)."""

    def _to_string(self) -> str:
        return "token"

    def __eq__(self, other) -> bool:
        return isinstance(other, TokenType)

    def __hash__(self) -> int:
        return hash("token")


TOKEN = TokenType()
TOKEN_NONE = ir.FormattedConstant(TOKEN, "none")


def const(v, ty=i32):
    return ir.Constant(ty, v)


def declare(module: ir.Module, name: str, ret, args, attrs=()) -> ir.Function:
    """The module's declaration of an external function, added on first use."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
        for a in attrs:
            set.add(fn.attributes, a)
    return fn


def field(b: ir.IRBuilder, struct_p, index: int, k: int | None = None):
    """A pointer to field ``index`` (element ``k`` of it, for an array field) of a struct."""
    idx = [const(0), const(index)] + ([] if k is None else [const(k)])
    return b.gep(struct_p, idx, inbounds=True)


def cond_value(b: ir.IRBuilder, cond, make, default):
    """``cond ? make() : default`` where make() may only run when cond holds (no allocas: loops call this)."""
    fn = b.function
    pre = b.block
    then = fn.append_basic_block("cv.then")
    merge = fn.append_basic_block("cv.merge")
    b.cbranch(cond, then, merge)
    b.position_at_end(then)
    v = make()
    then_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    phi = b.phi(default.type)
    phi.add_incoming(default, pre)
    phi.add_incoming(v, then_end)
    return phi


def entry_alloca(b: ir.IRBuilder, ty, name: str = ""):
    """An alloca at the top of the function's entry block (never inside a loop)."""
    entry = b.function.entry_basic_block
    eb = ir.IRBuilder(entry)
    if entry.instructions:
        eb.position_before(entry.instructions[0])
    return eb.alloca(ty, name=name)


def abs_i32(b: ir.IRBuilder, v):
    return b.select(b.icmp_signed("<", v, const(0)), b.neg(v), v)


class Loop:
    """``for (v = start; v < stop; v++)`` with an i64/i32 phi; the body is built inside ``with``."""

    def __init__(self, b: ir.IRBuilder, start, stop, name: str, step=None) -> None:
        """``step``: a positive value of the loop variable's type (1 where None) that cannot take it past
        the type's greatest value."""
        self.b, self.start, self.stop, self.name, self.step = b, start, stop, name, step

    def __enter__(self):
        b = self.b
        pre = b.block
        fn = b.function
        self.head = fn.append_basic_block(f"{self.name}.head")
        self.body = fn.append_basic_block(f"{self.name}.body")
        self.end = fn.append_basic_block(f"{self.name}.end")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.iv = b.phi(self.start.type, name=self.name)
        self.iv.add_incoming(self.start, pre)
        b.cbranch(b.icmp_signed("<", self.iv, self.stop), self.body, self.end)
        b.position_at_end(self.body)
        return self.iv

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False
        b = self.b
        step = ir.Constant(self.iv.type, 1) if self.step is None else self.step
        nxt = b.add(self.iv, step, flags=["nsw", "nuw"])
        self.iv.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.end)
        return False



@contextlib.contextmanager
def each_thread(b: ir.IRBuilder, ctx, dims, tid_field: int, name: str = "t"):
    """Loops over a block's threads, x fastest (the innermost loop, the one LLVM vectorises), each storing
    its index into the context's thread-index field; yields (z, y, x). ``dims``: the block's (x, y, z) sizes."""
    bx, by, bz = dims
    with Loop(b, const(0), bz, f"{name}z") as tz:
        b.store(tz, field(b, ctx, tid_field, 2))
        with Loop(b, const(0), by, f"{name}y") as ty:
            b.store(ty, field(b, ctx, tid_field, 1))
            with Loop(b, const(0), bx, f"{name}x") as tx:
                b.store(tx, field(b, ctx, tid_field, 0))
                yield tz, ty, tx
