"""Run one of numba-cuda's cudapy test files under ``kdebug --numba`` with its sibling modules importable.

    kdebug run --numba --headless --backend cpu scripts/run_numba_test_file.py WHEEL/.../cudapy/test_enums.py

numba's test files import their helpers as ``numba.cuda.tests.cudapy.X_usecases``; this registers the
file's folder as that package (kdebug has none), then runs the file as
``tests/numba/numba_doc_examples/run_doc_example.py`` does (unittest's loader; its last line gives the counts).
"""
from __future__ import annotations

import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "numba", "numba_doc_examples"))

import run_doc_example  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: run_numba_test_file.py PATH/cudapy/test_X.py", file=sys.stderr)
        return 2
    folder = os.path.dirname(os.path.abspath(argv[0]))
    package = types.ModuleType("numba.cuda.tests.cudapy")
    package.__path__ = [folder]
    sys.modules["numba.cuda.tests.cudapy"] = package
    run_doc_example.load = load_in_package  # relative imports (from .overload_usecases import ...) resolve
    return run_doc_example.main(argv)


def load_in_package(path: str):
    """The test file as numba's runner imports it: ``numba.cuda.tests.cudapy.test_X`` (its ``__module__``
    and relative imports as in numba)."""
    import importlib.util
    name = "numba.cuda.tests.cudapy." + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
