"""The ``kdebug`` command: a thin entry that runs a script under a debug session.

    kdebug FILE.py [args]            (same as: kdebug run FILE.py)
    kdebug run [options] FILE.py [args]
    kdebug dump FILE.py --out DIR
    kdebug replay TRACE.jsonl
    kdebug export TRACE.jsonl --html OUT.html
    kdebug reduce FILE.py --until PROPERTY [options]
    kdebug check-strategy STRATEGY   (a built-in, FILE.py:Class or MODULE:Class against the hazard corpus)
    kdebug fuzz-strategy STRATEGY [--count N] [--seed S] [--out DIR]   (random hazards; findings shrunk)

Exit status: 0 on success, 1 when the script, a compilation or a launch
failed, 2 for bad usage.

Each subcommand imports what it uses when it runs (kept lazy for start-up time: ``kdebug --help``
or a usage error loads none of the session, the compiler or Textual).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

from kdebug import settings
from kdebug.driver import builtin_strategies  # names and summaries: no compiler imported (its module says why)
from kdebug.runtime import sanitizer_names

SUBCOMMANDS = ("run", "dump", "replay", "serve", "export", "reduce", "bisect", "check-strategy", "fuzz-strategy")
BACKENDS = ("cpu", "gpu", "auto")
NUMBA_MODES = ("auto", "cuda-only", "all")  # kdebug.lang.numba_compat.MODES (not imported: start-up time)


class UsageError(Exception):
    pass


def strategy_value(value: str) -> str:
    """``--strategy``'s type: a built-in's name as it is; a user's strategy loaded and checked now (its located
    error is the usage error), by the strategies' own ``cli_value``."""
    if value in builtin_strategies.SUMMARIES:
        return value
    from kdebug.driver import strategies  # kept lazy for start-up time: only a user's strategy needs the compiler
    return strategies.cli_value(value)


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
    p.add_argument("--strategy", choices=builtin_strategies.Choices(builtin_strategies.names()),
                   default="worklist", type=strategy_value, metavar="STRATEGY",
                   help="deferred-codegen strategy: " + "; ".join(f"{name}: {summary}" for name, summary
                                                                   in builtin_strategies.SUMMARIES.items())
                   + "; or your own, FILE.py:Class or MODULE:Class (docs/internals/strategies.md)")
    p.add_argument("--numba", nargs="?", const="auto", default=None, choices=NUMBA_MODES, metavar="MODE",
                   help="make numba.cuda resolve to kdebug's: --numba=cuda-only keeps an installed numba's CPU JIT "
                        "(njit, prange, config) numba's; --numba=all makes all of numba kdebug's stand-in; "
                        "--numba (auto): cuda-only where numba is installed, else all")
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
    p.add_argument("--override", metavar="DIR", default=None,
                   help="edit and continue: each file of DIR named as kdebug dump names it (job, stage) "
                        "replaces that stage of that job, and compilation goes on from the edited text "
                        "(docs/guide/edit-and-continue.md)")
    p.add_argument("script", help="the Python file to run")
    p.add_argument("args", nargs=argparse.REMAINDER if remainder else "*",
                   help="arguments passed to the script" + ("" if remainder else " (after --)"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kdebug", description="Debug and visualise a GPU kernel compiler driver.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a script and show its compilation jobs and launches")
    run.add_argument("--headless", action="store_true", help="print a report when the script ends; no TUI")
    run.add_argument("--html", metavar="PATH", default=None,
                     help="record the session and write it as one offline HTML file (runs headless)")
    run.add_argument("-m", dest="module", metavar="MODULE", default=None,
                     help="run a library module as a script, as python -m does, in place of FILE.py (the "
                          "arguments after MODULE are its own): kdebug run --numba -m pytest tests/")
    run.add_argument("--report", choices=("auto", "summary", "full"), default="auto",
                     help="headless report: full lists every launch; summary counts launches per kernel (with "
                          "every failed launch and diagnostic in full); auto (default): summary where stdout "
                          f"is not a terminal and there are more than {REPORT_LAUNCH_LIMIT} launches")
    run.add_argument("--json-summary", metavar="PATH", default=None,
                     help="also write the run's summary as JSON to PATH (- for stdout), for CI tools")
    _add_run_options(run)
    sub.add_parser("dump", help="run a script and write every job's source and IR stages to a directory",
                   add_help=False)
    serve = sub.add_parser("serve", help="the TUI in a web browser (textual-serve): prints the URL to open")
    serve.add_argument("--host", default="localhost",
                       help="the address to listen on (default localhost; 0.0.0.0 for every interface). The "
                            "server answers only to the names localhost, 127.0.0.1, [::1] and this address; "
                            "listening on the network (0.0.0.0 or another address) it also answers to this "
                            "machine's host name and to any IP address; any other name (a DNS alias, a "
                            "proxy's): give it as --public-url")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default 8000)")
    serve.add_argument("--public-url", default=None, metavar="URL",
                       help="the address browsers reach this server by, which the page's links and websocket "
                            "use, and which the server then also answers to (default: the name each "
                            "browser asked for, from its Host header)")
    serve.add_argument("--no-token", dest="token", action="store_false",
                       help="serve without the random token in the printed URL: anyone who reaches the port "
                            "can watch and drive the session (only for a network you trust)")
    _add_run_options(serve)
    sub.add_parser("reduce", help="shrink a script to the few lines that still show a property of its run",
                   add_help=False)
    sub.add_parser("bisect", help="find the first optimisation pass of a kernel after which a property holds",
                   add_help=False)
    check = sub.add_parser("check-strategy", help="run the hazard corpus under a strategy: a table hazard x "
                                                  "invariant; exit 1 when an invariant it claims is broken")
    check.add_argument("strategy", type=strategy_value, metavar="STRATEGY",
                       help=f"a built-in ({', '.join(builtin_strategies.names())}), FILE.py:Class or MODULE:Class")
    check.add_argument("--samples", metavar="DIR", default=None,
                       help="the folder of samples whose deferred-job ones make the corpus (default: sample_kernels)")
    check.add_argument("--no-generated", dest="generated", action="store_false",
                       help="only the samples, not the generated programs")
    check.add_argument("--only", metavar="NAME", action="append", default=None,
                       help="only the hazards whose name contains NAME (repeatable)")
    check.add_argument("--jobs", type=int, default=2, help="hazards run at a time (default 2)")
    check.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                       help="one hazard's limit; past it, 'answered' is broken (default 120)")
    fuzz = sub.add_parser("fuzz-strategy", help="run random hazards (launch graphs, pointers, derivatives) under "
                                                "a strategy; exit 1 when an invariant it claims is broken")
    fuzz.add_argument("strategy", type=strategy_value, metavar="STRATEGY",
                      help=f"a built-in ({', '.join(builtin_strategies.names())}), FILE.py:Class or MODULE:Class")
    fuzz.add_argument("--count", type=int, default=20, help="random programs to run (default 20)")
    fuzz.add_argument("--seed", type=int, default=None, help="the programs' seed (default: drawn, and printed)")
    fuzz.add_argument("--keep", metavar="DIR", default=None, help="leave the programs in DIR, to rerun one")
    fuzz.add_argument("--jobs", type=int, default=2, help="programs run at a time (default 2)")
    fuzz.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                      help="one program's limit; past it, 'answered' is broken (default 120)")
    fuzz.add_argument("--out", metavar="DIR", default="fuzz-findings",
                      help="where each finding's shrunk reproducer is written (default: fuzz-findings, made in the "
                           "current directory when there is a finding; no file there is overwritten)")
    fuzz.add_argument("--find", metavar="KIND", action="append", default=None,
                      help="shrink only these findings (repeatable): an invariant's name, or reentrant-loop (a cycle "
                           "the strategy stopped); default: every kind found")
    fuzz.add_argument("--no-shrink", dest="shrink", action="store_false",
                      help="only the table: no finding shrunk, nothing written")
    replay = sub.add_parser("replay", help="open a recorded trace file without running anything")
    replay.add_argument("trace")
    replay.add_argument("--headless", action="store_true")
    export = sub.add_parser("export", help="write a recorded trace as one self-contained HTML file (offline)")
    export.add_argument("trace")
    export.add_argument("--html", metavar="PATH", required=True, help="the HTML file to write")
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
    return serve(options, host=opts.host, port=opts.port, public_url=public_url, token=opts.token)


