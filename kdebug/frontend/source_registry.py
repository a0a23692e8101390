"""Source text of code that has no file: strings given to ``exec``/``compile`` while kdebug runs a script,
and ``python -c``'s program (``sys.orig_argv``). numba compiles bytecode, so such kernels work there; kdebug
compiles source, so it keeps the text to find a function's ``def`` in (notebooks fill linecache already)."""
from __future__ import annotations

import __future__
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
    """(source lines of ``fn``'s definition, its first line) from a recorded text, or None.

    Texts exec'd under one name (``"<string>"``) often define functions of the same name on the same line:
    a test's factory that formats ``{func}(res, 0, x)`` with ``cuda.atomic.max``, then ``min``. Where more
    than one recorded text has such a ``def``, the one whose compiled code is ``fn``'s is chosen, so two
    such kernels never share source (nor, from it, types or compiled code)."""
    code = fn.__code__
    key = (code.co_name, code.co_firstlineno)
    matches = [(text, found) for text in _candidates(code.co_filename)
               if (found := (_definitions(text) or {}).get(key)) is not None]
    if not matches:
        return None
    if len(matches) > 1:
        wanted = _fingerprint(code)
        same = [m for m in matches if wanted in _compiled_functions(m[0], code.co_filename).get(key, ())]
        matches = same or matches  # none compiles to fn's code (other compile flags): the newest text
    lines, first = matches[0][1]
    return list(lines), first


_compiled: dict[tuple[str, str], dict[tuple[str, int], list[tuple]]] = {}  # (text, filename) -> fingerprints


def _compiled_functions(text: str, filename: str) -> dict[tuple[str, int], list[tuple]]:
    """The fingerprints of every function ``text`` compiles to, by (name, first line)."""
    cached = _compiled.get((text, filename))
    if cached is not None:
        return cached
    found: dict[tuple[str, int], list[tuple]] = {}
    try:
        todo = [compile(text, filename, "exec", dont_inherit=True)]
    except (SyntaxError, ValueError):
        todo = []
    while todo:
        code = todo.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(_fingerprint(code))
        todo.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    _compiled[(text, filename)] = found
    return found


def _fingerprint(code) -> tuple:
    """What tells two functions' code apart: the bytecode, the names, constants and positions it uses, its
    nested functions' alike. Not ``code == other``: that also compares the compile flags (``from __future__
    import annotations`` where the text was exec'd), which do not change what the function does."""
    consts = tuple(_fingerprint(c) if hasattr(c, "co_code")
                   else (type(c), repr(c) if isinstance(c, (float, complex)) else c)  # nan, -0.0 as themselves
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, consts,
            code.co_linetable if hasattr(code, "co_linetable") else code.co_lnotab)


# the ``from __future__`` flags a compile inherits from the code calling it (CPython's PyCF_MASK)
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


@contextlib.contextmanager
def recording():
    """While a script runs: remember the text of every ``exec``/``compile`` of a string. The text is
    compiled with the ``from __future__`` flags of the caller, as the builtins do, not this module's
    (``annotations``: an exec'd ``def f(x: int)`` keeps ``int``, not the string ``'int'``)."""
    real_exec, real_compile = builtins.exec, builtins.compile

    def compile_(source, filename, mode, flags=0, dont_inherit=False, *args, **kwargs):
        remember(filename, source)
        if not dont_inherit:
            flags |= sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
        return real_compile(source, filename, mode, flags, True, *args, **kwargs)

    def exec_(source, globals=None, locals=None, *args, **kwargs):
        frame = sys._getframe(1)
        if globals is None:  # exec's default namespaces are its caller's, not this wrapper's
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        remember("<string>", source)
        if isinstance(source, (str, bytes)):
            source = real_compile(source, "<string>", "exec", frame.f_code.co_flags & _FUTURE_FLAGS, True)
        return real_exec(source, globals, locals, *args, **kwargs)

    builtins.exec, builtins.compile = exec_, compile_
    try:
        yield
    finally:
        builtins.exec, builtins.compile = real_exec, real_compile
