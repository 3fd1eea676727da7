"""A headless Chromium driven over the DevTools protocol through a pipe
(`--remote-debugging-pipe`: commands on fd 3, answers on fd 4, each a JSON text ended by NUL),
so the browser can run on a simulated host (its own network namespace) with no debugging port.
"""

import base64
import fcntl
import itertools
import json
import os
import shutil
import tempfile
import threading
import time

from lanharness import wait_until


def chromium_binary() -> str | None:
    """The system Chromium (Debian package `chromium`), or None."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium on `host` with one page (tab) attached."""

    def __init__(self, host, width: int = 1280, height: int = 800, flags: tuple[str, ...] = ()):
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=host.dir)
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds():
            # The browser reads commands on fd 3 and writes answers on fd 4 (dup2 leaves them
            # inheritable; every other descriptor of this process is not: PEP 446).
            commands, answers = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10), fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        argv = [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--password-store=basic", "--use-mock-keychain",
                "--remote-debugging-pipe", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                *flags, "about:blank"]
        env = dict(os.environ, HOME=self.profile)
        self.log = open(os.path.join(host.dir, "chromium.log"), "wb")
        self.process = host.popen(argv, env=env, close_fds=False, preexec_fn=fds, stdout=self.log, stderr=self.log)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._answers: dict[int, dict] = {}
        self.events: list[dict] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.page("Page.enable")
        self.page("Runtime.enable")
        self.resize(width, height)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                text, buffer = buffer.split(b"\0", 1)
                message = json.loads(text)
                with self._lock:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._lock.notify_all()

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        """Sends a command and returns its result (raises CDPError on an error answer)."""
        ident = next(self._ids)
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._lock:
            while ident not in self._answers:
                if self._closed:
                    raise CDPError(f"the browser exited during {method}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"no answer to {method} within {timeout} s")
                self._lock.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def page(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        return self.call(method, params, session=self.session, timeout=timeout)

    def evaluate(self, expression: str, timeout: float = 30):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.page("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           timeout=timeout)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url: str, timeout: float = 30) -> None:
        """Opens `url` and waits until its document has loaded."""
        self.page("Page.navigate", {"url": url})
        wait_until(lambda: self.evaluate("document.readyState") == "complete" and self.evaluate("location.href") != "about:blank",
                   timeout, interval=0.05, what=f"{url} to load")

    def wait(self, expression: str, timeout: float = 10, interval: float = 0.02):
        """Polls a JavaScript expression until it is truthy; returns its value."""
        return wait_until(lambda: self.evaluate(expression), timeout, interval=interval, what=expression)

    def resize(self, width: int, height: int, mobile: bool = False) -> None:
        self.page("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def screenshot(self, path: str, full_page: bool = True) -> None:
        params = {"format": "png", "captureBeyondViewport": full_page}
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.page("Page.captureScreenshot", params)["data"]))

    def dialogs(self) -> list[dict]:
        """JavaScript dialogs (alert, confirm...) the page opened."""
        with self._lock:
            return [e for e in self.events if e.get("method") == "Page.javascriptDialogOpening"]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except CDPError:
            pass
        try:
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self.log.close()
