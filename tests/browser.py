"""Headless Chromium driven through the DevTools protocol (websocket-client), for the
report's browser checks. Chromium comes from Debian's packages (scripts/setup.sh).

    with Browser() as b:
        page = b.open(url, width=1366, height=768)
        page.eval("document.title")
        page.requests, page.errors        # everything the page fetched, every error logged

Pages are served from a loopback HTTP server (:func:`serve`) so a test can send a
Content-Security-Policy header, as Jenkins does for archived artifacts.
"""

from __future__ import annotations

import base64
import http.server
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Jenkins' default for archived artifacts (hudson.model.DirectoryBrowserSupport.CSP).
JENKINS_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'self';"


def chromium_path() -> str | None:
    env = os.environ.get("SNCHECK_CHROMIUM")
    if env and Path(env).is_file():
        return env
    return next((p for name in CANDIDATES if (p := shutil.which(name))), None)


class Page:
    def __init__(self, browser: "Browser", session: str) -> None:
        self.b, self.session = browser, session
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []

    def send(self, method: str, **params: Any) -> dict:
        return self.b.send(method, params, self.session)

    def eval(self, expression: str) -> Any:
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"evaluation failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def pdf(self) -> bytes:
        r = self.send("Page.printToPDF", paperWidth=8.27, paperHeight=11.69, printBackground=True,
                      marginTop=0.4, marginBottom=0.4, marginLeft=0.4, marginRight=0.4)
        return base64.b64decode(r["data"])


class Browser:
    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._ids = itertools.count(1)
        self.pages: dict[str, Page] = {}

    def __enter__(self) -> "Browser":
        import websocket  # websocket-client

        exe = chromium_path()
        if exe is None:
            raise RuntimeError("no chromium on PATH")
        self.profile = tempfile.mkdtemp(prefix="sncheck-chromium-")
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--disable-default-apps", "--metrics-recording-only",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
        if url is None:
            self.close()
            raise RuntimeError("chromium did not start its DevTools endpoint")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # keep the pipe drained
        self.ws = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            try:
                self.ws.close()
            except Exception:  # noqa: BLE001
                pass
        if getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(getattr(self, "profile", ""), ignore_errors=True)

    def _event(self, msg: dict) -> None:
        page = self.pages.get(msg.get("sessionId", ""))
        if page is None:
            return
        m, p = msg["method"], msg.get("params", {})
        if m == "Network.requestWillBeSent":
            page.requests.append(p["request"]["url"])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            page.errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif m == "Runtime.exceptionThrown":
            page.errors.append("exception: " + json.dumps(p["exceptionDetails"])[:300])
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error" and not str(
                p["entry"].get("url", "")).endswith("/favicon.ico"):  # the browser's own request, not the page's
            page.errors.append(f"log ({p['entry'].get('source')}): {p['entry']['text']}")
        elif m == "Page.javascriptDialogOpening":
            page.dialogs.append(p.get("message", ""))

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        msg_id = next(self._ids)
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._event(reply)
        raise TimeoutError(f"{method}: no reply in {self.timeout}s")

    def wait_event(self, name: str, session: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self._event(msg)
                if msg["method"] == name and msg.get("sessionId") == session:
                    return msg.get("params", {})
        raise TimeoutError(f"no {name} in time")

    def open(self, url: str, width: int = 1366, height: int = 768) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self.pages[session] = page
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
        page.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", session)
        time.sleep(0.3)  # late console messages and requests
        page.eval("1")  # drain events queued so far
        return page


class _Handler(http.server.SimpleHTTPRequestHandler):
    csp: str | None = None

    def end_headers(self) -> None:
        if self.csp:
            self.send_header("Content-Security-Policy", self.csp)
        super().end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serve(directory: Path, csp: str | None = None) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port; yields the base URL."""
    handler = type("Handler", (_Handler,), {"csp": csp})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: handler(*a, directory=str(directory), **k))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