def _seedless_shuffle(argv: list[str]) -> list[str]:
    """``--shuffle-threads FILE.py``: argparse would take the script for the seed; mark it seedless. So too
    ``--numba FILE.py``: ``--numba=auto``. Only options before the script (or ``-m MODULE``) are looked at
    (what follows it is the script's)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg.endswith(".py") or arg == "-m" or (not arg.startswith("-") and os.path.isfile(arg)):
            break
        if arg == "--shuffle-threads" and not (i + 1 < len(out) and out[i + 1].isdigit()):
            out[i] = f"--shuffle-threads={RANDOM_SEED}"
        if arg == "--numba" and not (i + 1 < len(out) and out[i + 1] in NUMBA_MODES):
            out[i] = "--numba=auto"  # --numba FILE.py: the script is not the mode
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
    if argv and argv[0] == "reduce":
        opts = build_reduce_parser().parse_intermixed_args(argv[1:])
        opts.command = "reduce"
        return opts
    if argv and argv[0] == "bisect":
        opts = build_bisect_parser().parse_intermixed_args(argv[1:])
        opts.command = "bisect"
        return opts
    if argv and argv[0] == "run":
        at = _module_option(argv)
        if at is not None:  # kdebug run [options] -m MODULE [args]: MODULE's file stands for the script
            parser = build_parser()
            if at + 1 >= len(argv):
                parser.parse_args(argv[:at] + ["-m"])  # argparse's "expected one argument", and exit
            module = argv[at + 1]
            path = module_file(module)
            if path is None:
                parser.error(f"-m {module}: no module named {module!r} with Python source to run "
                             "(looked in the current folder and on sys.path)")
            opts = parser.parse_args(argv[:at] + [path])
            opts.module, opts.args = module, argv[at + 2:]
            return opts
    return build_parser().parse_args(argv)


REPORT_LAUNCH_LIMIT = 50  # --report auto: more launches than this, off a terminal, give the summary


def _module_option(argv: list[str]) -> int | None:
    """Where ``-m`` is among ``kdebug run``'s own options (before any script), else None."""
    takes_value = {"--backend", "--strategy", "--theme", "--trace", "--sanitize", "--timeout", "--break",
                   "--html", "--report", "--json-summary", "--override"}
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return i
        if not arg.startswith("-") or arg == "--":
            return None  # the script: what follows is its own
        if arg in takes_value:
            i += 1
        elif arg == "--shuffle-threads" and i + 1 < len(argv) and argv[i + 1].isdigit():
            i += 1
        elif arg == "--numba" and i + 1 < len(argv) and argv[i + 1] in NUMBA_MODES:
            i += 1
        i += 1
    return None


