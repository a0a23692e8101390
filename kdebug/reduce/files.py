"""``kdebug reduce``'s files: the script read as Python reads it, the outputs checked before the first
trial, and the results written so that a failure to write loses nothing already found.

The script is decoded as the interpreter decodes it (``tokenize``: a UTF-8 byte-order mark, a coding
line); the reduced script is written in the same encoding, with the same byte-order mark or coding
line (the reducer works on the syntax tree, which keeps neither).

An output (``--out``, ``--trace``) is refused before any trial when it is the script itself (the same
file, through a link or another spelling: by device and inode), when both name one file, when it is
no regular file (``/dev/full``, a pipe), or when it cannot be written; nothing is truncated then. At
the end each is written to a temporary file beside it and renamed over it; where that fails, the
result is saved in the system's temporary folder instead and ``WriteError`` says where.
"""
from __future__ import annotations

import ast
import io
import os
import re
import stat
import tempfile
import tokenize
from kdebug.lazy_dataclasses import dataclass

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


class OutputError(ValueError):
    """An output that cannot be written, or would overwrite the script: one line saying what to do."""


class ScriptError(ValueError):
    """A script kdebug reduce cannot work on (it does not parse): one line."""


class WriteError(OSError):
    """Writing a result failed at the end; ``saved``: where it was saved instead (None: nowhere)."""

    def __init__(self, message: str, saved: str | None) -> None:
        super().__init__(message)
        self.message, self.saved = message, saved

    def __str__(self) -> str:
        return self.message


@dataclass
class Script:
    """A script's text as Python decodes it, and how to write a reduced one in the same way."""

    path: str
    text: str
    encoding: str = "utf-8"  # as tokenize names it: utf-8-sig where the file begins with a byte-order mark
    header: str = ""  # the lines up to the coding line, that line included ("" without one)

    def encode(self, source: str) -> bytes:
        """``source`` as this script is written: its coding line first, in its encoding (a BOM kept)."""
        try:
            return (self.header + source).encode(self.encoding)
        except UnicodeEncodeError:  # a character the encoding lacks: UTF-8, which Python reads by default
            header = "# -*- coding: utf-8 -*-\n" if self.header else ""
            return (header + source).encode("utf-8")


def read_script(path: str) -> Script:
    """The script decoded as Python decodes it; ScriptError where it does not parse."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        encoding, first = tokenize.detect_encoding(io.BytesIO(data).readline)
        with tokenize.open(path) as f:
            text = f.read()
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{path}: cannot decode it as Python does ({exc}); save it as UTF-8 or declare its "
                          "encoding (# -*- coding: ... -*-)") from None
    header = ""
    for i, line in enumerate(first):
        if _COOKIE.match(line):
            header = "".join(part.decode(encoding).lstrip("\ufeff") for part in first[:i + 1])
            header = header.replace("\r\n", "\n").replace("\r", "\n")
            if not header.endswith("\n"):
                header += "\n"
            break
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise ScriptError(f"{path}:{exc.lineno}: {exc.msg}: kdebug reduce works on the syntax tree; fix the "
                          "script so that Python can parse it") from None
    except ValueError as exc:  # source code with null bytes
        raise ScriptError(f"{path}: {exc}") from None
    return Script(path, text, encoding, header)


# ---- the outputs, checked before the first trial -----------------------------------------------------
def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)  # through links
    except OSError:
        return None
    return st.st_dev, st.st_ino


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same device and inode through links, or (where neither exists
    yet) the same resolved path."""
    ia, ib = _identity(a), _identity(b)
    if ia is not None and ib is not None:
        return ia == ib
    return os.path.realpath(a) == os.path.realpath(b)


def output_problem(option: str, path: str) -> str | None:
    """Why ``path`` cannot take a result, or None; nothing is created or truncated here."""
    if os.path.isdir(path):
        return f"{option} {path}: is a directory; name a file"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"{option} {path}: {exc.strerror or exc}; name another file"
    if st is not None and not stat.S_ISREG(st.st_mode):
        return f"{option} {path}: is not a regular file (a device, pipe or socket); name a file to write"
    real = os.path.realpath(path)  # a link: its target is what gets written
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        return f"{option} {path}: the folder {folder} does not exist; create it first"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in {folder}; name a file in a folder you can write"
    if st is not None:
        try:  # can be opened for writing, without truncating it
            os.close(os.open(real, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        except OSError as exc:
            return f"{option} {path}: cannot write it ({exc.strerror or exc}); name another file"
    return None


def check_outputs(script: str, out: str, trace: str | None) -> None:
    """OutputError where ``out`` or ``trace`` is the script, both are one file, or either cannot be written."""
    for option, path in (("--out", out), ("--trace", trace)):
        if path and same_file(path, script):
            raise OutputError(f"{option} {path}: is the script itself (the same file, through a link or another "
                              "spelling); the original is never overwritten: name another file")
    if trace and same_file(out, trace):
        raise OutputError(f"--out {out} and --trace {trace} name the same file; name two files")
    for option, path in (("--out", out), ("--trace", trace)):
        problem = path and output_problem(option, path)
        if problem:
            raise OutputError(problem)


# ---- the results, written so that a failure loses nothing ---------------------------------------------
def write_result(option: str, path: str, data: bytes, what: str = "the reduced script") -> str:
    """``data`` into ``path`` (a temporary file beside it, renamed over it: never half written); the path
    written. Where that fails, ``data`` is saved in the system's temporary folder and WriteError says where."""
    real = os.path.realpath(path)  # through a link: the link stays, its target gets the result
    folder, name = os.path.split(real)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = stat.S_IMODE(os.stat(real).st_mode)
        except OSError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(tmp, mode)
        os.replace(tmp, real)
        return path
    except OSError as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        why = exc.strerror or str(exc)
        stem, ext = os.path.splitext(name)
        try:
            fd, saved = tempfile.mkstemp(prefix=f"{stem}.", suffix=ext or ".txt")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as again:
            raise WriteError(f"cannot write {option} {path} ({why}), nor save {what} in the temporary folder "
                             f"({again.strerror or again})", None) from None
        raise WriteError(f"cannot write {option} {path} ({why}); {what} was saved in {saved} instead: "
                         "move it where it belongs", saved) from None
