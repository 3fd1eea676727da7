"""Fixtures for the WebSocket conformance tests: the `ordersync-wsecho` binary, a running echo
server, and a running `ordersync master` (the handshake tests run against both: they share one
WebSocket transport and must answer alike).

The binaries are `$ORDERSYNC_WSECHO_BIN` and `$ORDERSYNC_BIN`, by default
`<repo>/.build/debug/ordersync-wsecho` and `<repo>/.build/debug/ordersync` (`swift build`). When
one is missing its tests are skipped, except under CI mode, where a missing prerequisite fails
them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Tests/support: the independent secure peer, shared with the LAN tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

from conformance_support import isolated_master_env, master_started_port, ordersync_path, require, wsecho_path  # noqa: E402


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


@pytest.fixture(scope="session")
def ordersync_bin() -> Path:
    path = ordersync_path()
    require(path.is_file() and os.access(path, os.X_OK),
            f"no ordersync at {path}: run `swift build --product ordersync` or set ORDERSYNC_BIN")
    return path


@pytest.fixture(scope="module")
def master_port(ordersync_bin: Path):
    """A running `ordersync master` listening on 127.0.0.1 with a fresh data directory; yields
    its port. Its 5 s handshake deadline is the echo server's. It admits plain StorePOS clients
    (`--insecure-storepos`): the handshake tests expect its snapshot on a link without a
    subprotocol."""
    with tempfile.TemporaryDirectory(prefix="ordersync-conformance-") as data_dir:
        log_path = Path(data_dir) / "master.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [str(ordersync_bin), "master", "--data-dir", data_dir, "--listen", "127.0.0.1", "--port", "0",
                 "--store", "conformance", "--handshake-timeout", "5", "--log-format", "json",
                 "--insecure-storepos"],
                stdout=log, stderr=subprocess.STDOUT, env=isolated_master_env())
        try:
            yield master_started_port(process, log_path)
            assert process.poll() is None, "the master exited during the tests"
        finally:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()




@pytest.fixture(params=["ordersync-wsecho", "ordersync-master"])
def server_port(request) -> int:
    """The port of each server in turn: the echo tool and the master."""
    return request.getfixturevalue("echo_port" if request.param == "ordersync-wsecho" else "master_port")
