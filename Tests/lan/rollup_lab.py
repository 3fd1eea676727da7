"""`ordersync rollup` on a shop's host, for the roll-up fault tests (issue 28): a follower process
with its log, `--once`, `verify`, `status` and its metrics, as Docs/OPERATIONS.md ("Head office
roll-up (PostgreSQL)") describes them.

    rollup = Rollup(master, url)                       # follows, logging to a file of its own
    rollup.wait_event("rollup.batch_committed")
    rollup.kill()                                      # kill -9
    code, answer, took = once(master, url)             # `--once --json`: (exit, JSON, seconds)
    code, answer = verify(master, url)                 # `verify --json`

Log lines are read in both formats (JSON objects, or logfmt's `event=NAME`), so that the tests
do not depend on the flag that picks one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time

from lanharness import LanError, wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary

#: Exit codes of `ordersync rollup` (Docs/OPERATIONS.md, "Exit codes").
EXIT_OK, EXIT_DIFFERENT, EXIT_CONFLICT_OR_GAP, EXIT_UNREACHABLE, EXIT_CONFIG = 0, 1, 65, 69, 78


def rollup_available() -> bool:
    """Whether the binary has the `rollup` command (`ordersync rollup --help` exits 0)."""
    try:
        result = subprocess.run([ordersync_binary(), "rollup", "--help"], capture_output=True, text=True, timeout=30,
                                env={**os.environ, "ORDERSYNC_CONFIG": "/dev/null"})
    except (LanError, OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parse(line: str) -> dict | None:
    """One log line as a dict: a JSON object, or logfmt's `key=value` pairs."""
    line = re.sub(r"^<\d>", "", line.strip())
    if line.startswith("{"):
        try:
            return json.loads(line)
        except ValueError:
            return None
    pairs = re.findall(r'([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)', line)
    if not pairs:
        return None
    return {k: (json.loads(v) if v.startswith('"') else v) for k, v in pairs}


class Rollup:
    """`ordersync rollup --data-dir DIR --database-url URL` (following) on a node's host."""

    def __init__(self, node: OrderSyncNode, url: str, metrics: bool = True, extra: list[str] | None = None):
        self.node = node
        self.url = url
        self.metrics_port = free_port() if metrics else None
        self.extra = extra or []
        self.process: subprocess.Popen | None = None
        self.log_path = ""
        self.start()

    def start(self) -> None:
        self.log_path = os.path.join(self.node.host.dir, f"rollup-{int(time.time() * 1000)}.log")
        argv = [ordersync_binary(), "rollup", "--data-dir", self.node.data_dir, "--database-url", self.url,
                "--log-level", "debug", *self.extra]
        if self.metrics_port:
            argv += ["--metrics-listen", f"127.0.0.1:{self.metrics_port}"]
        self.log_file = open(self.log_path, "ab")
        self.process = self.node.host.popen(argv, stdout=self.log_file, stderr=self.log_file)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Sends `sig` and waits for the exit; returns the exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.log_file.close()
            self.process = None

    def kill(self) -> int:
        """kill -9."""
        return self.stop(signal.SIGKILL)

    def log_lines(self) -> list[str]:
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()

    def events(self, name: str | None = None) -> list[dict]:
        """Parsed log lines, only those with `event == name` when given."""
        out = []
        for line in self.log_lines():
            event = _parse(line)
            if event and (name is None or event.get("event") == name):
                out.append(event)
        return out

    def wait_event(self, name: str, timeout: float = 60, count: int = 1, where=None) -> dict:
        """Waits until the log holds `count` events `name` (matching `where`); returns the last.
        Fails at once when the process exited."""
        def found():
            matches = [e for e in self.events(name) if where is None or where(e)]
            if len(matches) >= count:
                return matches[count - 1]
            if not self.alive():
                raise LanError(f"the roll-up on {self.node.host.name} exited {self.process and self.process.returncode} "
                               f"before {name}: " + "\n".join(self.log_lines()[-15:]))
            return None
        return wait_until(found, timeout, interval=0.05, what=f"{name} from the roll-up on {self.node.host.name}")

    def metrics(self) -> dict[str, float]:
        """Its `/metrics` as {series (with labels): value}."""
        result = self.node.host.run(["curl", "-sf", "--max-time", "5", f"http://127.0.0.1:{self.metrics_port}/metrics"],
                                    check=False, timeout=15)
        if result.returncode != 0:
            return {}
        values = {}
        for line in result.stdout.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    values[name] = float(value)
                except ValueError:
                    continue
        return values


def status(node: OrderSyncNode) -> dict | None:
    """`ordersync rollup status --data-dir DIR --json`, or None when it fails."""
    result = node.host.run([ordersync_binary(), "rollup", "status", "--data-dir", node.data_dir, "--json"],
                           check=False, timeout=30)
    if result.returncode != 0:
        return None
    try:
        return json.loads(result.stdout)
    except ValueError:
        return None


def wait_status(node: OrderSyncNode, predicate, timeout: float = 60, what: str = "a roll-up status") -> dict:
    """Waits until `rollup status` satisfies `predicate`; names the last status on failure."""
    last = {}

    def good():
        last["status"] = current = status(node)
        return current if current is not None and predicate(current) else None
    try:
        return wait_until(good, timeout, interval=0.1, what=what)
    except LanError:
        raise LanError(f"no {what} within {timeout}s; last status {last.get('status')}") from None


def once(node: OrderSyncNode, url: str, timeout: float = 300) -> tuple[int, dict | None, float]:
    """`ordersync rollup --once --json`: (exit code, its JSON or None, seconds it took)."""
    started = time.monotonic()
    result = node.host.run([ordersync_binary(), "rollup", "--data-dir", node.data_dir, "--database-url", url,
                            "--once", "--json"], check=False, timeout=timeout)
    took = time.monotonic() - started
    return result.returncode, _json(result), took


def verify(node: OrderSyncNode, url: str, timeout: float = 300) -> tuple[int, dict | None]:
    """`ordersync rollup verify --json`: (exit code, its JSON or None)."""
    result = node.host.run([ordersync_binary(), "rollup", "verify", "--data-dir", node.data_dir, "--database-url", url,
                            "--json"], check=False, timeout=timeout)
    return result.returncode, _json(result)


def _json(result: subprocess.CompletedProcess) -> dict | None:
    for text in (result.stdout, result.stderr):
        for line in reversed(text.strip().splitlines()):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None
