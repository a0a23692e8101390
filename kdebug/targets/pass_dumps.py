"""The whole module after every pass of a recorded pipeline, read from LLVM's own per-pass dumps
(``pass_record.run_recorded``), printed whole only after the passes that may have changed it.

LLVM's ``-print-after-all`` with ``-print-module-scope`` prints the whole module after every pass. For
gradient_hvp's optimize pipeline that is 4,395 prints of a module of 200-430 KB (1.1 GB of text, 7.4 s, where
the pipeline alone takes 0.16 s), and 950 of those passes changed anything. So a big module is recorded in
two steps (``record``):

1. The recorded run prints each pass's own unit: a function, a loop's whole function
   (``-print-loop-func-scope``), a call-graph SCC's functions, the module after a module pass (78 MB in all
   for gradient_hvp), and each pass's number (``-print-pass-numbers``). A pass may have changed the module
   where its unit's functions (with their attributes' line) differ from their last print, where its unit was
   invalidated (LLVM then prints the module), and at the first pass after the inliner's walk over the call
   graph (``InvalidateAnalysisPass``): the walk deletes the functions it left dead between passes, in no
   pass's unit.
2. A fork of this process made before the run (``Twin``: the module as it was, which a copy from bitcode is
   not) runs the recorded run again in a fork of its own and prints the whole module after those passes only
   (``-print-after-pass-number``: a list option that only grows in a process, so it is never set in this
   one), and after the pass before each module pass, as a check.

The module texts kept are checked where LLVM prints the whole module anyway: at each module pass (the fork
prints the module before it, which must be the text kept) and at the end (the module the run made). A change outside every
rule above would show there; then, or where the fork failed, the twin prints every pass whole, as a small
module (and one with coroutines) always is. Either way the passes and texts are those of the whole prints
(tests/driver/test_pass_dumps.py compares them; benchmarks/bench_record.py times both).

Dumps share a number where a pass invalidated its unit (a loop fully unrolled: LLVM numbers it as the pass
before it) and where a pass runs passes of its own (CoroCleanupPass's SimplifyCFGPass, numbered as the last
of them): their files are read in the order LLVM wrote them, each dump's own number taken from the run's
``-print-pass-numbers`` lines (``numbers``).
"""
from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import tempfile
import warnings
from typing import Callable, NamedTuple

import llvmlite.binding as llvm

from kdebug import processes
from kdebug.passes import PassRun

MEMORY_DIR = "/dev/shm"  # Linux's in-memory file system: the dumps never reach a disk
HEADER = re.compile(r"^; \*\*\* IR Dump After (?P<name>\S+) on (?P<unit>.*?)(?P<gone> \(invalidated\))? \*\*\*$")
NUMBERED = re.compile(r"^\d+-")  # -print-after-pass-number's prints name the pass "N-Name"
DEFINE = re.compile(r'^define [^@]*@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)\(', re.M)
MODULE_START = "; ModuleID"
ATTRIBUTES = "; Function Attrs:"  # the comment LLVM prints before a definition: its attributes in words
# below this the module is printed whole after every pass in one run: the second run, its process and its
# checks cost more than the prints they save
TWO_STEP_BYTES = 40_000
# a module with coroutine intrinsics: CoroCleanupPass runs SimplifyCFGPass inside it where it lowers them (a pass that
# cannot be asked for)
COROUTINES = "@llvm.coro."
# the first pass after the inliner's walk over the call graph (its dead functions deleted before it)
AFTER_WALK = "InvalidateAnalysisPass"


class Dump(NamedTuple):
    number: int
    name: str
    unit: str
    text: str

    @property
    def whole(self) -> bool:
        """LLVM printed the whole module here (a module pass, an invalidated unit)."""
        return self.text.startswith(MODULE_START)


def dump_directory() -> str:
    """A fresh directory for one run's dumps, in memory where Linux has one (a third less time)."""
    if os.path.isdir(MEMORY_DIR):
        try:
            return tempfile.mkdtemp(prefix="kdebug-passes-", dir=MEMORY_DIR)
        except OSError:  # read-only or full: the temp dir will do
            pass
    return tempfile.mkdtemp(prefix="kdebug-passes-")


def printing(directory: str | None, module_scope: bool = True) -> None:
    """LLVM's print after every pass into ``directory`` on (the whole module, or each pass's unit), or off."""
    on = directory is not None
    llvm.set_option("", f"-print-after-all={'true' if on else 'false'}")
    llvm.set_option("", f"-print-module-scope={'true' if on and module_scope else 'false'}")
    llvm.set_option("", f"-print-loop-func-scope={'true' if on and not module_scope else 'false'}")
    # each pass's number printed as it starts (numbered as -print-after-pass-number counts: see ``numbers``)
    llvm.set_option("", f"-print-pass-numbers={'true' if on and not module_scope else 'false'}")
    llvm.set_option("", f"-ir-dump-directory={directory or ''}")


