"""Attackers on the master's port before authentication (Docs/SECURITY.md "Before
authentication"), over raw sockets so that thousands of tries cost the attacker little. Each
connection binds one of the source addresses given (the harness adds them to the host).

    preauth_peer.py hold URL SOURCES N           # N upgraded ordersync.ik.v1 links, held idle, then a 1 MiB frame on each
    preauth_peer.py heads URL SOURCES N          # N connections each holding 7 KiB of an upgrade head that never ends
    preauth_peer.py ikflood URL SOURCES SECONDS MASTER_KEY_HEX   # replay one IK first message, from each source in a loop
    preauth_peer.py abandon URL SOURCES TRIES    # XXpsk3: message 1, read message 2, leave (no message 3)
    preauth_peer.py silent URL SOURCES N         # N upgraded links (ik and pair in turn) that never start the handshake

SOURCES is a comma-separated list of IPv4 addresses. `hold` prints a JSON line `upgraded` once
its links are open (and waits for a line on stdin before it sends the frames), then one JSON
object with the outcome of each link; `heads` prints `held` once its connections are open, and
after a line on stdin how many the master closed meanwhile. The others print one JSON object of counts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import resource
import socket
import struct
import sys
import threading
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from secure_peer import KNOWN, PAIRING, NoiseLink  # noqa: E402

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Link:
    """An upgraded connection: its socket and the bytes read past the last frame taken."""

    def __init__(self, sock: socket.socket, rest: bytes):
        self.sock = sock
        self.rest = rest

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def settimeout(self, seconds: float) -> None:
        self.sock.settimeout(seconds)

    def recv(self, n: int) -> bytes:
        return self.sock.recv(n)

    def close(self) -> None:
        self.sock.close()


def upgrade(url: str, source: str, subprotocol: str, timeout: float = 10) -> tuple[Link | None, str]:
    """A TCP connection from `source` and the WebSocket upgrade offering `subprotocol`: the socket
    once the master answered 101, else None and what happened (`refused` when the master closed
    before answering)."""
    parsed = urlparse(url)
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.bind((source, 0))
        s.connect((parsed.hostname, parsed.port))
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET / HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                s.close()
                return None, "refused"
            head += chunk
    except (ConnectionResetError, BrokenPipeError):
        s.close()
        return None, "refused"
    except OSError as error:
        s.close()
        return None, f"error {error}"
    if not head.startswith(b"HTTP/1.1 101"):
        s.close()
        return None, head.split(b"\r\n", 1)[0].decode(errors="replace")
    accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
    assert accept.encode() in head, head
    # Frames pipelined behind the 101 stay in `rest`.
    return Link(s, head.split(b"\r\n\r\n", 1)[1]), "upgraded"


def frame(payload: bytes, opcode: int = 0x2) -> bytes:
    """A masked client frame."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n <= 0xFFFF:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_frame(s: Link, timeout: float = 10) -> tuple[int, bytes] | None:
    """The next server frame (opcode, payload), None at EOF."""
    s.settimeout(timeout)
    buf = s.rest

    def need(n: int) -> bool:
        nonlocal buf
        while len(buf) < n:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                return False
            if not chunk:
                return False
            buf += chunk
        return True

    if not need(2):
        return None
    opcode, length = buf[0] & 0x0F, buf[1] & 0x7F
    offset = 2
    if length == 126:
        if not need(4):
            return None
        length, offset = struct.unpack("!H", buf[2:4])[0], 4
    elif length == 127:
        if not need(10):
            return None
        length, offset = struct.unpack("!Q", buf[2:10])[0], 10
    if not need(offset + length):
        return None
    payload = buf[offset:offset + length]
    s.rest = buf[offset + length:]
    return opcode, payload


def close_of(s: Link, timeout: float = 10) -> dict:
    """Reads until the master's Close frame (or EOF): its code and reason."""
    while True:
        got = read_frame(s, timeout)
        if got is None:
            return {"code": None, "reason": "EOF"}
        opcode, payload = got
        if opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            return {"code": code, "reason": payload[2:].decode(errors="replace")}


def hold(url: str, sources: list[str], count: int) -> int:
    links = []
    for i in range(count):
        s, what = upgrade(url, sources[i % len(sources)], KNOWN)
        links.append((s, what))
    print(json.dumps({"upgraded": sum(1 for s, _ in links if s is not None),
                      "outcomes": sorted({w for _, w in links})}), flush=True)
    sys.stdin.readline()
    results = []
    for s, _ in links:
        if s is None:
            continue
        started = time.monotonic()
        # A 1 MiB binary frame: the header, then the first 64 KiB of its payload (sent while
        # the master may already be closing).
        header = struct.pack("!BBQ", 0x82, 0x80 | 127, 1 << 20) + os.urandom(4)
        try:
            s.sendall(header)
            s.settimeout(0.2)
            try:
                s.sendall(os.urandom(64 << 10))
            except OSError:
                pass
            close = close_of(s, timeout=10)
        except OSError as error:
            close = {"code": None, "reason": f"error {error}"}
        close["ms"] = (time.monotonic() - started) * 1000
        results.append(close)
        s.close()
    codes: dict[str, int] = {}
    for r in results:
        codes[str(r["code"])] = codes.get(str(r["code"]), 0) + 1
    print(json.dumps({"links": len(results), "codes": codes, "max_close_ms": max((r["ms"] for r in results), default=0),
                      "reasons": sorted({r["reason"] for r in results})[:5]}), flush=True)
    return 0


