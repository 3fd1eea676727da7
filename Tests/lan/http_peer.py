"""An HTTP(S) peer for the listener tests (test_http_listeners.py), run on a simulated host.

    http_peer.py flood HOST PORT COUNT SECONDS [--tls]   hold COUNT idle connections for SECONDS,
        opening again each one the master closes; prints {"ready": ...} once all were tried, then
        {"opened": N, "closed": N} at the end
    http_peer.py probe URL                               one GET (https: certificate not verified,
        its SHA-256 reported); prints {"status", "ms", "sha256", "headers"}
    http_peer.py half HOST PORT [--tls]                  sends half a request head and prints how
        long the master took to close the connection: {"closed_after_s": S}
"""

import hashlib
import json
import selectors
import socket
import ssl
import sys
import time
import urllib.parse


def context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect(host: str, port: int, tls: bool, timeout: float = 5) -> socket.socket:
    s = socket.create_connection((host, port), timeout=timeout)
    if tls:
        s = context().wrap_socket(s, server_hostname=host)
    return s


def flood(host: str, port: int, count: int, seconds: float, tls: bool) -> None:
    """Idle connections (a TCP connect, no byte sent: the TLS handshake is not even started)."""
    sel = selectors.DefaultSelector()
    opened = closed = 0

    def open_one():
        nonlocal opened
        try:
            s = socket.create_connection((host, port), timeout=2)
        except OSError:
            return
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        opened += 1

    for _ in range(count):
        open_one()
    print(json.dumps({"ready": True, "opened": opened}), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                s.close()
                closed += 1
                open_one()
    print(json.dumps({"opened": opened, "closed": closed}), flush=True)


def probe(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    tls = parts.scheme == "https"
    start = time.monotonic()
    s = connect(parts.hostname, parts.port, tls)
    sha = hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest() if tls else None
    path = parts.path or "/"
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    ms = (time.monotonic() - start) * 1000
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
    print(json.dumps({"status": int(head[0].split()[1]), "ms": ms, "sha256": sha, "headers": headers}), flush=True)


def half(host: str, port: int, tls: bool) -> None:
    s = connect(host, port, tls)
    s.settimeout(60)
    start = time.monotonic()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    try:
        while s.recv(4096):
            pass
    except (ssl.SSLError, ConnectionResetError):
        pass
    print(json.dumps({"closed_after_s": time.monotonic() - start}), flush=True)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    tls = "--tls" in args
    args = [a for a in args if a != "--tls"]
    if command == "flood":
        flood(args[0], int(args[1]), int(args[2]), float(args[3]), tls)
    elif command == "probe":
        probe(args[0])
    elif command == "half":
        half(args[0], int(args[1]), tls)
    else:
        sys.exit(f"unknown command {command}")
