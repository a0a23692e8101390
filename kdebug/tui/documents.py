"""Documents: line-addressable text for ``TextView`` — code, diffs, listings.

No Textual here: a document knows how many lines it has, each line's plain
text (for search and copy) and its styled ``rich.text.Text``, built only when
a line is shown. Highlighting is per line, which suits line-oriented IR.
"""
from __future__ import annotations

from functools import lru_cache

from pygments.token import Token
from rich.style import Style
from rich.text import Text

from kdebug.session import stage_diff

# language -> (module, lexer class): imported directly, since looking a lexer up by name scans them all
LEXERS = {"llvm": ("pygments.lexers.asm", "LlvmLexer"), "python": ("pygments.lexers.python", "PythonLexer"),
          "ptx": ("pygments.lexers.ptx", "PtxLexer"), "asm": ("pygments.lexers.asm", "GasLexer"),
          "diff": ("pygments.lexers.diff", "DiffLexer")}

# token type -> style, looked up from the most specific type up to Token
TOKEN_STYLES: dict = {
    Token.Keyword: Style(color="#c678dd"),
    Token.Keyword.Type: Style(color="#e5c07b"),
    Token.Name.Variable: Style(color="#61afef"),
    Token.Name.Variable.Global: Style(color="#56b6c2"),
    Token.Name.Label: Style(color="#e06c75", bold=True),
    Token.Name.Function: Style(color="#61afef", bold=True),
    Token.Name.Builtin: Style(color="#56b6c2"),
    Token.Name.Decorator: Style(color="#e5c07b"),
    Token.Literal.Number: Style(color="#d19a66"),
    Token.Literal.String: Style(color="#98c379"),
    Token.Comment: Style(color="#7f848e", italic=True),
    Token.Operator.Word: Style(color="#c678dd"),
}


def _style_for(ttype) -> Style | None:
    while ttype is not None:
        style = TOKEN_STYLES.get(ttype)
        if style is not None:
            return style
        ttype = ttype.parent
    return None


@lru_cache(maxsize=None)
def _lexer(language: str):
    import importlib
    where = LEXERS.get(language)
    if where is None:
        return None
    cls = getattr(importlib.import_module(where[0]), where[1])
    return cls(stripnl=False, ensurenl=False)


def highlight_line(line: str, language: str) -> Text:
    lexer = _lexer(language)
    text = Text(line, no_wrap=True, end="")
    if lexer is None or not line:
        return text
    pos, end = 0, len(line)
    # the line with its newline: rules that end at one (LLVM's `;` comments) match as in the whole text
    for ttype, value in lexer.get_tokens(line + "\n"):
        style = _style_for(ttype)
        if style is not None and value and pos < end:
            text.stylize(style, pos, min(end, pos + len(value)))
        pos += len(value)
    return text


class Document:
    """Lines of text; ``render(i)`` styles line ``i``."""

    title = ""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.width = max((len(s) for s in lines), default=0)

    def __len__(self) -> int:
        return len(self.lines)

    def plain(self, i: int) -> str:
        return self.lines[i]

    def render(self, i: int) -> Text:
        return Text(self.lines[i], no_wrap=True, end="")

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")


class CodeDocument(Document):
    """Source, IR or assembly, highlighted with pygments line by line."""

    def __init__(self, text: str, language: str = "llvm") -> None:
        super().__init__(text.expandtabs(4).splitlines())
        self.language = language

    def render(self, i: int) -> Text:
        return highlight_line(self.lines[i], self.language)


REMARK_STYLES = {"missed": "bold yellow", "analysis": "dim yellow", "passed": "dim green"}
REMARK_MARKS = {"missed": "\u2717", "analysis": "?", "passed": "\u2713"}  # ✗ ? ✓


class RemarkedDocument(CodeDocument):
    """Source or IR with LLVM's remarks beside the lines they name: a mark per kind after the code
    (missed ones in the warning colour), then the first remark, the missed one first; ``remarks`` by
    document line index (``[kind, pass, message]`` rows). The code's own columns stay where they are
    (sites are found by column); after IR the note is an LLVM comment (``prefix``)."""

    ORDER = {"missed": 0, "analysis": 1, "passed": 2}

    def __init__(self, text: str, remarks: dict[int, list[list]], language: str = "python", prefix: str = "") -> None:
        super().__init__(text, language)
        self.remarks, self.prefix = remarks, prefix
        for i, rows in remarks.items():
            if 0 <= i < len(self.lines):
                self.width = max(self.width, len(self.lines[i]) + 4 + len(self._note(rows)))

    def _first(self, rows: list[list]) -> list:
        return min(rows, key=lambda r: self.ORDER.get(r[0], 3))

    def _note(self, rows: list[list]) -> str:
        kind, pass_name, message = self._first(rows)
        more = f" (+{len(rows) - 1})" if len(rows) > 1 else ""
        return f"{self.prefix}{REMARK_MARKS.get(kind, '*')} {pass_name}: {message}{more}"

    def render(self, i: int) -> Text:
        text = super().render(i)
        rows = self.remarks.get(i)
        if rows:
            text = text.copy()
            text.append("    ")
            text.append(self._note(rows), style=REMARK_STYLES.get(self._first(rows)[0], ""))
        return text


