"""``kdebug serve``: the TUI in a real headless Chromium, which loads the page and shows the job tree.

The page draws the terminal on a canvas, so the test reads what it shows from the
browser's terminal itself (xterm.js's screen buffer, through the DevTools protocol)
and keeps a screenshot. Skipped, saying why, where Chromium is not installed
(.ci/run installs Debian's ``chromium`` where it is missing).
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT, SAMPLES, run_kdebug

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# textual-serve's page keeps its terminal inside a closure: catch the object that owns it as it is built
# (its constructor sets fitAddon after terminal), so the test can read the terminal's rows
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "fitAddon", {
  configurable: true,
  set(value) {
    window.kdebugTerminal = this.terminal;
    Object.defineProperty(this, "fitAddon", {value, writable: true, configurable: true, enumerable: true});
  },
});
"""
READ_ROWS = """(() => {
  const t = window.kdebugTerminal;
  if (!t) return null;
  const rows = [];
  for (let y = 0; y < t.rows; y++) rows.push(t.buffer.active.getLine(y).translateToString(true));
  return rows.join("\\n");
})()"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_rejects_bad_ports_and_missing_scripts():
    r = run_kdebug("serve", "--port", "70000", os.path.join(SAMPLES, "saxpy.py"))
    assert r.returncode == 2 and "'70000' is not a port number" in r.stderr
    r = run_kdebug("serve", "no_such_script.py")
    assert r.returncode == 2 and "no such file: no_such_script.py" in r.stderr


class Browser:
    """Headless Chromium driven over the DevTools protocol (aiohttp's websocket client)."""

    def __init__(self, tmp: str, *flags: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--mute-audio",
             f"--remote-debugging-port={self.port}", f"--user-data-dir={tmp}", "--window-size=1400,900", *flags,
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.ids = 0

    async def open(self, http) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{self.port}/json/list") as r:
                    page = next(t for t in await r.json() if t["type"] == "page")
                break
            except (OSError, StopIteration, ValueError, Exception):  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise AssertionError("Chromium's DevTools endpoint never came up")
                await asyncio.sleep(0.1)
        self.ws = await http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)

    async def call(self, method: str, **params):
        self.ids += 1
        mine = self.ids
        await self.ws.send_json({"id": mine, "method": method, "params": params})
        async for msg in self.ws:
            data = json.loads(msg.data)
            if data.get("id") == mine:
                assert "error" not in data, data
                return data["result"]
        raise AssertionError("the DevTools connection closed")

    async def evaluate(self, expression: str):
        return (await self.call("Runtime.evaluate", expression=expression, returnByValue=True))["result"].get("value")

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait(timeout=10)


def printed_token(line: str) -> str:
    """The token in the URL kdebug serve printed (``?token=...``)."""
    found = re.search(r"/\?token=([A-Za-z0-9_-]{20,})", line)
    assert found, f"no token in the URL kdebug serve printed: {line}"
    return found.group(1)


def start_server(port: int, *options: str, script: str | None = None) -> subprocess.Popen:
    """``kdebug serve`` in a process group of its own, once it has said where to go (it listens by then);
    ``.url``: the URL it printed, ``.token``: its token."""
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), *options,
                             "--backend", "cpu", script or os.path.join(SAMPLES, "recursive_launch.py")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()  # the first line says where to go
        assert line.startswith("kdebug: serving ") and f"http://localhost:{port}" in line, line
        proc.line, proc.token = line, printed_token(line)
        proc.url = f"http://localhost:{port}/?token={proc.token}"
        assert proc.url in line, line
    except BaseException:
        stop_server(proc)
        raise
    return proc


