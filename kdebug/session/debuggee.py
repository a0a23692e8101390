"""The debuggee: the user's script in a child process, streaming events to the TUI.

    python -m kdebug.session.debuggee --events-fd W --control-fd R --options JSON

The child runs the script through the one runner (``session.runner``) with the
``RunOptions`` it receives as JSON, and writes every
event as one JSON line to fd W. It reads control messages, one JSON object a
line, from fd R:

    {"cmd": "continue"}  {"cmd": "step"}  {"cmd": "pause"}
    {"cmd": "break", "kinds": ["reentrant", "finish"]}

Breakpoints work purely on events: the driver emits them synchronously just
before the action, so a subscriber that blocks on the control pipe stops the
compilation right there. A crash, a hang or a segfault of the child never
reaches the parent: ``Debuggee`` turns it into a ``session_ended`` event.
"""
from __future__ import annotations

import collections
import fcntl
import json
import os
import queue
import signal
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Callable

from kdebug.processes import die_with_parent
from kdebug import events as E
from kdebug.runtime import progress
from kdebug.session.options import BREAKPOINTS, RunOptions, parse_breakpoints  # noqa: F401 - re-exported

ARROW = " \u2192 "


def breakpoint_of(ev: E.Event) -> str | None:
    """The breakpoint kind an event announces, if any (each is emitted just before its action)."""
    if isinstance(ev, E.JobRequested) and ev.reason != "host":
        return "deferred"
    if isinstance(ev, E.Reentrant):
        return "reentrant"
    if isinstance(ev, E.PhaseStarted) and ev.phase == "finish":
        return "finish"
    if isinstance(ev, E.LaunchStarted):
        return "launch"
    return None


def describe_stop(ev: E.Event, kind: str | None) -> str:
    """One line saying what is about to happen."""
    if kind == "deferred":
        return f"deferred request: #{ev.job} {ev.name} requested by #{ev.parent} via {ev.reason}"
    if kind == "reentrant":
        return f"re-entrant request: {ARROW.join(ev.cycle_names)} ({ev.resolution})"
    if kind == "finish":
        return f"before finish: the finish passes are about to run for #{ev.job} {ev.name}"
    if kind == "launch":
        dims = lambda d: "(" + ",".join(map(str, d)) + ")"  # noqa: E731
        return f"before launch #{ev.launch}: {ev.name} grid={dims(ev.grid)} block={dims(ev.block)}"
    if isinstance(ev, E.PhaseStarted):
        return f"before phase {ev.phase} of #{ev.job} {ev.name}"
    if isinstance(ev, E.JobRequested):
        return f"job #{ev.job} {ev.name} requested"
    return ev.kind


class Stepper:
    """A bus subscriber that pauses the debuggee at breakpoints and steps, driven by the control pipe."""

    def __init__(self, bus: E.EventBus, control: IO[str] | None, breakpoints: set[str],
                 on_where: Callable[[dict], None] | None = None) -> None:
        self.bus = bus
        self.on_where = on_where  # {"cmd": "where" or "stack"}: answered from this thread, while the script runs
        self.breakpoints = set(breakpoints)
        self.stepping = False  # pause at the next phase, request or launch
        self.commands: queue.Queue[str] = queue.Queue()
        self.exit_when_orphaned = True
        os.register_at_fork(after_in_child=self._after_fork_in_child)
        if control is not None:
            threading.Thread(target=self._read, args=(control,), daemon=True, name="kdebug-control").start()

    def _after_fork_in_child(self) -> None:
        """A forked child has no control thread: it never stops at a breakpoint (nobody could resume it)."""
        self.breakpoints, self.stepping = set(), False

    def _read(self, control: IO[str]) -> None:
        for line in control:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            cmd = msg.get("cmd")
            if cmd == "break":
                self.breakpoints = parse_breakpoints(msg.get("kinds") or [])
            elif cmd == "pause":
                self.stepping = True
            elif cmd in ("continue", "step"):
                self.commands.put(cmd)
            elif cmd in ("where", "stack") and self.on_where is not None:
                self.on_where(msg)
        # EOF: the TUI went away (it closes the pipe only after killing us, or by dying itself);
        # nobody is left to show the session, so do not linger as an orphan.
        self.breakpoints, self.stepping = set(), False
        self.commands.put("continue")
        if self.exit_when_orphaned:
            os._exit(1)

    def __call__(self, ev: E.Event) -> None:
        if isinstance(ev, (E.Paused, E.Resumed, E.Snapshot)):
            return
        kind = breakpoint_of(ev)
        if kind is not None and kind in self.breakpoints:
            hit = kind
        elif self.stepping and (kind is not None or isinstance(ev, (E.PhaseStarted, E.JobRequested))):
            hit = "step"
        else:
            return
        job = getattr(ev, "job", None)
        self.bus.emit(E.Paused(breakpoint=hit, job=job if isinstance(job, int) else None,
                               launch=getattr(ev, "launch", None), message=describe_stop(ev, kind)))
        t0 = time.perf_counter()
        cmd = self.commands.get()
        self.bus.paused_seconds += time.perf_counter() - t0
        self.stepping = cmd == "step"
        self.bus.emit(E.Resumed(action=cmd))