class StyledDocument(Document):
    """Lines with one style each (listings, messages)."""

    def __init__(self, rows: list[tuple[str, str]] | None = None) -> None:
        rows = rows or []
        super().__init__([r[0] for r in rows])
        self.styles = [r[1] for r in rows]

    def append(self, line: str, style: str = "") -> None:
        for part in line.expandtabs(4).splitlines() or [""]:
            self.lines.append(part)
            self.styles.append(style)
            self.width = max(self.width, len(part))

    def render(self, i: int) -> Text:
        return Text(self.lines[i], style=self.styles[i], no_wrap=True, end="")


class JoinedDocument(Document):
    """One document after another (a report above a listing), each rendered its own way."""

    def __init__(self, *parts: Document) -> None:
        self.parts = [p for p in parts if len(p)]
        super().__init__([line for p in self.parts for line in p.lines])

    def render(self, i: int) -> Text:
        for part in self.parts:
            if i < len(part):
                return part.render(i)
            i -= len(part)
        raise IndexError(i)


def finish_diff(before: str, after: str) -> stage_diff.StageDiff:
    """Every line shown, compared with attribute-group renumbering as no change (the Finish tab)."""
    a, b = before.expandtabs(4).splitlines(), after.expandtabs(4).splitlines()
    return stage_diff.StageDiff(a, b, stage_diff.attribute_neutral(a), stage_diff.attribute_neutral(b))


DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan", " ": ""}


class UnifiedLines(Document):
    """A unified diff (``stage_diff.unified``), coloured."""

    def __init__(self, diff: stage_diff.StageDiff, names: tuple[str, str], context: int = 3,
                 makers: list[list[str]] | None = None) -> None:
        super().__init__(stage_diff.unified(diff, names, context, makers) or ["(no difference)"])

    hunk_above = 0  # a hunk shown from its @@ line (its context lines follow it)

    def hunks(self) -> list[int]:
        """The lines where each hunk starts (its ``@@`` line): ] and [ go there."""
        return [i for i, line in enumerate(self.lines) if line.startswith("@@")]

    def render(self, i: int) -> Text:
        line = self.lines[i]
        if line.startswith(("+++", "---")):
            return Text(line, style="bold", no_wrap=True, end="")
        if line.startswith("@@") and "@@  by " in line:  # the hunk's range, then the passes that made it
            head, by = line.split("@@  by ", 1)
            text = Text(head + "@@", style=DIFF_STYLES.get("@", ""), no_wrap=True, end="")
            text.append("  by " + by, "bold yellow")
            return text
        return Text(line, style=DIFF_STYLES.get(line[:1], ""), no_wrap=True, end="")


class SideBySideRows(Document):
    """``stage_diff.side_by_side`` rows in two columns of ``column`` characters."""

    SEP = " \u2502 "

    def __init__(self, diff: stage_diff.StageDiff, column: int) -> None:
        self.rows = stage_diff.side_by_side(diff)  # (left, right, tag)
        self.column = column
        super().__init__([self._join(lt, rt) for lt, rt, _ in self.rows] or ["(nothing to compare)"])

    def _join(self, left: str, right: str) -> str:
        return left[:self.column].ljust(self.column) + self.SEP + right

    hunk_above = 2  # rows of context kept above a run of changes the view goes to

    def hunks(self) -> list[int]:
        """The rows where each run of changed rows starts: ] and [ go there."""
        return [i for i, (_, _, tag) in enumerate(self.rows)
                if tag != "equal" and (i == 0 or self.rows[i - 1][2] == "equal")]

    def render(self, i: int) -> Text:
        if not self.rows:
            return Text(self.lines[i], no_wrap=True, end="")
        left, right, tag = self.rows[i]
        text = Text(no_wrap=True, end="")
        text.append(left[:self.column].ljust(self.column), {"replace": "yellow", "delete": "red"}.get(tag, ""))
        text.append(self.SEP, "dim")
        text.append(right, {"replace": "yellow", "insert": "green"}.get(tag, ""))
        return text


class UnifiedDiffDocument(UnifiedLines):
    """``before`` vs ``after`` (the Finish tab) as a coloured unified diff."""

    def __init__(self, before: str, after: str, names: tuple[str, str] = ("before_finish", "after_finish"),
                 context: int = 3) -> None:
        super().__init__(finish_diff(before, after), names, context)


class SideBySideDocument(SideBySideRows):
    """``before`` | ``after`` (the Finish tab) in two columns, changed lines coloured."""

    def __init__(self, before: str, after: str, column: int | None = None) -> None:
        diff = finish_diff(before, after)
        super().__init__(diff, column or min(max((len(s) for s in diff.before), default=10), 90))
