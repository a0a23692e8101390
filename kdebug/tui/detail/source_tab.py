"""The Source tab: the job's Python source, LLVM's remarks beside the lines they name; before any job, the
script's own located error."""
from __future__ import annotations

import os

from textual.app import ComposeResult

from kdebug import events as E
from kdebug.tui.detail.base import DetailTab
from kdebug.tui.documents import CodeDocument, Document, RemarkedDocument, StyledDocument
from kdebug.tui.site_view import SiteView


def location_of(diag: E.Diagnostic, cwd: str = "") -> str:
    """``file:line:col`` of a diagnostic ('' when it has none), the file relative to ``cwd`` when inside it."""
    loc = diag.location or {}
    name = loc.get("file")
    if not name:
        return ""
    if cwd and os.path.isabs(name) and os.path.abspath(name).startswith(os.path.abspath(cwd) + os.sep):
        name = os.path.relpath(name, cwd)
    return ":".join(str(p) for p in (name, loc.get("line"), loc.get("col")) if p)


def script_error_document(diag: E.Diagnostic, cwd: str, context: int = 4) -> StyledDocument:
    """A script's error, located: ``file:line:col: message``, the lines around it numbered, the faulting line
    marked and a caret under its column, then the whole message as Python wrote it."""
    doc = StyledDocument()
    where = location_of(diag, cwd)
    doc.append(f"{where}: {diag.message}" if where else diag.message, "bold red")
    loc = diag.location or {}
    try:
        with open(os.path.join(cwd, loc["file"]), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except (KeyError, TypeError, OSError):
        lines = []
    line = loc.get("line") or 0
    if lines and 1 <= line <= len(lines):
        doc.append("")
        width = len(str(min(line + context, len(lines))))
        for n in range(max(1, line - context), min(line + context, len(lines)) + 1):
            mark = "\u25b6" if n == line else " "
            doc.append(f"{mark}{n:>{width}} \u2502 {lines[n - 1]}", "bold reverse red" if n == line else "")
            if n == line and loc.get("col"):
                doc.append(" " * (width + 3 + loc["col"]) + "^", "bold red")
    if diag.text:
        doc.append("")
        for text_line in diag.text.splitlines():
            doc.append(text_line, "red")
    return doc


class SourceTab(DetailTab):
    tab_id = "source"

    def compose_views(self) -> ComposeResult:
        yield SiteView(id="view-source")

    def show_job(self, job) -> None:
        detail = self.detail
        if job is None:
            return self.set_document(script_error_document(detail.script_error, detail.cwd)
                                     if detail.script_error is not None else Document([]))
        src = job.source or detail.stage_text("parse")[0] or "(source not available)"
        header = f"# {job.source_file}:{job.source_line}\n" if job.source_file else ""
        remarks = self.model.source_remarks(job) if job.source else {}
        if remarks:  # LLVM's remarks beside the lines they name (document index: the header is line 0)
            first = job.source_line - (1 if header else 0)
            self.set_document(RemarkedDocument(header + src, {n - first: r for n, r in remarks.items()}))
        else:
            self.set_document(CodeDocument(header + src, "python"))
