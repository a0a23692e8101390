"""Kernel source is read as ``inspect.getsourcelines`` reads it, without inspect's tokenizer (whose
regular expressions cost a fresh process ~5 ms): the same lines for every layout, inspect's answer
where the quick reading does not apply."""
from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap

from kdebug.frontend.source import definition_lines, function_text, parse_function

from conftest import ROOT

LAYOUTS = '''
import functools


def plain(a, b):
    return a + b


@functools.lru_cache
@functools.lru_cache(maxsize=2)
def decorated(x):
    y = x * 2
    # a comment at the body's indentation after the last statement belongs to the block
        # deeper too
# but not one at column 0

    return y
    # trailing, at the body's indentation


@functools.lru_cache(
    maxsize=None,
)
def decorator_over_lines(
        a,
        b=(1,
           2)):
    out = [a,
           b
    ]
    return out


def nested(x):
    def inner(v):
        return (v +
                1)
    return inner(x)


def with_strings(x):
    """A docstring
over lines."""
    s = """text
at column 0
"""
    return s


def docstring_only():
    """Nothing else."""


def one_line(x): return x


def docstring_on_the_def_line(): r"""
at column 0
"""


class Holder:
    def method(self, x):
        if x:
            return 1
        else:
            pass

    async def coroutine(self):
        return 2


def last(x):
    while x:
        x -= 1
'''


def _module(tmp_path):
    path = tmp_path / "layouts.py"
    path.write_text(LAYOUTS)
    spec = importlib.util.spec_from_file_location("layouts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_definition_lines_are_inspects_for_every_layout(tmp_path):
    mod = _module(tmp_path)
    fns = [mod.plain, mod.decorated.__wrapped__.__wrapped__, mod.decorator_over_lines.__wrapped__, mod.nested,
           mod.with_strings, mod.docstring_only, mod.one_line, mod.docstring_on_the_def_line, mod.Holder.method,
           mod.Holder.coroutine, mod.last]
    quick = 0
    for fn in fns:
        found = definition_lines(fn)
        if found is not None:
            quick += 1
            assert found == inspect.getsourcelines(fn), fn.__name__
        assert function_text(fn) == inspect.getsource(fn), fn.__name__
    assert quick >= 8  # the one-liner and the def-line docstring go to inspect
    assert definition_lines(mod.docstring_on_the_def_line) is None


def test_a_function_edited_on_disk_is_read_again(tmp_path):
    # as inspect does (linecache.checkcache): the debugger recompiles after an edit
    path = tmp_path / "edited.py"
    path.write_text("def f(x):\n    return x\n")
    spec = importlib.util.spec_from_file_location("edited", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert "return x\n" in function_text(mod.f)
    path.write_text("def f(x):\n    return x + 1\n")
    os.utime(path, (1, 1))
    assert "return x + 1\n" in function_text(mod.f)


def test_parse_function_keeps_locations(tmp_path):
    mod = _module(tmp_path)
    src = parse_function(mod.Holder.method)
    assert src.first_line == mod.Holder.method.__code__.co_firstlineno
    assert src.indent == 4 and src.text.startswith("def method(self, x):")
    ret = src.tree.body[0].body[0]
    assert src.loc(ret).line == src.first_line + 2 and src.loc(ret).col == 13


def test_a_compile_does_not_run_inspects_tokenizer(tmp_path):
    (tmp_path / "kernels.py").write_text(textwrap.dedent('''
        from kdebug import cuda

        @cuda.jit
        def saxpy(a, x, y, out):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = a * x[i] + y[i]
        '''))
    probe = ("import inspect\n"
             "def refuse(*a, **k):\n    raise AssertionError('inspect tokenized the kernel source')\n"
             "inspect.getblock = refuse\n"
             "from kdebug import cuda\nimport kernels\n"
             "ptx, _ = cuda.compile_ptx(kernels.saxpy, 'void(float32, float32[::1], float32[::1], float32[::1])')\n"
             "assert '.entry' in ptx\nprint('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_spurious_ast_depth_mismatch_is_parsed_again(monkeypatch):
    """CPython 3.11's "AST constructor recursion depth mismatch" (gh-106905) is not the kernel's fault:
    the kernel's source is parsed once more; any other SystemError still reaches the caller."""
    import ast

    import pytest

    from kdebug.frontend import source_registry

    real = ast.parse
    calls = []

    def flaky(text, *args, **kwargs):
        calls.append(text)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=52, after=37)")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", flaky)

    def kernel(a):
        a[0] = 1

    src = parse_function(kernel)
    assert src.tree.name == "kernel" and len(calls) == 2

    def broken(text, *args, **kwargs):
        raise SystemError("some other interpreter failure")

    monkeypatch.setattr(ast, "parse", broken)
    with pytest.raises(SystemError, match="some other"):
        source_registry.parse_text("x = 1\n")
