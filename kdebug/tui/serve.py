"""``kdebug serve FILE.py``: the TUI in a browser (textual-serve), for a lecture hall or a remote machine.

The server runs ``python -m kdebug.tui.serve --options JSON`` for each browser that
connects: the same app, driven through Textual's web driver; the run options reach
it as data, as they reach the debuggee.

Whoever reaches the websocket sees the session and types into it, so the server guards it as Jupyter
does: a random token per start, in the URL it prints, which the page and the websocket both need; a
websocket only from the page's own origin (or ``--public-url``'s), against other sites' pages; and only
the host names of ``HostAllowlist``, against DNS rebinding (another site's name made to resolve here).
"""
from __future__ import annotations

import errno
import hmac
import ipaddress
import json
import os
import re
import secrets
import shlex
import signal
import socket
import sys
from urllib.parse import urlsplit

from kdebug.session.options import RunOptions


def served_command(options: RunOptions) -> str:
    """The shell command textual-serve starts per browser session (``exec``: the app is the server's own
    child, which ends with it: ``main``, told the server's pid in case the server is already gone)."""
    return "exec " + shlex.join([sys.executable, "-m", "kdebug.tui.serve", "--options", options.to_json(),
                                 "--parent", str(os.getpid())])


WILDCARD = ("", "0.0.0.0", "::")


def url_of(host: str, port: int) -> str:
    shown = "localhost" if host in WILDCARD else bracketed(host)
    return f"http://{shown}:{port}"