def read(directory: str) -> list[Dump]:
    """The pass dumps in ``directory`` in the order the passes ran."""
    def order(file_name: str):
        stat = os.stat(os.path.join(directory, file_name))
        return int(file_name.partition("-")[0]), stat.st_mtime_ns, stat.st_ino
    dumps = []
    for file_name in sorted(os.listdir(directory), key=order):
        with open(os.path.join(directory, file_name), encoding="utf-8", errors="replace") as f:
            header, _, text = f.read().partition("\n")
        m = HEADER.match(header)
        if m is None:
            continue  # not a pass dump (LLVM wrote something else there)
        dumps.append(Dump(int(file_name.partition("-")[0]), NUMBERED.sub("", m.group("name")), m.group("unit"),
                          text.rstrip("\n")))
    return dumps


def runs_of(dumps: list[Dump], texts: list[str], before: str) -> list[PassRun]:
    """The pass runs, each with the module after it where it changed (``texts``: the module after each dump)."""
    runs, previous = [], before
    for dump, text in zip(dumps, texts):
        changed = text != previous
        runs.append(PassRun(dump.name, dump.unit, changed, text + "\n" if changed else None))
        previous = text
    return runs


def functions(text: str) -> dict[str, str]:
    """The function definitions in a print of a module, a function or an SCC's functions, by name."""
    found = {}
    for m in DEFINE.finditer(text):
        start = m.start()
        comment = text.rfind("\n", 0, start - 1) + 1  # the line before: its attributes, which a pass may change
        if text.startswith(ATTRIBUTES, comment):
            start = comment
        end = text.find("\n}", m.start())
        found[m.group(1).strip('"')] = text[start:end + 2 if end >= 0 else len(text)]
    return found


