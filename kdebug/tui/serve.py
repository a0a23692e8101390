"""``kdebug serve FILE.py``: the TUI in a browser (textual-serve), for a lecture hall or a remote machine.

The server runs ``python -m kdebug.tui.serve --options JSON`` for each browser that
connects: the same app, driven through Textual's web driver; the run options reach
it as data, as they reach the debuggee.
"""
from __future__ import annotations

import os
import shlex
import sys

from kdebug.session.options import RunOptions


def served_command(options: RunOptions) -> str:
    """The shell command textual-serve starts per browser session."""
    return shlex.join([sys.executable, "-m", "kdebug.tui.serve", "--options", options.to_json()])


def url_of(host: str, port: int) -> str:
    shown = "localhost" if host in ("", "0.0.0.0", "::") else host
    return f"http://{shown}:{port}"


def serve(options: RunOptions, host: str = "localhost", port: int = 8000) -> int:
    """Serve until interrupted; prints the URL to open first."""
    try:
        from textual_serve.server import Server
    except ImportError:
        print("kdebug: error: kdebug serve needs textual-serve: python -m pip install textual-serve",
              file=sys.stderr)
        return 2
    server = Server(served_command(options), host=host, port=port, title=f"kdebug {os.path.basename(options.script)}",
                    public_url=url_of(host, port))
    print(f"kdebug: serving {options.script} on {url_of(host, port)} (open it in a browser; ctrl+c stops)",
          flush=True)
    server.serve()
    return 0


def main(argv: list[str]) -> int:
    """The served app: one browser session's kdebug."""
    # kept lazy for start-up time: the server process (serve) never loads the app, only the served one
    from kdebug.tui.app import run_tui
    if len(argv) != 2 or argv[0] != "--options":
        print("usage: python -m kdebug.tui.serve --options JSON (kdebug serve runs this)", file=sys.stderr)
        return 2
    return run_tui(RunOptions.from_json(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
