"""Load a page in the distribution's Chromium, headless, and read what its console said.

The DevTools protocol runs over `--remote-debugging-pipe` (NUL-separated JSON on file descriptors
3 and 4), so no websocket client or other dependency is needed. Chromium runs with a fresh profile
and every background service off: this machine has no network, and a test must not reach one.

    with Chromium() as browser:
        page = browser.load(Path("report.html"))
        page.problems        # console errors/warnings/asserts, uncaught exceptions, error log entries
        page.evaluate("document.querySelectorAll('h2').length")
        page.screenshot()    # PNG bytes of the whole page
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]
PROBLEM_CONSOLE_TYPES = ("error", "warning", "assert")


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, browser: Chromium, session: str, events: list[dict[str, Any]]) -> None:
        self.browser, self.session, self.events = browser, session, events

    @property
    def problems(self) -> list[str]:
        """Everything the page reported as going wrong, one line each."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in PROBLEM_CONSOLE_TYPES:
                out.append(f"console.{params['type']}: " + " ".join(str(a.get("value", a.get("description")))
                                                                   for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                entry = params["entry"]
                out.append(f"{entry['source']} {entry['level']}: {entry['text']} {entry.get('url', '')}".strip())
        return out

    def evaluate(self, expression: str) -> Any:
        reply = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                  session=self.session)
        return reply["result"].get("value")

    def screenshot(self, *, top: int = 0, height: int | None = None) -> bytes:
        """PNG of the whole page, or of `height` CSS pixels from `top`."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if height is not None:
            width = self.evaluate("document.documentElement.scrollWidth")
            params["clip"] = {"x": 0, "y": top, "width": width, "height": height, "scale": 1}
        reply = self.browser.call("Page.captureScreenshot", params, session=self.session)
        return base64.b64decode(reply["data"])


class Chromium:
    def __init__(self, binary: str | None = None, *, timeout_s: float = 30) -> None:
        found = binary or find_chromium()
        if found is None:
            raise FileNotFoundError("chromium is not installed; .ci/setup installs it (apt-get install chromium)")
        self.binary, self.timeout_s = found, timeout_s
        self._next_id, self._buffer, self._pending = 0, b"", []

    def __enter__(self) -> Chromium:
        self._profile = tempfile.TemporaryDirectory(prefix="rf-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:   # Chromium reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_browser_r, 200)     # out of the way first: either end may itself be fd 3 or 4
            os.dup2(from_browser_w, 201)
            os.dup2(200, 3)
            os.dup2(201, 4)

        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
                                     pass_fds=(3, 4), preexec_fn=wire,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._send("Browser.close")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            self._profile.cleanup()

    def load(self, path: Path, *, settle_s: float = 0.5, width: int = 1400) -> Page:
        """Open the file in a new tab `width` CSS pixels wide, wait for its load event and `settle_s`
        more, keep every event."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=session)
        self._pending = []
        self._send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        self._wait(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session)
        self._wait(lambda m: False, timeout_s=settle_s, must=False)
        events = [m for m in self._pending if m.get("sessionId") == session]
        return Page(self, session, events)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> dict:
        call_id = self._send(method, params, session=session)
        reply = self._wait(lambda m: m.get("id") == call_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _wait(self, wanted: Any, *, timeout_s: float | None = None, must: bool = True) -> dict[str, Any]:
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                self._pending.append(message)
                if wanted(message):
                    return message
            ready, _, _ = select.select([self._from_browser], [], [], 0.1)
            if ready:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buffer += chunk
        if must:
            raise TimeoutError(f"chromium did not answer within {self.timeout_s:.0f} s")
        return {}
