"""``kdebug serve``'s guards, over real sockets against a real server: the token (page and websocket), the
websocket's Origin, the Host allowlist (DNS rebinding), ``--no-token``, listen errors, and the app
processes, which end with their websocket and with the server.

Before: any page on any site could open ws://127.0.0.1:PORT/ws, read the screen and type into the session;
a name made to resolve here (DNS rebinding) read the page; a port in use was a traceback; an app whose
browser asked for an impossible terminal size outlived its websocket and the server.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT, run_kdebug
from test_serve import _alive, _cmdline, _descendants, free_port, start_server, stop_server

pytestmark = pytest.mark.timeout(120)

ATTACKER = "http://attacker.example"


@pytest.fixture
def script(tmp_path):
    """A script the served app runs: small, so that each session's app costs little."""
    path = tmp_path / "small.py"
    path.write_text("print('served')\n")
    return str(path)


def http_get(port: int, path: str, host: str | None = None) -> tuple[int, str]:
    """GET ``path`` from 127.0.0.1:``port`` with this Host header (default 127.0.0.1:PORT): status, body."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        host = f"127.0.0.1:{port}" if host is None else host
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


def ws_status(port: int, path: str, origin: str | None = None, host: str | None = None) -> int:
    """The status of a websocket handshake (101: accepted); the connection is closed at once."""
    import aiohttp

    async def go() -> int:
        headers = {"Host": host or f"127.0.0.1:{port}"}
        if origin is not None:
            headers["Origin"] = origin
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            try:
                async with http.ws_connect(f"http://127.0.0.1:{port}{path}", headers=headers) as ws:
                    await ws.close()
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status
    return asyncio.run(go())


def apps_of(server: subprocess.Popen) -> set[int]:
    return {p for p in _descendants(server.pid) if "kdebug.tui.serve" in _cmdline(p)}


def wait_for(what: str, condition, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)
    return found


def output_of(server: subprocess.Popen) -> str:
    """What the server wrote, once it has ended."""
    stop_server(server)
    return server.stdout.read()


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_the_page_and_the_websocket_need_the_token(script):
    port = free_port()
    server = start_server(port, script=script)
    here = f"http://127.0.0.1:{port}"
    apps: set[int] = set()
    try:
        token = server.token
        for path in ("/", "/?token=", "/?token=wrong", f"/?token={token[:-1]}", f"/?token={token}x"):
            status, body = http_get(port, path)
            assert status == 403 and "open the URL kdebug serve printed" in body, (path, status, body)
            assert body.count("\n") == 1, body  # one line
        status, page = http_get(port, f"/?token={token}")
        assert status == 200 and f"ws://127.0.0.1:{port}/ws/{token}" in page, page[-1500:]
        for path in ("/ws", "/ws?token=wrong", "/ws/wrong", f"/ws/{token[:-1]}", "/ws?token="):
            assert ws_status(port, path, origin=here) == 403, path
        assert not apps_of(server), "a refused websocket started an app"
        assert ws_status(port, f"/ws/{token}?width=80&height=24", origin=here) == 101  # as the page opens it
        apps |= wait_for("the accepted websocket's app", lambda: apps_of(server))
        assert ws_status(port, f"/ws?token={token}", origin=here) == 101
    finally:
        apps |= apps_of(server)
        stop_server(server)
        kill_all(apps)


def test_a_websocket_from_another_site_is_refused(script):
    port = free_port()
    server = start_server(port, script=script)
    apps: set[int] = set()
    try:
        path = f"/ws?token={server.token}"
        for origin in (ATTACKER, f"{ATTACKER}:{port}", f"http://localhost:{port + 1}", "null",
                       f"http://127.0.0.1:{port}.attacker.example", f"file://{port}"):
            assert ws_status(port, path, origin=origin) == 403, origin
        assert ws_status(port, path, origin=f"http://localhost:{port}", host=f"127.0.0.1:{port}") == 403
        assert not apps_of(server), "a refused websocket started an app"
        assert ws_status(port, path, origin=f"http://127.0.0.1:{port}") == 101  # the page's own origin
        assert ws_status(port, path, origin=f"http://localhost:{port}", host=f"localhost:{port}") == 101
        apps |= wait_for("the accepted websockets' apps", lambda: apps_of(server))
    finally:
        apps |= apps_of(server)
        stop_server(server)
        kill_all(apps)


def test_a_rebinding_host_is_refused(script):
    """DNS rebinding: another site's name made to resolve to 127.0.0.1; the browser then sends that name as
    the Host (and as the websocket's Origin): refused, whatever the token."""
    port = free_port()
    server = start_server(port, script=script)
    try:
        token = server.token
        for host in (f"attacker.example:{port}", "attacker.example", f"localhost.attacker.example:{port}",
                     f"192.168.1.20:{port}", "", "a b"):
            status, body = http_get(port, f"/?token={token}", host=host)
            assert status == 403 and "open the URL kdebug serve printed" in body, (host, status, body)
            assert http_get(port, "/static/js/textual.js", host=host)[0] == 403, host
        assert ws_status(port, f"/ws?token={token}", origin=f"{ATTACKER}:{port}",
                         host=f"attacker.example:{port}") == 403
        assert not apps_of(server)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
            status, page = http_get(port, f"/?token={token}", host=host)
            assert status == 200 and f"ws://{host}/ws/{token}" in page, host  # the page echoes allowed names
    finally:
        stop_server(server)


def test_served_to_the_network_it_answers_to_this_machines_names_and_addresses(script):
    port = free_port()
    server = start_server(port, "--host", "0.0.0.0", script=script)
    try:
        token = server.token
        for host in (f"{socket.gethostname()}:{port}", f"192.0.2.7:{port}", f"127.0.0.1:{port}"):
            status, page = http_get(port, f"/?token={token}", host=host)
            assert status == 200 and f"ws://{host.lower()}/ws/{token}" in page, host
        for host in (f"kdebug-lecture-hall.test:{port}", f"attacker.example:{port}"):
            assert http_get(port, f"/?token={token}", host=host)[0] == 403, host
    finally:
        stop_server(server)


def test_public_url_names_a_host_the_server_answers_to(script):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), "--public-url",
                             "https://kdebug.example.org", "--backend", "cpu", script], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        token = line.split("https://kdebug.example.org/?token=", 1)[1].split()[0]
        status, page = http_get(port, f"/?token={token}", host="kdebug.example.org")  # behind a TLS proxy
        assert status == 200 and f"wss://kdebug.example.org/ws/{token}" in page, line
        assert ws_status(port, f"/ws/{token}", origin="https://kdebug.example.org",
                         host=f"127.0.0.1:{port}") != 403  # the proxy's Host, the public origin
        assert ws_status(port, f"/ws/{token}", origin="http://kdebug.example.org", host=f"127.0.0.1:{port}") == 403
        assert http_get(port, f"/?token={token}", host="other.example.org")[0] == 403
    finally:
        apps = apps_of(proc)
        stop_server(proc)
        kill_all(apps)