def module_file(name: str) -> str | None:
    """The source file ``python -m name`` runs (a package's ``__main__.py``), found as python finds it
    (the current folder first, then sys.path) without importing anything; None where there is none."""
    import importlib.machinery  # kept lazy for start-up time (a stdlib module: no kdebug import)
    path = [os.getcwd()] + [p for p in sys.path if p]
    spec = None
    for part in name.split("."):
        if not part.isidentifier():
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None:
            return None
        path = list(spec.submodule_search_locations or [])
    if spec.submodule_search_locations:  # a package: its __main__
        spec = importlib.machinery.PathFinder.find_spec("__main__", list(spec.submodule_search_locations))
    origin = getattr(spec, "origin", None)
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None


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
    dump.add_argument("--no-passes", action="store_true",
                      help="write each job's stages only, not optimize's and emit's IR after every pass (a "
                           "big kernel runs thousands of passes: its dump takes minutes and gigabytes of text)")
    _add_run_options(dump, remainder=False)
    return dump


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of trials to run at once (1 or more)")
    return value


def build_reduce_parser() -> argparse.ArgumentParser:
    from kdebug.reduce.properties import HELP  # kept lazy for start-up time
    reduce = _Parser(prog="kdebug reduce",
                     description="Shrink a script, on its syntax tree, to the few lines that still show a "
                                 "property of its run (judged from the run's events). The run options apply "
                                 "to every trial; the original file is never modified.")
    reduce.add_argument("--until", action="append", required=True, metavar="PROPERTY",
                        help="what the reduced script must still show (several: all must hold): " + HELP)
    reduce.add_argument("--out", metavar="FILE", default=None,
                        help="where the reduced script goes (default: <stem>.reduced.py in the current directory)")
    reduce.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                        help="trials run at once (default: the number of cores)")
    reduce.add_argument("--allow-new-failures", action="store_true",
                        help="keep a candidate that also fails in ways the original did not (by default the "
                             "session's end and its errors' kinds stay within the original's)")
    reduce.add_argument("--copy", metavar="DIR", default=None,
                        help="the folder the trials need (default: the script's folder; it must hold the "
                             "script): every trial runs in a scratch copy of it, removed at the end, never "
                             "in the folder itself")
    _add_run_options(reduce, remainder=False)
    for action in reduce._actions:  # the same options, as they apply to a reduction
        if action.dest == "timeout":
            action.help = "each trial's limit in seconds (default: 4 times the original's run, at least 10)"
        elif action.dest == "trace":
            action.help = "write the final check's event stream as JSON lines (default: <out>.jsonl beside --out)"
    return reduce


