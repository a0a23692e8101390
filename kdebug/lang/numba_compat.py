"""``kdebug --numba``: ``import numba.cuda`` (and, without a real numba, ``import numba``) resolve to kdebug's.

Two modes (``--numba=MODE``; the pytest plugin's ``--kdebug-numba=MODE``):

- ``cuda-only``: a real numba is installed; only ``numba.cuda`` and its submodules are kdebug's, as
  numba-cuda's simulator replaced them. numba's CPU JIT (``njit``, ``prange``, ``parallel=True``), its
  ``config`` and its types stay numba's; a kernel calling an ``@njit`` function compiles it as a device
  function from its ``py_func``, and numba's type objects in signatures and kernels are read as kdebug's.
- ``all``: no numba is installed (or asked for): ``numba`` and all its submodules are kdebug's stand-in
  (``kdebug.numba``: ``njit`` runs as Python, ``prange`` is ``range``, ``numba.config`` is read from the
  ``NUMBA_*`` variables).

``auto`` (the default) is ``cuda-only`` where ``import numba`` would find a real numba, else ``all``.

An import hook maps each numba module name to the kdebug module that provides it (``numba.cuda.X``
to ``kdebug.cuda.X``, other ``numba.X`` to ``kdebug.numba.X``, the types and errors modules as
numba aliases them); the kdebug module is entered under both names, so ``numba.cuda is kdebug.cuda``.
A numba module kdebug has no counterpart for fails with an error that names it.

In mode ``cuda-only`` the errors and warnings kdebug raises are numba's classes too, as numba-cuda's are:
each kdebug class C is made as a class deriving from C and from the ``numba.core.errors`` class of C's name
(``numba_error_class``), so ``except numba.core.errors.TypingError`` catches a kernel's typing error, and
kdebug's report still knows it as its own.

A Python the script starts (``subprocess.run([sys.executable, "-c", code])``, as numba's tests run their
snippets) imports numba as the script does: ``reach_child_pythons`` puts ``numba_site/`` (a
``sitecustomize``) first on its ``PYTHONPATH`` and the mode in ``KDEBUG_NUMBA``, and it installs the hook
there, on the script's backend.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

from kdebug import errors, settings
from kdebug.lang.missing import README_SECTION

SITE_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_site")

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


MODES = ("auto", "cuda-only", "all")


def _in_cuda(fullname: str) -> bool:
    return fullname == "numba.cuda" or fullname.startswith("numba.cuda.")


class NumbaFinder(importlib.abc.MetaPathFinder):
    """Finds ``numba`` and ``numba.*`` among kdebug's modules (first on sys.meta_path); with
    ``cuda_only``, only ``numba.cuda`` and its submodules (the rest is the real numba's)."""

    def __init__(self, cuda_only: bool = False) -> None:
        self.cuda_only = cuda_only

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "numba" and not fullname.startswith("numba."):
            return None
        if self.cuda_only and not _in_cuda(fullname):
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0])
        if parent is not None and not getattr(parent, "__name__", "").startswith("kdebug") \
                and not (self.cuda_only and fullname == "numba.cuda"):
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


def real_numba() -> bool:
    """Whether ``import numba`` finds a real numba here (found, not imported: kdebug's finder is skipped)."""
    module = sys.modules.get("numba")
    if module is not None and not getattr(module, "__name__", "").startswith("kdebug"):
        return True
    for finder in sys.meta_path:
        if isinstance(finder, NumbaFinder) or not hasattr(finder, "find_spec"):
            continue
        try:
            if finder.find_spec("numba", None) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


class NumbaModeError(ValueError):
    """``--numba=cuda-only`` without a numba to keep, or a mode that is none of MODES."""


def resolve(mode: str = "auto") -> str:
    """What ``mode`` means in this Python: ``cuda-only`` or ``all`` (``auto``: cuda-only where a real numba
    is installed)."""
    if mode not in MODES:
        raise NumbaModeError(f"--numba={mode}: not a numba mode; choose from {', '.join(MODES)}")
    if mode == "cuda-only" and not real_numba():
        raise NumbaModeError("--numba=cuda-only: no numba is installed in this Python, so there is no CPU JIT to "
                             "keep; install numba (pip install numba), or use --numba=all (kdebug's stand-in "
                             "for all of numba)")
    if mode == "auto":
        return "cuda-only" if real_numba() else "all"
    return mode


def describe(mode: str, asked: str = "auto") -> str:
    """The mode in force, as the report's first line says it."""
    if mode == "cuda-only":
        return f"cuda-only (numba.cuda is kdebug's; njit, prange and config are numba{_version()}'s)"
    why = "as asked" if asked == "all" else "no numba installed"
    return f"all (kdebug's stand-in for all of numba: {why})"


