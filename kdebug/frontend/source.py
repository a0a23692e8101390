"""Python source of a kernel, parsed, with locations mapped back to the file."""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from kdebug.errors import CompileError, SourceLocation, TypingError
from kdebug.frontend.desugar import desugar_loops
from kdebug.frontend import source_registry


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


def parse_function(fn) -> FunctionSource:
    """Read and parse the source of a Python function."""
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
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = ast.parse(text)
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
