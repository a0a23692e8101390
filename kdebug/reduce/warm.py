"""Warm trial starts: one process that has imported kdebug's driver, targets and runtimes forks a
debuggee child for each trial, so a trial does not pay the interpreter's start and those imports again
(most of a small script's trial). The child runs exactly what ``python -m kdebug.session.debuggee``
runs (``child_main``, the same options as data); its events go to a file, its stdout and stderr to
files of their own.

    python -m kdebug.reduce.warm        (requests and answers: one JSON object a line)

    -> {"id": N, "options": JSON, "events": PATH, "stdout": PATH, "stderr": PATH, "fault": PATH, "cwd": DIR}
    <- {"id": N, "pid": PID}              the child started (its own process group: kill it with killpg)
    <- {"id": N, "status": S}             it ended: its exit status, or -SIGNAL

Each child runs in a process group of its own; when it ends, the group is killed (whatever the script
started there ends with the trial), and when the reducer goes (its end of stdin closes) every child's
group is killed.

The warm process never runs a script itself and starts no thread, so every fork starts from the same
clean state.
"""
from __future__ import annotations

import json
import os
import select
import signal
import sys


def _child(req: dict) -> None:
    """In the forked child: the debuggee's own main, on the request's files."""
    try:
        os.setsid()
        if req.get("cwd"):
            os.chdir(req["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child's own stdin, for its whole life
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        events = os.open(req["events"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fault = os.open(req["fault"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        from kdebug.session.debuggee import child_main  # kept lazy for start-up time: imported by serve()
        status = child_main(["--events-fd", str(events), "--fault-fd", str(fault), "--options", req["options"]])
        sys.stdout.flush()
        sys.stderr.flush()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
        status = 1
    os._exit(status if isinstance(status, int) else 1)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def serve() -> int:
    # what every trial would import again (the session, the driver, the targets and runtimes, the
    # kernel language), imported once here before the first fork
    import kdebug.lang.dispatcher  # noqa: F401 - kept lazy for start-up time
    import kdebug.lang.intrinsics  # noqa: F401 - kept lazy for start-up time
    import kdebug.session.debuggee  # noqa: F401 - kept lazy for start-up time
    import kdebug.session.live  # noqa: F401 - kept lazy for start-up time
    children: dict[int, int] = {}  # pid -> request id
    out = sys.stdout
    stdin = sys.stdin.fileno()
    buffer = b""
    open_input = True
    while open_input or children:
        ready, _, _ = select.select([stdin] if open_input else [], [], [], 0.02)
        if ready:
            chunk = os.read(stdin, 65536)
            if not chunk:  # the reducer is gone: so are its trials
                open_input = False
                for pid in children:
                    _kill(pid)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                req = json.loads(line)
                out.flush()
                pid = os.fork()
                if pid == 0:
                    _child(req)
                children[pid] = req["id"]
                out.write(json.dumps({"id": req["id"], "pid": pid}) + "\n")
                out.flush()
        while children:
            try:  # a child that ended, not yet reaped: its pid still names its process group
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if info is None or info.si_pid == 0:
                break
            _kill(info.si_pid)  # what the script started and left in the trial's group ends with it
            pid, status = os.waitpid(info.si_pid, 0)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            out.write(json.dumps({"id": children.pop(pid), "status": code}) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
