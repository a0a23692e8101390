"""Reading LLVM's module text: where each instruction came from in the source.

The IR names source positions through its debug locations (``!dbg !12`` on an instruction,
``!12 = !DILocation(line: 9, column: 23, scope: !4)`` at the end, the scope leading to a ``!DIFile``;
kdebug/frontend/debug_info.py writes them). Text only, no LLVM: the TUI's remarks and the reverse
transform's tape file both read them.
"""
from __future__ import annotations

import os
import re

_METADATA = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$")
_DBG = re.compile(r"!dbg !(\d+)\b")
_FIELD = {name: re.compile(rf"\b{name}: (!?\d+|\"[^\"]*\")") for name in ("line", "column", "scope", "file",
                                                                         "filename")}
def _field(body: str, name: str) -> str | None:
    m = _FIELD[name].search(body)
    return m.group(1) if m else None


def instruction_positions(lines: list[str]) -> dict[int, tuple[str, int, int]]:
    """Line index -> (file's base name, line, column) for each line of an LLVM module's text whose
    ``!dbg`` names a ``!DILocation`` (the position in the source it was made from)."""
    nodes: dict[str, tuple[str, str]] = {}
    for text in lines:
        if text.startswith("!"):
            m = _METADATA.match(text)
            if m:
                nodes[m.group(1)] = (m.group(2), m.group(3))

    def file_of(scope: str | None, depth: int = 0) -> str:
        node = nodes.get((scope or "").lstrip("!"))
        if node is None or depth > 32:
            return ""
        kind, body = node
        if kind == "DIFile":
            return os.path.basename((_field(body, "filename") or '""').strip('"'))
        file = _field(body, "file")
        if file is not None:
            return file_of(file, depth + 1)
        return file_of(_field(body, "scope"), depth + 1)

    places: dict[str, tuple[str, int, int]] = {}
    for key, (kind, body) in nodes.items():
        if kind == "DILocation":
            line, col = _field(body, "line"), _field(body, "column")
            places[key] = (file_of(_field(body, "scope")), int(line or 0), int(col or 0))
    found: dict[int, tuple[str, int, int]] = {}
    for i, text in enumerate(lines):
        if text.startswith("!"):
            continue
        m = _DBG.search(text)
        if m and m.group(1) in places:
            found[i] = places[m.group(1)]
    return found


_DEFINE = re.compile(r"^define\b.*?@(\"[^\"]+\"|[\w.$-]+)\(")
_VALUE = re.compile(r"^\s+%(\"[^\"]+\"|[\w.$-]+) = ")


def value_positions(text: str) -> dict[tuple[str, str], tuple[str, int, int]]:
    """(function, IR value name) -> (file's base name, line, column) of every named instruction whose
    ``!dbg`` names a ``!DILocation``."""
    lines = text.splitlines()
    positions = instruction_positions(lines)
    found: dict[tuple[str, str], tuple[str, int, int]] = {}
    function = ""
    for i, line in enumerate(lines):
        m = _DEFINE.match(line)
        if m:
            function = m.group(1).strip('"')
            continue
        if i in positions:
            v = _VALUE.match(line)
            if v:
                found[(function, v.group(1).strip('"'))] = positions[i]
    return found