def stop_server(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:  # ended already, and everything in its group
        pass
    try:
        server.wait(timeout=10)
    finally:
        try:  # the served app shares the server's process group: leave nothing behind
            os.killpg(server.pid, signal.SIGKILL)
        except OSError:
            pass
        server.wait(timeout=10)


def test_the_page_names_the_server_as_the_browser_did_or_as_told():
    from kdebug.tui.serve import HostAllowlist, check_public_url, public_url_for

    fallback = "http://localhost:8000"
    hall = HostAllowlist("0.0.0.0", "http://lecture-hall.example.org:8000")  # served to the network
    assert public_url_for("lecture-hall.example.org:8000", fallback, hall) == "http://lecture-hall.example.org:8000"
    assert public_url_for("192.168.1.20:8000", fallback, hall) == "http://192.168.1.20:8000"
    assert public_url_for("[fe80::1]:8000", fallback, hall) == "http://[fe80::1]:8000"
    for hostile in (None, "", 'x"><script>alert(1)</script>', "a b:8000", "host/path:8000", "h:8000@evil"):
        assert public_url_for(hostile, fallback, hall) == fallback  # never echoed into the page
    # a name the server does not answer to (DNS rebinding: another site's name resolving here): not echoed
    assert public_url_for("attacker.example:8000", fallback, hall) == fallback
    local = HostAllowlist("localhost")
    assert public_url_for("127.0.0.1:8000", fallback, local) == "http://127.0.0.1:8000"
    assert public_url_for("192.168.1.20:8000", fallback, local) == fallback  # listening on loopback only
    assert check_public_url("https://kdebug.example.org/") == "https://kdebug.example.org"
    with pytest.raises(ValueError, match="without a path"):
        check_public_url("http://host:8000/app")
    with pytest.raises(ValueError, match="give http://HOST:PORT"):
        check_public_url("ftp://host")
    r = run_kdebug("serve", "--public-url", "host:8000", os.path.join(SAMPLES, "saxpy.py"))
    assert r.returncode == 2 and "--public-url 'host:8000': give http://HOST:PORT" in r.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium; .ci/run does)")
def test_a_browser_shows_the_job_tree(tmp_path):
    import aiohttp

    port = free_port()
    server = start_server(port)
    browser = Browser(tempfile.mkdtemp(dir=tmp_path))

    async def go() -> str:
        async with aiohttp.ClientSession() as http:
            await browser.open(http)
            await browser.call("Page.enable")
            await browser.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
            await browser.call("Page.navigate", url=server.url)
            deadline = time.monotonic() + 90
            shown = ""
            while not ("session ok" in shown and "\u21bb #1" in shown):
                if time.monotonic() > deadline:
                    raise AssertionError("the browser never showed the finished session:\n" + shown)
                await asyncio.sleep(0.25)
                shown = await browser.evaluate(READ_ROWS) or ""
            shot = await browser.call("Page.captureScreenshot", format="png")
            (tmp_path / "serve.png").write_bytes(base64.b64decode(shot["data"]))
            await browser.ws.close()
            return shown

    try:
        shown = asyncio.run(go())
    finally:
        browser.close()
        stop_server(server)
    assert "Jobs" in shown
    for name in ("kernel_a #1", "kernel_b #2", "kernel_c #3"):
        assert name in shown
    assert "\u21bb #1  reference" in shown
    assert (tmp_path / "serve.png").stat().st_size > 10_000  # a screenshot with the app drawn in it


PROJECTOR = socket.gethostname().lower()  # the name the projector's PC knows this machine by: its host name


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium; .ci/run does)")
@pytest.mark.skipif(PROJECTOR in ("", "localhost") or not re.fullmatch(r"[a-z0-9.-]+", PROJECTOR),
                    reason=f"this machine's host name ({PROJECTOR!r}) cannot stand for another machine's")
