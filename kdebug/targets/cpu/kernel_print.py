"""``print`` in kernels on the CPU backend: each call hands its values and its launch's runtime record to a
host callback that keeps the line with its block and thread in the launch's context
(kdebug/runtime/launch_context.py); after the launch the session takes the lines in thread order (by
block, then thread, then call order) and prints them, as a GPU's printf buffer flushed at the launch's
end. A call's format (its constant texts and the kinds of its values) is the compiling target's: its id
is compiled into the call, and the launch finds the table in its context (the artifact's
``print_formats``)."""
from __future__ import annotations

import ctypes
import struct

from llvmlite import ir

from kdebug.runtime import launch_context
from kdebug.targets.cpu.ir_helpers import field
from kdebug.targets.cpu.layout import CTX_RUNTIME, I8P
from kdebug.targets.printing import kind_of

i32, i64 = ir.IntType(32), ir.IntType(64)

_PRINT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64,
                          ctypes.POINTER(ctypes.c_int64))


def _item(kind: str, raw: int) -> str:
    if kind == "f":
        return f"{struct.unpack('<d', struct.pack('<q', raw))[0]:f}"
    if kind == "u":
        return str(raw & 0xFFFFFFFFFFFFFFFF)
    if kind == "b":
        return "True" if raw else "False"
    return str(raw)


def _record(runtime, fmt: int, block: int, thread: int, slots) -> None:
    context = launch_context.of(runtime) if runtime else None
    if context is None:  # a launcher run without CpuRuntime.launch: nobody takes the line
        return
    parts, k = [], 0
    for kind, text in context.formats[fmt]:
        if kind == "s":
            parts.append(text)
        else:
            parts.append(_item(kind, slots[k]))
            k += 1
    context.prints.append((block, thread, "".join(parts)))  # one append: atomic between threads


_callback = _PRINT(_record)  # kept alive for the process: kernels call its address
CALLBACK_ADDRESS = ctypes.cast(_callback, ctypes.c_void_p).value


def register_format(formats: list, lock, kinds: list) -> int:
    """Add a print call's format to ``formats`` (the compiling target's table): its id."""
    with lock:
        formats.append(kinds)
        return len(formats) - 1


def _linear(lc, target, index: str, extent: str):
    b = lc.builder
    x, y, z = (b.zext(target.special_register(lc, index, d), i64) for d in "xyz")
    nx, ny = (b.zext(target.special_register(lc, extent, d), i64) for d in "xy")
    return b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))


def lower_print(lc, target, items) -> None:
    """Store the values as 64-bit slots (floats as doubles) and call the host callback."""
    b = lc.builder
    kinds = [("s", v) if k == "s" else (kind_of(k), "") for k, v in items]
    fmt = register_format(target.print_formats, target.tables_lock, kinds)
    values = [(k, v) for k, v in items if k != "s"]
    slots = lc.alloca(ir.ArrayType(i64, max(len(values), 1)), name="print.slots")
    for n, (t, v) in enumerate(values):
        if t.is_float:
            v = b.bitcast(b.fpext(v, ir.DoubleType()) if t.bits < 64 else v, i64)
        elif t.is_bool or not t.signed:
            v = b.zext(v, i64) if v.type.width < 64 else v
        else:
            v = b.sext(v, i64) if v.type.width < 64 else v
        b.store(v, b.gep(slots, [ir.Constant(i32, 0), ir.Constant(i32, n)], inbounds=True))
    fnty = ir.FunctionType(ir.VoidType(), [I8P, i32, i64, i64, ir.PointerType(i64)])
    fn = b.inttoptr(ir.Constant(i64, CALLBACK_ADDRESS), ir.PointerType(fnty), name="kdebug.print")
    block = _linear(lc, target, "blockIdx", "gridDim")
    thread = _linear(lc, target, "threadIdx", "blockDim")
    runtime = b.load(field(b, lc.thread_ctx, CTX_RUNTIME))  # the launch's record: the callback finds its context
    b.call(fn, [runtime, ir.Constant(i32, fmt), block, thread, b.bitcast(slots, ir.PointerType(i64))])
