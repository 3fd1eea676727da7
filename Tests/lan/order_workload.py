"""Sends a mix of operations to a node's local API (`POST /v1/operations` on its Unix socket),
each with its own operation id, and prints one JSON line per operation: `opId`, `operation`
(0 Create, 1 Update, 2 Remove), `order` (the body sent), `status`, `errors`, `acked` (200/201/202
with no error), `attempts` and `at` (seconds since the start).

The mix, in rounds of four: create an order (every other one carrying an unknown member
`x-extra`), update the newest order, update an older one, and every third round remove the
oldest order (else update the newest again). An update appends to the order's note and sets
the unknown member `x-updates` to the order's update count, so an update applied twice out of
turn leaves a wrong note and version. A request that gets no answer (or 503) is sent again with
the same operation id; a 409 to such a repeat means the first one is waiting in the outbox.

Usage: order_workload.py SOCKET PREFIX (--seconds S | --count N)"""

import argparse
import http.client
import json
import socket
import time
import uuid as uuidlib

CREATE, UPDATE, REMOVE = 0, 1, 2


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.unix_path)


class Workload:
    """Chooses the next operation from the orders acknowledged so far."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.step = 0
        self.live: list[str] = []      # uuids of created, not removed orders, oldest first
        self.notes: dict[str, str] = {}
        self.updates: dict[str, int] = {}

    def next(self) -> tuple[int, dict]:
        round_, phase = divmod(self.step, 4)
        self.step += 1
        if phase == 0 or not self.live:
            u = str(uuidlib.uuid4()).upper()
            body = {"uuid": u, "customerName": f"{self.prefix}-{round_}", "note": f"{self.prefix}:0"}
            if round_ % 2 == 0:
                body["x-extra"] = {"writer": self.prefix, "round": round_, "tags": ["lan", "mixed"]}
            return CREATE, body
        if phase == 3 and round_ % 3 == 2 and len(self.live) > 1:
            return REMOVE, {"uuid": self.live[0]}
        target = self.live[len(self.live) // 2] if phase == 2 else self.live[-1]
        count = self.updates[target] + 1
        return UPDATE, {"uuid": target, "note": f"{self.notes[target]}|{count}", "x-updates": count}

    def acknowledged(self, operation: int, body: dict) -> None:
        u = body["uuid"]
        if operation == CREATE:
            self.live.append(u)
            self.notes[u], self.updates[u] = body["note"], 0
        elif operation == UPDATE:
            self.notes[u], self.updates[u] = body["note"], body["x-updates"]
        else:
            self.live.remove(u)


def send(path: str, conn, operation: int, body: dict, op_id: str, give_up: float):
    """Sends one operation until it gets an answer; returns (conn, status, answer, attempts)."""
    message = json.dumps({"operation": operation, "orders": [body], "opId": op_id})
    attempts = 0
    while True:
        attempts += 1
        try:
            if conn is None:
                conn = UnixHTTPConnection(path)
            conn.request("POST", "/v1/operations", body=message, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            status, answer = response.status, json.loads(response.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError):
            conn, status, answer = None, None, {}
        if status == 409 and attempts > 1:
            return conn, 202, answer, attempts  # the first attempt is waiting in the outbox
        if status not in (None, 503) or time.time() > give_up:
            return conn, status, answer, attempts
        time.sleep(0.05)  # no answer, or the node is starting: do not hammer it


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("prefix")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--seconds", type=float)
    group.add_argument("--count", type=int)
    args = parser.parse_args()
    started = time.time()
    workload = Workload(args.prefix)
    conn, sent = None, 0
    while (args.count is None or sent < args.count) and (args.seconds is None or time.time() < started + args.seconds):
        operation, body = workload.next()
        op_id = f"{args.prefix}-{sent}-{uuidlib.uuid4()}"
        conn, status, answer, attempts = send(args.socket, conn, operation, body, op_id, give_up=time.time() + 60)
        errors = answer.get("errors", []) if isinstance(answer, dict) else []
        acked = status in (200, 201, 202) and not errors
        if acked:
            workload.acknowledged(operation, body)
        print(json.dumps({"opId": op_id, "operation": operation, "order": body, "status": status, "errors": errors,
                          "acked": acked, "attempts": attempts, "at": round(time.time() - started, 3)}), flush=True)
        sent += 1


if __name__ == "__main__":
    main()
