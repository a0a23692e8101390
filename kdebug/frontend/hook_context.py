"""What a target's lowering hook sees of the code being lowered (the hooks of kdebug/targets/base.py).

A hook gets a ``LoweringContext``, not the lowerer: the module and function it emits into, the
builder at its insertion point, the typed code, and ``state``, the target's own record of the
module (made by ``Target.module_state`` when lower creates the module). What a hook produces
for later goes into that record, which the job keeps beside its module for the pipeline hooks
(``finish_ir``, ``emit``) to read back; nothing is written onto the lowering objects.
"""
from __future__ import annotations

import ast
from dataclasses import field
from typing import Callable

from llvmlite import ir

from kdebug.frontend.source import FunctionSource
from kdebug.frontend.typeinfer import PyValue, TypedFunction
from kdebug.lazy_dataclasses import dataclass


@dataclass(frozen=True)
class LoweringContext:
    module: ir.Module
    fn: ir.Function  # the LLVM function being emitted: a kernel with the device functions inlined into it
    entry: ir.Block  # fn's entry block
    builder: ir.IRBuilder  # positioned where the hook's code goes
    thread_ctx: ir.Value | None  # fn's hidden first parameter (Target.context_type), or None
    tf: TypedFunction  # the typed code being lowered (an inlined device function's own)
    function_tf: TypedFunction  # the typed function of ``fn`` (tf itself where nothing is inlined)
    slots: tuple[dict, ...]  # the variables' stack slots: tf's, then function_tf's
    state: object  # the target's record of the module (Target.module_state), or None
    exit: ir.Block | None  # where tf's code returns (an inlined device function's own exit block)
    function_exit: ir.Block | None  # fn's exit block: where the thread's run of the kernel ends
    exit_lines: dict  # block ending in a return -> the return's source line
    call_path: tuple  # tf inlined into fn: each call from fn's code down, (call node, the caller's TypedFunction)
    debug: bool  # @cuda.jit(debug=True): numba's python error model (kdebug/frontend/exceptions.py)
    new_block: Callable[[str], ir.Block]  # a new, uniquely named basic block of fn
    alloca: Callable[..., ir.Value]  # a stack slot in fn's entry block: alloca(type, name="")
    _spaces: dict = field(default_factory=dict, compare=False, repr=False)  # memory_space's table, made once

    @property
    def src(self) -> FunctionSource:
        """tf's source: locations and located errors (``src.loc(node)``, ``src.error(node, ...)``)."""
        return self.tf.source

    def memory_space(self, node: ast.Subscript) -> str:
        """global, shared or local: how the array variable accessed at ``node`` was made."""
        base = node.value
        if not isinstance(base, ast.Name):
            return "global"
        if "table" not in self._spaces:
            self._spaces["table"] = array_spaces(self.tf)
        return self._spaces["table"].get(base.id, "global")


def access_kind(node: ast.Subscript) -> str:
    """How a subscript uses its array, read or write; the hooks' ``access`` is also update
    (``a[i] += x``) or atomic, which the lowering of those says itself."""
    return "write" if isinstance(getattr(node, "ctx", None), ast.Store) else "read"


def array_spaces(tf: TypedFunction) -> dict[str, str]:
    """{variable: shared or local} for the variables assigned a cuda.shared.array / cuda.local.array."""
    spaces = {}
    for n in ast.walk(tf.source.tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            ft = tf.types.get(n.value.func)
            val = getattr(ft, "value", None) if isinstance(ft, PyValue) else None
            name = getattr(val, "name", "")
            if name in ("shared.array", "local.array"):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        spaces[t.id] = name.split(".")[0]
    return spaces
