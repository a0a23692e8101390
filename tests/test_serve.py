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


def start_server(port: int, *options: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "serve", "--port", str(port), *options,
                             "--backend", "cpu", os.path.join(SAMPLES, "recursive_launch.py")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    line = proc.stdout.readline()  # the first line says where to go
    assert line.startswith("kdebug: serving ") and f"http://localhost:{port}" in line, line
    return proc


def stop_server(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=10)
    finally:
        try:  # the served app shares the server's process group: leave nothing behind
            os.killpg(server.pid, signal.SIGKILL)
        except OSError:
            pass
        server.wait(timeout=10)


def test_the_page_names_the_server_as_the_browser_did_or_as_told():
    from kdebug.tui.serve import check_public_url, public_url_for

    fallback = "http://localhost:8000"
    assert public_url_for("lecture-hall.example.org:8000", fallback) == "http://lecture-hall.example.org:8000"
    assert public_url_for("192.168.1.20:8000", fallback) == "http://192.168.1.20:8000"
    assert public_url_for("[fe80::1]:8000", fallback) == "http://[fe80::1]:8000"
    for hostile in (None, "", 'x"><script>alert(1)</script>', "a b:8000", "host/path:8000", "h:8000@evil"):
        assert public_url_for(hostile, fallback) == fallback  # never echoed into the page
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
            await browser.call("Page.navigate", url=f"http://localhost:{port}/")
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


PROJECTOR = "kdebug-lecture-hall.test"  # the name the projector's PC knows this machine by


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium; .ci/run does)")
def test_a_browser_on_another_machine_reaches_the_server_by_its_name(tmp_path):
    """The browser knows the server only as PROJECTOR (its resolver maps that name here, and its own localhost
    nowhere): the page must load its scripts and open its websocket by that name."""
    import aiohttp

    port = free_port()
    server = start_server(port, "--host", "0.0.0.0")
    browser = Browser(tempfile.mkdtemp(dir=tmp_path),
                      f"--host-resolver-rules=MAP {PROJECTOR} 127.0.0.1, MAP localhost ~NOTFOUND")

    async def go() -> tuple[str, str]:
        async with aiohttp.ClientSession() as http:
            await browser.open(http)
            await browser.call("Page.enable")
            await browser.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
            await browser.call("Page.navigate", url=f"http://{PROJECTOR}:{port}/")
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
    assert f"ws://{PROJECTOR}:{port}/ws" in page and f"http://{PROJECTOR}:{port}/static/" in page
    assert "localhost" not in page
    for name in ("kernel_a #1", "kernel_b #2", "kernel_c #3"):
        assert name in shown