def record(run: Callable[[object], list[str]], mod, before: str) -> list[PassRun]:
    """The runs of the pipeline on ``mod``: ``run(mod)`` is the recorded run itself (its remarks the caller's;
    it returns the lines LLVM printed to standard error meanwhile), ``before`` is the input's text. The
    caller holds the pipeline lock."""
    if len(before) < TWO_STEP_BYTES or COROUTINES in before or not hasattr(os, "fork"):
        return _whole(run, mod, before)
    with Twin(run, mod) as twin:  # forked now: the module as it is before the run
        directory = dump_directory()
        try:
            printing(directory, module_scope=False)
            try:
                printed = run(mod)
            finally:
                printing(None)
            first = read(directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        wanted, checks = _suspects(first, before)
        number, inside = numbers(first, printed)
        asked = {number[k] for k, d in enumerate(first) if (d.number, d.name) in wanted}
        asked |= {number[k] for k, d in enumerate(first)
                  if (d.number, d.name) in checks and number[k] is not None and number[k] not in inside}
        # a pass run inside another (CoroCleanupPass's SimplifyCFGPass) cannot be asked for: LLVM's print after
        # it fails an assertion (checked on LLVM 22), so every pass is printed whole then
        whole = twin.whole_after(asked) if None not in asked and not asked & inside else None
        if whole is not None and asked <= {n for n, _ in whole}:  # every print asked for came
            texts, previous = [], before
            for k, dump in enumerate(first):  # the module after each pass: printed whole, or as after the one before
                previous = dump.text if dump.whole else whole.get((number[k], dump.name), previous)
                texts.append(previous)
            found = runs_of(first, texts, before)
            checked = {(number[k], d.name) for k, d in enumerate(first) if (d.number, d.name) in checks}
            if _checked(first, number, found, before, whole, checked, str(mod).rstrip("\n")):
                return found
        every = twin.every_pass()  # a check failed: every pass printed whole
        if every is not None:
            return runs_of(every, [dump.text for dump in every], before)
    raise RuntimeError("the pipeline's passes could not be recorded: the process that prints them failed")


RUNNING = re.compile(r"^\s*Running pass (?P<number>\d+) (?P<name>\S+) on (?P<unit>.*)$")


def numbers(dumps: list[Dump], printed: list[str]) -> tuple[list[int | None], set[int]]:
    """(each dump's pass number as ``-print-after-pass-number`` counts the passes, the numbers of passes run
    inside another pass), from the run's ``-print-pass-numbers`` lines. A dump's file is numbered otherwise
    where its pass invalidated its unit (as the pass before) and where it ran passes inside it (as the last
    of them)."""
    running = {}
    for line in printed:
        m = RUNNING.match(line)
        if m is not None:
            running[int(m.group("number"))] = (m.group("name"), m.group("unit"))
    found: list[int | None] = []
    inside: set[int] = set()
    for dump in dumps:
        key = (dump.name, dump.unit)
        if running.get(dump.number) == key:
            found.append(dump.number)
        elif running.get(dump.number + 1) == key:
            found.append(dump.number + 1)
        else:
            number = next((k for k in range(dump.number - 1, 0, -1) if running.get(k) == key), None)
            if number is not None:
                inside.update(range(number + 1, dump.number + 1))
            found.append(number)
    return found, inside


def _whole(run, mod, before: str) -> list[PassRun]:
    directory = dump_directory()
    try:
        printing(directory)
        try:
            run(mod)
        finally:
            printing(None)
        dumps = read(directory)
        return runs_of(dumps, [dump.text for dump in dumps], before)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _suspects(dumps: list[Dump], before: str) -> tuple[set, set]:
    """(the dumps after which the module may have changed, the dumps before a whole print to check), as
    (number, name) pairs."""
    known = functions(before)
    wanted, checks = set(), set()
    previous = None
    for dump in dumps:
        key = (dump.number, dump.name)
        if dump.whole:
            if previous is not None and not previous.whole and (previous.number, previous.name) not in wanted:
                checks.add((previous.number, previous.name))
            known = functions(dump.text)
        else:
            got = functions(dump.text)
            if not got or dump.name.startswith(AFTER_WALK) or any(known.get(k) != v for k, v in got.items()):
                wanted.add(key)
            known.update(got)
        previous = dump
    return wanted, checks


def _checked(dumps, number, runs, before: str, whole: dict, checks: set, after: str) -> bool:
    """The texts kept agree with every whole print: the module before each module pass and at the end."""
    previous = before
    for k, (dump, run) in enumerate(zip(dumps, runs)):
        key = (number[k], dump.name)
        if key in checks and key in whole and whole[key] != previous:
            return False
        if run.changed:
            previous = run.text.rstrip("\n")
    return previous == after


class Twin:
    """A fork of this process made before the recorded run, the module as it was then (a copy from bitcode
    would not do: LLVM names the blocks a pass makes from each function's own counters, which bitcode does
    not keep). Each request runs the recorded run again in a fork of the twin (its options too: LLVM keeps
    the order of a value's uses otherwise where remarks are asked for), printing the whole module after the
    passes asked for, into a directory that is read here."""

    def __init__(self, run: Callable[[object], list[str]], mod) -> None:
        requests, self._requests = os.pipe()
        self._replies, replies = os.pipe()
        recorder = os.getpid()
        with warnings.catch_warnings():
            # a fork beside other threads: the twin only calls LLVM, and the one thread that may be in LLVM
            # (tiers.py's background compile) is kept out by pass_record.GATE while a pipeline records
            warnings.simplefilter("ignore", DeprecationWarning)
            self.pid = os.fork()
        if self.pid == 0:
            processes.end_with_parent(signal.SIGKILL, recorder)  # a recorder killed leaves no twin behind
            os.close(self._requests)
            os.close(self._replies)
            _serve(requests, replies, run, mod)  # never returns
        os.close(requests)
        os.close(replies)

    def __enter__(self) -> "Twin":
        return self

    def __exit__(self, *exc) -> None:
        os.close(self._requests)  # the twin reads the end and ends
        os.close(self._replies)
        _wait(self.pid, CHILD_TIMEOUT)

    def whole_after(self, numbers: set[int]) -> dict | None:
        """{(number, pass): the module after it} for the passes numbered ``numbers``; None if the run failed."""
        if not numbers:
            return {}
        dumps = self._ask(",".join(map(str, sorted(numbers))))
        return None if dumps is None else {(d.number, d.name): d.text for d in dumps}

    def every_pass(self) -> list[Dump] | None:
        return self._ask("all")

    def _ask(self, numbers: str) -> list[Dump] | None:
        directory = dump_directory()
        try:
            os.write(self._requests, (json.dumps([directory, numbers]) + "\n").encode())
            ready, _, _ = select.select([self._replies], [], [], CHILD_TIMEOUT)
            reply = os.read(self._replies, 8) if ready else b""
            return read(directory) if reply == b"0\n" else None
        except OSError:  # the twin is gone
            return None
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def _serve(requests: int, replies: int, run, mod) -> None:
    """The twin: a request a line ([directory, "all" or pass numbers]), each run in a fork of its own (the
    module stays as it was for the next), until the requests' pipe ends."""
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the recording process's to handle
        with os.fdopen(requests, encoding="utf-8") as lines:
            for line in lines:
                directory, numbers = json.loads(line)
                twin = os.getpid()
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        processes.end_with_parent(signal.SIGKILL, twin)
                        if numbers == "all":
                            printing(directory)
                        else:
                            llvm.set_option("", "-print-module-scope=true")
                            llvm.set_option("", f"-print-after-pass-number={numbers}")
                            llvm.set_option("", f"-ir-dump-directory={directory}")
                        run(mod)  # as the recorded run ran, remarks and all: the same module after each pass
                        code = 0
                    finally:
                        os._exit(code)
                os.write(replies, b"0\n" if _wait(pid, CHILD_TIMEOUT) else b"1\n")
        status = 0
    finally:
        os._exit(status)


CHILD_TIMEOUT = 300.0


def _wait(pid: int, timeout: float) -> bool:
    """Wait for child ``pid`` (at most ``timeout`` seconds, then it is killed): did it end with status 0?"""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        if fd is not None:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        if fd is not None:
            os.close(fd)
