"""Python source of a kernel, parsed, with locations mapped back to the file."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from kdebug.errors import CompileError, SourceLocation, TypingError
from kdebug.frontend.desugar import desugar_loops
from kdebug.frontend import source_registry
from kdebug.lazy_dataclasses import dataclass


@dataclass
class FunctionSource:
    function: object  # the Python function
    file: str
    first_line: int  # line of the first source line (decorator included) in the file
    indent: int  # columns removed by dedenting
    text: str  # the dedented source
    tree: ast.FunctionDef

    def loc(self, node: ast.AST) -> SourceLocation:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)  # in UTF-8 bytes: count characters, as editors do
        lines = self.text.splitlines()
        if 1 <= line <= len(lines):
            col = len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", "replace"))
        return SourceLocation(self.file, self.first_line + line - 1, col + self.indent + 1)

    def error(self, node: ast.AST, message: str, hint: str | None = None, cls=TypingError) -> CompileError:
        """A located error in this function: a typing error unless ``cls`` says otherwise (as numba's)."""
        return cls(message, self.loc(node), hint)


def definition_lines(fn) -> tuple[list[str], int] | None:
    """``fn``'s ``def`` (decorators included) as ``inspect.getsourcelines`` gives it, ``(lines, first line)``,
    or None where this quick reading does not apply (a lambda, no file, an odd layout): ask ``inspect`` then.

    The lines come from ``linecache``, the end from the code object's positions, extended over the
    comments at the body's indentation that follow (as inspect's block finder does), without
    inspect's tokenizer: its regular expressions cost a fresh process ~5 ms on first use."""
    fn = inspect.unwrap(fn)  # as inspect: a functools.wraps wrapper's source is the wrapped function's
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>":
        return None
    linecache.checkcache(code.co_filename)  # as inspect: an edited file is read again
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    head = lines[start].lstrip()
    if not head.startswith(("@", "def ", "async ")):
        return None
    indent = len(lines[start]) - len(head)
    header = next((k for k in range(start, len(lines)) if lines[k].lstrip().startswith(("def ", "async def "))),
                  None)  # the def line, past the decorators
    if header is None:
        return None
    cut = max(_last_line(code), header + 1)  # 1-based last line of any instruction = 0-based next line
    while cut < len(lines):  # up to the next line of code outside the function
        text = lines[cut].lstrip()
        if text and not text.startswith("#") and len(lines[cut]) - len(text) <= indent:
            break
        cut += 1
    end = cut
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1  # trailing blank and comment lines ...
    body_col = _body_column(lines[start:end], indent)
    if body_col is None:  # the body on the def line (``def f(): r"""...``): inspect's tokenizer finds its end
        return None
    for k in range(end, cut):  # ... but comments at the body's indentation are the block's
        text = lines[k].lstrip()
        if text.startswith("#") and len(lines[k]) - len(text) >= body_col:
            end = k + 1
    block = lines[start:end]
    text = "".join(block)
    if text.count('"""') % 2 or text.count("'''") % 2:  # a string closes past the end found (at the def's indentation)
        return None
    return block, code.co_firstlineno


def function_text(fn) -> str:
    """``inspect.getsource(fn)``, read as ``definition_lines`` does where it can; an ``exec``'d function's
    from the text kdebug recorded (``source_registry``), as ``parse_function`` reads it."""
    found = definition_lines(fn)
    if found is not None:
        return "".join(found[0])
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        found = source_registry.find_lines(fn) if hasattr(fn, "__code__") else None
        if found is None:
            raise
        return "".join(found[0])


def _last_line(code) -> int:
    last = 0
    for pos in code.co_positions():
        if pos[1] is not None and pos[1] > last:
            last = pos[1]
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return last


def _body_column(block: list[str], indent: int) -> int | None:
    """The indentation of the body's statements: that of the first line indented past the ``def``."""
    for line in block[1:]:
        text = line.lstrip()
        if text and not text.startswith("#") and len(line) - len(text) > indent:
            return len(line) - len(text)
    return None


def parse_function(fn) -> FunctionSource:
    """Read and parse the source of a Python function."""
    found = definition_lines(fn)
    if found is not None:
        lines, first = found
        text = textwrap.dedent("".join(lines))
        try:
            module = source_registry.parse_text(text)
        except SyntaxError:  # not a plain block after all: inspect's reading decides
            module = None
        if module is not None and len(module.body) == 1 and isinstance(module.body[0], ast.FunctionDef):
            return _function_source(fn, lines, first, fn.__code__.co_filename, module)
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        found = source_registry.find_lines(fn) if hasattr(fn, "__code__") else None
        if found is None:
            code = getattr(fn, "__code__", None)
            raise CompileError(f"cannot read the source of {getattr(fn, '__name__', fn)!r} ({exc})",
                               SourceLocation(code.co_filename, code.co_firstlineno, 1) if code else None,
                               hint="define the kernel in a .py file; exec() and python -c work when kdebug "
                                    "can see the string (kdebug run FILE.py, or python -c)") from None
        (lines, first), file = found, fn.__code__.co_filename
    return _function_source(fn, lines, first, file, None)


def _function_source(fn, lines: list[str], first: int, file: str, module) -> FunctionSource:
    text = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    if module is None:
        module = source_registry.parse_text(text)
    node = module.body[0]
    if getattr(fn, "__name__", "") == "<lambda>":
        node = _lambda_as_def(fn, module, file, first)
    if not isinstance(node, ast.FunctionDef):
        raise CompileError(f"{getattr(fn, '__name__', fn)!r} is not a plain function definition",
                           SourceLocation(file, first, 1),
                           hint="decorate a 'def' function with @cuda.jit; lambdas are not supported")
    src = FunctionSource(fn, file, first, indent, text, node)
    desugar_loops(node, src)  # for x in a / enumerate / zip / a range variable: counted loops
    return src


def _lambda_as_def(fn, module, file, first) -> ast.FunctionDef:
    """``lambda a, b: a + b`` (as ``cuda.reduce`` takes) as ``def <lambda>(a, b): return a + b``, with the
    lambda's own locations. The statement holding it must hold one lambda of these parameter names."""
    params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and [a.arg for a in n.args.args] == params]
    if len(found) != 1:
        raise CompileError(f"cannot tell which lambda of line {first} this is ({len(found)} with parameters "
                           f"{', '.join(params)})", SourceLocation(file, first, 1),
                           hint="define the function with 'def' instead")
    lam = found[0]
    ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
    node = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None,
                           type_comment=None)
    return ast.fix_missing_locations(ast.copy_location(node, lam))
