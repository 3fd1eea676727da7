"""Fixtures for the WebSocket conformance tests: the `ordersync-wsecho` binary and a running
echo server.

The binary is `$ORDERSYNC_WSECHO_BIN`, by default `<repo>/.build/debug/ordersync-wsecho`
(`swift build --product ordersync-wsecho`). When it is missing the tests are skipped, except
under `CI=true`, where a missing prerequisite fails them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conformance_support import require, wsecho_path


@pytest.fixture(scope="session")
def wsecho_bin() -> Path:
    path = wsecho_path()
    require(path.is_file() and os.access(path, os.X_OK),
            f"no ordersync-wsecho at {path}: run `swift build --product ordersync-wsecho` "
            "or set ORDERSYNC_WSECHO_BIN")
    return path


@pytest.fixture(scope="module")
def echo_port(wsecho_bin: Path):
    """A running `ordersync-wsecho server` on 127.0.0.1; yields its port."""
    process = subprocess.Popen([str(wsecho_bin), "server", "--host", "127.0.0.1", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The server prints this line once it is listening; readline blocks until then.
        line = process.stdout.readline()
        assert line.startswith("listening "), f"unexpected first line {line!r}, stderr: {process.stderr.read()}"
        yield int(line.split()[1])
        assert process.poll() is None, "the echo server exited during the tests"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
