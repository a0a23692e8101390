"""The TUI's terminal: the screen written on a descriptor of its own, and the terminal given back on
every way out.

**A descriptor of its own.** Textual's Linux driver writes the screen to ``sys.__stderr__``, i.e. to
file descriptor 2. kdebug's LLVM work redirects descriptor 2 for a moment to read what LLVM prints
there (remarks, the pass gate's lines: ``pass_record.captured_stderr``). Any frame Textual wrote in that
moment went into LLVM's capture, and Textual, which only writes what changed, believed it shown: the
screen stayed stale until something else changed (issue: "the screen goes stale after a live run").
The restoring sequences written on exit could be lost the same way (the terminal left in the
alternate screen). ``TerminalDriver`` writes to a duplicate of descriptor 2 made before anything can
redirect it, so nothing that moves descriptor 2 touches the screen.

**Every way out** (``guard``). A process that dies of a signal (SIGSEGV in native code, SIGKILL,
SIGTERM) runs no Python, so it cannot restore the terminal itself. ``kdebug FILE.py`` therefore forks
before the app starts: the child runs the TUI, the parent only waits. When the child ended any other
way than by returning, the parent puts the terminal back (its saved modes, the main screen, the cursor,
mouse reporting off), says how the TUI ended, and exits as a shell reports a signal (128 + N).
"""
from __future__ import annotations

import os
import selectors
import signal
import sys
import termios
import threading
from codecs import getincrementaldecoder

from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

# what a full-screen app may have turned on, turned off: mouse reporting (every kind Textual uses),
# bracketed paste, focus events, the kitty keyboard protocol; line wrap back on; the main screen; the cursor
RESET = ("\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1016l\x1b[?2004l\x1b[?1004l"
         "\x1b[<u\x1b[?7h\x1b[?1049l\x1b[?25h")


class _WakingEvent(threading.Event):
    """The driver's exit event: setting it also wakes the input thread's ``select`` (``TerminalDriver``)."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        try:
            os.write(self._wake_fd, b"x")
        except OSError:  # closed (the driver's close) or full: the thread wakes at its timeout, as Textual's does
            pass


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, writing the screen to a duplicate of descriptor 2 (see the module's text),
    and ending its input thread as soon as the app stops (``run_input_thread``)."""

    def __init__(self, app, **kwargs) -> None:
        super().__init__(app, **kwargs)
        self._file = open(os.dup(sys.__stderr__.fileno()), "w", encoding="utf-8", errors="replace",  # noqa: SIM115
                          closefd=True)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.exit_event = _WakingEvent(self._wake_write)
        self._suspended = False  # inside suspend_application_mode: close() keeps the descriptors

    def run_input_thread(self) -> None:
        """Textual's input loop (``LinuxDriver.run_input_thread``, Textual 8.2), waking also when the exit
        event is set. Textual's waits in ``select(0.1)`` until it next looks at the event, then sleeps
        ``select(0.1)`` on an emptied selector: every quit, and every suspend (the stage editor's,
        edit_stage.py), waited 0.1-0.2 s for it (``disable_input`` joins this thread first)."""
        selector = selectors.SelectSelector()
        fileno, wake = self.fileno, self._wake_read
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        self._drain_wake()  # a wake-up left from an earlier run of this thread (a suspend and resume)
        parser = XTermParser(self._debug)
        feed, tick = parser.feed, parser.tick
        decode = getincrementaldecoder("utf-8")().decode

        def process(selector_events, final: bool = False) -> None:
            for last, (key, mask) in loop_last(selector_events):
                if key.fd == fileno and mask & selectors.EVENT_READ:
                    data = decode(os.read(fileno, 1024 * 4), final=final and last)
                    if not data:  # stdin piped and at its end
                        break
                    for event in feed(data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(0.1))
            process([], final=True)  # Textual's last look: its selector holds nothing by then
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 64):
                pass
        except (BlockingIOError, OSError):
            pass

    def suspend_application_mode(self) -> None:
        """Textual's suspend (^z, the stage editor) closes the driver and its resume starts it again: the
        screen's descriptor and the wake-up pipe stay open for that (closed, the resumed input thread died of
        EBADF and the screen's writes failed)."""
        self._suspended = True
        try:
            super().suspend_application_mode()
        finally:
            self._suspended = False

    def close(self) -> None:
        super().close()  # stops the writer thread, which flushed everything it had
        if self._suspended:
            return
        try:
            self._file.close()
        except OSError:
            pass
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass


def driver_class(default):
    """The driver the app runs with: ``TerminalDriver`` where Textual would take its Linux driver (a
    terminal), else Textual's choice (``kdebug serve``'s web driver, set through the environment)."""
    return TerminalDriver if default is LinuxDriver else default