class _PipeWriter:
    """Each event as one JSON line; when the TUI is gone the debuggee has nobody to talk to and exits.

    Safe against re-entry: a signal handler that launches a kernel while an event is being written runs
    on the same thread, inside the write (the bus's lock is re-entrant); its lines are queued and the
    outer call writes them after its own, so a line is never torn and a buffered writer never re-entered."""

    def __init__(self, f: IO[str]) -> None:
        self.f = f
        self._pending: collections.deque[str] = collections.deque()
        self._writing = False
        self.forked = False
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        """A process the script forked shares the events pipe: its events would interleave with the
        session's (and its job ids collide). One line says it runs unrecorded; the rest stay out."""
        self._pending.clear()
        self._writing = False
        if not self.forked:
            self.forked = True
            self._pending.append(E.to_line(E.Diagnostic(
                severity="warning", category="script",
                message=f"the script forked process {os.getpid()}: its compilations and launches run there "
                        "but are not in this session's report or trace")))

    def __call__(self, ev: E.Event) -> None:
        if not self.forked:  # a forked child writes only the note queued at the fork
            self._pending.append(E.to_line(ev))
        while self._pending and not self._writing:
            self._writing = True
            try:
                while self._pending:
                    self.f.write(self._pending.popleft())
                self.f.flush()
            except (BrokenPipeError, OSError, ValueError):
                os._exit(1)
            finally:
                self._writing = False


# ---- the child -------------------------------------------------------------------------
_fault_file = None  # faulthandler writes into it; it must stay open for the child's whole life


def child_main(argv: list[str]) -> int:
    """``--events-fd W --control-fd R --fault-fd F --options JSON``: the run options arrive as data."""
    import argparse
    import faulthandler

    global _fault_file
    parser = argparse.ArgumentParser(prog="kdebug-debuggee", allow_abbrev=False)
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--control-fd", type=int, default=None)
    parser.add_argument("--fault-fd", type=int, default=None)
    parser.add_argument("--options", required=True, help="RunOptions as JSON")
    args = parser.parse_args(argv)
    options = RunOptions.from_json(args.options)
    if args.fault_fd is not None:  # the parent reads crashes and stack dumps from here, not from stderr
        _fault_file = os.fdopen(args.fault_fd, "w", encoding="utf-8")
        faulthandler.enable(file=_fault_file, all_threads=True)
    else:
        faulthandler.enable()
    out = os.fdopen(args.events_fd, "w", encoding="utf-8")
    control = os.fdopen(args.control_fd, "r", encoding="utf-8") if args.control_fd is not None else None
    writer = _PipeWriter(out)
    from kdebug.session.runner import run_in_process  # kept lazy for start-up time: the parent imports this module
    from kdebug.session.safe_interrupt import SafeInterrupt  # kept lazy for start-up time: the child's alone
    with SafeInterrupt():  # a ^C from here on stops the run, also while the session is being made
        status = run_in_process(options, [writer],
                                on_session=lambda s: [Stepper(s.bus, control, options.breakpoints, _answer_where)])
    out.close()
    return status


