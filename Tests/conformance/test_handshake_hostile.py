"""Opening-handshake cases over raw sockets (Autobahn has no handshake group): every malformed or
unsupported request gets the right HTTP error and a closed connection, valid variations are
accepted, and nothing is sent before our `101`.

The handshake cases run against both `ordersync-wsecho server` and `ordersync master`
(`server_port`): both serve connections with the same WebSocket transport, so they must answer
alike, and refusals are compared byte for byte. Cases that need messages echoed run against the
echo server only.
"""

from __future__ import annotations

import select
import socket
import struct

import pytest

import rawws
from rawws import BINARY, CLOSE, TEXT, FrameReader, accept_value, connect, frame, read_response, request

RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 1.3, accept value s3pPLMBiTxaQ9kYGzzhZRbK+xOo=


def refused(port: int, raw: bytes) -> rawws.Response:
    """Sends `raw`, reads the response, and checks the server then closes the connection."""
    with connect(port) as sock:
        sock.sendall(raw)
        response = read_response(sock)
        length = int(response.header("Content-Length") or "0")
        body = rawws.read_until_closed(sock, response.rest)
        assert len(body) == length, f"body {body!r} does not match Content-Length {length}"
        assert response.header("Sec-WebSocket-Accept") is None
        return response


def accepted(sock: socket.socket, raw: bytes, key: str) -> rawws.Response:
    sock.sendall(raw)
    response = read_response(sock)
    assert response.status == 101, response.status_line
    assert response.header("Sec-WebSocket-Accept") == accept_value(key)
    assert response.header("Upgrade").lower() == "websocket"
    assert "upgrade" in response.header("Connection").lower()
    return response


def next_control(reader: FrameReader) -> tuple[bool, int, bytes]:
    """The next frame that is not a text message (the master sends a terminal that asked for no
    subprotocol the order snapshot at once; the echo server sends nothing unasked)."""
    while True:
        fin, opcode, payload = reader.next()
        if opcode != TEXT:
            return fin, opcode, payload


def close_exchange(sock: socket.socket, reader: FrameReader) -> None:
    """Sends Close 1000; expects Close 1000 back, then the server closing TCP."""
    sock.sendall(frame(CLOSE, struct.pack("!H", 1000)))
    fin, opcode, payload = next_control(reader)
    assert (fin, opcode) == (True, CLOSE)
    assert struct.unpack("!H", payload[:2])[0] == 1000
    assert sock.recv(1) == b"", "server did not close the TCP connection after the closing handshake"


# ---------------------------------------------------------------------------------------------
# Refusals


def test_wrong_method_is_405(server_port):
    response = refused(server_port, request(method="POST"))
    assert response.status == 405
    assert response.header("Allow") == "GET"


def test_http_1_0_is_refused(server_port):
    response = refused(server_port, request(version="HTTP/1.0"))
    assert response.status in (505, 400)


def test_missing_host_is_400(server_port):
    assert refused(server_port, request(omit=("host",))).status == 400