def test_no_token_serves_openly_and_says_so_loudly(script):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), "--no-token",
                             "--backend", "cpu", script], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    apps: set[int] = set()
    try:
        warning = proc.stdout.readline()
        assert warning.startswith("kdebug: warning: --no-token: anyone who can reach port"), warning
        line = proc.stdout.readline()
        assert line.startswith("kdebug: serving ") and f"http://localhost:{port}/ " in line and "?token=" not in line
        status, page = http_get(port, "/")
        assert status == 200 and f"ws://127.0.0.1:{port}/ws\"" in page
        assert http_get(port, "/", host=f"attacker.example:{port}")[0] == 403  # rebinding: still refused
        assert ws_status(port, "/ws", origin=ATTACKER) == 403  # other sites: still refused
        assert ws_status(port, "/ws?width=80&height=24", origin=f"http://127.0.0.1:{port}") == 101
        apps |= wait_for("the websocket's app", lambda: apps_of(proc))
    finally:
        apps |= apps_of(proc)
        stop_server(proc)
        kill_all(apps)


def one_error_line(r, port: int, host: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout and "serving" not in r.stdout, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kdebug: error: cannot listen on {host}:{port}: "), r.stderr
    return lines[0]


def test_a_port_in_use_is_one_error_line(script):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        line = one_error_line(run_kdebug("serve", "--port", str(port), script, timeout=60), port, "localhost")
        assert "address already in use" in line and "--port" in line, line
        line = one_error_line(run_kdebug("serve", "--host", "127.0.0.1", "--port", str(port), script, timeout=60),
                              port, "127.0.0.1")
        assert "address already in use" in line, line


def test_an_unresolvable_host_is_one_error_line(script):
    port = free_port()
    r = run_kdebug("serve", "--host", "kdebug-no-such-host.invalid", "--port", str(port), script, timeout=90)
    line = one_error_line(r, port, "kdebug-no-such-host.invalid")
    assert "--host" in line, line


def raw_websocket(port: int, path: str) -> socket.socket:
    """A websocket opened by hand (to send what no client library sends), once the server accepted it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
              f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
              "Sec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        assert chunk, f"the server closed the handshake: {head!r}"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def text_frame(text: str) -> bytes:
    """A client's (masked) text frame."""
    payload, mask = text.encode(), os.urandom(4)
    assert len(payload) < 126
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


HUGE_TERMINAL = json.dumps(["resize", {"width": 10 ** 6, "height": 10 ** 6}])  # before: the app hung on it

MALFORMED = {
    "a huge terminal": [text_frame(HUGE_TERMINAL)],
    "not json": [text_frame("not json")],
    "wrong kinds": [text_frame('["stdin", 5]'), text_frame('{"resize": 1}')],
    "a broken frame": [b"\x8f\x05hello"],  # unmasked, a reserved opcode
}


@pytest.mark.parametrize("frames", MALFORMED.values(), ids=list(MALFORMED))
def test_an_app_ends_when_its_websocket_closes_after_malformed_frames(script, frames):
    port = free_port()
    server = start_server(port, script=script)
    apps: set[int] = set()
    try:
        s = raw_websocket(port, f"/ws/{server.token}?width=80&height=24")
        apps |= wait_for("the websocket's app", lambda: apps_of(server))
        time.sleep(1)  # the app reads its input by now (else this tests only a quit before it starts)
        for frame in frames:
            s.sendall(frame)
        s.settimeout(3)
        try:  # the app's output, until the server closes the connection (or 3 s have passed: the app has
            while s.recv(65536):  # the frames by then: before, a huge terminal hung it)
                pass
        except OSError:
            pass
        s.close()
        wait_for("the app's end after its websocket closed", lambda: not any(_alive(p) for p in apps), 60)
        assert server.poll() is None, "the server ended with a browser's connection"
    finally:
        out = output_of(server)
        kill_all(apps)
    assert "Traceback" not in out and "JSONDecodeError" not in out, out[-3000:]


@pytest.mark.parametrize("how", ["SIGTERM to serve", "ctrl+c"])
def test_the_server_ending_ends_its_apps_even_a_stuck_one(script, how):
    """Two browsers, one of which asked for an impossible terminal (before: its app hung on it, ignored
    SIGTERM, and held the server up): the server ends, and every app with it."""
    port = free_port()
    server = start_server(port, script=script)
    apps: set[int] = set()
    sockets = []
    try:
        sockets.append(raw_websocket(port, f"/ws/{server.token}?width=80&height=24"))
        first = wait_for("the first app", lambda: apps_of(server))
        sockets.append(raw_websocket(port, f"/ws/{server.token}?width=80&height=24"))
        apps |= wait_for("the second app", lambda: apps_of(server) - first) | first
        time.sleep(1)
        sockets[1].sendall(text_frame(HUGE_TERMINAL))
        time.sleep(1)
        if how == "ctrl+c":  # a terminal's ctrl+c: SIGINT to its foreground process group
            os.killpg(server.pid, signal.SIGINT)
        else:
            os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the server did not end") from None
        wait_for("every app's end", lambda: not any(_alive(p) for p in apps), 30)
    finally:
        for s in sockets:
            s.close()
        apps |= apps_of(server)
        stop_server(server)
        kill_all(apps)


def test_origins_compare_by_scheme_host_and_port():
    from kdebug.tui.serve import origin_allowed

    assert origin_allowed("http://localhost:8000", "localhost:8000", None)
    assert origin_allowed("HTTP://LocalHost:8000", "localhost:8000", None)
    assert origin_allowed("https://lab.example", "127.0.0.1:8000", "https://lab.example:443")  # default port
    assert origin_allowed(None, "localhost:8000", None)  # not a browser: the token still guards it
    for hostile in ("http://localhost:8001", "http://localhost", "null", "", "http://localhost:8000/x",
                    "http://evil.example", "ws://localhost:8000", "http://localhost:8000@evil.example"):
        assert not origin_allowed(hostile, "localhost:8000", "https://lab.example"), hostile


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_an_app_whose_server_is_gone_before_it_starts_ends_at_once():
    """The app hears of its server's end by the parent-death signal, armed as it starts: a server that died
    before that (the app still importing) counts as gone too, given its pid (``--parent``)."""
    from kdebug.session.options import RunOptions
    from kdebug.tui.serve import served_command

    assert f"--parent {os.getpid()}" in served_command(RunOptions(script="x.py"))
    code = "from kdebug.processes import end_with_parent; end_with_parent(parent=1); import time; time.sleep(60)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60, capture_output=True, text=True)
    assert r.returncode == -signal.SIGTERM, (r.returncode, r.stderr)  # its parent (this test) is not pid 1
