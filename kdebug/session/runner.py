"""The one runner: a script run under a debug session, for every face of kdebug.

``run_in_process`` runs it here; the debuggee child (``kdebug.session.debuggee``)
calls it with the options it received as data, and the TUI, headless runs and
``dump`` all start that child.
"""
from __future__ import annotations

import builtins
import os
import sys
import threading
import traceback
import types
from typing import Callable, Iterable

from kdebug import events as E
from kdebug import lazy_dataclasses, settings, stack_room
from kdebug.errors import KdebugError
from kdebug.frontend import source_registry
from kdebug.lang import numba_compat
from kdebug.session.options import RunOptions
from kdebug.session.safe_interrupt import SafeInterrupt

_KDEBUG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configure_session(options: RunOptions):
    """The active session of this process, built from the options."""
    # kept lazy for start-up time: a debuggee's parent (the TUI, the headless face) imports this module
    # and never compiles; only the process that runs the script loads the driver, the targets and the
    # runtimes (measured: about 0.2 s more on top of the parent's imports)
    from kdebug.session.live import Session, set_session

    edits = None
    if options.override:  # kdebug run --override DIR: the edits enter the compile options (and every key)
        from kdebug.driver import overrides  # kept lazy for start-up time: only a run with --override reads them
        try:
            edits = overrides.load(options.override)
        except OSError as exc:
            raise KdebugError(f"--override {options.override}: {exc.strerror or exc}") from None
    session = Session(options.backend, options=options.compile_options(edits or None), recording=options.recording,
                      emit_ptx=options.target == "ptx", ptx_arch=options.arch)
    session.shuffle_seed = options.shuffle_seed
    session.kernel_print_stdout = options.kernel_print_stdout
    set_session(session)
    return session


def run_in_process(options: RunOptions, subscribers: Iterable[Callable[[E.Event], None]] = (),
                   on_session: Callable[[object], Iterable[Callable[[E.Event], None]]] | None = None) -> int:
    """Run the script here, every event to ``subscribers`` (and to those ``on_session`` makes
    once the session exists); returns the exit status. Never raises for the script's sake."""
    subscribers = list(subscribers)
    try:
        session = configure_session(options)
    except KdebugError as exc:
        to_stderr(str(exc) + "\n")
        for sub in subscribers:
            sub(E.SessionEnded(status="failed", exit_code=1, error=str(exc)))
        return 1
    for sub in subscribers + list(on_session(session) if on_session else ()):
        session.bus.subscribe(sub)
    numba_mode = None
    if options.numba:
        try:
            numba_mode = numba_compat.resolve(options.numba_mode)
        except numba_compat.NumbaModeError as exc:
            to_stderr(f"kdebug: error: {exc}\n")
            session.bus.emit(E.SessionEnded(status="failed", exit_code=2, error=str(exc)))
            return 2
    # kept lazy for start-up time: the driver is loaded by now (configure_session), not by importing this module
    from kdebug.driver.strategies import origin
    session.bus.emit(E.SessionStarted(script=options.script, backend=session.backend, strategy=session.strategy,
                                      argv=list(options.args), sanitizers=session.sanitizers,
                                      strategy_origin=origin(str(session.strategy)),
                                      numba=numba_compat.describe(numba_mode, options.numba_mode)
                                      if numba_mode else None))
    status = run_script(options.script, list(options.args), options.numba, session, module=options.module,
                        numba_mode=options.numba_mode)
    _flush(sys.stdout)
    _flush(sys.stderr)
    session.bus.emit(E.SessionEnded(status="ok" if status == 0 else "failed", exit_code=status))
    return status


def _flush(stream) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):  # the script closed it, or the pipe behind it is gone
        pass