def test_duplicate_host_is_400(server_port):
    raw = request().replace(b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nHost: example.com\r\n")
    assert refused(server_port, raw).status == 400


def test_missing_upgrade_is_426_with_version(server_port):
    response = refused(server_port, request(omit=("upgrade",)))
    assert response.status == 426
    assert response.header("Sec-WebSocket-Version") == "13"


def test_upgrade_to_other_protocol_is_426(server_port):
    response = refused(server_port, request(headers=[("Upgrade", "h2c")]))
    assert response.status == 426
    assert response.header("Sec-WebSocket-Version") == "13"


def test_connection_without_upgrade_token_is_refused(server_port):
    response = refused(server_port, request(headers=[("Connection", "keep-alive")]))
    assert response.status in (400, 426)


@pytest.mark.parametrize("version", ["8", "12", "14", "13, 8", ""])
def test_unsupported_version_is_426(server_port, version):
    response = refused(server_port, request(headers=[("Sec-WebSocket-Version", version)]))
    assert response.status == 426
    assert response.header("Sec-WebSocket-Version") == "13"


def test_missing_version_is_426(server_port):
    response = refused(server_port, request(omit=("sec-websocket-version",)))
    assert response.status == 426
    assert response.header("Sec-WebSocket-Version") == "13"


@pytest.mark.parametrize("key", [
    rawws.new_key(15),            # 15 bytes
    rawws.new_key(17),            # 17 bytes
    "not base64 at all!!!!!!!",   # not base64
    "dGhlIHNhbXBsZSBub25jZQ",     # padding stripped
])
def test_bad_key_is_400(server_port, key):
    assert refused(server_port, request(headers=[("Sec-WebSocket-Key", key)])).status == 400


def test_missing_key_is_400(server_port):
    assert refused(server_port, request(omit=("sec-websocket-key",))).status == 400


def test_header_block_over_8_kib_is_431(server_port):
    padding = [(f"X-Padding-{i}", "p" * 100) for i in range(90)]  # about 10 KiB
    assert refused(server_port, request(headers=padding)).status == 431


def test_endless_header_line_is_431(server_port):
    """A head that never ends is refused once it passes the limit, without waiting for more."""
    with connect(server_port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 9000)
        response = read_response(sock)
        assert response.status == 431


def test_garbage_request_line_is_400(server_port):
    assert refused(server_port, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n").status == 400


# ---------------------------------------------------------------------------------------------
# Accepted variations


def test_rfc_example_key(server_port):
    with connect(server_port) as sock:
        response = accepted(sock, request(key=RFC_KEY), RFC_KEY)
        assert response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        close_exchange(sock, FrameReader(sock, response.rest))


@pytest.mark.parametrize("connection,upgrade", [
    ("keep-alive, Upgrade", "websocket"),
    ("Upgrade, keep-alive", "WebSocket"),
    ("KEEP-ALIVE,upgrade", "WEBSOCKET"),
])
def test_token_lists_are_case_insensitive(echo_port, connection, upgrade):
    key = rawws.new_key()
    raw = request(key=key, headers=[("connection", connection), ("upgrade", upgrade)])
    with connect(echo_port) as sock:
        response = accepted(sock, raw, key)
        reader = FrameReader(sock, response.rest)
        sock.sendall(frame(TEXT, b"token list"))
        assert reader.next() == (True, TEXT, b"token list")
        close_exchange(sock, reader)


def test_pipelined_frame_is_echoed(echo_port):
    """Frames sent in the same segment as the request belong to the connection."""
    key = rawws.new_key()
    with connect(echo_port) as sock:
        sock.sendall(request(key=key) + frame(TEXT, "pipelined é".encode()) + frame(BINARY, b"\x00\xff"))
        response = read_response(sock)
        assert response.status == 101
        reader = FrameReader(sock, response.rest)
        assert reader.next() == (True, TEXT, "pipelined é".encode())
        assert reader.next() == (True, BINARY, b"\x00\xff")
        close_exchange(sock, reader)


def test_nothing_is_sent_before_the_101(server_port):
    """The request arrives in two pieces; the server stays silent until it has the whole head."""
    key = rawws.new_key()
    raw = request(key=key)
    split = len(raw) // 2
    with connect(server_port) as sock:
        sock.sendall(raw[:split])
        readable, _, _ = select.select([sock], [], [], 0.5)
        assert not readable, f"server sent {sock.recv(4096)!r} before the request was complete"
        sock.sendall(raw[split:])
        response = read_response(sock)
        assert response.status == 101
        assert response.header("Sec-WebSocket-Accept") == accept_value(key)


def test_permessage_deflate_offer_is_declined(server_port):
    key = rawws.new_key()
    raw = request(key=key, headers=[
        ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
    ])
    with connect(server_port) as sock:
        response = accepted(sock, raw, key)
        assert response.header("Sec-WebSocket-Extensions") is None
        reader = FrameReader(sock, response.rest)
        # Without the extension, RSV1 must fail the connection with 1002.
        sock.sendall(frame(TEXT, b"compressed?", rsv1=True))
        fin, opcode, payload = next_control(reader)
        assert opcode == CLOSE
        assert struct.unpack("!H", payload[:2])[0] == 1002
        assert rawws.read_until_closed(sock, reader.buffer) == b""


def test_unoffered_subprotocol_is_not_selected(request, server_port):
    key = rawws.new_key()
    with connect(server_port) as sock:
        response = accepted(sock, rawws.request(key=key, headers=[("Sec-WebSocket-Protocol", "chat, superchat")]), key)
        assert response.header("Sec-WebSocket-Protocol") is None
        reader = FrameReader(sock, response.rest)
        if request.node.callspec.params["server_port"] == "ordersync-master":
            # The master admits only its secure subprotocols (and plain StorePOS clients in
            # insecure mode): it closes the link itself with 1008 and says why.
            fin, opcode, payload = next_control(reader)
            assert (fin, opcode) == (True, CLOSE)
            assert struct.unpack("!H", payload[:2])[0] == 1008, payload
            assert b"subprotocol" in payload[2:], payload
        else:
            close_exchange(sock, reader)


def test_unmasked_client_frame_fails_with_1002(server_port):
    key = rawws.new_key()
    with connect(server_port) as sock:
        response = accepted(sock, request(key=key), key)
        reader = FrameReader(sock, response.rest)
        sock.sendall(frame(TEXT, b"unmasked", mask=False))
        fin, opcode, payload = next_control(reader)
        assert opcode == CLOSE
        assert struct.unpack("!H", payload[:2])[0] == 1002
        assert rawws.read_until_closed(sock, reader.buffer) == b""


def test_request_sent_byte_by_byte_is_accepted(server_port):
    key = rawws.new_key()
    with connect(server_port) as sock:
        for byte in request(key=key):
            sock.send(bytes([byte]))
        response = read_response(sock)
        assert response.status == 101
        assert response.header("Sec-WebSocket-Accept") == accept_value(key)
        close_exchange(sock, FrameReader(sock, response.rest))


def test_slow_handshake_is_dropped(server_port):
    """A client that never finishes its request is disconnected without a 101 (both servers'
    handshake deadline is 5 s)."""
    with connect(server_port, timeout=15) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            data = rawws.read_until_closed(sock)
        except ConnectionResetError:
            data = b""
        assert b"101" not in data


# ---------------------------------------------------------------------------------------------
# One transport: the master and the echo server refuse alike, byte for byte


REFUSED_REQUESTS = {
    "post": request(method="POST"),
    "http-1.0": request(version="HTTP/1.0"),
    "no-host": request(omit=("host",)),
    "two-hosts": request().replace(b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\r\nHost: example.com\r\n"),
    "no-upgrade": request(omit=("upgrade",)),
    "h2c": request(headers=[("Upgrade", "h2c")]),
    "keep-alive-only": request(headers=[("Connection", "keep-alive")]),
    "version-8": request(headers=[("Sec-WebSocket-Version", "8")]),
    "no-version": request(omit=("sec-websocket-version",)),
    "short-key": request(headers=[("Sec-WebSocket-Key", rawws.new_key(15))]),
    "no-key": request(omit=("sec-websocket-key",)),
    "head-over-8-kib": request(headers=[(f"X-Padding-{i}", "p" * 100) for i in range(90)]),
    "tls-hello": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
}


def refusal_bytes(port: int, raw: bytes) -> bytes:
    """Everything the server sends for `raw` until it closes the connection."""
    with connect(port) as sock:
        sock.sendall(raw)
        return rawws.read_until_closed(sock)


@pytest.mark.parametrize("name", sorted(REFUSED_REQUESTS))
def test_master_and_echo_server_refuse_identically(echo_port, master_port, name):
    raw = REFUSED_REQUESTS[name]
    from_echo = refusal_bytes(echo_port, raw)
    from_master = refusal_bytes(master_port, raw)
    assert from_echo.startswith(b"HTTP/1.1 4") or from_echo.startswith(b"HTTP/1.1 505"), from_echo
    assert from_master == from_echo
