"""The ``kdebug`` command: a thin entry that runs a script under a debug session.

    kdebug FILE.py [args]            (same as: kdebug run FILE.py)
    kdebug run [options] FILE.py [args]
    kdebug dump FILE.py --out DIR
    kdebug replay TRACE.jsonl

Exit status: 0 on success, 1 when the script, a compilation or a launch
failed, 2 for bad usage.

Each subcommand imports what it uses when it runs (kept lazy for start-up time: ``kdebug --help``
or a usage error loads none of the session, the compiler or Textual).
"""
from __future__ import annotations

import argparse
import os
import sys

from kdebug import settings
from kdebug.driver import strategies

SUBCOMMANDS = ("run", "dump", "replay", "serve")
BACKENDS = ("cpu", "gpu", "auto")


class UsageError(Exception):
    pass


RANDOM_SEED = -1  # --shuffle-threads without a value: a seed drawn at random, printed so the run can be repeated


class _Parser(argparse.ArgumentParser):
    """No prefix abbreviations (``--b`` is not ``--break``, ``--head`` is not ``--headless``): an
    abbreviation works only until an option is added that shares its prefix, and after the script
    a word kdebug mistook for its own option would be taken from the script's arguments."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):  # exit status 2 with a short message, as argparse does
        self.print_usage(sys.stderr)
        print(f"kdebug: error: {message}{self._spelled_out(message)}", file=sys.stderr)
        raise SystemExit(2)

    def _spelled_out(self, message: str) -> str:
        """For an unrecognised abbreviation, the options it begins (``--head``: ``--headless``)."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        known = set(self._option_string_actions)
        for action in self._actions:  # the subcommands' options too
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    known |= set(sub._option_string_actions)
        hints = []
        for word in message.split(":", 1)[1].split():
            prefix = word.split("=")[0]
            full = sorted(o for o in known if len(prefix) > 2 and o.startswith("--") and o.startswith(prefix))
            if full:
                hints.append(f"{word}: did you mean {' or '.join(full)}?")
        return ("; " + "; ".join(hints) + " (options are not abbreviated)") if hints else ""


