"""Run one of numba-cuda's documentation examples as numba's test runner would, under ``kdebug --numba``.

    kdebug run --numba --headless --backend cpu tests/numba/numba_doc_examples/run_doc_example.py test_vecadd

Loads the example module from this folder, runs its unittest test classes and its plain ``test_*``
functions (as pytest would collect them), prints unittest's report and a last line
``doc example NAME: ran=N failures=F errors=E skipped=S``, and exits 1 unless every test passed.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name: str):
    """An example of this folder by name (test_vecadd), or any file by its path."""
    path = name if os.sep in name else os.path.join(HERE, name if name.endswith(".py") else name + ".py")
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def collect(module) -> unittest.TestSuite:
    """The module's TestCase classes (unittest's loader) and its module-level test functions."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    for fname, fn in vars(module).items():
        if fname.startswith("test") and inspect.isfunction(fn) and fn.__module__ == module.__name__:
            suite.addTest(unittest.FunctionTestCase(fn, description=fname))
    return suite


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: run_doc_example.py EXAMPLE (e.g. test_vecadd, or a path)", file=sys.stderr)
        return 2
    module = load(argv[0])
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(collect(module))
    print(f"doc example {module.__name__}: ran={result.testsRun} failures={len(result.failures)} "
          f"errors={len(result.errors)} skipped={len(result.skipped)}")
    return 0 if result.wasSuccessful() and result.testsRun else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