def bracketed(host: str) -> str:
    """An IPv6 address as a URL or a Host header writes it (``[::1]``); anything else as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


# a Host header the page may echo: a host name, an IPv4 or a bracketed IPv6 address, and a port
SAFE_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}"
                       r"[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")


def split_host(host_header: str | None) -> tuple[str, str] | None:
    """A Host header's name (lower case; an IPv6 address in brackets) and port ('' where it names none);
    None where it is anything but a host name or address and a port."""
    if not host_header or not SAFE_HOST.fullmatch(host_header):
        return None
    if host_header.startswith("["):
        name, _, port = host_header.partition("]")
        return name.lower() + "]", port[1:]
    name, _, port = host_header.partition(":")
    return name.lower(), port


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
        return True
    except ValueError:
        return False


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def machine_names() -> set[str]:
    """The names other machines may know this one by: its host name, that name on the local network
    (mDNS's ``.local``) and its fully qualified name."""
    names = set()
    for name in (socket.gethostname(), socket.gethostname().split(".")[0] + ".local", socket.getfqdn()):
        if name and SAFE_HOST.fullmatch(name):
            names.add(name.lower())
    return names


class HostAllowlist:
    """The host names a request may come by (its Host header, any port): ``localhost``, ``127.0.0.1``,
    ``[::1]``, ``--host``'s address and ``--public-url``'s host. A server that listens on the network
    (``--host 0.0.0.0``, or any address but a loopback one) also answers to this machine's names
    (``machine_names``) and to any IP address: an address cannot be made to point elsewhere, as DNS
    rebinding does to another site's name; any other name needs ``--public-url``."""

    def __init__(self, host: str, public_url: str | None = None) -> None:
        names = {"localhost", "127.0.0.1", "[::1]"}
        if host not in WILDCARD:
            names.add(bracketed(host).lower())
        if public_url:
            names.add(split_host(urlsplit(public_url).netloc)[0])
        self.network = host in WILDCARD or not _loopback(host)
        if self.network:
            names |= machine_names()
        self.names = frozenset(names)

    def allows(self, host_header: str | None) -> bool:
        parts = split_host(host_header)
        if parts is None:
            return False
        return parts[0] in self.names or (self.network and _ip_literal(parts[0]))


def public_url_for(host_header: str | None, fallback: str, hosts: HostAllowlist) -> str:
    """The URL the page's links and websocket use: ``http://`` and the request's Host header, the name the
    browser reached this server by (the projector's PC asks for this machine, not its own localhost);
    ``fallback`` when the header is missing, is anything but a host name or address and a port, or is a
    name this server does not answer to (``hosts``)."""
    if host_header and hosts.allows(host_header):
        return f"http://{host_header}"
    return fallback


def _origin(scheme: str, netloc: str) -> tuple[str, str, str] | None:
    """An origin as (scheme, host, port), the port spelled out, for comparing."""
    parts = split_host(netloc)
    if scheme not in ("http", "https") or parts is None:
        return None
    return scheme, parts[0], parts[1] or ("443" if scheme == "https" else "80")


def origin_allowed(origin: str | None, host_header: str | None, public_url: str | None) -> bool:
    """Whether a websocket's Origin is the page's own: the origin of the Host the request came by (http or
    https: a proxy may add TLS in front), or ``--public-url``'s. No Origin at all: not a browser (every
    browser sends one with a websocket's handshake), which the token still guards."""
    if origin is None:
        return True
    parts = urlsplit(origin.strip())
    theirs = _origin(parts.scheme.lower(), parts.netloc) if not (parts.path or parts.query) else None
    if theirs is None:
        return False
    ours = [_origin(scheme, host_header or "") for scheme in ("http", "https")]
    if public_url:
        mine = urlsplit(public_url)
        ours.append(_origin(mine.scheme, mine.netloc))
    return theirs in ours


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
WEBSOCKET_URL = 'data-session-websocket-url="{{ app_websocket_url }}"'


def local_templates(into: str, token: str | None = None) -> str:
    """textual-serve's page template, its monospace font served from this machine instead of an internet
    font service (an offline lecture hall got boxes for glyphs), and its websocket's URL carrying
    ``token`` (as ``/ws/TOKEN``: the page adds its own ``?width=...``): written into ``into``, which is
    returned. Raises RuntimeError where the template no longer reads as expected (another textual-serve)."""
    import textual_serve
    source = os.path.join(os.path.dirname(textual_serve.__file__), "templates", "app_index.html")
    with open(source, encoding="utf-8") as f:
        page = f.read()
    page, n = GOOGLE_FONT.subn(LOCAL_FONT, page)
    if n != 1 or "://" in re.sub(r'xmlns="http://www\.w3\.org/2000/svg"', "", page):
        raise RuntimeError(f"{source}: the page loads something from another site; kdebug serve serves only "
                           "from this machine (textual-serve changed: kdebug needs an update)")
    if page.count(WEBSOCKET_URL) != 1:
        raise RuntimeError(f"{source}: the page no longer names its websocket as kdebug expects "
                           "(textual-serve changed: kdebug needs an update)")
    if token is not None:
        page = page.replace(WEBSOCKET_URL, WEBSOCKET_URL[:-1] + "/" + token + '"')
    with open(os.path.join(into, "app_index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    return into


class ListenError(Exception):
    """The server cannot listen: the message says where, why and what to do."""


def _listen_advice(exc: OSError, host: str) -> str:
    if isinstance(exc, socket.gaierror):
        return ("no such host name or address (give --host an address of this machine: localhost, "
                "0.0.0.0 for every interface, or one of its IP addresses)")
    if exc.errno == errno.EADDRINUSE:
        return "address already in use (another program, perhaps another kdebug serve, has that port: " \
               "stop it or give --port another number)"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges: give --port 1024 or above)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return (f"cannot assign requested address ({host} is not an address of this machine: give one of "
                "its addresses, localhost, or 0.0.0.0 for every interface)")
    return f"{(exc.strerror or str(exc)).lower()} (give another --host or --port)"


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to ``host:port`` and listening (one per address the name has, as asyncio would bind
    them), before anything says the server is there; raises ListenError, one line, where it cannot."""
    where = f"{bracketed(host or '0.0.0.0')}:{port}"
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        advice = _listen_advice(exc if isinstance(exc, OSError) else socket.gaierror(str(exc)), host)
        raise ListenError(f"cannot listen on {where}: {advice}") from None
    sockets: list[socket.socket] = []
    seen = set()
    failure: OSError | None = None
    for family, kind, proto, _name, address in infos:
        if (family, address) in seen:
            continue
        seen.add((family, address))
        sock = socket.socket(family, kind, proto)
        try:
            if os.name == "posix":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(128)
            sockets.append(sock)
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRNOTAVAIL:  # as asyncio: that family is not enabled here (bpo-30945)
                failure = failure or exc
                continue
            for bound in sockets:
                bound.close()
            raise ListenError(f"cannot listen on {where}: {_listen_advice(exc, host)}") from None
    if not sockets:
        advice = _listen_advice(failure or OSError(errno.EADDRNOTAVAIL, "no address"), host)
        raise ListenError(f"cannot listen on {where}: {advice}")
    return sockets


REFUSED_TOKEN = "kdebug serve: open the URL kdebug serve printed when it started (the one with ?token=...)\n"
REFUSED_HOST = ("kdebug serve: this server does not answer to that host name (a guard against DNS rebinding): "
                "open the URL kdebug serve printed, or start it with --public-url naming this address\n")
REFUSED_ORIGIN = ("kdebug serve: a page from another site may not connect to this session: "
                  "open the URL kdebug serve printed\n")

MAX_COLUMNS, MAX_ROWS = 1000, 500  # a terminal size a browser may ask for (a bigger one exhausts memory)
QUIT_GRACE_S = 3.0  # after a websocket closes, how long its app may take to quit before SIGTERM
CLOSE_WAIT_S = 2.0  # how long a websocket's close waits for the browser's answer
TERM_GRACE_S = 8.0  # after SIGTERM, how long an app may take before SIGKILL (it ends itself within 5 s)


def _terminal_size(value, limit: int) -> int | None:
    return value if type(value) is int and 1 <= value <= limit else None


def _server_class():
    import asyncio

    from aiohttp import WSCloseCode, WSMsgType, web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server, log

    from kdebug.processes import end_children  # kept lazy for start-up time: as textual_serve

    async def end_process(process) -> None:
        """SIGTERM, then SIGKILL where the app has not ended within TERM_GRACE_S. By os.kill: asyncio's
        terminate() polls the child first, and so reaps it under asyncio's own watcher (which then warns)."""
        for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, TERM_GRACE_S)):
            if process.returncode is not None:
                return
            try:
                os.kill(process.pid, sig)
                await asyncio.wait_for(process.wait(), grace)
            except ProcessLookupError:
                return
            except asyncio.TimeoutError:
                continue

    @web.middleware
    async def known_hosts_only(request, handler):
        if not request.app["kdebug_hosts"].allows(request.headers.get("Host")):
            return web.Response(status=403, text=REFUSED_HOST)
        return await handler(request)

    class PublicUrlServer(Server):
        """textual-serve's server, whose page names the server by ``--public-url``, else by the request's
        Host header (where it is a name this server answers to), so a browser on another machine loads it
        and connects back; it answers only with the token, to allowed hosts, the websocket only to the
        page's own origin; every app ends with its websocket and with the server."""

        def __init__(self, *args, fixed_url: str | None, fallback_url: str, token: str | None,
                     hosts: HostAllowlist, **kw) -> None:
            super().__init__(*args, public_url=fixed_url or fallback_url, **kw)
            self.fixed_url, self.fallback_url = fixed_url, fallback_url
            self.token, self.hosts = token, hosts
            self.apps: set = set()  # the app processes that run (asyncio's Process)
            self.sockets: set = set()  # the websockets open

        async def _make_app(self):
            app = await super()._make_app()
            app["kdebug_hosts"] = self.hosts
            app.middlewares.append(known_hosts_only)
            app.router.add_get("/ws/{token}", self.handle_websocket)  # the page's websocket: see local_templates
            return app

        def token_refusal(self, token: str | None):
            """403 unless ``token`` is this server's (compared in constant time), or it has none."""
            if self.token is not None and (token is None or not hmac.compare_digest(
                    token.encode("utf-8", "replace"), self.token.encode("utf-8"))):
                return web.Response(status=403, text=REFUSED_TOKEN)
            return None

        async def on_startup(self, app) -> None:
            pass  # kdebug said where it serves (textual-serve's banner names the URL without its token)

        async def on_shutdown(self, app) -> None:
            # every browser's app ends now, its debuggee with it (each ends as q ends it, on SIGTERM);
            # textual-serve only asks them to quit, and waits (the server stood a minute, the apps on)
            await super().on_shutdown(app)
            end_children(signal.SIGTERM)
            await asyncio.gather(*(end_process(p) for p in list(self.apps)), return_exceptions=True)
            await asyncio.gather(*(ws.close(code=WSCloseCode.GOING_AWAY, message=b"kdebug serve stopped")
                                   for ws in list(self.sockets)), return_exceptions=True)

        async def handle_index(self, request):
            refused = self.token_refusal(request.query.get("token"))
            if refused is not None:
                return refused
            # set and read without an await in between (the template's context is built at once)
            self.public_url = self.fixed_url or public_url_for(request.headers.get("Host"), self.fallback_url,
                                                               self.hosts)
            response = await super().handle_index(request)
            response.headers["Referrer-Policy"] = "no-referrer"  # the URL holds the token
            response.headers["Cache-Control"] = "no-store"
            return response

        async def handle_websocket(self, request):
            refused = self.token_refusal(request.match_info.get("token") or request.query.get("token"))
            if refused is not None:
                return refused
            if not origin_allowed(request.headers.get("Origin"), request.headers.get("Host"), self.fixed_url):
                return web.Response(status=403, text=REFUSED_ORIGIN)
            # a peer that does not answer a close is let go after CLOSE_WAIT_S (aiohttp waits 10 s)
            websocket = web.WebSocketResponse(heartbeat=15, timeout=CLOSE_WAIT_S)
            width = _terminal_size(_int(request.query.get("width")), MAX_COLUMNS) or 80
            height = _terminal_size(_int(request.query.get("height")), MAX_ROWS) or 24
            app_service, close_code = None, WSCloseCode.OK
            self.sockets.add(websocket)
            try:
                await websocket.prepare(request)
                app_service = AppService(self.command, write_bytes=websocket.send_bytes,
                                         write_str=websocket.send_str, close=websocket.close,
                                         download_manager=self.download_manager, debug=self.debug)
                await app_service.start(width, height)
                process = getattr(app_service, "_process", None)
                if process is not None:
                    self.apps.add(process)
                close_code = await self._process_messages(websocket, app_service)
            except asyncio.CancelledError:
                pass
            except Exception as error:  # noqa: BLE001 - a connection gone wrong: one line, the app ends below
                log.warning("kdebug serve: a browser's connection failed: %s", error)
            finally:
                self.sockets.discard(websocket)
                if app_service is not None:  # first: the peer may never answer the close
                    await self._end_app(app_service)
                if not websocket.closed:
                    await websocket.close(code=close_code)
            return websocket

        async def _end_app(self, app_service) -> None:
            """Ask the app to quit (it ends its debuggee); SIGTERM, then SIGKILL, where it does not."""
            process = getattr(app_service, "_process", None)
            try:
                await asyncio.wait_for(asyncio.shield(app_service.stop()), QUIT_GRACE_S)
            except Exception:  # noqa: BLE001 - a timeout or a broken pipe: ended below however it failed
                pass
            if process is not None:
                await end_process(process)
                self.apps.discard(process)

        async def _process_messages(self, websocket, app_service):
            """The browser's messages, as textual-serve reads them, each checked: anything but what the
            page sends ends the connection (and so the app); the code to close it with."""
            async for message in websocket:
                if message.type == WSMsgType.ERROR:
                    return WSCloseCode.PROTOCOL_ERROR
                envelope = _envelope(message.data) if message.type == WSMsgType.TEXT else None
                if envelope is None:
                    return WSCloseCode.UNSUPPORTED_DATA
                kind, data = envelope
                if kind == "stdin":
                    await app_service.send_bytes(data.encode("utf-8", "replace"))
                elif kind == "resize":
                    await app_service.set_terminal_size(data["width"], data["height"])
                elif kind == "ping":
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await app_service.blur()
                elif kind == "focus":
                    await app_service.focus()
            return WSCloseCode.OK

        def serve_on(self, sockets: list[socket.socket]) -> None:
            """Serve on sockets already listening until SIGINT, SIGTERM or SIGHUP (the terminal gone)."""
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
                if sig is not None:
                    try:
                        loop.add_signal_handler(sig, self.request_exit)
                    except (NotImplementedError, RuntimeError):
                        pass
            web.run_app(self._make_app(), sock=sockets, handle_signals=False, loop=loop, shutdown_timeout=5,
                        print=lambda *args: None)

    return PublicUrlServer


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _envelope(text: str):
    """A browser's message, ``[kind, data]``, where it is one the page sends (the data checked for its
    kind; unknown kinds pass, ignored, as textual-serve ignores them); None where it is malformed."""
    try:
        envelope = json.loads(text)
    except ValueError:
        return None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str) or len(envelope) > 2:
        return None
    kind, data = envelope[0], envelope[1] if len(envelope) == 2 else None
    if kind == "stdin" and not isinstance(data, str):
        return None
    if kind == "resize" and not (isinstance(data, dict) and _terminal_size(data.get("width"), MAX_COLUMNS)
                                 and _terminal_size(data.get("height"), MAX_ROWS)):
        return None
    if kind == "ping" and not (isinstance(data, str) and len(data) <= 64):
        return None
    return kind, data