def quiet_stdout() -> None:
    """Point fd 1 at /dev/null: whoever read the output (``| head``) has gone."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE, what a shell shows for a writer whose reader went away


PYTEST_MODULES = ("pytest", "py.test")
PYTEST_PLUGIN = "kdebug.pytest_plugin"


def run_script(path: str, args: list[str], numba: bool, session, module: str | None = None,
               numba_mode: str = "auto") -> int:
    """Run a user script in this process, then the ``atexit`` functions it registered (while the session
    still records: their launches are the script's too); returns its exit status. Never raises.
    With ``module`` (``kdebug run -m MODULE``), ``path`` is that module's file and it runs as ``python -m``
    runs it: as ``__main__``, with the current folder first on ``sys.path``; pytest gets kdebug's plugin.
    ``numba_mode``: cuda-only (only numba.cuda is kdebug's), all, auto (numba_compat)."""
    if numba:
        try:
            numba_mode = numba_compat.install(numba_mode)
        except numba_compat.NumbaModeError as exc:
            to_stderr(f"kdebug: error: {exc}\n")
            return 2
    # the Pythons the script starts (numba's tests run snippets in sys.executable) import numba as it does
    saved_environment = numba_compat.reach_child_pythons(numba_mode, session.backend) if numba else {}
    if module in PYTEST_MODULES:
        use_pytest_plugin(numba, session.backend, numba_mode)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(path)))
    try:
        status = syntax_check(path, session)
        if status:
            return status
        with ExitHandlers() as at_exit, SafeInterrupt(), SignalHandlers(), source_registry.recording():
            before = set(threading.enumerate())
            try:
                # on a frame-stack chunk with room: the script's compiles and its own recursion (stack_room.py)
                stack_room.call(run_module, module) if module else stack_room.call(exec_main, path)
            except BaseException as exc:  # noqa: BLE001 - the user's script failed: report it, keep going
                status = script_failure(exc, path, numba, session)
            try:
                join_script_threads(before)  # as the interpreter does before its atexit handlers
            except BaseException as exc:  # noqa: BLE001 - Ctrl-C while waiting for them
                status = script_failure(exc, path, numba, session) or status
        for fn, fargs, fkwargs in reversed(at_exit.handlers):
            try:
                fn(*fargs, **fkwargs)
            except BaseException as exc:  # noqa: BLE001 - as the interpreter does: report, run the rest
                status = script_failure(exc, path, numba, session) or status
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path
        settings.restore_environment(saved_environment)
    if status == 0 and session.failed:
        status = 1
    return status


def exec_main(path: str) -> None:
    """Run the file as ``python path`` runs it: its code in a fresh ``__main__`` module. Not runpy's
    ``run_path``, which restores ``sys.argv[0]`` afterwards and so fails for a script that deleted or
    replaced ``sys.argv``: the process state the script leaves is its own."""
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None,
                           __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def run_module(module: str) -> None:
    """``python -m module``: the module (a package's ``__main__``) run as ``__main__``."""
    import runpy  # kept lazy for start-up time (a stdlib module: no kdebug import)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def use_pytest_plugin(numba: bool, backend: str, numba_mode: str = "auto") -> None:
    """``kdebug run -m pytest``: pytest loads kdebug.pytest_plugin (per-test diagnostics, findings fail
    their tests). ``PYTEST_PLUGINS`` reaches pytest-xdist's workers too, which run their own sessions on
    this run's backend and make numba kdebug's unless told ``--kdebug-no-numba`` (a run without ``--numba``),
    in this run's numba mode (``--kdebug-numba=MODE``)."""
    settings.set_variable("KDEBUG_BACKEND", backend)
    plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    if PYTEST_PLUGIN not in plugins:
        os.environ["PYTEST_PLUGINS"] = ",".join(plugins + [PYTEST_PLUGIN])
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    if not numba and "--kdebug-no-numba" not in addopts.split():
        os.environ["PYTEST_ADDOPTS"] = (addopts + " --kdebug-no-numba").strip()
    elif numba and not any(a.startswith("--kdebug-numba=") for a in addopts.split()):
        os.environ["PYTEST_ADDOPTS"] = (addopts + f" --kdebug-numba={numba_mode}").strip()


def join_script_threads(before: set) -> None:
    """Wait for the non-daemon threads the script started (and those they start), as the interpreter
    waits for them when the main module returns, so that their launches belong to the session. kdebug's
    own threads (named ``kdebug-...``: the block pool, the optimising tier) are not the script's."""
    while True:
        waiting = [t for t in threading.enumerate()
                   if t not in before and not t.daemon and t.is_alive() and t is not threading.current_thread()
                   and not t.name.startswith("kdebug-")]
        if not waiting:
            return
        for t in waiting:
            t.join()


class SignalHandlers:
    """While the script runs, a Python signal handler it installs first makes kdebug's lazily made classes
    whole (``lazy_dataclasses.realize_all``): a handler may run in the middle of making one."""

    def __enter__(self) -> "SignalHandlers":
        import signal  # kept lazy for start-up time (a stdlib module: no kdebug import)
        self._signal, self._saved = signal, signal.signal

        def install(signum, handler):
            if callable(handler):
                lazy_dataclasses.realize_all()
            return self._saved(signum, handler)
        signal.signal = install
        return self

    def __exit__(self, *exc) -> None:
        self._signal.signal = self._saved