def cmd_reduce(opts) -> int:
    """``kdebug reduce FILE.py --until P``: trials in debuggee children, the result checked once more."""
    from kdebug.reduce import job  # kept lazy for start-up time
    from kdebug.reduce.properties import SANITIZER_NEEDS, parse_property  # kept lazy for start-up time
    problem = script_problem(opts.script)
    if problem:
        raise UsageError(problem)
    try:
        properties = [parse_property(text, tuple(builtin_strategies.names())) for text in opts.until]
    except ValueError as exc:
        raise UsageError(f"--until {exc}") from None
    needed = sorted({SANITIZER_NEEDS[p.kind] for p in properties if p.kind in SANITIZER_NEEDS})
    if needed:  # a sanitizer's finding needs the sanitizer on: add it to what was asked for
        asked = set(opts.sanitize.split(",")) if opts.sanitize else set(sanitizer_names.DEFAULT)
        if not opts.memcheck and "memcheck" in needed:
            raise UsageError("--until memcheck needs bounds checks: leave out --no-memcheck")
        opts.sanitize = ",".join(sorted(asked | set(needed)))
    out = opts.out or job.default_out(opts.script)
    trace = opts.trace or os.path.splitext(out)[0] + ".jsonl"
    try:  # by file identity, through links: neither output may be the script; both writable, untouched yet
        from kdebug.reduce.files import check_outputs  # kept lazy for start-up time
        check_outputs(opts.script, out, trace)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    problem = trace_problem(trace)
    if problem:
        raise UsageError(problem)
    timeout = opts.timeout
    opts.timeout = None  # a trial's limit is the reducer's to keep, not the run's
    options = run_options(opts, snapshots=False).replace(script=os.path.abspath(opts.script), trace=None)
    if timeout is not None:
        from kdebug.session.supervisor import positive_seconds  # kept lazy for start-up time
        try:
            timeout = positive_seconds(timeout)
        except ValueError as exc:
            raise UsageError(f"--timeout: {exc}") from None
    jobs = opts.jobs or len(os.sched_getaffinity(0))
    progress = _ProgressLine(sys.stderr)
    print(f"kdebug reduce: {opts.script} until {', '.join(p.spec for p in properties)} "
          f"({jobs} trial(s) at once)", file=sys.stderr, flush=True)

    def copied(line: str) -> None:
        print(f"kdebug reduce: {line}", file=sys.stderr, flush=True)

    try:
        with _sigterm_as(job.Terminated):
            result = job.reduce_script(options, properties, out, jobs=jobs, timeout=timeout, trace=trace,
                                       on_progress=progress, new_failures=opts.allow_new_failures,
                                       copy=opts.copy, on_copy=copied)
    except (job.ScriptError, job.OutputError, job.ScratchError) as exc:
        raise UsageError(str(exc)) from None
    except job.NothingToReduce as exc:
        progress.end()
        print(f"kdebug: error: {opts.script}: {exc}", file=sys.stderr)
        return 1
    except job.WriteError as exc:
        progress.end()
        print(f"kdebug: error: {exc}", file=sys.stderr)
        return 1
    except job.Terminated:  # as Ctrl-C ends it (130), with SIGTERM's status
        print("kdebug: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    progress.end()
    print(result.source, end="")
    print(f"# {opts.script}: {result.original_lines} -> {result.lines} code lines in {result.trials} trials "
          f"({result.accepted} accepted, {result.cached} answered from the cache) and {result.seconds:.0f} s",
          file=sys.stderr)
    verdict = "shows" if result.holds else "does NOT show"
    print(f"kdebug reduce: {result.out} {verdict} the property when run plainly:", file=sys.stderr)
    for line in result.shown:
        print(f"  {line}", file=sys.stderr)
    print(f"kdebug reduce: the final run's trace: {result.trace} (kdebug replay {result.trace})", file=sys.stderr)
    return 0 if result.holds else 1


class _sigterm_as:
    """SIGTERM raises ``exc`` in the main thread, as SIGINT raises KeyboardInterrupt (the reduction then
    writes the smallest script so far and kills its trials); a second SIGTERM while that runs is ignored."""

    def __init__(self, exc: type[BaseException]) -> None:
        self.exc = exc

    def _raise(self, signum, frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise self.exc()

    def __enter__(self):
        self.saved = signal.signal(signal.SIGTERM, self._raise)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGTERM, self.saved)


def build_bisect_parser() -> argparse.ArgumentParser:
    from kdebug.reduce.bisect import HELP  # kept lazy for start-up time
    bisect = _Parser(prog="kdebug bisect",
                     description="Build a script many times with one kernel's optimize and emit pipelines cut "
                                 "after pass N (LLVM's opt-bisect limit), and find by binary search the first "
                                 "pass after which a property holds: its number, name, stage and function, "
                                 "and its diff. Each build is a headless run in a child process.")
    bisect.add_argument("--kernel", required=True, metavar="NAME", help="the kernel (or device function job) to cut")
    bisect.add_argument("--until", required=True, metavar="PROPERTY", help="what the first pass makes hold: " + HELP)
    _add_run_options(bisect, remainder=False)
    for action in bisect._actions:
        if action.dest == "timeout":
            action.help = "each build's limit in seconds (default 120)"
    return bisect


def cmd_bisect(opts) -> int:
    """``kdebug bisect FILE.py --kernel K --until P``: builds in debuggee children, the pass found printed."""
    from kdebug.reduce.bisect import BisectError, Bisector, options_for, parse_bisect_property  # kept lazy for start-up time
    problem = script_problem(opts.script)
    if problem:
        raise UsageError(problem)
    try:
        prop = parse_bisect_property(opts.until)
    except ValueError as exc:
        raise UsageError(f"--until {exc}") from None
    timeout = opts.timeout
    opts.timeout = None
    if timeout is not None:
        from kdebug.session.supervisor import positive_seconds  # kept lazy for start-up time
        try:
            timeout = positive_seconds(timeout)
        except ValueError as exc:
            raise UsageError(f"--timeout: {exc}") from None
    options = run_options(opts, snapshots=False).replace(script=os.path.abspath(opts.script), trace=None)
    try:
        options = options_for(prop, options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"kdebug bisect: {opts.script} kernel {opts.kernel} until {prop.spec}", file=sys.stderr, flush=True)
    bisector = Bisector(options, opts.kernel, prop, timeout=timeout if timeout is not None else 120.0)
    try:
        result = bisector.run()
    except BisectError as exc:
        print(f"kdebug: error: {opts.script}: {exc}", file=sys.stderr)
        return 1
    finally:
        bisector.close()
    print(result.report(), end="")
    return 0 if result.first is not None else 1


class _ProgressLine:
    """The reduction's progress: one line rewritten in place on a terminal, a line per accepted cut
    otherwise (a log stays readable)."""

    def __init__(self, stream) -> None:
        self.stream, self.tty = stream, stream.isatty()
        self.accepted, self.width = -1, 0

    def __call__(self, progress) -> None:
        line = progress.line()
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        elif progress.accepted != self.accepted:
            self.stream.write(line + "\n")
        self.accepted = progress.accepted
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


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
    from kdebug.session.options import parse_sanitizers  # kept lazy for start-up time
    try:
        sanitizers = parse_sanitizers(opts.sanitize) if opts.sanitize is not None else sanitizer_names.DEFAULT
    except ValueError as exc:
        raise UsageError(f"--sanitize: {exc}") from None
    return RunOptions(script=opts.script, args=tuple(opts.args), backend=opts.backend, strategy=opts.strategy,
                      numba=bool(opts.numba), numba_mode=opts.numba if isinstance(opts.numba, str) else "auto",
                      trace=opts.trace, memcheck=opts.memcheck and "memcheck" in sanitizers,
                      racecheck="racecheck" in sanitizers, initcheck="initcheck" in sanitizers,
                      shuffle_seed=seed, breakpoints=breakpoints,
                      target=getattr(opts, "target", "cpu"), arch=getattr(opts, "arch", None),
                      snapshots=snapshots, timeout=timeout, theme=getattr(opts, "theme", "dark"),
                      module=getattr(opts, "module", None), report=getattr(opts, "report", "auto"),
                      json_summary=getattr(opts, "json_summary", None),
                      override=override_folder(getattr(opts, "override", None), getattr(opts, "command", "run")))


def override_folder(path: str | None, command: str = "run") -> str | None:
    """``--override DIR``, checked before anything runs (UsageError where it is no readable folder);
    absolute for reduce and bisect, whose trials run in a scratch copy of the script's folder."""
    if path is None:
        return None
    if command in ("reduce", "bisect"):
        path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise UsageError(f"--override {path}: no such folder (give the folder of edited files kdebug dump wrote)")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UsageError(f"--override {path}: cannot read the folder (permission denied)")
    return path


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
        summary = options.report == "summary" or (options.report == "auto" and not _stdout_is_terminal()
                                                  and len(model.launches) > REPORT_LAUNCH_LIMIT)
        print(render(model, summary=summary), flush=True)
    if options.json_summary:
        status = write_json_summary(model, options.json_summary) or status
    return trace_status(writer, status), model


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def write_json_summary(model, path: str) -> int:
    """``--json-summary PATH``: the run's summary as JSON (``-``: stdout); 1 where it cannot be written."""
    import json  # kept lazy for start-up time (a stdlib module: no kdebug import)
    from kdebug.session.headless import summary_json  # kept lazy for start-up time
    text = json.dumps(summary_json(model), indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        print(f"kdebug: error: --json-summary {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


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
    # --no-passes: the stages' snapshots (the host assembly too), the pipelines run unrecorded
    status, model = cmd_run(checked_options(opts).replace(passes=not opts.no_passes), quiet=True)
    if model is None:
        return status
    try:
        written = write_dump(model, opts.out, passes=not opts.no_passes)
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


def load_trace(path: str):
    """The session model of a trace file, or None when it is no usable trace (said on stderr): the
    reading of ``replay`` and ``export``."""
    from kdebug.session.trace import load_model  # kept lazy for start-up time

    problem = input_file_problem(path)
    if problem:
        print(f"kdebug: error: {problem}", file=sys.stderr)
        return None
    notes: list[str] = []
    try:
        model = load_model(path, notes)
    except UnicodeDecodeError:
        print(f"kdebug: error: {path}: not a text file; is this a kdebug trace (kdebug run --trace)?",
              file=sys.stderr)
        return None
    except ValueError as exc:  # the trace schema's TraceError among them: a located line
        print(f"kdebug: error: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"kdebug: error: {path}: cannot read it: {exc.strerror or exc}", file=sys.stderr)
        return None
    for note in notes:  # text replaced by U+FFFD: shown, and said once
        print(f"kdebug: warning: {note}", file=sys.stderr)
    if model.started is None:
        print(f"kdebug: error: {path}: no session_started event; is this a kdebug trace "
              "(kdebug run --trace)?", file=sys.stderr)
        return None
    return model


def cmd_check_strategy(opts) -> int:
    """The hazard corpus under a strategy: the table, and 1 when an invariant it claims is broken."""
    from kdebug.driver import workbench  # kept lazy for start-up time: only check-strategy runs the corpus
    root = opts.samples or ("sample_kernels" if os.path.isdir("sample_kernels") else
                            os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_kernels"))
    if not os.path.isdir(root):
        raise UsageError(f"--samples: no folder {root}")
    results = workbench.check(opts.strategy, root, generated=opts.generated, jobs=opts.jobs, timeout=opts.timeout,
                              only=opts.only)
    if not results:
        raise UsageError(f"no hazard in {root}" + (f" matches {', '.join(opts.only)}" if opts.only else ""))
    text, status = workbench.report(opts.strategy, results)
    print(text)
    return status


def cmd_fuzz_strategy(opts) -> int:
    """Random hazards under a strategy: the table; each kind of finding shrunk to a reproducer written to
    ``--out``; 1 when an invariant the strategy claims is broken."""
    from kdebug.driver import workbench  # kept lazy for start-up time: only fuzz-strategy runs the programs
    if opts.count < 1:
        raise UsageError("--count: at least 1")
    kinds = list(workbench.invariants.NAMES) + [workbench.LOOP]
    for kind in opts.find or []:
        if kind not in kinds:
            raise UsageError(f"--find {kind}: not a kind of finding; choose from {', '.join(kinds)}")
    if opts.shrink and os.path.exists(opts.out) and not os.path.isdir(opts.out):
        raise UsageError(f"--out {opts.out}: is an existing file; the reproducers go into a folder (give another "
                         "--out DIR)")
    seed = opts.seed
    if seed is None:
        import random
        seed = random.randrange(1 << 31)
    print(f"kdebug: fuzz-strategy seed {seed} (the same programs again: --seed {seed}"
          + (f"; they are in {opts.keep})" if opts.keep else "; --keep DIR leaves them there)"), file=sys.stderr)
    results = workbench.fuzz(opts.strategy, opts.count, seed, jobs=opts.jobs, timeout=opts.timeout, keep=opts.keep)
    text, status = workbench.report(opts.strategy, results, "fuzz-strategy")
    print(text, flush=True)
    if not opts.shrink:
        return status
    from kdebug.reduce import fuzz  # kept lazy for start-up time: only a finding to shrink needs the reducer
    found = fuzz.first_findings(results, opts.find)
    if not found:
        print("\nno finding to shrink" + (f" of {', '.join(opts.find)}" if opts.find else ""))
        return status
    print(f"\n{len(found)} finding(s), each shrunk (its job graph, then kdebug reduce) to a reproducer in {opts.out}:")
    spec = fuzz.shown_spec(opts.strategy)
    command = f"kdebug fuzz-strategy {spec} --seed {seed} --count {opts.count}"
    for f in found:
        print(f"- {f.kind}: program {f.result.index} ({f.result.hazard.name}), found in {f.result.found_s:.1f} s; "
              "shrinking ...", flush=True)
        fuzz.shrink(f, opts.strategy, seed, opts.out, jobs=opts.jobs, timeout=opts.timeout, command=command)
        fuzz.verify(f, opts.strategy, timeout=opts.timeout)
        shown = "kdebug run shows it" if f.shown else "kdebug run does NOT show it again"
        print(f"  {f.path}: {f.lines} code lines (from {f.lines_before}), found in {f.result.found_s:.1f} s, "
              f"shrunk in {f.shrink_s:.1f} s; {shown}: kdebug run --strategy {spec} {fuzz.shown_path(f.path)}"
              + (f"\n  note: {f.note}" if f.note else ""), flush=True)
    return status


def cmd_replay(opts) -> int:
    model = load_trace(opts.trace)
    if model is None:
        return 2
    if opts.headless or not sys.stdout.isatty():
        from kdebug.session.headless import render  # kept lazy for start-up time
        print(render(model))
        return 0
    from kdebug.tui.entry import run_replay  # kept lazy for start-up time
    return run_replay(model, opts.trace, opts.theme)


def cmd_export(opts) -> int:
    """``kdebug export TRACE --html OUT.html``: a damaged trace, or one that is none, is exit 2."""
    problem = html_problem(opts.html) or same_file_problem(opts.html, opts.trace, "the trace it exports")
    if problem:
        print(f"kdebug: error: {problem}", file=sys.stderr)
        return 2
    model = load_trace(opts.trace)
    if model is None:
        return 2
    return write_export(model, opts.html, os.path.basename(opts.trace)) or 0


def write_export(model, path: str, trace_name: str = "") -> int:
    """Write the page; 0, or 1 when it could not be written (said on stderr)."""
    from kdebug.export.html import write_html  # kept lazy for start-up time: pygments' formatter, the page
    try:
        stats = write_html(model, path, trace_name)
    except OSError as exc:
        print(f"kdebug: error: --html {path}: cannot write it: {exc.strerror or exc}", file=sys.stderr)
        return 1
    ended = "" if model.ended is not None else "; the session never ended (the page says so)"
    print(f"kdebug: wrote {path} ({stats.bytes / 1e6:.2f} MB: {stats.jobs} job(s), {stats.stages} stage texts; "
          f"without JavaScript it shows {stats.static}){ended}", file=sys.stderr)
    return 0


def output_file_problem(option: str, path: str) -> str | None:
    """Why an output file cannot be written to ``path`` (a directory, a missing or read-only folder), or
    None; ``option`` names it in the message (``--html``, ``--trace``)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{option} {path}: is a directory; name a file"
    if not os.path.isdir(folder):
        return f"{option} {path}: the folder {folder} does not exist; create it first"
    if not os.access(folder, os.W_OK):
        return f"{option} {path}: cannot write in {folder}"
    return None


def same_file_problem(html: str, other: str, what: str) -> str | None:
    """Why ``--html`` cannot be ``other`` (the trace exported or recorded): the page would replace it. The
    same file by identity (device and inode), through symbolic and hard links; or None."""
    try:
        same = os.path.samefile(html, other)
    except OSError:  # one of them does not exist (yet): the same path is still the same file
        same = os.path.realpath(html) == os.path.realpath(other)
    if same:
        return (f"--html {html}: is {what} ({other}), which the page would replace; name another file "
                "for the page")
    return None


def html_problem(path: str | None) -> str | None:
    """Why the page cannot be written to ``path``, or None (checked before anything runs)."""
    return output_file_problem("--html", path) if path else None


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
    problem = output_file_problem("--trace", path)
    if problem:
        return problem
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
        if opts.command == "reduce":
            return cmd_reduce(opts)
        if opts.command == "bisect":
            return cmd_bisect(opts)
        if opts.command == "replay":
            return cmd_replay(opts)
        if opts.command == "serve":
            return cmd_serve(opts)
        if opts.command == "export":
            return cmd_export(opts)
        if opts.command == "check-strategy":
            return cmd_check_strategy(opts)
        if opts.command == "fuzz-strategy":
            return cmd_fuzz_strategy(opts)
        if opts.html is not None:  # record, then export: a headless run with every snapshot
            problem = html_problem(opts.html) or (same_file_problem(opts.html, opts.trace, "the trace it records")
                                                  if opts.trace else None)
            if problem:
                raise UsageError(problem)
            status, model = cmd_run(checked_options(opts))
            if model is None:
                return status
            return write_export(model, opts.html) or status
        if not opts.headless and sys.stdout.isatty() and sys.stdin.isatty():
            try:
                from kdebug.tui.entry import run_tui  # kept lazy for start-up time
            except ImportError:
                run_tui = None
            if run_tui is not None:
                # the passes kept for a replay where someone looks (kdebug/passes.py); a --trace is a
                # hand-off, read elsewhere: recorded pass by pass
                return run_tui(checked_options(opts).replace(passes_on_demand=not opts.trace))
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
