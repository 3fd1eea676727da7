"""Shared by the conformance tests: where things are, and skip-or-fail for missing tools."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from ci_mode import in_ci  # Tests/support, on the path through Tests/conftest.py

REPO = Path(__file__).resolve().parents[2]
IN_CI = in_ci()


def isolated_master_env() -> dict[str, str]:
    """The environment for a master these tests start on 127.0.0.1 outside any simulated host:
    its D-Bus system bus address points nowhere, so it can never reach an avahi-daemon and
    publish itself on the machine's real network (it logs `avahi.unavailable` and serves)."""
    return {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/ordersync-tests-no-system-bus"}


def require(condition: bool, reason: str) -> None:
    """Skip the test when `condition` is false, or fail it under CI mode (`ci_mode.in_ci`)."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{reason} (required under CI mode)")
        pytest.skip(reason)


def wsecho_path() -> Path:
    """`$ORDERSYNC_WSECHO_BIN`, by default `<repo>/.build/debug/ordersync-wsecho`."""
    return Path(os.environ.get("ORDERSYNC_WSECHO_BIN", REPO / ".build" / "debug" / "ordersync-wsecho"))


def ordersync_path() -> Path:
    """`$ORDERSYNC_BIN`, by default `<repo>/.build/debug/ordersync`."""
    return Path(os.environ.get("ORDERSYNC_BIN", REPO / ".build" / "debug" / "ordersync"))


def qr_path() -> Path:
    """`$ORDERSYNC_QR_BIN`, by default `<repo>/.build/debug/ordersync-qr`."""
    return Path(os.environ.get("ORDERSYNC_QR_BIN", REPO / ".build" / "debug" / "ordersync-qr"))


def pairing_code(ordersync_bin: Path, master_data_dir: str) -> str:
    """Opens the running master's pairing window (`ordersync pair --json`) and returns the code
    a slave starts with (`--pair CODE`)."""
    result = subprocess.run([str(ordersync_bin), "pair", "--data-dir", str(master_data_dir), "--json"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["code"]


def master_started_port(process: subprocess.Popen, log_path: Path, timeout: float = 20) -> int:
    """The port in the master's `node.started` log event, logged once it is listening."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == "node.started":
                return int(record["port"])
        assert process.poll() is None, f"the master exited: {log_path.read_text(errors='replace')}"
        time.sleep(0.05)
    raise AssertionError(f"the master did not start within {timeout} s: {log_path.read_text(errors='replace')}")
