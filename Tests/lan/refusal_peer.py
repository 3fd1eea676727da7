"""A host that the master refuses again and again before any handshake work, as fast as it is
answered, one connection at a time (Docs/SECURITY.md "Before authentication", "Logged as a
summary"): what each refusal costs in the master's log.

    refusal_peer.py plain URL SOURCE SECONDS   # plain WebSocket upgrades (a StorePOS client) to a master without --insecure-storepos
    refusal_peer.py crowd URL SOURCE SECONDS   # 8 connections held silent, then one more after another (over the per-address cap)

Prints one JSON object: `tries`, and how each ended (`refused`: closed 1008 after the 101;
`closed`: closed by the master before any answer; `other`), and `held` for `crowd`.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import time
from urllib.parse import urlparse

from preauth_peer import Link, close_of

#: Connections one address may hold before authenticating (NodeDefaults).
HELD_PER_ADDRESS = 8


def connect(url: str, source: str) -> socket.socket:
    parsed = urlparse(url)
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect((parsed.hostname, parsed.port))
    return s


def plain(url: str, source: str, seconds: float) -> dict:
    """Plain WebSocket upgrades with no subprotocol, each read until the master's close."""
    parsed = urlparse(url)
    counts = {"tries": 0, "refused": 0, "closed": 0, "other": 0}
    reasons: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts["tries"] += 1
        try:
            s = connect(url, source)
            key = base64.b64encode(os.urandom(16)).decode()
            s.sendall((f"GET / HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
                       f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            counts["closed"] += 1
            continue
        if not head:
            counts["closed"] += 1
        elif head.startswith(b"HTTP/1.1 101"):
            close = close_of(Link(s, head.split(b"\r\n\r\n", 1)[1]))
            if close["code"] == 1008:
                counts["refused"] += 1
                reasons.add(close["reason"])
            else:
                counts["other"] += 1
        else:
            counts["other"] += 1
        s.close()
    return {**counts, "reasons": sorted(reasons)}


def crowd(url: str, source: str, seconds: float) -> dict:
    """Holds `HELD_PER_ADDRESS` connections that never finish their upgrade, then opens one more
    after another: each is over the address's cap and closed at accept."""
    parsed = urlparse(url)
    held = []
    for _ in range(HELD_PER_ADDRESS):
        s = connect(url, source)
        s.sendall(f"GET / HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\n".encode())
        held.append(s)
    counts = {"tries": 0, "refused": 0, "closed": 0, "other": 0}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts["tries"] += 1
        try:
            s = connect(url, source)
            closed = s.recv(1) == b""
        except OSError:
            closed = True
        else:
            s.close()
        counts["closed" if closed else "other"] += 1
    # The held ones are still open (none was closed to make room for those refused).
    still = 0
    for s in held:
        s.setblocking(False)
        try:
            still += s.recv(1) != b""
        except BlockingIOError:
            still += 1
        except OSError:
            pass
        s.close()
    return {**counts, "held": still}


def main() -> int:
    mode, url, source, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    if mode == "plain":
        print(json.dumps(plain(url, source, seconds)), flush=True)
    elif mode == "crowd":
        print(json.dumps(crowd(url, source, seconds)), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
