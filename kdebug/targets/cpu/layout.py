"""The memory the CPU target's compiled code shares with the launcher and the host.

* the thread context, the hidden first parameter of every function;
* the runtime record (its fields are declared once, in kdebug/runtime/record.py;
  the LLVM struct here is built from that declaration);
* the grid launcher's signature and a launch's parameter buffer.
"""
from __future__ import annotations

import ctypes

from llvmlite import ir

from kdebug.frontend.lower import llvm_type
from kdebug.runtime import record

i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P = ir.PointerType(i8)
VOID = ir.VoidType()
DIM3 = ir.ArrayType(i32, 3)

# The thread context, one per emulated thread (or one per block for a barrier-free kernel).
CONTEXT_FIELDS = (
    ("tid", DIM3), ("ntid", DIM3), ("ctaid", DIM3), ("nctaid", DIM3),
    ("runtime", I8P),          # the launch's runtime record
    ("depth", i32),            # device-launch nesting, 0 from the host
    ("shared", I8P),           # the block's static shared memory
    ("jmpbuf", I8P),           # where a failed check longjmps to
    ("coro", I8P),             # the thread's coroutine handle
    ("barrier", i32),          # the barrier site a suspended thread waits at: negative for a grid
                               # barrier, | WARP_FLAG for a warp barrier, 0 when running or finished
    ("vote", i32),             # predicate in, block-wide count out (syncthreads_count/and/or)
    ("frame", I8P),            # memory kept for the thread's coroutine frame, reused block to block
    ("frame_cap", i64),        # its size
    ("dyn_shared", I8P),       # the block's dynamic shared memory, cuda.shared.array(0, dtype)
    ("dyn_shared_bytes", i64),  # its size
    # warp operations (warp.py)
    ("wmask", i32),            # the operation's mask
    ("wkind", i32),            # sync (syncwarp), collective (shuffle, vote, match) or activemask
    ("xin", i64),              # the operand
    ("xout", i64),             # the operand as the warp pass copied it for the group
    ("wgroup", i32),           # the lanes released together
    # racecheck/initcheck (sanitizer_ir.py)
    ("san_shadow", I8P),       # ShadowEntry per byte of the block's shared memory
    ("epoch", i32),            # block barriers passed + 1
    ("grid_epoch", i32),       # grid barriers passed
    ("seq", i32),              # the thread's accesses since its last barrier
    ("san_tid", i32),          # thread number in the block + 1
    ("san_gid_base", i64),     # block number * threads per block: thread numbers in the launch start here
    ("san_nt", i64),           # threads per block
    ("san_shared_bytes", i64),  # the block's shared memory (static and dynamic)
    ("raised", i32),           # 1 while a raise in a device function unwinds to the kernel (exceptions_ir.py)
    # the barrier warning (block_scheduler.py): who skipped a barrier that exits released
    ("exit_line", i32),        # the kernel line of the return the thread left by, END_OF_KERNEL past its end
    ("bar_line", i32),         # the kernel line of the barrier it waits at (-1: in a device function)
    # memcheck in a barrier-free kernel with loops (memcheck_ir.py): a failed check ends only its thread
    ("fail_slots", I8P),       # per thread of the block: its failed access (memcheck_ir.fail_slot_fields)
)
CONTEXT = ir.LiteralStructType([t for _, t in CONTEXT_FIELDS])
CONTEXT_P = ir.PointerType(CONTEXT)
(CTX_TID, CTX_NTID, CTX_CTAID, CTX_NCTAID, CTX_RUNTIME, CTX_DEPTH, CTX_SHARED, CTX_JMPBUF, CTX_CORO,
 CTX_BARRIER, CTX_VOTE, CTX_FRAME, CTX_FRAME_CAP, CTX_DYN_SHARED, CTX_DYN_BYTES,
 CTX_WMASK, CTX_WKIND, CTX_XIN, CTX_XOUT, CTX_WGROUP,
 CTX_SAN_SHADOW, CTX_EPOCH, CTX_GRID_EPOCH, CTX_SEQ, CTX_SAN_TID, CTX_SAN_GID_BASE, CTX_SAN_NT,
 CTX_SAN_SHARED_BYTES, CTX_RAISED, CTX_EXIT_LINE, CTX_BAR_LINE, CTX_FAIL_SLOTS) = range(len(CONTEXT_FIELDS))
