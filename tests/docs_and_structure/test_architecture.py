"""The house keeps its shape: import contracts (pyproject.toml), no import cycle between modules, no
function-level import of a kdebug module without its reason."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

import grimp

from conftest import ROOT


def _lint_imports() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    return exe if os.path.exists(exe) else shutil.which("lint-imports")


def test_import_linter_contracts_hold():
    exe = _lint_imports()
    assert exe, "lint-imports is missing: install the dev extra (pip install -e '.[dev]')"
    r = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Layers: each package imports only those below it KEPT" in r.stdout
    assert "Only kdebug.tui imports Textual KEPT" in r.stdout


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle_between_kdebugs_modules():
    # grimp reads every import statement, those inside functions too: a cycle cannot hide in one
    cycles = import_cycles(grimp.build_graph("kdebug"))
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    # the shape kdebug had: lang imports the driver inside a function, the driver imports lang
    pkg = tmp_path / "house"
    (pkg / "lang").mkdir(parents=True)
    (pkg / "driver").mkdir()
    for d in (pkg, pkg / "lang", pkg / "driver"):
        (d / "__init__.py").write_text("")
    (pkg / "lang" / "dispatcher.py").write_text(
        "def compile(fn):\n    from house.driver.active import get_session\n    return get_session()\n")
    (pkg / "driver" / "active.py").write_text("from house.lang import dispatcher\n")
    (pkg / "errors.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    cycles = import_cycles(grimp.build_graph("house", cache_dir=None))
    assert cycles == [["house.driver.active", "house.lang.dispatcher"]]


def test_every_target_hook_is_declared_on_the_base_target():
    import re

    from kdebug.targets.base import Target
    from kdebug.targets.cpu import CpuTarget
    from kdebug.targets.ptx import PtxTarget

    frontend = os.path.join(ROOT, "kdebug", "frontend")
    used = set()
    for name in os.listdir(frontend):
        if name.endswith(".py"):
            with open(os.path.join(frontend, name), encoding="utf-8") as f:
                used |= set(re.findall(r'_target_hook\(lw, node, "(\w+)"', f.read()))
    assert {"barrier", "shared_memory"} <= used
    assert all(callable(getattr(Target, h, None)) for h in used), used - set(dir(Target))
    for target in (CpuTarget, PtxTarget):  # a target's public methods are the base's hooks
        own = {n for n, v in vars(target).items() if callable(v) and not n.startswith("_")}
        assert own <= set(dir(Target)), f"{target.__name__}: {sorted(own - set(dir(Target)))} not declared"


LAZY = "kept lazy for start-up time"


def function_level_imports(source: str) -> list[tuple[int, str, bool]]:
    """(line, module, says why) for each import of a kdebug module inside a function: it says why when
    the line, or the comment lines just above it, say it is kept lazy for start-up time."""
    lines = source.splitlines()
    found = []

    def says_why(lineno: int) -> bool:
        k = lineno - 1
        if LAZY in lines[k]:
            return True
        k -= 1
        while k >= 0 and lines[k].strip().startswith("#"):
            if LAZY in lines[k]:
                return True
            k -= 1
        return False

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.Import):
                    modules = [a.name for a in child.names]
                else:
                    modules = ["." * child.level + (child.module or "")]
                for m in modules:
                    if m == "kdebug" or m.startswith(("kdebug.", ".")):
                        found.append((child.lineno, m, says_why(child.lineno)))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return found


def test_every_function_level_import_of_kdebug_is_kept_lazy_for_start_up_time():
    # an import hidden in a function to dodge a cycle is a layering bug: it moves to the top of its
    # module; one kept for start-up time says so
    unexplained = []
    for folder, _, files in os.walk(os.path.join(ROOT, "kdebug")):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                for line, module, why in function_level_imports(f.read()):
                    if not why:
                        unexplained.append(f"{os.path.relpath(path, ROOT)}:{line}: {module}")
    assert unexplained == [], f"function-level imports without '# {LAZY}: ...':\n" + "\n".join(unexplained)


def test_the_lazy_import_check_finds_an_unexplained_one():
    source = (
        "import kdebug.events\n"
        "def f():\n"
        "    import json\n"
        "    from kdebug.driver import driver\n"
        "    # kept lazy for start-up time: Textual loads only for the TUI\n"
        "    from kdebug.tui.app import run_tui\n"
        "    from . import sibling  # kept lazy for start-up time\n"
        "    def g():\n"
        "        import kdebug.session.live\n"
        "class C:\n"
        "    from kdebug import errors\n"
    )
    assert function_level_imports(source) == [(4, "kdebug.driver", False), (6, "kdebug.tui.app", True),
                                              (7, ".", True), (9, "kdebug.session.live", False)]
