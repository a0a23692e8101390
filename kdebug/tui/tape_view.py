"""The Tape view: a reverse-mode job's ``tape`` stage grouped by source line.

The tape file (``kdebug/autodiff/reverse_mode.py``, ``Report.tape_text``) lists, per function, the bytes
per thread and each block's record with the values cached in it, then what is recomputed, the partials
asked of other jobs and the global reads turned into atomic accumulations (or kept as plain adds).
Here the entries that carry a source position (`` at FILE:LINE:COL``) go under that line's own text,
so a reader sees which line of the kernel costs tape and atomics; the others end in "no source line".

Plain parsing and a ``Document``; no Textual. The parser reads the file line by line and is lenient:
a line it does not know is kept as a note, never an error.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rich.text import Text

from kdebug.tui.documents import Document, highlight_line

LOCATION = re.compile(r" at (?P<file>\S+?):(?P<line>\d+):(?P<col>\d+)(?=[\s:,;)]|$)")
NAME = re.compile(r"%(?P<name>[-\w.$\"]+)")
CACHED = re.compile(r"^cached %(?P<name>\S+) \((?P<type>[^)]*)\)(?P<rest>.*)$")
# atomic: FN block BLK: the read %NAME[ at LOC] ...; exclusive, block-local: the same; recomputed: FN block BLK: %NAME ...
ENTRY = re.compile(r"^(?P<kind>atomic|exclusive|block-local|recomputed|partial|shared|barrier)\s*:\s*(?P<rest>.*)$")
WHERE = re.compile(r"^(?P<fn>\S+) block (?P<block>[^:\s]+):\s*(?P<rest>.*)$")
ATOMIC_PHRASE = re.compile(r"\s*of a global array becomes an atomic accumulation \((?P<op>atomicrmw \w+)\) "
                           r"into its shadow\s*$")
BLOCK_LOCAL_PHRASE = re.compile(r"\s*is at the thread's own index plus (?P<lo>-?\d+)\.\.(?P<hi>-?\d+):.*$")
SHARED_PHRASE = re.compile(r"^the shared array (?P<name>%\S+)\s*\((?P<bytes>\d+) bytes a block\).*$")
BARRIER_PHRASE = re.compile(r"^the barrier (?P<name>%\S+)\s.*$")
RELOADED = re.compile(r"^%(?P<name>\S+)\s*\((?P<why>.*)\) is read again from (?P<var>%\S+?),.*$")
NO_LINE = "no source line"


@dataclass
class Entry:
    kind: str  # cached, atomic, exclusive, block-local, recomputed, partial, or the first word of a note
    text: str  # what the view writes after the kind, without the source position
    function: str = ""
    block: str = ""
    file: str = ""
    line: int | None = None
    col: int | None = None


@dataclass
class Tape:
    functions: list[tuple[str, str]] = field(default_factory=list)  # (function, its bytes-per-thread line)
    entries: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # summary lines: "atomics: none (...)", "exclusive reads ...: none"
    sweeps: dict[str, str] = field(default_factory=dict)  # function -> how its reverse sweep runs (static, linked tape)


def _located(text: str) -> tuple[str, str, int | None, int | None]:
    """``text`` without its first `` at FILE:LINE:COL``, and that position."""
    m = LOCATION.search(text)
    if m is None:
        return text, "", None, None
    return text[:m.start()] + text[m.end():], m["file"], int(m["line"]), int(m["col"])


def parse_tape(text: str) -> Tape:
    tape = Tape()
    function = block = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if raw.startswith("function "):
            function, block = line[len("function "):].strip(), ""
            tape.functions.append((function, ""))
            continue
        if line.startswith("bytes per thread:") and tape.functions:
            tape.functions[-1] = (tape.functions[-1][0], line[len("bytes per thread:"):].strip())
            continue
        if line.startswith("reverse sweep:") and function:
            tape.sweeps[function] = line[len("reverse sweep:"):].strip()
            continue
        if line.startswith("block ") and raw.startswith(" "):
            block = line[len("block "):].split(":", 1)[0].strip()
            continue
        m = CACHED.match(line)
        if m is not None:
            rest, file, ln, col = _located(m["rest"])
            why = rest.lstrip(":").strip()
            tape.entries.append(Entry("cached", f"%{m['name']} {m['type']}" + (f": {why}" if why else ""),
                                      function, block, file, ln, col))
            continue
        m = ENTRY.match(line)
        if m is not None:
            tape.entries.append(_entry(m["kind"], m["rest"]))
            continue
        if raw.startswith(" ") and function:  # an indented line of a function the parser does not know
            rest, file, ln, col = _located(line)
            tape.entries.append(Entry(line.split(" ", 1)[0].rstrip(":"), rest, function, block, file, ln, col))
            continue
        # a summary line; one that names located reads (a future "exclusive reads kept as plain adds:
        # %.46 at f.py:20:25, ...") gives an entry for each, and stays a note too
        tape.notes.append(line)
        head = line.split(":", 1)[0]
        for loc in LOCATION.finditer(line):
            before = NAME.findall(line[:loc.start()])
            if before:
                tape.entries.append(Entry(head.split(" ", 1)[0], f"%{before[-1]} ({head})", "", "", loc["file"],
                                          int(loc["line"]), int(loc["col"])))
    return tape


def _entry(kind: str, rest: str) -> Entry:
    fn = blk = ""
    m = WHERE.match(rest)
    if m is not None:
        fn, blk, rest = m["fn"], m["block"], m["rest"]
    rest, file, ln, col = _located(rest)
    rest = rest.strip()
    if kind == "atomic":
        phrase = ATOMIC_PHRASE.search(rest)
        if phrase is not None:
            rest = rest[:phrase.start()] + f" \u2192 {phrase['op']} into the shadow"
    elif kind == "block-local":
        phrase = BLOCK_LOCAL_PHRASE.search(rest)
        if phrase is not None:
            rest = rest[:phrase.start()] + f" (own index {phrase['lo']}..{phrase['hi']}) \u2192 a plain add inside " \
                                           f"the block's window, atomicrmw fadd at its edges"
    elif kind == "recomputed":
        again = RELOADED.match(rest)
        if again is not None:
            rest = f"%{again['name']}: {again['why']}, read again from {again['var']}"
    elif kind in ("shared", "barrier") and not fn:  # shared: FN: the shared array %N at LOC (B bytes a block) ...
        fn, _, rest = rest.partition(": ")
        m = SHARED_PHRASE.match(rest) if kind == "shared" else BARRIER_PHRASE.match(rest)
        if m is not None and kind == "shared":
            rest = f"{m['name']} ({m['bytes']} bytes a block) \u2192 a shadow in shared memory, zeroed where the adjoint starts"
        elif m is not None:
            rest = f"{m['name']} \u2192 in the forward sweep, and again where the reverse sweep reaches it"
    elif kind == "partial" and not fn:  # partial: FN asks job g for ...
        fn, _, tail = rest.partition(" ")
        rest = tail or rest
    return Entry(kind, rest, fn, blk, file, ln, col)


# ---- the source lines -------------------------------------------------------------------------
def source_lines(model, job, cwd: str = ".") -> dict[str, dict[int, str]]:
    """Source text by file name (its base name) and line number: from ``job``'s own source, then the
    other jobs' (the primal's, its requesters'), each job's ``source`` starting at its ``source_line``."""
    found: dict[str, dict[int, str]] = {}
    jobs = [job] + [j for j in model.jobs.values() if j is not job]
    for j in jobs:
        if not j.source or not j.source_file or j.source_line is None:
            continue
        lines = found.setdefault(os.path.basename(j.source_file), {})
        for k, text in enumerate(j.source.splitlines()):
            lines.setdefault(j.source_line + k, text)
    return found


def _file_lines(path_hint: str | None, name: str, cwd: str) -> dict[int, str]:
    """The lines of file ``name`` on disk (beside ``path_hint``, or under ``cwd``): the last resort."""
    beside = [os.path.join(cwd, os.path.dirname(path_hint), name)] if path_hint else []
    for path in beside + [os.path.join(cwd, name)]:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return {n: text for n, text in enumerate(f.read().splitlines(), 1)}
        except OSError:
            continue
    return {}


# ---- the document -------------------------------------------------------------------------------
KIND_STYLES = {"cached": "#61afef", "atomic": "bold #e5c07b", "exclusive": "#98c379", "block-local": "#98c379",
               "recomputed": "#c678dd", "partial": "#56b6c2", "shared": "#56b6c2", "barrier": "bold #c678dd"}


class TapeDocument(Document):
    """The tape grouped by source line. Rows: (text, style, where the line's code starts or -1); a source
    line's code is highlighted as Python."""

    def __init__(self, rows: list[tuple[str, str, int]]) -> None:
        super().__init__([r[0] for r in rows])
        self.rows = rows

    def render(self, i: int) -> Text:
        line, style, code = self.rows[i]
        if code < 0:
            return Text(line, style=style, no_wrap=True, end="")
        text = Text(line[:code], style=style, no_wrap=True, end="")
        text.append_text(highlight_line(line[code:], "python"))
        return text


def tape_document(text: str, model=None, job=None, cwd: str = ".", hint: str = "") -> TapeDocument:
    """The ``tape`` stage of ``job`` as a ``TapeDocument``; ``hint``: said after the title (a key)."""
    tape = parse_tape(text)
    rows: list[tuple[str, str, int]] = []
    add = lambda line, style="", code=-1: rows.append((line, style, code))  # noqa: E731
    add("the tape by source line" + (f"  ({hint})" if hint else ""), "bold")
    add("")
    add("bytes per thread", "bold")
    for fn, size in tape.functions:
        add(f"  {fn}: {size or '?'}")
        if fn in tape.sweeps:
            add(f"    reverse sweep: {tape.sweeps[fn]}", "dim")
    if not tape.functions:
        add("  (no function on the tape)", "dim")
    counts = [(sum(e.kind == kind for e in tape.entries), what) for kind, what in (
        ("cached", "cached value(s)"), ("atomic", "atomic accumulation(s)"), ("exclusive", "read(s) kept as plain adds"),
        ("block-local", "read(s) plain inside the block's window"),
        ("recomputed", "recomputed"), ("shared", "shared array(s) with a shadow"),
        ("barrier", "barrier(s) run forwards and backwards"))]
    add("  " + ", ".join(f"{n} {what}" for n, what in counts if n or what.startswith(("cached", "atomic"))))
    for note in tape.notes:
        add("  " + note, "dim")
    many = len(tape.functions) > 1
    sources = source_lines(model, job, cwd) if model is not None and job is not None else {}
    groups: dict[tuple[str, int], list[Entry]] = {}
    unplaced: list[Entry] = []
    for e in tape.entries:
        if e.line is None:
            unplaced.append(e)
        else:
            groups.setdefault((e.file, e.line), []).append(e)
    read: set[str] = set()  # the files looked for on disk, once each
    for (file, line) in sorted(groups):
        name = os.path.basename(file)
        lines = sources.setdefault(name, {})
        if line not in lines and name not in read:  # no job's source has it: the file itself, the last resort
            read.add(name)
            for n, t in _file_lines(job.source_file if job is not None else None, name, cwd).items():
                lines.setdefault(n, t)
        add("")
        head = f"{name}:{line}"
        code = lines.get(line)
        if code is None:
            add(f"{head}  (its source is not in this session)", "bold")
        else:
            add(f"{head}  {code.strip()}", "bold", len(head) + 2)
        for e in sorted(groups[(file, line)], key=lambda e: (e.col or 0)):
            add(_entry_line(e, many, col=True), KIND_STYLES.get(e.kind, ""))
    if unplaced:
        add("")
        add(NO_LINE, "bold")
        for e in unplaced:
            add(_entry_line(e, many, col=False), KIND_STYLES.get(e.kind, ""))
    return TapeDocument(rows)


def _entry_line(e: Entry, many: bool, col: bool) -> str:
    where = f"col {e.col:<3} " if col and e.col is not None else ""
    place = " ".join(p for p in ((e.function if many or not e.block else ""), f"block {e.block}" if e.block else "")
                     if p)
    kind = "cached" if e.kind == "cached" else f"{e.kind}:"
    return f"  {where}{kind} {e.text}" + (f"   [{place}]" if place else "")