def serve(options: RunOptions, host: str = "localhost", port: int = 8000, public_url: str | None = None,
          token: bool = True) -> int:
    """Serve until interrupted; prints the URL to open first (with its token, unless ``token`` is False:
    then a warning that anyone who reaches the port drives the session)."""
    try:
        server_class = _server_class()
    except ImportError:
        print("kdebug: error: kdebug serve needs textual-serve: python -m pip install textual-serve",
              file=sys.stderr)
        return 2
    try:
        sockets = listening_sockets(host, port)
    except ListenError as exc:
        print(f"kdebug: error: {exc}", file=sys.stderr)
        return 2
    secret = secrets.token_urlsafe(32) if token else None
    hosts = HostAllowlist(host, public_url)
    import tempfile
    try:
        with tempfile.TemporaryDirectory(prefix="kdebug-serve-") as templates:
            try:
                page = local_templates(templates, secret)
            except RuntimeError as exc:
                print(f"kdebug: error: {exc}", file=sys.stderr)
                return 2
            server = server_class(served_command(options), host=host, port=port,
                                  title=f"kdebug {os.path.basename(options.script)}", fixed_url=public_url,
                                  fallback_url=url_of(host, port), templates_path=page, token=secret, hosts=hosts)
            query = f"/?token={secret}" if secret else "/"
            where = (public_url or url_of(host, port)) + query
            also = "" if public_url or host not in WILDCARD else \
                f"; from another machine: http://{socket.gethostname()}:{port}{query} or by its IP address"
            listening = f"; listening on {bracketed(host or '0.0.0.0')}:{port}" if public_url else ""
            if secret is None:
                print(f"kdebug: warning: --no-token: anyone who can reach port {port} of this machine can watch "
                      "and drive the session; use it only on a network you trust", file=sys.stderr, flush=True)
            print(f"kdebug: serving {options.script} on {where} (open it in a browser{also}{listening}; "
                  "ctrl+c stops)", flush=True)
            server.serve_on(sockets)
    finally:
        for sock in sockets:
            sock.close()
    return 0


def main(argv: list[str]) -> int:
    """The served app: one browser session's kdebug."""
    from kdebug.processes import end_with_parent  # kept lazy for start-up time: as run_tui
    from kdebug.tui.entry import run_tui  # kept lazy for start-up time: the server process never loads the app
    parent = None
    if len(argv) == 4 and argv[2] == "--parent" and argv[3].isdigit():
        parent, argv = int(argv[3]), argv[:2]
    end_with_parent(parent=parent)  # SIGTERM when the server ends, however it ends: the app, its debuggee with it
    if len(argv) != 2 or argv[0] != "--options":
        print("usage: python -m kdebug.tui.serve --options JSON [--parent PID] (kdebug serve runs this)",
              file=sys.stderr)
        return 2
    return run_tui(RunOptions.from_json(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