class ExitHandlers:
    """Collects the ``atexit`` registrations made while the script runs, so the runner can call them."""

    def __enter__(self) -> "ExitHandlers":
        import atexit
        self.handlers: list = []
        self._atexit, self._saved = atexit, (atexit.register, atexit.unregister)

        def register(fn, *args, **kwargs):
            self.handlers.append((fn, args, kwargs))
            return fn

        def unregister(fn):
            self.handlers[:] = [h for h in self.handlers if h[0] != fn]
        atexit.register, atexit.unregister = register, unregister
        return self

    def __exit__(self, *exc) -> None:
        self._atexit.register, self._atexit.unregister = self._saved


def script_failure(exc: BaseException, path: str, numba: bool, session) -> int:
    """Report what ended the script (on stderr and as a diagnostic); returns the exit status it means."""
    if isinstance(exc, SystemExit):
        code = exc.code  # as Python does: an int is the status, anything else is printed and means 1
        if code is not None and not isinstance(code, int):
            to_stderr(safe_str(code) + "\n")
        return code if isinstance(code, int) else (0 if code is None else 1)
    if isinstance(exc, BrokenPipeError):  # kdebug ... | head: the reader has what it wanted
        quiet_stdout()
        session.bus.emit(E.Diagnostic(severity="warning", category="script",
                                      message="the script's output pipe closed; the script was stopped there"))
        return BROKEN_PIPE_STATUS
    if isinstance(exc, KdebugError):
        if not getattr(exc, "reported", False):
            session.bus.emit(E.Diagnostic(severity="error", message=exc.message, category="script",
                                          location=exc.loc.to_json() if exc.loc else None, text=str(exc)))
        to_stderr(str(exc) + "\n")
        return 1
    text = user_traceback(exc, path)
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "numba" and not numba:
        text += f"hint: No module named 'numba': this looks like a numba.cuda script; try kdebug --numba {path}\n"
    session.bus.emit(E.Diagnostic(severity="error", message=f"{type(exc).__name__}: {safe_str(exc)}",
                                  category="script", text=text.rstrip()))
    to_stderr(text)
    return 1


def to_stderr(text: str) -> None:
    """Write to the script's stderr, or to fd 2 when the script closed ``sys.stderr``."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        try:
            os.write(2, text.encode("utf-8", "replace"))
        except OSError:
            pass


def syntax_check(path: str, session) -> int:
    """1, with the error reported as Python shows it (the user's line and caret, no kdebug or runpy
    frames), when the script does not compile; else 0."""
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes (the CLI checks those first)
        text = "".join(traceback.format_exception_only(type(exc), exc))
        to_stderr(text)
        loc = ({"file": path, "line": exc.lineno, "col": exc.offset or 1}
               if isinstance(exc, SyntaxError) and exc.lineno else None)
        msg = f"{type(exc).__name__}: {exc.msg if isinstance(exc, SyntaxError) else exc}"
        session.bus.emit(E.Diagnostic(severity="error", message=msg, category="script", location=loc,
                                      text=text.rstrip()))
        return 1
    return 0


def safe_str(obj) -> str:
    """``str(obj)``, also for an object whose ``__str__`` raises."""
    try:
        return str(obj)
    except Exception:  # noqa: BLE001 - the user's __str__ is broken; say so instead of dying with it
        return f"<{type(obj).__name__} whose __str__ raised>"


def user_traceback(exc: BaseException, path: str) -> str:
    """The traceback from the user's script down, without runpy's and kdebug's own frames."""
    tb = exc.__traceback__
    frames = traceback.extract_tb(tb)
    abspath = os.path.abspath(path)
    start = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == abspath), None)
    if start is None:  # raised before the script's first line ran: none of these frames are the user's
        frames = [f for f in frames if not f.filename.startswith("<")]
    # below the script's first frame kdebug's own frames stay out too: a launch that raises the kernel's
    # exception (debug=True) or the compile hook an import passes through are not the user's code
    frames = [f for f in frames[start or 0:] if not f.filename.startswith(_KDEBUG_DIR + os.sep)]
    lines = (["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else [])
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)