END_OF_KERNEL = record.END_OF_KERNEL
FAIL_SLOT_BYTES = 56  # per thread: a failed access's site (i32), index and extent (3 x i64 each), and padding
SPECIAL_REGISTER_FIELD = {"threadIdx": CTX_TID, "blockDim": CTX_NTID, "blockIdx": CTX_CTAID,
                          "gridDim": CTX_NCTAID}

WARP_FLAG = record.WARP_FLAG  # the barrier field's bits: kdebug/runtime/record.py
WARP = 32
JMPBUF_BYTES = 512  # glibc's jmp_buf is 200 bytes on x86-64, 312 on aarch64
SHARED_ALIGN = 64  # each block's shared memory starts at a multiple of this


def ir_type_of_ctype(c) -> ir.Type:
    """The LLVM type with the same natural layout as a ctypes scalar, pointer or array."""
    if isinstance(c, type) and issubclass(c, ctypes.Array):
        return ir.ArrayType(ir_type_of_ctype(c._type_), c._length_)
    if c is ctypes.c_void_p:
        return I8P
    if isinstance(c, type) and issubclass(c, ctypes._Pointer):
        return ir.PointerType(ir_type_of_ctype(c._type_))
    if c in (ctypes.c_int32, ctypes.c_int64):
        return ir.IntType(8 * ctypes.sizeof(c))
    if isinstance(c, type) and issubclass(c, ctypes.Structure):
        return ir.LiteralStructType([ir_type_of_ctype(t) for _, t in c._fields_])
    raise TypeError(f"no LLVM type for {c!r} in the runtime ABI")


RUNTIME = ir.LiteralStructType([ir_type_of_ctype(c) for _, c in record.RECORD_FIELDS])
RUNTIME_P = ir.PointerType(RUNTIME)
RT_ERROR, RT_SITE, RT_CTAID, RT_TID = (record.FIELD[n] for n in ("error", "site", "ctaid", "tid"))
RT_INDEX, RT_EXTENT, RT_AUX = (record.FIELD[n] for n in ("index", "extent", "aux"))
RT_PERM, RT_NPERM, RT_PERM_NT, RT_DYN_SHARED = (record.FIELD[n] for n in ("perm", "nperm", "perm_nt", "dyn_shared"))
RT_WARN_SITE, RT_WARN_CTAID, RT_WARN_WAITING, RT_WARN_DONE, RT_WARN_TID, RT_WARN_EXIT_LINE = (
    record.FIELD[n] for n in ("warn_site", "warn_ctaid", "warn_waiting", "warn_done", "warn_tid", "warn_exit_line"))
IN_BRANCH = record.IN_BRANCH
RT_EXC_SITE, RT_EXC_CTAID, RT_EXC_TID = (record.FIELD[n] for n in ("exc_site", "exc_ctaid", "exc_tid"))
RT_REGIONS, RT_NREGIONS, RT_NHAZARDS, RT_HAZARDS, RT_HAZARD_CAP, RT_HAZARDS_LOST = (
    record.FIELD[n] for n in ("regions", "nregions", "nhazards", "hazards", "hazard_cap", "hazards_lost"))

RT_AT_BLOCK, RT_AT_SITE = (record.FIELD[n] for n in ("at_block", "at_site"))

REGION = ir_type_of_ctype(record.Region)
SHADOW = ir_type_of_ctype(record.ShadowEntry)
HAZARD = ir_type_of_ctype(record.HazardSlot)
SHADOW_BYTES = ctypes.sizeof(record.ShadowEntry)


def struct_field_index(ctype, name: str) -> int:
    return [n for n, _ in ctype._fields_].index(name)


LAUNCHER_TYPE = ir.FunctionType(VOID, [ir_type_of_ctype(c) for c in record.LAUNCHER_ARGS])


def param_struct_type(argtypes) -> ir.LiteralStructType:
    """The layout of a launch's parameter buffer: the arguments at natural alignment."""
    return ir.LiteralStructType([llvm_type(t) for t in argtypes])
