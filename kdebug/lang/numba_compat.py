"""``kdebug --numba``: ``import numba`` and its submodules resolve to kdebug's modules.

An import hook maps each numba module name to the kdebug module that provides it (``numba.cuda.X``
to ``kdebug.cuda.X``, other ``numba.X`` to ``kdebug.numba.X``, the types and errors modules as
numba aliases them); the kdebug module is entered under both names, so ``numba.cuda is kdebug.cuda``.
A numba module kdebug has no counterpart for fails with an error that names it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from kdebug.lang.missing import README_SECTION

ALIASES = {
    "numba": "kdebug.numba",
    "numba.cuda": "kdebug.cuda",
    "numba.types": "kdebug.cuda.types",
    "numba.core.types": "kdebug.cuda.types",
    "numba.errors": "kdebug.numba.errors",
    "numba.core.errors": "kdebug.numba.errors",
    "numba.cuda.core.errors": "kdebug.numba.errors",
    "numba.cuda.errors": "kdebug.numba.errors",  # numba-cuda 0.30's own home of TypingError & co
    "numba.cuda.core": "kdebug.numba.core",
    "numba.cuda.np": "kdebug.numba.np",
    "numba.cuda.np.numpy_support": "kdebug.numba.np.numpy_support",
    "numba.cuda.core.config": "kdebug.numba.core.config",
    "numba.cuda.config": "kdebug.numba.core.config",
    "numba.core.config": "kdebug.numba.core.config",
    "numba.cuda.utils": "kdebug.numba.core.utils",
    "numba.cuda.extending": "kdebug.numba.extending",
    "numba.core.extending": "kdebug.numba.extending",
    "numba.core.typing": "kdebug.cuda.typing",
}


def kdebug_module(numba_name: str) -> str:
    """The kdebug module that stands for ``numba_name``."""
    if numba_name in ALIASES:
        return ALIASES[numba_name]
    parent, _, leaf = numba_name.rpartition(".")
    if parent in ALIASES or any(parent.startswith(a + ".") for a in ALIASES if a not in ("numba", "numba.cuda")):
        return kdebug_module(parent) + "." + leaf  # inside an aliased package (numba.cuda.core.X)
    if numba_name.startswith("numba.cuda."):
        return "kdebug.cuda." + numba_name[len("numba.cuda."):]
    return "kdebug.numba." + numba_name[len("numba."):]


class MissingNumbaModule(ModuleNotFoundError):
    """``import numba.X`` where kdebug provides no numba.X."""


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        """The kdebug module ran when it was imported under its own name."""


class NumbaFinder(importlib.abc.MetaPathFinder):
    """Finds ``numba`` and ``numba.*`` among kdebug's modules (first on sys.meta_path)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "numba" and not fullname.startswith("numba."):
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0])
        if parent is not None and not getattr(parent, "__name__", "").startswith("kdebug"):
            return None  # inside a package the script put there itself (a folder of numba's tests): its own
        name = kdebug_module(fullname)
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a parent kdebug lacks
            found = None
        if found is None:
            raise MissingNumbaModule(f"No module named {fullname!r}: kdebug --numba does not provide "
                                     f"{fullname} ({README_SECTION})", name=fullname)
        is_package = hasattr(importlib.import_module(name), "__path__")
        return importlib.util.spec_from_loader(fullname, _Alias(name), is_package=is_package)


def install() -> None:
    """Make ``import numba`` (and ``numba.cuda``, ``numba.core.types``...) give kdebug's modules."""
    if not any(isinstance(f, NumbaFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, NumbaFinder())
    for name in [n for n in sys.modules if n == "numba" or n.startswith("numba.")]:
        del sys.modules[name]  # a real numba imported earlier must not answer for kdebug's