def _version() -> str:
    module = sys.modules.get("numba")
    version = getattr(module, "__version__", None) if module is not None else None
    if version is None:
        try:
            # kept lazy for start-up time (a stdlib module: no kdebug import; read only for the report)
            from importlib.metadata import PackageNotFoundError, version as dist_version
            version = dist_version("numba")
        except (ImportError, PackageNotFoundError, ValueError):
            return ""
    return f" {version}"


NUMBA_ERROR_NAMES = {"KdebugError": "NumbaError"}  # kdebug's classes that numba names otherwise
_numba_error_classes: dict = {}  # kdebug error or warning class -> the class numba_error_class made of it


def numba_error_class(cls: type) -> type:
    """What an error or warning of the kdebug class ``cls`` is made as in mode cuda-only: a class deriving
    from ``cls`` and from the class ``numba.core.errors`` names as the nearest kdebug class of ``cls``'s MRO
    (TypingError's TypingError, LoweringValueError's LoweringError, NumbaWarning's NumbaWarning, KdebugError's
    NumbaError, as in mode all, where numba's NumbaError is KdebugError), made once; ``cls`` itself where
    numba has none, or while numba.core.errors is not imported (``import numba.cuda`` imports it)."""
    made = _numba_error_classes.get(cls)
    if made is not None:
        return made
    numba_errors = sys.modules.get("numba.core.errors")
    if numba_errors is None or getattr(numba_errors, "__name__", "").startswith("kdebug"):
        return cls
    made = cls
    for kdebug_class in cls.__mro__:
        if not kdebug_class.__module__.startswith("kdebug."):
            continue
        numba_class = getattr(numba_errors, NUMBA_ERROR_NAMES.get(kdebug_class.__name__, kdebug_class.__name__), None)
        if isinstance(numba_class, type) and issubclass(numba_class, BaseException):
            if not issubclass(cls, numba_class):  # else made as numba's already (unpickled, or a user's subclass)
                made = type(cls.__name__, (cls, numba_class), {
                    "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                    "__reduce__": _reduce_as_kdebugs})
            break
    return _numba_error_classes.setdefault(cls, made)


def _reduce_as_kdebugs(error):
    """Pickled as an error of its kdebug class, which the Python that loads it makes in its own mode."""
    return type(error).__bases__[0], error.args, error.__dict__ or None


_installed: list = [None, "auto"]  # the mode install() put in force in this process, and the one asked for


def installed_mode() -> str | None:
    """``cuda-only`` or ``all`` once install() ran in this process, else None."""
    return _installed[0]


def installed_description() -> str | None:
    """The mode in force, as ``describe`` says it; None before install()."""
    return describe(*_installed) if _installed[0] else None


def install(mode: str = "auto") -> str:
    """Make ``import numba.cuda`` give kdebug's modules (and, in mode ``all``, ``import numba`` and the rest);
    returns the mode in force. Raises NumbaModeError for a mode that cannot be had here."""
    asked, mode = mode, resolve(mode)
    cuda_only = mode == "cuda-only"
    for f in [f for f in sys.meta_path if isinstance(f, NumbaFinder)]:
        sys.meta_path.remove(f)
    sys.meta_path.insert(0, NumbaFinder(cuda_only))
    shim = getattr(sys.modules.get("numba"), "__name__", "").startswith("kdebug")  # mode all's, earlier
    replaced = [n for n in sys.modules if _in_cuda(n)] if cuda_only and not shim else \
        [n for n in sys.modules if n == "numba" or n.startswith("numba.")]
    for name in replaced:
        del sys.modules[name]  # a real numba(.cuda) imported earlier must not answer for kdebug's
    numba = sys.modules.get("numba")
    if cuda_only and numba is not None and "cuda" in vars(numba):
        delattr(numba, "cuda")  # so that "from numba import cuda" imports kdebug's
    errors.make_errors_as(numba_error_class if cuda_only else None)
    _installed[:] = [mode, asked]
    return mode


def reach_child_pythons(mode: str, backend: str) -> dict:
    """Make the Pythons this process starts import numba as this one does (mode ``cuda-only`` or ``all``, as
    ``install`` returned it), their kernels on ``backend``; what the environment held before, for
    ``settings.restore_environment``."""
    names = ("PYTHONPATH", "KDEBUG_NUMBA", "KDEBUG_BACKEND")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["PYTHONPATH"] = settings.python_path_with(SITE_FOLDER)
    settings.set_variable("KDEBUG_NUMBA", mode)
    settings.set_variable("KDEBUG_BACKEND", backend)
    return saved


def install_from_environment() -> None:
    """In a Python a ``kdebug run --numba`` script started (``numba_site/sitecustomize.py``): install the mode
    ``KDEBUG_NUMBA`` names; a mode that cannot be had here says why on stderr and leaves numba as it is."""
    mode = settings.variable("KDEBUG_NUMBA")
    if not mode:
        return
    try:
        install(mode)
    except NumbaModeError as exc:
        print(f"kdebug: KDEBUG_NUMBA={mode}: {exc}", file=sys.stderr)
