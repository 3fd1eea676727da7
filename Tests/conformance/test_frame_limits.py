"""Limits and fail-fast behaviour of the echo server's WebSocket layer, over raw sockets: the
server answers with the right close code before the offending payload has arrived, then closes
the TCP connection (RFC 6455 7.1.7, 7.4.1)."""

from __future__ import annotations

import struct

import rawws
from rawws import BINARY, CLOSE, TEXT, FrameReader, connect, frame, read_response, request

MAX_MESSAGE = 20 << 20  # the echo server's --max-message-size default


def open_connection(port: int):
    sock = connect(port)
    sock.sendall(request())
    response = read_response(sock)
    assert response.status == 101
    return sock, FrameReader(sock, response.rest)


def expect_close(sock, reader: FrameReader, code: int) -> None:
    fin, opcode, payload = reader.next()
    assert opcode == CLOSE, f"expected a Close frame, got opcode {opcode}"
    assert struct.unpack("!H", payload[:2])[0] == code
    assert rawws.read_until_closed(sock, reader.buffer) == b""


def header_only(length: int, opcode: int = BINARY) -> bytes:
    """A masked frame header announcing `length` payload bytes, with its masking key."""
    return struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length) + b"\x01\x02\x03\x04"


def test_oversized_frame_is_refused_before_its_payload(echo_port):
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(header_only(MAX_MESSAGE + 1))
        expect_close(sock, reader, 1009)


def test_length_with_top_bit_set_is_a_protocol_error(echo_port):
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(header_only(1 << 63))
        expect_close(sock, reader, 1002)


def test_fragmented_message_over_the_limit_is_1009(echo_port):
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(frame(BINARY, b"x" * 16, fin=False))
        sock.sendall(header_only(MAX_MESSAGE, opcode=0))
        expect_close(sock, reader, 1009)


def test_invalid_utf8_fails_fast_inside_a_fragmented_message(echo_port):
    """The first fragment is already invalid: the server fails before the message ends."""
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(frame(TEXT, b"valid \xce\xba then \xff", fin=False))
        expect_close(sock, reader, 1007)


def test_invalid_utf8_fails_fast_inside_a_partial_frame(echo_port):
    """Only part of a large text frame has arrived, and it is already invalid."""
    sock, reader = open_connection(echo_port)
    with sock:
        data = frame(TEXT, b"\xed\xa0\x80" + b"a" * 100_000)  # a surrogate: never valid UTF-8
        sock.sendall(data[:2 + 8 + 4 + 16])
        expect_close(sock, reader, 1007)


def test_control_frame_over_125_bytes_is_1002(echo_port):
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(frame(0x9, b"p" * 126))
        expect_close(sock, reader, 1002)


def test_fragmented_ping_is_1002(echo_port):
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(frame(0x9, b"ping", fin=False))
        expect_close(sock, reader, 1002)


def test_message_then_garbage_gets_echo_then_close(echo_port):
    """The reply to a message precedes the Close caused by later bytes of the same segment."""
    sock, reader = open_connection(echo_port)
    with sock:
        sock.sendall(frame(TEXT, b"first") + frame(0x3, b"reserved opcode"))
        assert reader.next() == (True, TEXT, b"first")
        expect_close(sock, reader, 1002)
