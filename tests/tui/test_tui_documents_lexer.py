"""The IR views' highlighting, line by line (issue 24, defect 8)."""
from __future__ import annotations

from kdebug.tui.documents import TOKEN_STYLES, highlight_line
from pygments.token import Token

COMMENT = TOKEN_STYLES[Token.Comment]


def _styles(text, start, end):
    return {str(span.style) for span in text.spans if span.start <= start and span.end >= end}


def test_an_llvm_comment_line_is_a_comment_to_its_end():
    line = "; Function Attrs: nounwind"
    text = highlight_line(line, "llvm")
    assert str(COMMENT) in _styles(text, 0, len(line))  # "Attrs:" is no label
    assert text.plain == line


def test_a_trailing_comment_after_code_is_a_comment():
    line = "for.body:                                         ; preds = %entry"
    text = highlight_line(line, "llvm")
    at = line.index("%entry")
    assert str(COMMENT) in _styles(text, at, at + len("%entry"))
    assert str(COMMENT) not in _styles(text, 0, len("for.body"))  # the label before it is code
