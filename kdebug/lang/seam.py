"""The one seam between what users write and the running session.

``lang`` lies below the driver and the session, so it never imports them: the
session installs itself here when it starts (dependency inversion), and
``cuda.jit``, launches, host arrays and ``kdebug.set_options`` reach it only
through ``current()``. A plain ``python script.py`` installs nothing: the
first use creates a session through the default factory, which the package
root registers (``kdebug/__init__.py``).
"""
from __future__ import annotations

from typing import Callable, Protocol


class KernelSession(Protocol):
    """What ``lang`` asks of the running session."""

    def compile_kernel(self, dispatcher, argtypes: tuple):
        """Compile (or fetch from the cache) a kernel for these argument types."""

    def compiled_for(self, dispatcher) -> dict:
        """{argtypes: compiled kernel} of everything compiled for ``dispatcher``."""

    def launch(self, dispatcher, args, argtypes: tuple, grid, block, shared: int) -> None:
        """Compile if needed and run one grid."""

    def ptx_of(self, dispatcher, argtypes: tuple) -> tuple[str, dict | None]:
        """A kernel's PTX and ptxas's figures for its entry (None without ptxas), on any backend (numba's
        inspect_asm, get_regs_per_thread)."""

    def warn(self, message: str, loc=None, category: str = "numba") -> None:
        """A warning the user sees (a Diagnostic event): a cuda.jit option without effect..."""

    def gpu_runtime(self):
        """The GPU runtime (device memory, the current device) when kernels run on a GPU, else None."""

    def set_options(self, **changes) -> None:
        """``kdebug.set_options``: the checks compiled into kernels (None: unchanged), the thread-shuffle
        seed (None: off; False: unchanged). The keywords are ``Session.set_options``'s, declared there only."""


_installed: KernelSession | None = None
_default_factory: Callable[[], KernelSession] | None = None


def install(session: KernelSession | None) -> None:
    """Make ``session`` the one kernels compile and launch through (None: the next use makes a default one)."""
    global _installed
    _installed = session


def set_default_factory(factory: Callable[[], KernelSession]) -> None:
    """How a session is made when a script uses kernels before anything installed one."""
    global _default_factory
    _default_factory = factory


def current() -> KernelSession:
    """The installed session, created by the default factory on first use."""
    if _installed is None:
        if _default_factory is None:
            raise RuntimeError("no kdebug session: import kdebug (or kdebug.cuda) to get the default one")
        install(_default_factory())
    return _installed
