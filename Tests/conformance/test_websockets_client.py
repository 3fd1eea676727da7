"""Python `websockets` (an independent RFC 6455 implementation) as a client of
`ordersync-wsecho server`, with and without offering permessage-deflate."""

from __future__ import annotations

import os

import pytest

from conformance_support import require

try:
    from websockets.sync.client import connect
except ImportError:  # pragma: no cover - depends on the environment
    connect = None


@pytest.fixture(autouse=True)
def _websockets_installed():
    require(connect is not None, "the websockets package is not installed (pip install websockets)")


@pytest.mark.parametrize("compression", [None, "deflate"], ids=["no-compression", "deflate-offered"])
def test_echo_with_websockets(echo_port, compression):
    with connect(f"ws://127.0.0.1:{echo_port}/", compression=compression, max_size=4 << 20) as ws:
        # Whatever was offered, no extension is negotiated.
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
        ws.send("hello, κόσμε")
        assert ws.recv(timeout=5) == "hello, κόσμε"
        ws.send(b"\x00\x01\xfe\xff")
        assert ws.recv(timeout=5) == b"\x00\x01\xfe\xff"
        ws.send("")
        assert ws.recv(timeout=5) == ""
        large = os.urandom(1 << 20)
        ws.send(large)
        assert ws.recv(timeout=10) == large
        # A fragmented text message comes back as one message.
        ws.send(["frag", "mented ", "ü"])
        assert ws.recv(timeout=5) == "fragmented ü"
        assert ws.ping(b"heartbeat").wait(5), "no pong"
        for i in range(50):
            ws.send(f"message {i}")
        assert [ws.recv(timeout=5) for _ in range(50)] == [f"message {i}" for i in range(50)]
    assert ws.close_code == 1000