def guard() -> int | None:
    """Fork a guard for the terminal (see the module's text). Returns None in the child, which goes on
    to run the TUI; in the parent, once the child ended, the exit status to give."""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # no real stdin (a test's pseudo-file): no terminal to guard
        return None
    if threading.active_count() > 1 or not os.isatty(fd):  # a fork beside other threads is not safe
        return None
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    # the terminal's own ^C and ^\ reach the whole foreground group: the child decides what they do,
    # and the parent ignores them from before the fork on (a ^C in between must not end it alone)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    parent = os.getppid()
    pid = os.fork()
    if pid == 0:
        global guarded_child, guard_parent, _saved_modes
        guarded_child, guard_parent, _saved_modes = True, parent, (fd, saved)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            # a ^C before Textual puts the terminal in raw mode must end the start as Python's own does:
            # with the default handler in place, asyncio.run (Textual's) would install its own, which only
            # cancels the app's task on a first ^C, and Textual's shutdown swallows the cancel: the ^C was lost
            signal.signal(signal.SIGINT, _keyboard_interrupt)
        return None

    def forward(signum, _frame) -> None:  # kill PID, a closed terminal: the TUI ends as it would alone
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            _, status = os.waitpid(pid, os.WUNTRACED)
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if os.WIFSTOPPED(status):  # ^Z in the TUI: the job stops as a whole, and goes on with it (fg)
            os.kill(os.getpid(), signal.SIGSTOP)
            continue
        break
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        restore(fd, saved)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        how = "crashed" if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE) \
            else "was ended"
        print(f"kdebug: the TUI {how} ({name}); the terminal is restored", file=sys.stderr, flush=True)
        return 128 + sig
    try:  # the child restored it; a second time costs nothing and covers a child that could not
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    except termios.error:
        pass
    return os.WEXITSTATUS(status)


guarded_child = False  # True in the TUI's process that guard() forked
guard_parent = 0  # there: the guard's parent (the shell, where a shell started kdebug)
_saved_modes = None  # there: (the terminal's descriptor, its modes before the TUI)


def give_back() -> None:
    """In the TUI's process, about to end without the app's own teardown (``os._exit``): the terminal as it was
    (the guard restores it only for a child that a signal ended, and this one exits). Written through
    /dev/tty, which no capture of descriptor 2 moves."""
    if _saved_modes is None:
        return
    try:
        tty = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        tty = None
    try:
        restore(*_saved_modes, out=tty)
    finally:
        if tty is not None:
            os.close(tty)


def resumable_as_a_job() -> bool:
    """Whether a stopped kdebug would be continued: its process group is a job of a shell with job control.
    POSIX calls a group orphaned when no member's parent is in the same session and another group; the
    kernel then discards a terminal's stop signals, and nothing would ever send the SIGCONT (kdebug under
    ``setsid``, a test's pseudo-terminal, a service). The ancestors in kdebug's own group are walked up (a
    shell script that runs kdebug is in the job with it) to the first one outside it."""
    pid = guard_parent if guarded_child else os.getppid()
    try:
        for _ in range(64):  # a bound on a walk through /proc, which other processes change meanwhile
            if pid <= 1:
                return False
            if os.getpgid(pid) != os.getpgrp():
                return os.getsid(pid) == os.getsid(0)
            with open(f"/proc/{pid}/stat", "rb") as f:  # ppid: the field after the name's closing parenthesis
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):  # gone, or no /proc: the stop could not be undone for sure
        return False
    return False


def suspend(app) -> None:
    """^z: kdebug stops as a shell's job does — the TUI leaves the screen, the guard stops with it (``guard``),
    and the script's process group (a session of its own, which the shell's SIGCONT would not reach) is
    stopped and continued with them — and ``fg`` brings it all back, the screen drawn again whole. Where no
    shell could continue it, or the driver cannot suspend (``kdebug serve``'s browser), it says so and stays."""
    driver = getattr(app, "_driver", None)
    if driver is None or not driver.can_suspend:
        return app.notify("^z: this TUI cannot be suspended here (a browser session, a test)", severity="warning")
    if not resumable_as_a_job():
        return app.notify("^z: no shell with job control started kdebug, so nothing could bring a stopped "
                          "kdebug back (fg); q quits", severity="warning", timeout=8)
    if not getattr(app, "_resumes_whole", False):
        app.app_resume_signal.subscribe(app, lambda _app: _resumed(app))
        app._resumes_whole = True
    _signal_script(app, signal.SIGSTOP)
    app.action_suspend_process()


def _resumed(app) -> None:
    _signal_script(app, signal.SIGCONT)
    app.refresh(layout=True)  # the alternate screen comes back blank: every cell drawn again


def _signal_script(app, sig: int) -> None:
    dbg = getattr(app, "debuggee", None)
    proc = getattr(dbg, "proc", None)
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def leave(status: int) -> None:
    """End a process of the guarded pair (the guard, or the TUI once its app ended) with ``status`` at once:
    the streams flushed and the atexit functions run, as a normal exit does, but no teardown of every
    module and object (Textual's, LLVM's static destructors): 0.25 s of a quit, measured, for nothing to
    write. Every file the app wrote (the trace) it closed on unmount; every thread has ended or is a daemon."""
    import atexit  # kept lazy for start-up time (a stdlib module: no kdebug import)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def _keyboard_interrupt(_signum, _frame) -> None:
    """SIGINT in the TUI's process (a ^C before raw mode, a kill -INT): KeyboardInterrupt, as Python's default."""
    raise KeyboardInterrupt


def restore(fd: int, saved, out: int | None = None) -> None:
    """The terminal as it was before the TUI: its modes, the main screen, the cursor, no mouse reporting
    (written on ``out``, standard error where None)."""
    try:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    except termios.error:
        pass
    try:
        os.write(sys.stderr.fileno() if out is None else out, RESET.encode())
    except OSError:
        pass