POSITION = "kdebug-position "  # a line of the fault file: the answer to {"cmd": "where", "id": N}
STACK, STACK_END = "kdebug-stack ", "kdebug-stack-end "  # around the answer to {"cmd": "stack", "id": N}


def _answer_where(msg: dict) -> None:
    """``where``: where the running CPU launches are (kdebug/runtime/progress.py), one line of the fault file;
    ``stack``: every thread's Python stack there, as faulthandler writes one, the script's (main) thread as the
    current one. Runs on the control thread: a launcher runs without the GIL, so this answers during a launch
    too. (The stack came from faulthandler on SIGUSR1 before; on Python 3.13 its handler, run on the main
    thread in the middle of a call, read a frame being made and the script died of a segmentation fault.)"""
    if _fault_file is None:
        return
    if msg.get("cmd") == "stack":
        text = f"{STACK}{msg.get('id')}\n{_stacks()}{STACK_END}{msg.get('id')}\n"
    else:
        text = POSITION + json.dumps({"id": msg.get("id"), "launches": progress.describe()}) + "\n"
    try:
        os.write(_fault_file.fileno(), text.encode("utf-8", "replace"))
    except OSError:
        pass


def _stacks() -> str:
    """The Python threads' stacks but this one's, most recent call first, in faulthandler's words."""
    import traceback  # kept lazy for start-up time (a stdlib module: no kdebug import)
    main, here, out = threading.main_thread().ident, threading.get_ident(), []
    for ident, frame in sorted(sys._current_frames().items(), key=lambda kv: kv[0] == main):
        if ident == here:
            continue
        out.append(f"{'Current thread' if ident == main else 'Thread'} 0x{ident:016x} (most recent call first):\n")
        out += [f'  File "{f.filename}", line {f.lineno or 0} in {f.name}\n'  # no source lines read
                for f in traceback.StackSummary.extract(traceback.walk_stack(frame), lookup_lines=False)]
        out.append("\n")
    return "".join(out)


# ---- the parent ------------------------------------------------------------------------
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<func>.+)$')
_KDEBUG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def library_folders() -> tuple[str, ...]:
    """Where code that is not the user's lives: kdebug's own folder, the standard library's, and the installed
    packages' (site-packages: llvmlite, which kdebug calls on the script's behalf, numpy, ...), each ending
    in a separator. Read from this interpreter's paths: the debuggee runs the same one."""
    import sysconfig  # kept lazy for start-up time: asked only where a stack is read
    folders = {_KDEBUG_DIR, os.path.dirname(os.__file__)}
    paths = sysconfig.get_paths()
    folders.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key))
    return tuple(os.path.abspath(f) + os.sep for f in folders)


def user_frames(dump: str, script: str) -> list[str]:
    """From a faulthandler dump, the user's frames (innermost first) of the thread running the script:
    ``file:line in func``. Frames of kdebug, the standard library, runpy and installed packages
    (``library_folders``) are left out, as a debugger's "just my code" does: a ^C that lands inside
    llvmlite or numpy names the script's line that called them. The script's own frames are always kept."""
    script = os.path.abspath(script)
    libraries = library_folders()
    best: list[str] = []
    for block in re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump):
        frames = [m for m in map(_FRAME.match, block.splitlines()) if m]
        mine = [f for f in frames if os.path.abspath(f["file"]) == script
                or not f["file"].startswith("<") and not os.path.abspath(f["file"]).startswith(libraries)]
        if any(os.path.abspath(f["file"]) == script for f in mine):
            best = [f"{f['file']}:{f['line']} in {f['func']}" for f in mine]
            if block.lstrip().startswith("Current thread"):
                break
    return best


