"""kdebug's ``sitecustomize`` for the Pythons a ``kdebug run --numba`` script starts (this folder is first on
their ``PYTHONPATH``: ``kdebug/lang/numba_compat.py``'s ``reach_child_pythons``): their ``import numba.cuda``
is kdebug's, in the script's mode. A ``sitecustomize`` later on ``sys.path`` (the environment's own) runs
after this one, as it would have without it."""
import importlib.machinery
import importlib.util
import os
import sys

from kdebug.lang import numba_compat


def _run_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


numba_compat.install_from_environment()
_run_next_sitecustomize()
