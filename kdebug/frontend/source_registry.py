"""Source text of code that has no file: strings given to ``exec``/``compile`` while kdebug runs a script,
and ``python -c``'s program (``sys.orig_argv``). numba compiles bytecode, so such kernels work there; kdebug
compiles source, so it keeps the text to find a function's ``def`` in (notebooks fill linecache already)."""
from __future__ import annotations

import ast
import builtins
import contextlib
import sys

_sources: dict[str, list[str]] = {}  # filename -> texts given under it, newest last


def remember(filename: str, source) -> None:
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if isinstance(source, str):
        texts = _sources.setdefault(str(filename), [])
        if source not in texts:
            texts.append(source)


def _candidates(filename: str) -> list[str]:
    texts = list(reversed(_sources.get(filename, [])))
    argv = getattr(sys, "orig_argv", [])
    if filename == "<string>" and "-c" in argv[:-1]:
        texts.append(argv[argv.index("-c") + 1])
    return texts


def parse_text(text: str) -> ast.Module:
    """``ast.parse``, asked once more when CPython 3.11's AST conversion reports a spurious "recursion
    depth mismatch": its depth counter is shared by the interpreter, so a parse started while another
    parse is converting (a finalizer or another thread running during garbage collection) upsets the
    first one's count (CPython gh-106905). The second parse of the same text is an ordinary one."""
    try:
        return ast.parse(text)
    except SystemError as exc:
        if "recursion depth mismatch" not in str(exc):
            raise
        return ast.parse(text)


_indexes: dict[str, dict[tuple[str, int], tuple[list[str], int]] | None] = {}  # text -> its definitions


def _definitions(text: str) -> dict[tuple[str, int], tuple[list[str], int]] | None:
    """Every function definition of ``text``, by (name, a first line CPython may report for it): parsed
    once per text, so finding the n kernels of one ``exec``'d source costs one parse, not n."""
    if text in _indexes:
        return _indexes[text]
    try:
        tree = parse_text(text)
    except SyntaxError:
        _indexes[text] = None
        return None
    all_lines = text.splitlines(True)
    index: dict[tuple[str, int], tuple[list[str], int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found = (all_lines[first - 1:node.end_lineno], first)
            index.setdefault((node.name, first), found)
            index.setdefault((node.name, node.lineno), found)
    _indexes[text] = index
    return index


def find_lines(fn) -> tuple[list[str], int] | None:
    """(source lines of ``fn``'s definition, its first line) from a recorded text, or None."""
    code = fn.__code__
    for text in _candidates(code.co_filename):
        found = (_definitions(text) or {}).get((code.co_name, code.co_firstlineno))
        if found is not None:
            lines, first = found
            return list(lines), first
    return None


@contextlib.contextmanager
def recording():
    """While a script runs: remember the text of every ``exec``/``compile`` of a string."""
    real_exec, real_compile = builtins.exec, builtins.compile

    def compile_(source, filename, mode, *args, **kwargs):
        remember(filename, source)
        return real_compile(source, filename, mode, *args, **kwargs)

    def exec_(source, globals=None, locals=None, *args, **kwargs):
        if globals is None:  # exec's default namespaces are its caller's, not this wrapper's
            frame = sys._getframe(1)
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        remember("<string>", source)
        return real_exec(source, globals, locals, *args, **kwargs)

    builtins.exec, builtins.compile = exec_, compile_
    try:
        yield
    finally:
        builtins.exec, builtins.compile = real_exec, real_compile
