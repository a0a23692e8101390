"""Device functions with barriers, lowered into the calling kernel: their barriers suspend its coroutine."""
from __future__ import annotations

from kdebug.frontend.lower import llvm_type
from kdebug.lang import types as T
from kdebug.targets.cpu.coroutines import coro_root


def inline_call(lw, node, callee_tf, vals):
    """Lower a device function's body into the caller; returns its result (None for void)."""
    il = lw.inlined(callee_tf)
    il.coro_root = coro_root(lw)
    for name, t in callee_tf.locals.items():
        il.slots[name] = il.alloca(llvm_type(t), name=name)
    for name, t, v in zip(callee_tf.argnames, callee_tf.argtypes, vals):
        il.builder.store(il.cast(v, t, callee_tf.locals[name]), il.slots[name])
    il.exit = il.new_block(f"inline.{callee_tf.name}.exit")
    if callee_tf.restype != T.void:
        il.retslot = il.alloca(llvm_type(callee_tf.restype), name="inline.retval")
    il.body(callee_tf.source.tree.body)
    il.branch(il.exit)
    il.builder.position_at_end(il.exit)
    lw.counter = il.counter
    if callee_tf.restype == T.void:
        return None
    return il.builder.load(il.retslot)