def _add_run_options(p: argparse.ArgumentParser, remainder: bool = True) -> None:
    p.add_argument("--backend", choices=BACKENDS, default=settings.variable("KDEBUG_BACKEND") or "auto",
                   help="where kernels run: cpu (embedded emulation), gpu (pycuda), auto (gpu if present)")
    p.add_argument("--strategy", choices=strategies.names(), default="worklist",
                   help="deferred-codegen strategy: " + "; ".join(f"{s.name}: {s.summary}"
                                                                   for s in strategies.REGISTRY.values()))
    p.add_argument("--numba", action="store_true", help="make numba.cuda and numba's types resolve to kdebug's")
    p.add_argument("--theme", choices=("dark", "light", "high-contrast"), default="dark",
                   help="the TUI's colours (high-contrast: for a projector; also in the command palette)")
    p.add_argument("--trace", metavar="PATH", help="write the event stream as JSON lines")
    p.add_argument("--no-memcheck", dest="memcheck", action="store_false", help="skip bounds checks (faster)")
    p.add_argument("--sanitize", metavar="LIST", default=None,
                   help="CPU-backend checks: memcheck,synccheck,racecheck,initcheck (default memcheck,synccheck; "
                        "synccheck is always on)")
    p.add_argument("--shuffle-threads", nargs="?", const=RANDOM_SEED, type=_seed, metavar="SEED", default=None,
                   help="run each block's threads in a random order between barriers")
    p.add_argument("--timeout", metavar="SECONDS", default=None,
                   help="headless: stop the script after SECONDS and report where it was (also KDEBUG_TIMEOUT)")
    p.add_argument("--break", dest="breakpoints", default="", metavar="LIST",
                   help="TUI breakpoints: deferred,reentrant,finish,launch")
    p.add_argument("script", help="the Python file to run")
    p.add_argument("args", nargs=argparse.REMAINDER if remainder else "*",
                   help="arguments passed to the script" + ("" if remainder else " (after --)"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kdebug", description="Debug and visualise a GPU kernel compiler driver.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a script and show its compilation jobs and launches")
    run.add_argument("--headless", action="store_true", help="print a report when the script ends; no TUI")
    _add_run_options(run)
    sub.add_parser("dump", help="run a script and write every job's source and IR stages to a directory",
                   add_help=False)
    serve = sub.add_parser("serve", help="the TUI in a web browser (textual-serve): prints the URL to open")
    serve.add_argument("--host", default="localhost",
                       help="the address to listen on (default localhost; 0.0.0.0 for every interface)")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default 8000)")
    serve.add_argument("--public-url", default=None, metavar="URL",
                       help="the address browsers reach this server by, which the page's links and websocket "
                            "use (default: the name each browser asked for, from its Host header)")
    _add_run_options(serve)
    replay = sub.add_parser("replay", help="open a recorded trace file without running anything")
    replay.add_argument("trace")
    replay.add_argument("--headless", action="store_true")
    replay.add_argument("--theme", choices=("dark", "light", "high-contrast"), default="dark",
                        help="the TUI's colours (high-contrast: for a projector)")
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port


def cmd_serve(opts) -> int:
    """``kdebug serve FILE.py``: every browser that opens the URL gets its own live session."""
    from kdebug.tui.serve import serve  # kept lazy for start-up time: Textual and aiohttp load only to serve
    missing = script_problem(opts.script)
    if missing:
        print(f"kdebug: error: {missing}", file=sys.stderr)
        return 2
    public_url = None
    if opts.public_url is not None:
        from kdebug.tui.serve import check_public_url  # kept lazy for start-up time: as serve
        try:
            public_url = check_public_url(opts.public_url)
        except ValueError as exc:
            print(f"kdebug: error: --public-url {exc}", file=sys.stderr)
            return 2
    options = run_options(opts).replace(script=os.path.abspath(opts.script))
    return serve(options, host=opts.host, port=opts.port, public_url=public_url)


def _seedless_shuffle(argv: list[str]) -> list[str]:
    """``--shuffle-threads FILE.py``: argparse would take the script for the seed; mark it seedless.
    Only options before the script are looked at (what follows it is the script's)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg.endswith(".py") or (not arg.startswith("-") and os.path.isfile(arg)):
            break
        if arg == "--shuffle-threads" and not (i + 1 < len(out) and out[i + 1].isdigit()):
            out[i] = f"--shuffle-threads={RANDOM_SEED}"
    return out


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed: give a whole number >= 0") from None
    if value < 0 and value != RANDOM_SEED:
        raise argparse.ArgumentTypeError(f"{value}: a seed is a number >= 0")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``kdebug FILE.py`` and ``kdebug --headless FILE.py`` mean ``kdebug run ...``."""
    argv = _seedless_shuffle(argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help"):
        argv = ["run"] + argv
    if argv and argv[0] == "dump":
        # options may follow the script here: kdebug dump FILE.py --out DIR
        opts = build_dump_parser().parse_intermixed_args(argv[1:])
        opts.command = "dump"
        return opts
    return build_parser().parse_args(argv)


def _ptx_arch(text: str) -> str:
    from kdebug.targets.ptx import arch_of  # kept lazy for start-up time
    try:
        return arch_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_dump_parser() -> argparse.ArgumentParser:
    dump = _Parser(prog="kdebug dump",
                   description="Run a script and write every job's source and IR stages to a directory.")
    dump.add_argument("--out", required=True, metavar="DIR")
    dump.add_argument("--target", choices=("cpu", "ptx"), default="cpu",
                      help="ptx: also write every job's PTX (launches still run on the CPU)")
    dump.add_argument("--arch", default=None, metavar="SM", type=_ptx_arch,
                      help="the GPU architecture of --target ptx, e.g. sm_80 (default: the GPU's, else sm_90)")
    _add_run_options(dump, remainder=False)
    return dump


def run_options(opts, snapshots: bool = True):
    """The parsed command line as the runner's frozen options; bad values raise UsageError."""
    from kdebug.session.options import RunOptions, parse_breakpoints  # kept lazy for start-up time
    if opts.backend not in BACKENDS:  # argparse checks --backend; the default from KDEBUG_BACKEND is ours
        raise UsageError(f"KDEBUG_BACKEND: {opts.backend!r} is not a backend; choose from {', '.join(BACKENDS)}")
    from kdebug.session.supervisor import positive_seconds, timeout_from_env  # kept lazy for start-up time
    try:
        breakpoints = parse_breakpoints(opts.breakpoints)
    except ValueError as exc:
        raise UsageError(f"--break: {exc}") from None
    try:
        timeout = positive_seconds(opts.timeout) if opts.timeout is not None else timeout_from_env()
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}" if opts.timeout is not None else f"KDEBUG_TIMEOUT: {exc}") from None
    seed = opts.shuffle_threads
    if seed == RANDOM_SEED:
        import random
        seed = random.randrange(1 << 31)
        print(f"kdebug: --shuffle-threads seed {seed} (repeat this run with --shuffle-threads={seed})",
              file=sys.stderr)
    from kdebug.runtime.sanitizers import DEFAULT  # kept lazy for start-up time
    from kdebug.session.options import parse_sanitizers  # kept lazy for start-up time
    try:
        sanitizers = parse_sanitizers(opts.sanitize) if opts.sanitize is not None else DEFAULT
    except ValueError as exc:
        raise UsageError(f"--sanitize: {exc}") from None
    return RunOptions(script=opts.script, args=tuple(opts.args), backend=opts.backend, strategy=opts.strategy,
                      numba=opts.numba, trace=opts.trace, memcheck=opts.memcheck and "memcheck" in sanitizers,
                      racecheck="racecheck" in sanitizers, initcheck="initcheck" in sanitizers,
                      shuffle_seed=seed, breakpoints=breakpoints,
                      target=getattr(opts, "target", "cpu"), arch=getattr(opts, "arch", None),
                      snapshots=snapshots, timeout=timeout, theme=getattr(opts, "theme", "dark"))


def checked_options(opts, snapshots: bool = True):
    """``run_options`` once the script and the trace path are known to be usable (before anything runs)."""
    problem = script_problem(opts.script) or trace_problem(opts.trace)
    if problem:
        raise UsageError(problem)
    return run_options(opts, snapshots)


def cmd_run(options, quiet: bool = False) -> tuple[int, object]:
    """A headless run: the script in the debuggee child, the report from the events it sent."""
    from kdebug.session.supervisor import Supervisor  # kept lazy for start-up time
    from kdebug.session.trace import TraceBusy, TraceWriter  # kept lazy for start-up time

    if not os.path.isfile(options.script):
        print(f"kdebug: error: no such file: {options.script}", file=sys.stderr)
        return 2, None
    try:
        writer = TraceWriter(options.trace) if options.trace else None
    except OSError as exc:  # another run holds it (TraceBusy), or it cannot be opened: nothing has run
        print(f"kdebug: error: {exc if isinstance(exc, TraceBusy) else f'--trace {options.trace}: {exc.strerror}'}",
              file=sys.stderr)
        return 2, None
    supervisor = Supervisor(options, timeout=options.timeout)
    if writer:
        supervisor.subscribers.append(writer)
    status, model = supervisor.run()
    if writer:
        writer.close()
    if model.started is None:  # the session could not start (e.g. no GPU for --backend gpu)
        return trace_status(writer, status), None
    if not quiet:
        from kdebug.session.headless import render  # kept lazy for start-up time
        print(render(model), flush=True)
    return trace_status(writer, status), model


def trace_status(writer, status: int) -> int:
    """The run's exit status, 1 where it was 0 but the trace could not be written (said on stderr)."""
    if writer is None or writer.error is None:
        return status
    print(f"kdebug: error: {writer.error}", file=sys.stderr, flush=True)
    return status or 1


def cmd_dump(opts) -> int:
    from kdebug.session.dump import remove_earlier_dump, write_dump  # kept lazy for start-up time

    if os.path.exists(opts.out) and not os.path.isdir(opts.out):
        raise UsageError(f"--out {opts.out}: is an existing file; dump writes a directory of files")
    if opts.arch is not None and opts.target != "ptx":
        raise UsageError(f"--arch {opts.arch}: the architecture is for PTX; add --target ptx")
    problem = dump_folder_problem(opts.out)
    if problem:
        raise UsageError(problem)
    status, model = cmd_run(checked_options(opts), quiet=True)
    if model is None:
        return status
    try:
        written = write_dump(model, opts.out)
        removed = remove_earlier_dump(opts.out, written)
    except OSError as exc:  # the folder became unwritable, the disk is full...: the report, then why
        from kdebug.session.headless import render  # kept lazy for start-up time
        print(render(model), flush=True)
        where = exc.filename or opts.out
        print(f"kdebug: error: dump --out {opts.out}: cannot write {where}: {exc.strerror or exc}; the "
              "report above is the run's", file=sys.stderr)
        return status or 1
    print(f"kdebug: wrote {len(written)} files for {len(model.jobs)} job(s) to {opts.out}"
          + (f" (removed {len(removed)} files of an earlier dump there)" if removed else ""))
    if model.ended is None or model.ended.status not in ("ok", "failed"):  # a failure's error is on stderr
        from kdebug.session.headless import render_ending  # kept lazy for start-up time
        print("\n".join(render_ending(model)), file=sys.stderr)  # a timeout, crash or interrupt: say so
    return status


def cmd_replay(opts) -> int:
    from kdebug.session.trace import load_model  # kept lazy for start-up time

    problem = input_file_problem(opts.trace)
    if problem:
        print(f"kdebug: error: {problem}", file=sys.stderr)
        return 2
    try:
        model = load_model(opts.trace)
    except UnicodeDecodeError:
        print(f"kdebug: error: {opts.trace}: not a text file; is this a kdebug trace (kdebug run --trace)?",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"kdebug: error: {exc}", file=sys.stderr)
        return 2
    if model.started is None:
        print(f"kdebug: error: {opts.trace}: no session_started event; is this a kdebug trace "
              "(kdebug run --trace)?", file=sys.stderr)
        return 2
    if opts.headless or not sys.stdout.isatty():
        from kdebug.session.headless import render  # kept lazy for start-up time
        print(render(model))
        return 0
    from kdebug.tui.app import run_replay  # kept lazy for start-up time
    return run_replay(model, opts.trace, opts.theme)


def script_problem(path: str) -> str | None:
    """Why ``path`` cannot be run as a Python script, or None (checked before anything runs)."""
    if os.path.isdir(path):
        return f"{path} is a directory, not a Python source file"
    if not os.path.isfile(path):
        return f"no such file: {path}"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    if b"\0" in data:
        return f"{path} is not a Python source file (it is binary)"
    import io
    import tokenize
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        return (f"{path} is not a Python source file (not valid UTF-8{where}); "
                "save it as UTF-8 or declare its encoding (# -*- coding: ... -*-)")
    return None


def trace_problem(path: str | None) -> str | None:
    """Why a trace cannot be written to ``path``, or None (checked before the script runs)."""
    if not path:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"--trace {path}: is a directory; name a file"
    if not os.path.isdir(folder):
        return f"--trace {path}: the folder {folder} does not exist; create it first"
    if not os.access(folder, os.W_OK):
        return f"--trace {path}: cannot write in {folder}"
    if os.path.isfile(path) and trace_is_held(path):
        return f"--trace {path}: another kdebug run is writing this trace; name another file or wait for that run to end"
    return None


def dump_folder_problem(out: str) -> str | None:
    """Why dump cannot write into ``out`` (checked before the script runs), or None."""
    target = out
    while not os.path.exists(target):  # the first folder that exists: dump makes the rest
        parent = os.path.dirname(os.path.abspath(target))
        if parent == target:
            break
        target = parent
    if os.path.isdir(target) and not os.access(target, os.W_OK | os.X_OK):
        return f"--out {out}: cannot write in {target} (permission denied); choose a folder you can write"
    return None


def trace_is_held(path: str) -> bool:
    """Whether another run's TraceWriter holds the lock on ``path`` (kdebug/session/trace.py)."""
    import fcntl  # kept lazy for start-up time (a stdlib module: no kdebug import)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def input_file_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as an input file, or None."""
    if os.path.isdir(path):
        return f"{path} is a directory, not a file"
    if not os.path.isfile(path):
        return f"no such file: {path}"
    if os.path.getsize(path) == 0:
        return f"{path} is empty"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        build_parser().print_help(sys.stderr)
        return 2
    try:
        opts = parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if opts.command == "dump":
            return cmd_dump(opts)
        if opts.command == "replay":
            return cmd_replay(opts)
        if opts.command == "serve":
            return cmd_serve(opts)
        if not opts.headless and sys.stdout.isatty() and sys.stdin.isatty():
            try:
                from kdebug.tui.app import run_tui  # kept lazy for start-up time
            except ImportError:
                run_tui = None
            if run_tui is not None:
                return run_tui(checked_options(opts))
        # snapshots print modules to text (and the host assembly costs a second code generation):
        # a headless run records them only for its trace
        return cmd_run(checked_options(opts, snapshots=bool(opts.trace)))[0]
    except UsageError as exc:
        print(f"kdebug: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the script started (after, the supervisor handles it)
        print("kdebug: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # kdebug ... | head: whoever reads our output has what they wanted
        from kdebug.session.runner import BROKEN_PIPE_STATUS, quiet_stdout  # kept lazy for start-up time
        quiet_stdout()
        return BROKEN_PIPE_STATUS


if __name__ == "__main__":
    sys.exit(main())
