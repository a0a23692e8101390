"""Ctrl-C in the user's script, raised where it can stop it.

Python raises ``KeyboardInterrupt`` at whatever bytecode runs when SIGINT comes. Two places of a kdebug
session make that wrong, both measured with ``kdebug run`` and a SIGINT at moments spread over a run of
sample_kernels/gradient_hvp.py:

- a finalizer (``__del__``, such as llvmlite's disposal of the strings and objects LLVM hands back) or a
  weak reference's callback: an exception there is printed as "ignored" and lost. The ^C never stopped the
  script, which ran to its end.
- llvmlite's own Python code, between a call into LLVM and the bookkeeping of who owns what: after
  ``Module.link_in`` LLVM has consumed the linked module, and an exception before llvmlite detaches it
  makes its finalizer free it a second time: a segmentation fault.

While the script runs (``run_script``), SIGINT's handler raises ``KeyboardInterrupt`` as Python's does
where the main thread is in code of its own, ours or the user's; found in a finalizer or in llvmlite, it
asks again a moment later (``RETRY_S``), by then past the unsafe frames. The debuggee installs it before
the session is made (``child_main``). The user's own handler, once the script installs one, replaces this
one as it would Python's.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import weakref
import _weakrefset

import llvmlite

RETRY_S = 0.005  # the unsafe stretches are a call into LLVM and the Python around it: well under this
_LLVMLITE = os.path.dirname(os.path.abspath(llvmlite.__file__)) + os.sep
_WEAKREF_CALLBACKS = {os.path.abspath(m.__file__) for m in (weakref, _weakrefset)}  # finalize, WeakSet, WeakValueDictionary


def unsafe(frame) -> bool:
    """An exception raised at ``frame`` would be lost (a finalizer, a weak reference's callback: Python prints
    it as ignored) or corrupt llvmlite's ownership."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.startswith(_LLVMLITE) or code.co_filename in _WEAKREF_CALLBACKS:
            return True
        frame = frame.f_back
    return False


class SafeInterrupt:
    """``with SafeInterrupt():`` SIGINT raises KeyboardInterrupt only where the script can see it. Only in
    the main thread, and only in place of Python's own handler (an embedding program's stays).

    The handler makes no thread and takes no lock: a handler runs between two bytecodes of the code it
    interrupted, which may hold threading's own locks (a ``Thread.start``), and a handler that started a
    thread there waited for good (a debuggee hung, seen once in ~1,000 interrupted runs). A thread made
    here waits on a pipe instead; the handler writes a byte to it, and the thread signals again after
    ``RETRY_S``."""

    def __enter__(self) -> "SafeInterrupt":
        self._installed = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if self._installed:
            self._pid, self._open = os.getpid(), True
            wake, self._ask = os.pipe()
            os.set_blocking(self._ask, False)
            threading.Thread(target=self._signal_again, args=(wake,), daemon=True,
                             name="kdebug-interrupt-retry").start()
            self._handler = self._on_sigint
            signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._installed:
            self._open = False
            if signal.getsignal(signal.SIGINT) == self._handler:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            os.close(self._ask)  # the thread reads the end and ends

    def _on_sigint(self, signum, frame) -> None:
        if os.getpid() == self._pid and unsafe(frame):  # (a forked child has no thread to ask: as Python)
            try:
                os.write(self._ask, b"!")
            except OSError:  # full: a retry is on its way already
                pass
            return
        raise KeyboardInterrupt

    def _signal_again(self, wake: int) -> None:
        try:
            while os.read(wake, 1):
                time.sleep(RETRY_S)
                if self._open:
                    os.kill(self._pid, signal.SIGINT)
        finally:
            os.close(wake)
