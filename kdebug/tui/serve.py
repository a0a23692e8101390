"""``kdebug serve FILE.py``: the TUI in a browser (textual-serve), for a lecture hall or a remote machine.

The server runs ``python -m kdebug.tui.serve --options JSON`` for each browser that
connects: the same app, driven through Textual's web driver; the run options reach
it as data, as they reach the debuggee.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from urllib.parse import urlsplit

from kdebug.session.options import RunOptions


def served_command(options: RunOptions) -> str:
    """The shell command textual-serve starts per browser session (``exec``: the app is the server's own
    child, which ends with it: ``main``)."""
    return "exec " + shlex.join([sys.executable, "-m", "kdebug.tui.serve", "--options", options.to_json()])


def url_of(host: str, port: int) -> str:
    shown = "localhost" if host in ("", "0.0.0.0", "::") else host
    return f"http://{shown}:{port}"


# a Host header the page may echo: a host name, an IPv4 or a bracketed IPv6 address, and a port
SAFE_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}"
                       r"[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")


def public_url_for(host_header: str | None, fallback: str) -> str:
    """The URL the page's links and websocket use: ``http://`` and the request's Host header, the name the
    browser reached this server by (the projector's PC asks for this machine, not its own localhost);
    ``fallback`` when the header is missing or is anything but a host name or address and a port."""
    if host_header and SAFE_HOST.fullmatch(host_header):
        return f"http://{host_header}"
    return fallback


def check_public_url(url: str) -> str:
    """``--public-url``: an http(s) URL with a host and no path; raises ValueError saying what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or not SAFE_HOST.fullmatch(parts.netloc):
        raise ValueError(f"{url!r}: give http://HOST:PORT or https://HOST (the address browsers reach this server by)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{url!r}: give the server's root, without a path, query or fragment")
    return f"{parts.scheme}://{parts.netloc}"


GOOGLE_FONT = re.compile(r'<link\s+rel="stylesheet"\s+href="https://fonts\.googleapis\.com/[^"]*"\s*/>')
LOCAL_FONT = ('<style>@font-face { font-family: "Roboto Mono"; '
              'src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf"); }</style>')


def local_templates(into: str) -> str:
    """textual-serve's page template, its monospace font served from this machine instead of an internet
    font service (an offline lecture hall got boxes for glyphs): written into ``into``, which is returned.
    Raises RuntimeError where the template no longer links the font as expected (another textual-serve)."""
    import textual_serve
    source = os.path.join(os.path.dirname(textual_serve.__file__), "templates", "app_index.html")
    with open(source, encoding="utf-8") as f:
        page = f.read()
    page, n = GOOGLE_FONT.subn(LOCAL_FONT, page)
    if n != 1 or "://" in re.sub(r'xmlns="http://www\.w3\.org/2000/svg"', "", page):
        raise RuntimeError(f"{source}: the page loads something from another site; kdebug serve serves only "
                           "from this machine (textual-serve changed: kdebug needs an update)")
    with open(os.path.join(into, "app_index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    return into


def _server_class():
    from textual_serve.server import Server

    from kdebug.processes import end_children  # kept lazy for start-up time: as textual_serve

    class PublicUrlServer(Server):
        """textual-serve's server, whose page names the server by ``--public-url``, else by the request's
        Host header (where that is safe), so a browser on another machine loads it and connects back."""

        def __init__(self, *args, fixed_url: str | None, fallback_url: str, **kw) -> None:
            super().__init__(*args, public_url=fixed_url or fallback_url, **kw)
            self.fixed_url, self.fallback_url = fixed_url, fallback_url

        async def on_shutdown(self, app) -> None:
            # every browser's app ends now, its debuggee with it (each ends as q ends it, on SIGTERM);
            # textual-serve only asks them to quit, and waits (the server stood a minute, the apps on)
            await super().on_shutdown(app)
            end_children(signal.SIGTERM)

        async def handle_index(self, request):
            # set and read without an await in between (the template's context is built at once)
            self.public_url = self.fixed_url or public_url_for(request.headers.get("Host"), self.fallback_url)
            return await super().handle_index(request)

    return PublicUrlServer


def serve(options: RunOptions, host: str = "localhost", port: int = 8000, public_url: str | None = None) -> int:
    """Serve until interrupted; prints the URL to open first."""
    try:
        server_class = _server_class()
    except ImportError:
        print("kdebug: error: kdebug serve needs textual-serve: python -m pip install textual-serve",
              file=sys.stderr)
        return 2
    import tempfile
    with tempfile.TemporaryDirectory(prefix="kdebug-serve-") as templates:
        server = server_class(served_command(options), host=host, port=port,
                              title=f"kdebug {os.path.basename(options.script)}", fixed_url=public_url,
                              fallback_url=url_of(host, port), templates_path=local_templates(templates))
        where = public_url or url_of(host, port)
        also = "" if public_url or host not in ("", "0.0.0.0", "::") else \
            f"; from another machine: http://THIS-MACHINE:{port}"
        listening = f"; listening on {host or '0.0.0.0'}:{port}" if public_url else ""
        print(f"kdebug: serving {options.script} on {where} (open it in a browser{also}{listening}; ctrl+c stops)",
              flush=True)
        server.serve()
    return 0


def main(argv: list[str]) -> int:
    """The served app: one browser session's kdebug."""
    from kdebug.processes import end_with_parent  # kept lazy for start-up time: as run_tui
    from kdebug.tui.entry import run_tui  # kept lazy for start-up time: the server process never loads the app
    end_with_parent()  # SIGTERM when the server ends, however it ends: the app, its debuggee with it
    if len(argv) != 2 or argv[0] != "--options":
        print("usage: python -m kdebug.tui.serve --options JSON (kdebug serve runs this)", file=sys.stderr)
        return 2
    return run_tui(RunOptions.from_json(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
