#!/usr/bin/env python3
"""A large local API page while another client is served (Docs/PERFORMANCE.md, "Large local API
pages").

For each `--bin` in turn: a master on loopback (no Avahi), 1,000 orders of about 15 KB written
through its local API, then `--rounds` rounds of: client A asks for all of them in one page
(`GET /v1/orders?page=1&per=1000`, about 15 MB), and while A waits client B sends small requests
one after another on a keep-alive connection (`GET /v1/status` and `GET /v1/orders?page=1&per=1`
in turn). Prints, per binary, A's first byte and whole answer, B's requests sent while A waited for
its first byte (count, p50, p99, max), and the load average before and after.

    python3 Scripts/bench/api_pages.py --bin .build/debug/ordersync --bin /tmp/old/ordersync
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

ORDERS, PER_MESSAGE = 1_000, 50


def connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(300)
    s.connect(path)
    return s


def read_response(s: socket.socket, buffer: bytearray) -> tuple[int, bytes]:
    """One response with a Content-Length; what follows stays in `buffer`."""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            head = buffer[:end].decode("latin-1").lower().split("\r\n")
            length = next((int(h.split(":", 1)[1]) for h in head if h.startswith("content-length:")), 0)
            if len(buffer) >= end + 4 + length:
                body = bytes(buffer[end + 4:end + 4 + length])
                del buffer[:end + 4 + length]
                return int(head[0].split()[1]), body
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed before a whole answer")
        buffer += chunk


def request(path: str, method: str, target: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else b""
    with connect(path) as s:
        s.sendall(f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                  f"Connection: close\r\n\r\n".encode() + data)
        return read_response(s, bytearray())


def big_order(i: int) -> dict:
    return {"uuid": str(uuid.uuid4()).upper(), "customerName": f"bulk {i}", "note": f"{i:05d} " + "n" * 4_000,
            "x-ticket": "t" * 10_700}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def one_round(sock_path: str) -> dict:
    big = connect(sock_path)
    asked = time.monotonic()
    big.sendall(b"GET /v1/orders?page=1&per=1000 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    marks: dict = {}

    def read_big() -> None:
        received = 0
        while True:
            chunk = big.recv(1 << 20)
            if not chunk:
                break
            if received == 0:
                marks["first"] = time.monotonic() - asked
            received += len(chunk)
        marks["done"], marks["bytes"] = time.monotonic() - asked, received

    reader = threading.Thread(target=read_big)
    reader.start()
    small = connect(sock_path)
    buffer, waiting, during = bytearray(), [], []
    n = 0
    while "done" not in marks:
        target = "/v1/status" if n % 2 == 0 else "/v1/orders?page=1&per=1"
        sent, building = time.monotonic(), "first" not in marks
        small.sendall(f"GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        status, _ = read_response(small, buffer)
        took = (time.monotonic() - sent) * 1000
        assert status == 200, status
        (waiting if building else during).append(took)
        n += 1
    reader.join()
    small.close()
    big.close()
    return {"first_byte_s": round(marks["first"], 3), "whole_s": round(marks["done"], 3), "bytes": marks["bytes"],
            "b_sent_before_first_byte": len(waiting),
            "b_p50_ms": round(percentile(waiting, 0.5), 1), "b_p99_ms": round(percentile(waiting, 0.99), 1),
            "b_max_ms": round(max(waiting), 1) if waiting else None,
            "b_answers_while_sent": len(during)}


def run(binary: str, rounds: int) -> dict:
    folder = tempfile.mkdtemp(prefix="api-pages-")
    data = os.path.join(folder, "data")
    sock_path = os.path.join(data, "ordersync.sock")
    env = dict(os.environ, ORDERSYNC_CONFIG="/dev/null", DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
    log = open(os.path.join(folder, "master.log"), "ab")
    master = subprocess.Popen([binary, "master", "--data-dir", data, "--store", "bench", "--port", "0",
                               "--listen", "127.0.0.1", "--log-level", "warning"], stdout=log, stderr=log, env=env)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock_path):
            if master.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the master did not start: see " + os.path.join(folder, "master.log"))
            time.sleep(0.05)
        for k in range(0, ORDERS, PER_MESSAGE):
            status, body = request(sock_path, "POST", "/v1/operations",
                                   {"operation": 0, "orders": [big_order(i) for i in range(k, k + PER_MESSAGE)]})
            assert status == 200, (status, body[:200])
        load_before = os.getloadavg()[0]
        results = [one_round(sock_path) for _ in range(rounds)]
        load_after = os.getloadavg()[0]
    finally:
        master.terminate()
        master.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {"bin": binary, "load_before": round(load_before, 1), "load_after": round(load_after, 1), "rounds": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", action="append", required=True, help="an ordersync binary (repeat to compare)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for binary in args.bin:
        print(json.dumps(run(binary, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
