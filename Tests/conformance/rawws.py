"""Minimal raw-socket WebSocket pieces for handshake and framing tests: requests built byte by
byte, responses read without interpretation, frames encoded and decoded by hand (RFC 6455)."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def accept_value(key: str) -> str:
    """RFC 6455 4.2.2: base64 of the SHA-1 of the key concatenated with the GUID."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def new_key(length: int = 16) -> str:
    return base64.b64encode(os.urandom(length)).decode()


def request(path: str = "/", *, method: str = "GET", version: str = "HTTP/1.1",
            headers: list[tuple[str, str]] | None = None, key: str | None = None,
            omit: tuple[str, ...] = ()) -> bytes:
    """A handshake request; `headers` replace the defaults of the same name, `omit` drops some."""
    fields = {
        "host": ("Host", "127.0.0.1"),
        "upgrade": ("Upgrade", "websocket"),
        "connection": ("Connection", "Upgrade"),
        "sec-websocket-key": ("Sec-WebSocket-Key", key or new_key()),
        "sec-websocket-version": ("Sec-WebSocket-Version", "13"),
    }
    for name, value in headers or []:
        fields[name.lower()] = (name, value)
    lines = [f"{method} {path} {version}"]
    lines += [f"{name}: {value}" for lower, (name, value) in fields.items() if lower not in omit]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Response:
    """A parsed response head plus whatever bytes followed it."""

    def __init__(self, raw: bytes, rest: bytes):
        head = raw.decode("latin-1").split("\r\n")
        self.status_line = head[0]
        self.status = int(head[0].split(" ")[1])
        self.headers: dict[str, list[str]] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            self.headers.setdefault(name.strip().lower(), []).append(value.strip())
        self.rest = rest

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None


def read_response(sock: socket.socket) -> Response:
    """Reads up to the end of the response head (raises on EOF before it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return Response(head, rest)


def read_until_closed(sock: socket.socket, initial: bytes = b"") -> bytes:
    """Everything the peer sends until it closes the connection (within the socket timeout)."""
    data = initial
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def frame(opcode: int, payload: bytes, *, fin: bool = True, rsv1: bool = False, mask: bool = True) -> bytes:
    """One frame as a client sends it (masked unless `mask` is false)."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, (0x80 if mask else 0) | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, length)
    else:
        header = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, length)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class FrameReader:
    """Reads unmasked server frames from a socket, starting with bytes already received."""

    def __init__(self, sock: socket.socket, initial: bytes = b""):
        self.sock = sock
        self.buffer = initial

    def _need(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed inside a frame")
            self.buffer += chunk
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def next(self) -> tuple[bool, int, bytes]:
        """(fin, opcode, payload) of the next frame; server frames must not be masked."""
        first, second = self._need(2)
        assert second & 0x80 == 0, "a server frame was masked"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self._need(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", self._need(8))
        return bool(first & 0x80), first & 0x0F, self._need(length)
