"""Pass replays in a process of their own, for the TUI.

The live TUI keeps each pipeline's input and runs it again, recorded pass by pass, when someone looks
(``pass_record.replay``). Run in the TUI's own process, that LLVM work shared the process with the
terminal: it redirects descriptor 2 to read LLVM's remarks, sets process-wide LLVM options, and a
thread inside LLVM when the app exits meets LLVM's static destructors (a segmentation fault on a quick
Ctrl-C or q). Here it runs in a child process: the TUI sends the pipelines, one JSON line a request,
and reads back the log; ending the TUI ends the child at once, whatever it is doing.

``python -m kdebug.targets.replay_worker`` is the child; ``ReplayWorker`` the TUI's side.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from kdebug.passes import PassLog, PassRun, PipelineInput, ReplayMismatch

MEMORY = "/dev/shm"  # where the dumps go where Linux has it (pass_dumps.MEMORY_DIR)


class ReplayWorker:
    """One child process that replays pipelines, started on the first request; ``replay`` has
    ``pass_record.replay``'s signature and may be called from any thread (requests run one at a time)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._closed = False
        # the child's pass dumps go in a folder of this side's: a child killed mid-replay (the TUI
        # closing) cannot remove its own, and in /dev/shm a leaked dump is memory until the next boot.
        # Where this side is killed instead (a served app's browser gone), the child removes it when
        # its requests' pipe closes. Made with the child: a TUI that replays nothing leaves nothing.
        self._dumps: str | None = None

    def replay(self, pipelines: list[PipelineInput], assembly: bool = False) -> PassLog:
        request = json.dumps({"pipelines": [p.to_json() for p in pipelines], "assembly": assembly}) + "\n"
        with self._lock:
            if self._closed:
                raise RuntimeError("the TUI is closing")
            proc = self._start()
            try:
                proc.stdin.write(request)
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (OSError, ValueError):  # closed meanwhile: the pipe is gone
                line = ""
            if not line:
                self._proc = None
                code = proc.poll()
                raise RuntimeError("the replay process ended" + (f" (exit status {code})" if code is not None else ""))
        answer = json.loads(line)
        if "mismatch" in answer:
            raise ReplayMismatch(answer["mismatch"])
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return PassLog(runs=[PassRun(*run) for run in answer["runs"]], remarks=answer["remarks"],
                       assembly=answer["assembly"])

    @property
    def started(self) -> bool:
        """Whether the child runs now."""
        proc = self._proc
        return proc is not None and proc.poll() is None

    def warm(self) -> None:
        """Start the child now, so that the first replay does not wait for its start-up (LLVM's import). Never
        waits: a replay in flight holds the lock (for as long as LLVM runs), and its child is started already."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._start()
        finally:
            self._lock.release()

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            if self._dumps is None:
                self._dumps = tempfile.mkdtemp(prefix="kdebug-replays-", dir=MEMORY if os.path.isdir(MEMORY) else None)
            self._proc = subprocess.Popen([sys.executable, "-m", "kdebug.targets.replay_worker", self._dumps],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True, encoding="utf-8", errors="replace", start_new_session=True)
        return self._proc

    def close(self) -> None:
        """End the child now (a replay in flight fails with "the replay process ended")."""
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._dumps is not None:
            shutil.rmtree(self._dumps, ignore_errors=True)


def main() -> int:
    """The child: a request a line on stdin, its answer a line on stdout, until stdin closes."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")  # LLVM and anything else writing to fd 1 goes to fd 2
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the TUI's process group's ^C is the TUI's to handle
    # kept lazy for start-up time: LLVM, once the answers have their descriptor
    from kdebug.targets import pass_dumps, pass_record
    folder = sys.argv[1] if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]) else None
    if folder is not None:
        pass_dumps.MEMORY_DIR = folder  # the TUI's folder: it removes what a killed replay leaves
    try:
        serve_requests(answers, pass_record)
    finally:  # the requests' pipe closed: the TUI is gone (its close() kills this process first)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def serve_requests(answers, pass_record) -> None:
    for line in sys.stdin:
        try:
            request = json.loads(line)
            log = pass_record.replay([PipelineInput.from_json(p) for p in request["pipelines"]],
                                     assembly=bool(request.get("assembly")))
            answer = {"runs": [[r.name, r.unit, r.changed, r.text] for r in log.runs], "remarks": log.remarks,
                      "assembly": log.assembly}
        except ReplayMismatch as exc:
            answer = {"mismatch": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a damaged trace, another LLVM: told to the TUI, which says it
            answer = {"error": f"{exc.__class__.__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    sys.exit(main())