class Debuggee:
    """The parent's handle on one debuggee child.

    Two threads read the child: events (``on_event`` gets each, and finally a
    ``session_ended`` synthesized when the child died without one) and, when
    ``on_output`` is given, its stdout/stderr (``on_output`` gets each line;
    without it the child writes to this process's own stdout and stderr). Both
    callbacks run on those threads; they must only hand the data over.
    """

    def __init__(self, opts: RunOptions, on_event: Callable[[E.Event], None],
                 on_output: Callable[[str], None] | None = None, cwd: str | None = None,
                 on_stderr: Callable[[str], None] | None = None) -> None:
        self.opts = opts
        self.on_event, self.on_output, self.on_stderr = on_event, on_output, on_stderr
        self.killed = False
        self.ended: E.SessionEnded | None = None
        self.output_tail: list[str] = []
        self.last_t = 0.0
        self.last_event_at = time.monotonic()
        events_r, events_w = os.pipe()
        control_r, control_w = os.pipe()
        self._fault = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        fault_fd = self._fault.fileno()
        # the child's writers (faulthandler, the position answers) always append; this side reads with
        # pread, so reading never moves the offset the two share
        fcntl.fcntl(fault_fd, fcntl.F_SETFL, fcntl.fcntl(fault_fd, fcntl.F_GETFL) | os.O_APPEND)
        self._where_requests = 0
        cmd = [sys.executable, "-m", "kdebug.session.debuggee", "--events-fd", str(events_w),
               "--control-fd", str(control_r), "--fault-fd", str(fault_fd), "--options", opts.to_json()]
        # the child must run this very kdebug, whatever the cwd or another installed copy
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", PYTHONPATH=path)
        captured = on_output is not None
        try:
            self.proc = subprocess.Popen(cmd, pass_fds=(events_w, control_r, fault_fd),
                                         stdin=subprocess.DEVNULL if captured else None,
                                         stdout=subprocess.PIPE if captured else None,
                                         stderr=(subprocess.PIPE if on_stderr is not None else subprocess.STDOUT)
                                         if captured else None,
                                         cwd=cwd, env=env, start_new_session=True,
                                         # a session of its own, ended with kdebug however kdebug ends
                                         preexec_fn=die_with_parent())
        finally:
            os.close(events_w)
            os.close(control_r)
        self._events = os.fdopen(events_r, "r", encoding="utf-8", errors="replace")
        self._control = os.fdopen(control_w, "w", encoding="utf-8")
        self._control_lock = threading.Lock()
        self._out_thread = threading.Thread(target=self._read_output, daemon=True, name="kdebug-output")
        self._err_thread = threading.Thread(target=self._read_stderr, daemon=True, name="kdebug-stderr")
        if captured:
            self._out_thread.start()
            if on_stderr is not None:
                self._err_thread.start()
        self._ev_thread = threading.Thread(target=self._read_events, daemon=True, name="kdebug-events")
        self._ev_thread.start()

    @property
    def reading(self) -> bool:
        """Events may still come (the reader ends after the child exits, with a session_ended)."""
        return self._ev_thread.is_alive()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, cmd: str, **fields) -> None:
        with self._control_lock:
            try:
                self._control.write(json.dumps({"cmd": cmd, **fields}) + "\n")
                self._control.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the child is gone; its end of the story comes as session_ended

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the child alone (SIGINT: the script gets KeyboardInterrupt)."""
        if self.alive:
            try:
                os.kill(self.proc.pid, sig)
            except OSError:
                pass

    def where(self, wait: float = 1.0) -> list[str]:
        """Where the script is now: the user's frames of the stacks the child's control thread writes when
        asked (``_answer_where``); [] when no answer came in time (a C call that holds the GIL)."""
        def stacks(text: str, ask: int) -> list[str] | None:
            first, last = f"{STACK}{ask}\n", f"{STACK_END}{ask}\n"
            at = text.find(first)
            end = text.find(last, at) if at >= 0 else -1
            return user_frames(text[at + len(first):end], self.opts.script) if end >= 0 else None
        return self._ask("stack", wait, stacks)

    def position(self, wait: float = 1.0) -> list[str]:
        """Where the child's running CPU launches are: a line per launch (the block of the thread that
        entered a while loop last, and that loop's line); [] when none runs or no answer came in time."""
        def launches(text: str, ask: int) -> list[str] | None:
            for line in text.splitlines():
                if line.startswith(POSITION):
                    try:
                        answer = json.loads(line[len(POSITION):])
                    except json.JSONDecodeError:
                        continue
                    if answer.get("id") == ask:
                        return [str(x) for x in answer.get("launches") or []]
            return None
        return self._ask("where", wait, launches)

    def _ask(self, cmd: str, wait: float, answer_in) -> list[str]:
        """Send ``cmd`` with a new id on the control pipe, and read the fault file's text after it with
        ``answer_in(text, id)`` until that finds the child's answer (``_answer_where``); [] after ``wait``."""
        self._where_requests += 1
        ask = self._where_requests
        start = len(self._fault_bytes())
        self.send(cmd, id=ask)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and self.alive:
            found = answer_in(self._fault_bytes()[start:].decode("utf-8", "replace"), ask)
            if found is not None:
                return found
            time.sleep(0.02)
        return []

    def kill(self, where: list[str] | None = None, kernel: list[str] | None = None) -> None:
        """SIGKILL the child (a hung script); the session ends as ``killed``, at ``where`` (from where()),
        with the running launches' positions ``kernel`` (from position())."""
        if self.alive:
            self.killed, self.killed_where, self.killed_kernel = True, list(where or []), list(kernel or [])
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()

    def close(self) -> None:
        self.kill()
        with self._control_lock:
            try:
                self._control.close()
            except OSError:
                pass
        self._ev_thread.join(timeout=5)
        if self.on_output is not None:
            self._out_thread.join(timeout=5)
            if self.on_stderr is not None:
                self._err_thread.join(timeout=5)

    def _fault_bytes(self) -> bytes:
        try:
            fd = self._fault.fileno()
            return os.pread(fd, os.fstat(fd).st_size, 0)
        except (OSError, ValueError):
            return b""

    def _fault_text(self) -> str:
        return self._fault_bytes().decode("utf-8", "replace")

    def _read_output(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.output_tail = (self.output_tail + [line])[-80:]
            self.on_output(line)

    def _read_stderr(self) -> None:
        """The child's stderr kept apart from its stdout (``on_stderr``): a reader that judges the
        script's stdout alone (``kdebug reduce --until output:``)."""
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.output_tail = (self.output_tail + [line])[-80:]
            self.on_stderr(line)

    def _read_events(self) -> None:
        for line in self._events:
            try:
                obj = json.loads(line)
                ev = E.event_from_json(obj)
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
            self.last_t, self.last_event_at = ev.t, time.monotonic()
            if isinstance(ev, E.SessionEnded):
                self.ended = ev
            self.on_event(ev)
        rc = self.proc.wait()
        if self.on_output is not None:
            self._out_thread.join(timeout=5)
            if self.on_stderr is not None:
                self._err_thread.join(timeout=5)
        if self.ended is None:  # a signal's death is 128 + the signal, as a shell shows it, in every face
            self.ended = E.SessionEnded(status="killed" if self.killed else "crashed",
                                        exit_code=128 - rc if rc < 0 else rc, error=self.why(rc), t=self.last_t)
            self.on_event(self.ended)

    def why(self, rc: int) -> str:
        """What happened to a child that ended without saying so, with where it was."""
        if self.killed:
            head = "the debuggee was killed from the TUI" if self.on_output is not None else "the debuggee was killed"
        elif rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            head = f"the debuggee died from {name}"
        else:
            head = f"the debuggee exited with status {rc} before the session ended"
        fault = self._fault_text()
        fatal = re.search(r"^Fatal Python error: (.*)$", fault, re.M)
        if fatal is not None:  # faulthandler's report: keep the crashing thread's frames in the user's code
            head += f" ({fatal[1]})"
            detail = "\n".join("  at " + f for f in user_frames(fault[fatal.start():], self.opts.script))
        elif self.killed:
            detail = "\n".join(["  at " + f for f in getattr(self, "killed_where", [])]
                               + ["  " + k for k in getattr(self, "killed_kernel", [])])
        else:
            detail = "\n".join(self.output_tail[-12:]).strip()
        return head + ("\n" + detail if detail else "")


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
