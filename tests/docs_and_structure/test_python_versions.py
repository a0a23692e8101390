"""Every Python kdebug supports (3.11 to 3.14, pyproject.toml): the code uses no syntax newer than the oldest
and nothing the newest removed. The suite itself turns a DeprecationWarning from kdebug's modules into an
error (pyproject.toml's filterwarnings), so the next removal fails a test the day it is announced."""
from __future__ import annotations

import ast
import os
import sys
import tomllib
import warnings

import pytest

from conftest import ROOT
FOLDERS = ("kdebug", "tests", "benchmarks", "sample_kernels", "scripts")
OLDEST = (3, 11)

# modules Python removed: 3.12 (PEP 632, asyncore's family, imp), 3.13 (PEP 594's dead batteries)
REMOVED_MODULES = {
    "distutils", "imp", "asynchat", "asyncore", "smtpd",
    "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap", "msilib", "nis", "nntplib",
    "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib", "lib2to3",
}
# names removed from modules that remain (3.12, 3.13, 3.14's "Removed" sections of What's New), and calls
# whose meaning 3.14 changed: get_event_loop() no longer makes a loop outside a running one
REMOVED_NAMES = {
    "ast": {"Num", "Str", "Bytes", "NameConstant", "Ellipsis"},
    "asyncio": {"get_event_loop", "AbstractChildWatcher", "SafeChildWatcher", "FastChildWatcher",
                "MultiLoopChildWatcher", "ThreadedChildWatcher", "PidfdChildWatcher", "get_child_watcher",
                "set_child_watcher"},
    "pkgutil": {"find_loader", "get_loader"},
    "configparser": {"SafeConfigParser", "LegacyInterpolation"},
    "locale": {"format", "resetlocale"},
    "ssl": {"wrap_socket", "match_hostname"},
    "typing": {"io", "re"},
    "unittest": {"findTestCases", "makeSuite", "getTestCaseNames"},
    "urllib.request": {"URLopener", "FancyURLopener"},
    "sqlite3": {"version", "version_info"},
}


def python_files():
    for folder in FOLDERS:
        for base, dirs, files in os.walk(os.path.join(ROOT, folder)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(base, name)


def removed_uses(path: str) -> list[str]:
    """``file:line: what`` for each removed module imported and removed name used through its module."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    aliases: dict[str, str] = {}  # local name -> module, for `import x as y` and `from a import b`
    found = []
    rel = os.path.relpath(path, ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in REMOVED_MODULES:
                    found.append(f"{rel}:{node.lineno}: import {a.name} (removed from Python)")
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in REMOVED_MODULES:
                found.append(f"{rel}:{node.lineno}: from {node.module} import (removed from Python)")
            for a in node.names:
                if a.name in REMOVED_NAMES.get(node.module, ()):
                    found.append(f"{rel}:{node.lineno}: from {node.module} import {a.name} (removed or changed)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in aliases:
                parts = [aliases[inner.id]] + chain[::-1]
                module, name = ".".join(parts[:-1]), parts[-1]
                if name in REMOVED_NAMES.get(module, ()):
                    found.append(f"{rel}:{node.lineno}: {module}.{name} (removed or changed)")
    return found


def test_the_code_uses_nothing_a_supported_python_removed():
    found = [line for path in python_files() for line in removed_uses(path)]
    assert found == []


def test_the_checker_finds_what_it_looks_for(tmp_path):
    """The check above is not vacuous: a file with each kind of removed use is caught, line by line."""
    bad = tmp_path / "old.py"
    bad.write_text("import imp\nimport asyncio as aio\nimport ast\nfrom pkgutil import find_loader\n"
                   "loop = aio.get_event_loop()\nn = ast.Num(1)\nimport urllib.request\n"
                   "u = urllib.request.URLopener()\n")
    found = [line.split(": ", 1)[1] for line in removed_uses(str(bad))]
    assert found == ["import imp (removed from Python)", "from pkgutil import find_loader (removed or changed)",
                     "asyncio.get_event_loop (removed or changed)", "ast.Num (removed or changed)",
                     "urllib.request.URLopener (removed or changed)"]


def leaves_finally(node, in_loop=False) -> list[int]:
    """Lines of the ``return``/``break``/``continue`` statements that would leave a ``finally`` block (PEP
    765): a ``break`` inside a loop of the block, or a ``return`` in a function defined there, does not."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return []
    if isinstance(node, ast.Return) or (isinstance(node, (ast.Break, ast.Continue)) and not in_loop):
        return [node.lineno]
    loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    return [line for child in ast.iter_child_nodes(node) for line in leaves_finally(child, in_loop or loop)]


def test_the_code_parses_as_the_oldest_supported_python():
    """``ast.parse(feature_version=(3, 11))``: no syntax newer than 3.11 (PEP 695's ``type``, PEP 701's
    nested quotes in f-strings are caught where this runs on a newer Python). ``return``, ``break`` and
    ``continue`` in a ``finally`` block warn from 3.14 (PEP 765): none."""
    errors, in_finally = [], []
    for path in python_files():
        with open(path, "rb") as f:
            source = f.read()
        rel = os.path.relpath(path, ROOT)
        try:
            tree = ast.parse(source, path, feature_version=OLDEST)
        except SyntaxError as exc:
            errors.append(f"{rel}:{exc.lineno}: {exc.msg}")
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                in_finally += [f"{rel}:{line}" for stmt in node.finalbody for line in leaves_finally(stmt)]
    assert errors == [] and in_finally == []
    caught = ast.parse("def f():\n    try:\n        pass\n    finally:\n        for x in y:\n            continue\n"
                       "        return 1\n")
    assert [line for stmt in caught.body[0].body[0].finalbody for line in leaves_finally(stmt)] == [7]


def test_pyproject_names_every_python_ci_runs():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    classifiers = project["project"]["classifiers"]
    assert project["project"]["requires-python"] == ">=3.11"
    assert [c for c in classifiers if c.startswith("Programming Language :: Python :: 3.")] == [
        f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13, 14)]
    assert f"Programming Language :: Python :: {sys.version_info.major}.{sys.version_info.minor}" in classifiers
    assert "error::DeprecationWarning:kdebug" in project["tool"]["pytest"]["ini_options"]["filterwarnings"]


def test_a_deprecation_in_kdebugs_code_fails_the_suite():
    """The filter is live in this run: a DeprecationWarning raised from a kdebug module is an error, one
    raised from elsewhere is not."""
    with pytest.raises(DeprecationWarning):
        exec("import warnings\nwarnings.warn('gone in the next Python', DeprecationWarning)",
             {"__name__": "kdebug.session.model"})
    with warnings.catch_warnings(record=True) as seen:
        exec("import warnings\nwarnings.warn('not ours', DeprecationWarning)", {"__name__": "numpy.elsewhere"})
    assert len(seen) == 1
