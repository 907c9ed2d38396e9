"""Headless Chromium over the DevTools protocol: open a page, run JavaScript in it, log the
requests it makes, take screenshots. The viewer's tests and benchmark drive pages with it.

Needs a Chromium binary (Debian: ``apt-get install chromium``) and the ``websocket-client``
package (in the ``dev`` extra). The browser gets a fresh profile in a temporary folder and
listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ("--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0")
# Collects the page's Content-Security-Policy violations before any of its scripts run.
_CSP_PROBE = ("window.__cspViolations = [];"
              "document.addEventListener('securitypolicyviolation',"
              " e => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));")


class BrowserError(RuntimeError):
    """The browser failed to start, a protocol call failed, or a page script threw."""


def find_chromium() -> str | None:
    """``$ADAPATH_CHROMIUM``, else the first Chromium or Chrome on PATH."""
    for name in (os.environ.get("ADAPATH_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        if name and (path := shutil.which(name)):
            return path
    return None


class Browser:
    """One headless Chromium with one page (tab), driven synchronously."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 800,
                 timeout: float = 60.0):
        import websocket  # websocket-client

        executable = executable or find_chromium()
        if not executable:
            raise BrowserError("no Chromium found (install Debian's chromium or set ADAPATH_CHROMIUM)")
        self.timeout = timeout
        self.events: list[dict] = []
        self._next_id = 0
        self.profile = Path(tempfile.mkdtemp(prefix="adapath-chromium-"))
        # --no-sandbox: Chromium refuses its sandbox to root, and containers often lack the
        # user namespaces it needs; the browser only opens pages we wrote, from local files.
        args = [executable, *FLAGS, "--no-sandbox", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port, path = self._devtools_address()
            self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=timeout,
                                                  suppress_origin=True)
            target = self.call("Target.createTarget", session=False, url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", session=False, targetId=target,
                                     flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.call(f"{domain}.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
            self.call("Page.addScriptToEvaluateOnNewDocument", source=_CSP_PROBE)
        except BaseException:
            self.close()
            raise

    def _devtools_address(self) -> tuple[str, str]:
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrowserError(f"Chromium exited at start (status {self.proc.returncode})")
            lines = port_file.read_text().split("\n") if port_file.is_file() else []
            if len(lines) >= 2 and lines[0] and lines[1]:
                return lines[0], lines[1]
            time.sleep(0.05)
        raise BrowserError("Chromium did not open its DevTools port in time")

    # ------------------------------------------------------------------ protocol
    def call(self, method: str, session: bool = True, **params) -> dict:
        """Send one command and wait for its answer; events that arrive meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _wait_event(self, method: str, after: int) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events[after:]:
                if event["method"] == method:
                    return event
            if time.monotonic() > deadline:
                raise BrowserError(f"no {method} event in {self.timeout:.0f} s")
            reply = json.loads(self.ws.recv())
            if "method" in reply:
                self.events.append(reply)

    # ------------------------------------------------------------------ pages
    def open(self, url: str, ready: str = "document.body && document.body.dataset.ready === '1'") -> None:
        """Load ``url``, wait for its load event and then until the JavaScript ``ready`` holds."""
        # By way of a blank page, so that a URL differing only in its #fragment loads afresh.
        for target in ("about:blank", url):
            self.events.clear()
            result = self.call("Page.navigate", url=target)
            if result.get("errorText"):
                raise BrowserError(f"{target}: {result['errorText']}")
            self._wait_event("Page.loadEventFired", 0)
        self.wait_for(ready)

    def wait_for(self, expression: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}; page errors: {self.errors()}")
            time.sleep(0.02)

    def evaluate(self, expression: str):
        """The JSON value of a JavaScript expression in the page (promises are awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"page script failed: {text}")
        return result.get("result", {}).get("value")

    def requests(self) -> list[str]:
        """URLs of every request the page made since it was opened."""
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def errors(self) -> list[str]:
        """Uncaught exceptions, console errors and browser error log entries since opening."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(d.get("exception", {}).get("description") or d.get("text", ""))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def screenshot(self, path: str | Path) -> Path:
        """A PNG of the viewport."""
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                self.call("Browser.close", session=False)
            except Exception:  # the browser may already be gone; closing is best effort
                pass
            ws.close()
            self.ws = None
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
