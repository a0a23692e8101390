"""kdebug in a real terminal: a pseudo-terminal of a given size, its screen read through a terminal
emulator (pyte), keys sent as a person types them, and the terminal's modes read back on exit.

The terminal is one with synchronized output (DEC mode 2026: kitty, WezTerm, iTerm2, foot, Windows
Terminal and most terminals of today): it says so when asked, and it shows a frame the app brackets in
mode 2026 whole, once its end came. Without it, a read of the screen could catch half a frame (its status
line new, the panes below still old): a tear no person sees on such a terminal.

Textual's Pilot drives the app in-process and never runs the terminal driver, its writer thread or
the process's file descriptors; the defects a user meets there (a screen that stops being written, a
crash on Ctrl-C that leaves the terminal in the alternate screen) need this. Used by
tests/tui/test_tui_terminal.py.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pyte

# DEC private modes a full-screen app turns on and must turn off again on every way out
MODES = {"1049": "alternate screen", "25": "cursor shown", "1000": "mouse tracking", "1003": "mouse motion",
         "1006": "SGR mouse", "2004": "bracketed paste"}
_DECSET = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
SYNC_QUERY, SYNC_REPLY = b"\x1b[?2026$p", b"\x1b[?2026;2$y"  # DECRQM for mode 2026; the reply: known, now off
SYNC_START, SYNC_END = b"\x1b[?2026h", b"\x1b[?2026l"
SYNC_TIMEOUT = 1.0  # an update whose end never comes (a process killed mid-frame) is shown after this, as terminals do

KEYS = {"enter": "\r", "escape": "\x1b", "tab": "\t", "ctrl+c": "\x03", "up": "\x1b[A", "down": "\x1b[B",
        "right": "\x1b[C", "left": "\x1b[D", "backspace": "\x7f", "space": " "}


class Screen(pyte.Screen):
    """pyte's screen with a quicker ``draw`` for a run of one-cell characters that fits on the cursor's line
    (nearly all a full-screen app writes): the cells pyte's own would make, made without its per-character
    ``_replace`` (a live run's 120 KB: ~70 ms of the harness's CPU before). Anything else is pyte's own
    ``draw`` (tests/tui/test_real_terminal_screen.py compares the two on recorded runs)."""

    def draw(self, data: str) -> None:
        shown = data.translate(self.g1_charset if self.charset else self.g0_charset)  # one character each
        cursor = self.cursor
        x, fits = cursor.x, self.columns - cursor.x
        if not shown or fits <= 0 or pyte.modes.IRM in self.mode or \
                not all(pyte.screens.wcwidth(ch) == 1 for ch in set(shown)):
            return super().draw(data)
        head, rest = shown[:fits], data[fits:]
        attrs = cursor.attrs
        make, tail = attrs.__class__._make, tuple(attrs)[1:]
        self.buffer[cursor.y].update(zip(range(x, x + len(head)), (make((ch,) + tail) for ch in head)))
        cursor.x = x + len(head)
        if rest:  # past the line's end: pyte wraps (or not) as it does
            return super().draw(rest)
        self.dirty.add(cursor.y)


class Terminal:
    """One process on its own pseudo-terminal, ``cols`` x ``rows``, its output read by a thread into
    a pyte screen. ``with Terminal(...) as t:`` ends the process (SIGKILL to its group) on the way out."""

    def __init__(self, argv: list[str], cols: int = 80, rows: int = 24, cwd: str | None = None,
                 env: dict | None = None) -> None:
        self.cols, self.rows = cols, rows
        self.master, slave = os.openpty()
        self._set_size(cols, rows)
        self.saved_modes = termios.tcgetattr(slave)  # a shell's cooked terminal, as the user's was
        full_env = dict(os.environ if env is None else env)
        full_env.update(TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
        full_env.pop("TEXTUAL", None)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=full_env,
                                     start_new_session=True, preexec_fn=_controlling_terminal, close_fds=True)
        self._slave = slave  # kept open: the terminal's modes are read on this side (the master has its own)
        self.screen = Screen(cols, rows)
        self._stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()
        self.raw = bytearray()  # every byte the process wrote to the terminal
        self.writes = 0  # how many reads brought bytes: the terminal was written to
        self.last_write = time.monotonic()
        self.frames = 0  # synchronized updates shown whole
        self._held_since = 0.0  # when the bytes held now began to wait
        self._unparsed = b""  # bytes not yet fed to the screen: a frame whose end has not come, a marker's start
        self._shown: tuple[tuple, list[str]] | None = None  # ((writes, size), lines) of the last read of the screen
        self._reader = threading.Thread(target=self._read, daemon=True, name="terminal-reader")
        self._reader.start()

    # ---- the process's side ----------------------------------------------------------------------
    def _set_size(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def _read(self) -> None:
        try:
            self._read_to_the_end()
        finally:
            with self._lock:
                self._show_held()  # the process is gone: what it left unfinished is shown, as terminals do

    def _read_to_the_end(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.05)  # the process's end: seen within 0.05 s
                if not ready:
                    with self._lock:
                        if self._unparsed and time.monotonic() - self._held_since > SYNC_TIMEOUT:
                            self._show_held()
                    if self.proc.poll() is not None and not self._pending():
                        return
                    continue
                data = os.read(self.master, 65536)
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):  # every copy of the slave is closed
                    return
                raise
            if not data:
                return
            with self._lock:
                self.raw += data
                if SYNC_QUERY in self.raw[-(len(data) + len(SYNC_QUERY) - 1):]:  # also one split across reads
                    os.write(self.master, SYNC_REPLY)
                self._show(data)
                self.last_write = time.monotonic()

    def _show(self, data: bytes) -> None:
        """Feed the screen what it may show: bytes outside a synchronized update as they come, a
        synchronized update once its end came (whole)."""
        buf, shown = self._unparsed + data, 0
        while True:
            start = buf.find(SYNC_START, shown)
            if start < 0:
                break
            end = buf.find(SYNC_END, start)
            if end < 0:
                break
            shown = end + len(SYNC_END)
            self.frames += 1
        opened = buf.find(SYNC_START, shown)
        if opened < 0:  # no update open: all but a marker's possible start may be shown
            opened = len(buf)
            for k in range(len(SYNC_START) - 1, 0, -1):
                if buf.endswith(SYNC_START[:k]):
                    opened = len(buf) - k
                    break
        if opened:
            self._stream.feed(bytes(buf[:opened]))
            self.writes += 1
        if not self._unparsed or opened:
            self._held_since = time.monotonic()
        self._unparsed = bytes(buf[opened:])

    def _show_held(self) -> None:
        if self._unparsed:
            self._stream.feed(self._unparsed)
            self._unparsed = b""
            self.writes += 1

    def _pending(self) -> bool:
        ready, _, _ = select.select([self.master], [], [], 0)
        return bool(ready)

    # ---- what a person does ----------------------------------------------------------------------
    def press(self, *keys: str, gap: float = 0.15) -> None:
        """Keys as typed: names in KEYS, or text sent character by character."""
        for key in keys:
            data = KEYS.get(key, key)
            if key.startswith("ctrl+") and len(key) == 6 and key[5].isalpha():  # ctrl+p: ^P
                data = chr(ord(key[5].lower()) - 96)
            os.write(self.master, data.encode())
            time.sleep(gap)

    def type(self, text: str, gap: float = 0.05) -> None:
        for ch in text:
            os.write(self.master, ch.encode())
            time.sleep(gap)

    def resize(self, cols: int, rows: int) -> None:
        with self._lock:
            self.cols, self.rows = cols, rows
            self.screen.resize(rows, cols)
        self._set_size(cols, rows)
        try:
            os.killpg(self.proc.pid, signal.SIGWINCH)
        except ProcessLookupError:
            pass

    # ---- what a person sees -----------------------------------------------------------------------
    def lines(self) -> list[str]:
        """The screen's lines, as pyte's ``display`` renders them. Rendered again only when bytes came since
        the last call (every cell of every line is ~2.5 ms at 250x40, and the waits below ask every 0.1 s)."""
        with self._lock:
            state = (self.writes, self.cols, self.rows)
            if self._shown is None or self._shown[0] != state:
                self._shown = (state, [line.rstrip() for line in self.screen.display])
            return list(self._shown[1])

    def reversed_rows(self, start_col: int = 0) -> list[int]:
        """The rows with reverse video right of ``start_col``: where a view draws its line cursor."""
        with self._lock:
            buffer = self.screen.buffer
            return [y for y in range(self.rows)
                    if sum(1 for x in range(start_col, self.cols) if buffer[y][x].reverse) > 4]

    def text(self) -> str:
        return "\n".join(self.lines())

    def wait_for(self, predicate, timeout: float = 30.0, poll: float = 0.1) -> bool:
        """Until ``predicate(text)`` holds on the screen (True), or ``timeout`` (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return True
            time.sleep(poll)
        return predicate(self.text())

    def wait_text(self, needle: str, timeout: float = 30.0) -> bool:
        return self.wait_for(lambda t: needle in t, timeout)

    def wait_quiet(self, quiet: float = 0.5, timeout: float = 10.0) -> None:
        """Until nothing was written for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and time.monotonic() - self.last_write < quiet:
            time.sleep(0.05)

    # ---- the end ----------------------------------------------------------------------------------
    def wait_exit(self, timeout: float = 15.0) -> int | None:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(2.0)
        return code

    def modes_left_on(self) -> list[str]:
        """The private modes the process turned on and did not turn off again, by the bytes it wrote."""
        state: dict[str, str] = {}
        with self._lock:
            for numbers, final in _DECSET.findall(bytes(self.raw)):
                for n in numbers.decode().split(";"):
                    state[n] = final.decode()
        left = [MODES[n] for n, f in state.items() if n in MODES and n != "25" and f == "h"]
        if state.get("25") == "l":
            left.append("cursor hidden")
        return left

    def cooked(self) -> bool:
        """The terminal is back in the mode a shell left it in (echo, line editing, signals)."""
        now = termios.tcgetattr(self._slave)
        flags = termios.ECHO | termios.ICANON | termios.ISIG
        return (now[3] & flags) == (self.saved_modes[3] & flags)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self._reader.join(2.0)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _controlling_terminal() -> None:
    """In the child, a session leader by now: its stdin becomes its controlling terminal, as a shell's is."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def kdebug(*args: str, cols: int = 80, rows: int = 24, cwd: str | None = None, env: dict | None = None) -> Terminal:
    """``kdebug ARGS...`` in a terminal of its own."""
    return Terminal([sys.executable, "-m", "kdebug.cli", *args], cols=cols, rows=rows, cwd=cwd, env=env)
