"""Debug locations: every instruction the frontend emits carries ``!dbg`` (its source line and column).

As numba's ``lineinfo``: a ``DICompileUnit`` per module (line tables only, no variables or types), a
``DISubprogram`` per function the frontend lowers, a ``DILocation`` per statement and expression;
llvmlite's builder puts its ``debug_metadata`` on every instruction it makes. An inlined device
function's code gets its own subprogram with ``inlinedAt`` the call's location, as LLVM's inliner
would make it. On the PTX target the unit's kind is ``DebugDirectivesOnly``, as numba-cuda's
``lineinfo=True``: NVPTX then writes ``.file``/``.loc`` lines and no DWARF sections (``LineTablesOnly``
would mark the module ``.target sm_XX, debug`` and hand ptxas an empty ``.debug_macinfo``). Only
metadata: the optimised code is the same with and without it (tests strip it and compare; for PTX,
tests/ptx_and_gpu/test_ptx_lineinfo.py). LLVM's remarks (``-pass-remarks``) then name source lines instead of
``<unknown>:0:0``.
"""
from __future__ import annotations

import os

from llvmlite import ir

PRODUCER = "kdebug"


def emission_kind(triple: str) -> str:
    """The compile unit's kind for a module of this triple: line tables only, as ``.loc`` lines on NVPTX."""
    return "DebugDirectivesOnly" if triple.startswith("nvptx") else "LineTablesOnly"


class ModuleDebugInfo:
    """The compile unit of one module and its files, made on the first function that asks."""

    def __init__(self, module: ir.Module, path: str) -> None:
        self.module = module
        self.files: dict[str, object] = {}
        first = self.file(path)
        self.unit = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_Python"), "file": first, "producer": PRODUCER,
            "runtimeVersion": 0, "isOptimized": True, "emissionKind": ir.DIToken(emission_kind(module.triple or "")),
        }, is_distinct=True)
        module.add_named_metadata("llvm.dbg.cu", self.unit)
        flags = module.add_named_metadata("llvm.module.flags")
        i32 = ir.IntType(32)
        flags.add(module.add_metadata([i32(2), "Debug Info Version", i32(3)]))
        flags.add(module.add_metadata([i32(2), "Dwarf Version", i32(4)]))
        self.no_types = module.add_debug_info("DISubroutineType", {"types": module.add_metadata([])})

    def file(self, path: str):
        found = self.files.get(path)
        if found is None:
            found = self.files[path] = self.module.add_debug_info("DIFile", {
                "filename": os.path.basename(path) or path, "directory": os.path.dirname(path)})
        return found

    def subprogram(self, name: str, path: str, line: int):
        """A function's (or an inlined body's) scope, defined at ``path:line``."""
        file = self.file(path)
        return self.module.add_debug_info("DISubprogram", {
            "name": name, "scope": file, "file": file, "line": line, "type": self.no_types, "scopeLine": line,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"), "unit": self.unit,
        }, is_distinct=True)


def module_debug_info(module: ir.Module, path: str) -> ModuleDebugInfo:
    """The module's debug info, made once per module."""
    info = getattr(module, "_kdebug_debug_info", None)
    if info is None:
        info = ModuleDebugInfo(module, path)
        module._kdebug_debug_info = info
    return info


class Locations:
    """The ``!dbg`` locations of one function body (a kernel's, or a device function's inlined into it)."""

    def __init__(self, info: ModuleDebugInfo, scope, first_line: int, indent: int, inlined_at=None) -> None:
        self.info, self.scope, self.inlined_at = info, scope, inlined_at
        self.first_line, self.indent = first_line, indent
        self._made: dict[tuple[int, int], object] = {}

    def at(self, node):
        """The location of an ``ast`` node of this body (made once per line and column)."""
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent + 1
        key = (line, col)
        found = self._made.get(key)
        if found is None:
            fields = {"line": line, "column": col, "scope": self.scope}
            if self.inlined_at is not None:
                fields["inlinedAt"] = self.inlined_at
            found = self._made[key] = self.info.module.add_debug_info("DILocation", fields)
        return found