def heads(url: str, sources: list[str], count: int) -> int:
    """Connections that start an upgrade request and never finish it: 7 KiB of header lines
    each, under the 8 KiB head limit, so each holds what an unauthenticated connection may."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 256)), hard))
    parsed = urlparse(url)
    head = f"GET / HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\n".encode()
    head += b"".join(f"X-Pad-{i}: {'a' * 1000}\r\n".encode() for i in range(7))
    held, errors = [], 0
    for i in range(count):
        s = socket.socket()
        s.settimeout(10)
        try:
            s.bind((sources[i % len(sources)], 0))
            s.connect((parsed.hostname, parsed.port))
            s.sendall(head)
            held.append(s)
        except OSError:
            errors += 1
            s.close()
    print(json.dumps({"held": len(held), "errors": errors}), flush=True)
    sys.stdin.readline()
    closed = 0
    for s in held:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print(json.dumps({"held": len(held), "closed_by_master": closed}), flush=True)
    return 0


def ikflood(url: str, sources: list[str], seconds: float, master_key: bytes) -> int:
    """Each source replays one IK first message (of an unpaired key) as fast as the master lets
    it, one connection at a time."""
    counts = {s: {"tries": 0, "refused": 0, "busy": 0, "unknown": 0, "other": 0, "errors": 0} for s in sources}
    stop = time.monotonic() + seconds

    def run(source: str) -> None:
        first = NoiseLink(KNOWN, initiator=True, static=os.urandom(32), remote_static=master_key).write_handshake()
        c = counts[source]
        while time.monotonic() < stop:
            c["tries"] += 1
            s, what = upgrade(url, source, KNOWN)
            if s is None:
                c["refused" if what == "refused" else "errors"] += 1
                continue
            try:
                s.sendall(frame(first))
                close = close_of(s, timeout=10)
            except OSError:
                close = {"code": None}
            s.close()
            if close["code"] == 1013:
                c["busy"] += 1
            elif close["code"] == 1008:
                c["unknown"] += 1
            else:
                c["other"] += 1

    threads = [threading.Thread(target=run, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"seconds": seconds, "per_source": counts}), flush=True)
    return 0


def abandon(url: str, sources: list[str], tries: int) -> int:
    """Pairing tries that stop after the master's second message: the master did its X25519
    work, the attacker leaves."""
    out = {"tries": 0, "answered": 0, "busy": 0, "refused": 0, "other": 0}
    for i in range(tries):
        out["tries"] += 1
        s, what = upgrade(url, sources[i % len(sources)], PAIRING)
        if s is None:
            out["refused"] += 1
            continue
        link = NoiseLink(PAIRING, initiator=True, static=os.urandom(32), psk=os.urandom(32))
        try:
            s.sendall(frame(link.write_handshake()))
            got = read_frame(s, timeout=10)
        except OSError:
            got = None
        if got is not None and got[0] == 0x2:
            out["answered"] += 1
        elif got is not None and got[0] == 0x8 and struct.unpack("!H", got[1][:2])[0] == 1013:
            out["busy"] += 1
        else:
            out["other"] += 1
        s.close()
    print(json.dumps(out), flush=True)
    return 0


def silent(url: str, sources: list[str], count: int) -> int:
    """Links upgraded to the secure subprotocols (`ordersync.ik.v1` and `ordersync.pair.v1` in
    turn) that never send a handshake message: every other one answers the master's pings with
    pongs (a peer that answers only pings), the rest send nothing at all. Prints `upgraded` once
    they are open, then each link's close (code, reason, seconds from its 101 to the close, pongs)."""
    links = []
    for i in range(count):
        s, what = upgrade(url, sources[i % len(sources)], KNOWN if i % 2 == 0 else PAIRING)
        links.append((s, what, time.monotonic(), i % 4 >= 2))
    print(json.dumps({"upgraded": sum(1 for s, *_ in links if s is not None),
                      "outcomes": sorted({w for _, w, *_ in links})}), flush=True)
    results: list[dict] = [{} for _ in links]

    def wait_close(i: int, s: Link, upgraded: float, pongs: bool) -> None:
        out = {"subprotocol": KNOWN if i % 2 == 0 else PAIRING, "answers_pings": pongs, "pongs": 0,
               "code": None, "reason": "EOF"}
        try:
            while True:
                got = read_frame(s, timeout=30)
                if got is None:
                    break
                opcode, payload = got
                if opcode == 0x9 and pongs:
                    s.sendall(frame(payload, opcode=0xA))
                    out["pongs"] += 1
                elif opcode == 0x8:
                    out["code"] = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                    out["reason"] = payload[2:].decode(errors="replace")
                    break
                elif opcode not in (0x9, 0xA):
                    out["reason"] = f"unexpected opcode {opcode}"
                    break
        except OSError as error:
            out["reason"] = f"error {error}"
        out["seconds"] = time.monotonic() - upgraded
        results[i] = out
        s.close()

    threads = [threading.Thread(target=wait_close, args=(i, s, upgraded, pongs))
               for i, (s, _, upgraded, pongs) in enumerate(links) if s is not None]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"links": [r for r in results if r]}), flush=True)
    return 0


def main() -> int:
    mode, url, sources = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    if mode == "hold":
        return hold(url, sources, int(sys.argv[4]))
    if mode == "heads":
        return heads(url, sources, int(sys.argv[4]))
    if mode == "ikflood":
        return ikflood(url, sources, float(sys.argv[4]), bytes.fromhex(sys.argv[5]))
    if mode == "abandon":
        return abandon(url, sources, int(sys.argv[4]))
    if mode == "silent":
        return silent(url, sources, int(sys.argv[4]))
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main())