def test_a_browser_on_another_machine_reaches_the_server_by_its_name(tmp_path):
    """The browser knows the server only as PROJECTOR, this machine's host name (its resolver maps that name
    here, and its own localhost nowhere): the page must load its scripts and open its websocket by that name
    (served to the network, the server answers to its own host name: no --public-url needed)."""
    import aiohttp

    port = free_port()
    server = start_server(port, "--host", "0.0.0.0")
    assert f"from another machine: http://{socket.gethostname()}:{port}/?token={server.token}" in server.line
    browser = Browser(tempfile.mkdtemp(dir=tmp_path),
                      f"--host-resolver-rules=MAP {PROJECTOR} 127.0.0.1, MAP localhost ~NOTFOUND")

    async def go() -> tuple[str, str]:
        async with aiohttp.ClientSession() as http:
            await browser.open(http)
            await browser.call("Page.enable")
            await browser.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
            await browser.call("Page.navigate", url=f"http://{PROJECTOR}:{port}/?token={server.token}")
            deadline = time.monotonic() + 90
            shown = ""
            while "session ok" not in shown:
                if time.monotonic() > deadline:
                    raise AssertionError("the browser never showed the finished session:\n" + shown)
                await asyncio.sleep(0.25)
                shown = await browser.evaluate(READ_ROWS) or ""
            page = await browser.evaluate("document.documentElement.outerHTML")
            await browser.ws.close()
            return shown, page

    try:
        shown, page = asyncio.run(go())
    finally:
        browser.close()
        stop_server(server)
    assert f"ws://{PROJECTOR}:{port}/ws/{server.token}" in page and f"http://{PROJECTOR}:{port}/static/" in page
    assert "localhost" not in page
    for name in ("kernel_a #1", "kernel_b #2", "kernel_c #3"):
        assert name in shown


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (by /proc's children lists)."""
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            if k not in found:
                found.add(k)
                todo.append(k)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _served_with_a_browser_session(port: int, script: str):
    """``kdebug serve SCRIPT`` in the shell's process group (as a user starts it), once it accepts."""
    server = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), "--backend", "cpu",
                               script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, PYTHONUNBUFFERED="1"))  # its own process group: the shell's
    try:
        line = server.stdout.readline()
        assert line.startswith("kdebug: serving "), line
        server.token = printed_token(line)
        deadline = time.monotonic() + 30
        while True:  # it listens before it says where: this only checks that it accepts
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return server
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the server never listened"
                time.sleep(0.1)
    except BaseException:
        server.kill()
        server.wait(10)
        raise


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_the_server_ending_ends_every_app_and_its_debuggee(tmp_path, how):
    """Before: after SIGTERM to serve, the per-browser app went on (redrawing for nobody) with its debuggee."""
    import aiohttp
    spin = tmp_path / "spin.py"
    spin.write_text("import time\nwhile True:\n    time.sleep(0.05)\n")
    port = free_port()
    server = _served_with_a_browser_session(port, str(spin))
    below: dict[int, str] = {}  # pid: its command line, as seen while it ran

    async def browse():
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30&token={server.token}") as ws:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:  # the app, and under it the debuggee running the script
                    try:
                        await asyncio.wait_for(ws.receive(), 0.5)
                    except asyncio.TimeoutError:
                        pass
                    below.update({p: _cmdline(p) for p in _descendants(server.pid) if p not in below})
                    if any("kdebug.session.debuggee" in cmd for cmd in below.values()):
                        break
                os.kill(server.pid, how)
                server.wait(20)
    try:
        asyncio.run(browse())
        assert any("kdebug.tui.serve" in cmd for cmd in below.values()), below
        assert any("kdebug.session.debuggee" in cmd for cmd in below.values()), below
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(p) for p in below):
            time.sleep(0.2)
        assert not [below[p] for p in below if _alive(p)], "left running after the server ended"
    finally:
        if server.poll() is None:
            server.kill()
        for p in below:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.timeout(60)
def test_the_page_loads_nothing_from_another_site():
    """Before: the page loaded its monospace font from an internet font service (boxes offline)."""
    import re
    import urllib.request
    port = free_port()
    server = start_server(port)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={server.token}", timeout=5) as r:
                    page = r.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert "googleapis" not in page
        foreign = [u for u in re.findall(r"""(?:src|href|url)\s*[=(]\s*["']?(https?://[^"')\s>]+)""", page)
                   if not u.startswith(f"http://127.0.0.1:{port}") and not u.startswith(f"http://localhost:{port}")]
        assert not foreign, foreign
        font = re.search(r'url\("([^"]+RobotoMono[^"]+\.ttf)"\)', page)
        assert font, page[:800]
        url = font.group(1) if font.group(1).startswith("http") else f"http://127.0.0.1:{port}{font.group(1)}"
        with urllib.request.urlopen(url.replace("localhost", "127.0.0.1"), timeout=5) as r:
            assert r.status == 200 and len(r.read()) > 10_000  # the font itself, from this machine
    finally:
        stop_server(server)


def test_public_url_says_where_the_server_listens(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), "--public-url",
                             "https://kdebug.example.org", os.path.join(SAMPLES, "saxpy.py")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "on https://kdebug.example.org" in line and f"listening on localhost:{port}" in line, line
    finally:
        stop_server(proc)
