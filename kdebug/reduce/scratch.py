"""Where ``kdebug reduce``'s trials run: a scratch copy of the folder the script needs (its own folder,
or the one ``--copy DIR`` names), made once in a temporary folder and removed at the end.

A reduction runs the script hundreds of times: whatever a trial writes (a log it appends to, files it
makes, files it deletes) lands in the copy, never in the user's folder. The trials' working directory
is the copy of the current directory where that lies inside the copied folder, else the copy's root;
the copy's script folder goes on ``PYTHONPATH`` (so the script's imports of modules beside it resolve
as ``sys.path[0]`` does for the original). Symbolic links are followed and their targets copied, so no
link in the copy leads back to the user's files; pipes, sockets and devices are left out, and so are
version-control and cache folders (``SKIPPED``). A folder past ``MAX_BYTES`` or ``MAX_FILES`` is
refused before anything is copied: the user names a smaller one with ``--copy DIR``.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile

MAX_BYTES = 100 * 1024 * 1024
MAX_FILES = 10_000
# never what a script needs to run: version control, caches and virtual environments
SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                     ".pytest_cache", ".ruff_cache", ".hypothesis", "node_modules"})


class ScratchError(ValueError):
    """The folder cannot be copied (too big, unreadable, not holding the script): one line saying what to do."""


def size_text(n: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


class Scratch:
    """A scratch copy of ``folder`` (default: the script's folder), holding the script at the same place.

    ``root``: the copy of the folder; ``script``: the script's copy; ``folder``: the copy of the script's
    folder; ``cwd``: where trials run. ``close()`` removes it all."""

    def __init__(self, script: str, folder: str | None = None, cwd: str | None = None,
                 max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES) -> None:
        script = os.path.abspath(script)
        option = "--copy " + folder if folder else None
        source = os.path.abspath(folder) if folder else os.path.dirname(script)
        if folder:
            if not os.path.isdir(source):
                raise ScratchError(f"{option}: no such folder; name the folder the script needs")
            if not _inside(script, source):
                raise ScratchError(f"{option}: the script {script} is not inside it; name a folder that holds "
                                   "the script and what it reads")
        self.source = source
        folders, self.files, self.bytes, self.skipped = _survey(source, option, max_bytes, max_files)
        self._tmp = tempfile.mkdtemp(prefix="kdebug-scratch-")
        try:
            self.root = os.path.join(self._tmp, os.path.basename(source.rstrip(os.sep)) or "root")
            _copy(source, self.root, folders, self.files)
            rel = os.path.relpath(script, source)
            self.script = os.path.join(self.root, rel)
            self.folder = os.path.dirname(self.script)
            os.makedirs(self.folder, exist_ok=True)
            if os.path.lexists(self.script):
                os.unlink(self.script)
            shutil.copyfile(script, self.script)  # the script itself, always a file of its own
            here = os.path.abspath(cwd or os.getcwd())
            self.cwd = os.path.normpath(os.path.join(self.root, os.path.relpath(here, source))) \
                if _inside(here, source) else self.root
            if not os.path.isdir(self.cwd):
                self.cwd = self.root
        except OSError as exc:
            self.close()
            raise ScratchError(f"cannot copy {source} to a scratch folder: {exc.strerror or exc}; name the "
                               "folder the script needs with --copy DIR") from None
        except BaseException:
            self.close()
            raise

    def describe(self) -> str:
        """One line: what was copied, and that the original is left alone."""
        left_out = f"; left out: {', '.join(sorted(self.skipped))}" if self.skipped else ""
        files = f"{len(self.files)} file{'' if len(self.files) == 1 else 's'}"
        return (f"trials run in a scratch copy of {self.source} ({files}, {size_text(self.bytes)}{left_out}); "
                "the folder itself is not touched, the copy is removed at the end")

    def close(self) -> None:
        tmp, self._tmp = getattr(self, "_tmp", None), None
        if tmp:
            shutil.rmtree(tmp, onerror=_make_writable_and_retry)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
    except ValueError:
        return False


def _survey(source: str, option: str | None, max_bytes: int,
            max_files: int) -> tuple[list[str], list[str], int, set[str]]:
    """The folders and regular files under ``source`` (paths relative to it, links followed), the files'
    bytes and the names left out; a ScratchError past the limits, before anything is copied."""
    folders: list[str] = []
    files: list[str] = []
    total = 0
    skipped: set[str] = set()
    seen: set[str] = set()
    what = option or f"the script's folder {source}"
    todo = [""]
    while todo:
        rel = todo.pop()
        here = os.path.join(source, rel)
        real = os.path.realpath(here)
        if real in seen:  # a link back to a folder already copied
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as exc:
            raise ScratchError(f"{what}: cannot read {here}: {exc.strerror or exc}; name the folder the script "
                               "needs with --copy DIR") from None
        for entry in entries:
            if entry.name in SKIPPED:
                skipped.add(entry.name)
                continue
            try:
                st = os.stat(entry.path)  # through links: the copy holds what they lead to
            except OSError:
                continue  # a dangling link
            name = os.path.join(rel, entry.name)
            if stat.S_ISDIR(st.st_mode):
                todo.append(name)
                folders.append(name)
            elif stat.S_ISREG(st.st_mode):
                files.append(name)
                total += st.st_size
            if total > max_bytes or len(files) + len(folders) > max_files:
                raise ScratchError(
                    f"{what} holds more than {size_text(max_bytes)} or {max_files} files, too much to copy "
                    "for the trials; name the folder the script needs with --copy DIR (or move the script "
                    "to a folder of its own)")
    return folders, files, total, skipped


def _copy(source: str, root: str, folders: list[str], files: list[str]) -> None:
    os.makedirs(root)
    for rel in folders:
        os.makedirs(os.path.join(root, rel), exist_ok=True)
    for rel in files:
        target = os.path.join(root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(source, rel), target)


def _make_writable_and_retry(func, path, _exc_info) -> None:
    """A trial may leave read-only files and folders: make them writable and remove them."""
    try:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass
