"""A paired insider for `test_insider_limits.py`: the independent secure peer
(`Tests/support/secure_peer.py`, already paired: its key and the master's are in `--state`) doing
what a compromised till could, and printing one JSON line of what the master answered.

    insider_peer.py flood URL --state S --seconds 10 --orders 60 --note-bytes 15000
        creates ORDERS orders with notes of NOTE_BYTES bytes, then sends Updates of all of them
        (each a new note) as fast as the link takes them for SECONDS, ignoring every hint (with
        --honour: as a slave would, sending a refused one again after its hint);
    insider_peer.py snapshots URL --state S --seconds 10 --loops 6
        LOOPS threads each connect, say hello asking for a snapshot (no epoch), read it up to
        `ready`, disconnect and start again at once, ignoring every hint.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid as uuidlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from secure_peer import LinkError, Refused, SecurePeer  # noqa: E402

PROTO = "ordersync/1"


def connect(url: str, state: dict) -> SecurePeer:
    return SecurePeer.known(url, bytes.fromhex(state["master"]), bytes.fromhex(state["static"]))


def hello(peer: SecurePeer, **extra) -> dict:
    return {"type": "hello", "proto": PROTO, "terminal": peer.node_id, "name": "insider",
            "store": peer.master_payload.get("store"), "lastSeq": 0, **extra}


def kind_of(error: dict) -> str:
    """Which limit a `rate_limited` error names."""
    reason = error.get("reason") or error.get("message") or ""
    if "journal budget" in reason:
        return "journal"
    if "operations per second" in reason:
        return "operations"
    if "snapshot" in reason:
        return "snapshots"
    return "bytes"


def filler(char: str, size: int) -> dict:
    """About `size` bytes of an order's text: its note and unknown members (a text may hold at
    most 4,096 bytes, an order 16 KiB)."""
    members = {"note": char * min(size, 4000)}
    for n in range(max(0, size - 4000) // 4000 + (1 if max(0, size - 4000) % 4000 else 0)):
        members[f"x-fill-{n}"] = char * min(4000, size - 4000 * (n + 1))
    return members


def flood(args, state: dict) -> dict:
    peer = connect(args.url, state)
    peer.send(hello(peer))
    ready = peer.until(lambda m: m.get("type") == "ready", timeout=60)
    orders = [{"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"insider {i}", **filler("c", args.note_bytes)}
              for i in range(args.orders)]
    run = uuidlib.uuid4().hex[:8]
    peer.send({"operation": 0, "opId": f"insider-create-{run}", "orders": orders})
    created = peer.until(lambda m: m.get("type") == "result" and m.get("opId") == f"insider-create-{run}", timeout=60)
    create_errors = [m for m in peer.received if m.get("type") == "error"][:3]
    counts = {"applied": 0, "refused": 0, "answers": 0, "resent": 0}
    kinds: dict[str, int] = {}
    hints: list[int] = []
    reasons: dict[str, str] = {}
    first_refusal: list[float] = []
    done = threading.Event()
    lock = threading.Condition()
    #: With --honour: the first refused Update to send again, and when.
    resume: dict = {"index": None, "at": 0.0}
    started = time.monotonic()

    def read() -> None:
        while True:
            try:
                message = peer.recv(timeout=0.5)
            except TimeoutError:
                if done.is_set():
                    return
                continue
            except (Refused, LinkError, OSError):
                return
            with lock:
                op = str(message.get("opId", ""))
                if message.get("type") == "result" and op.startswith("insider-u"):
                    counts["answers"] += 1
                    counts["applied" if message.get("applied") else "refused"] += 1
                elif message.get("type") == "error" and message.get("code") != "rate_limited":
                    other = counts.setdefault("otherErrors", {})
                    other[message.get("code")] = other.get(message.get("code"), 0) + 1
                    reasons.setdefault(message.get("code"), message.get("message") or "")
                elif message.get("type") == "error" and message.get("code") == "rate_limited":
                    kind = kind_of(message)
                    kinds[kind] = kinds.get(kind, 0) + 1
                    reasons.setdefault(kind, message.get("reason") or message.get("message") or "")
                    hint = message.get("retryAfterMs")
                    if hint is not None:
                        hints.append(hint)
                    if not first_refusal:
                        first_refusal.append(time.monotonic() - started)
                    if args.honour and op.startswith("insider-u"):
                        index = int(op[len("insider-u"):].split("-")[0])
                        if resume["index"] is None or index < resume["index"]:
                            resume["index"] = index
                            resume["at"] = time.monotonic() + (hint or 0) / 1000
                lock.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sent = 0
    index = 0
    bytes_sent = 0
    closed = None
    while time.monotonic() - started < args.seconds:
        with lock:
            if args.honour:
                # As a slave does, one at a time: after a refusal, nothing until the hint, then
                # the refused one again.
                while counts["answers"] < sent and time.monotonic() - started < args.seconds:
                    lock.wait(0.1)
                if resume["index"] is not None:
                    while time.monotonic() < resume["at"] and time.monotonic() - started < args.seconds:
                        lock.wait(0.1)
                    if time.monotonic() - started >= args.seconds:
                        break
                    counts["resent"] += 1
                    index, resume["index"] = resume["index"], None
        fill = filler(chr(ord("a") + index % 26), args.note_bytes)
        body = {"operation": 1, "opId": f"insider-u{index}-{run}", "orders": [{"uuid": o["uuid"], **fill} for o in orders]}
        text = json.dumps(body).encode()
        try:
            peer.send(text)
        except (Refused, LinkError, OSError) as error:
            closed = str(error)
            break
        with lock:
            sent += 1
            index += 1
        bytes_sent += len(text)
    seconds = time.monotonic() - started
    deadline = time.monotonic() + 20
    with lock:
        while counts["answers"] < sent and time.monotonic() < deadline:
            lock.wait(0.1)
    done.set()
    reader.join(5)
    peer.close()
    return {"ready": ready.get("seq"), "created": created.get("applied"), "createErrors": create_errors,
            "sent": sent, "bytesSent": bytes_sent, "seconds": seconds, "kinds": kinds, "reasons": reasons,
            "hintMin": min(hints, default=None), "hintMax": max(hints, default=None),
            "firstRefusal": first_refusal[0] if first_refusal else None, "closed": closed, **counts}


def snapshots(args, state: dict) -> dict:
    totals = {"connections": 0, "snapshots": 0, "refused": 0, "hinted": 0, "failed": 0}
    hints: list[int] = []
    lock = threading.Lock()
    started = time.monotonic()

    def loop() -> None:
        while time.monotonic() - started < args.seconds:
            try:
                peer = connect(args.url, state)
            except (Refused, LinkError, OSError):
                with lock:
                    totals["failed"] += 1
                continue
            outcome, hint = "failed", None
            try:
                peer.send(hello(peer))
                while True:
                    message = peer.recv(timeout=30)
                    if message.get("type") == "ready":
                        outcome = "snapshots"
                        break
                    if message.get("type") == "error" and message.get("code") == "rate_limited":
                        outcome, hint = "refused", message.get("retryAfterMs")
                        break
            except (Refused, LinkError, OSError, TimeoutError):
                pass
            finally:
                peer.close()
            with lock:
                totals["connections"] += 1
                totals[outcome] += 1
                if hint is not None:
                    totals["hinted"] += 1
                    hints.append(hint)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(args.loops)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.seconds + 60)
    return {**totals, "seconds": time.monotonic() - started, "hintMin": min(hints, default=None),
            "hintMax": max(hints, default=None)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["flood", "snapshots"])
    parser.add_argument("url")
    parser.add_argument("--state", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--orders", type=int, default=60)
    parser.add_argument("--note-bytes", type=int, default=15_000)
    parser.add_argument("--loops", type=int, default=6)
    parser.add_argument("--honour", action="store_true",
                        help="flood: send a refused Update again after its hint, as a slave does (else ignore hints)")
    args = parser.parse_args()
    with open(args.state) as f:
        state = json.load(f)
    out = flood(args, state) if args.mode == "flood" else snapshots(args, state)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
