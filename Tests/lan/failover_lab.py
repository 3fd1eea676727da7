"""Pieces of the failover scenarios (`test_failover.py`): a store of one master and paired
slaves, `ordersync promote` on a slave, the time to the first write the new master accepts and
to every slave following it, a writer on a node's local API that carries its unanswered
operation over to whichever node the test names next, and the checks on what the new master
journalled (Docs/PROTOCOL.md section 7, Docs/OPERATIONS.md "When the master terminal dies").

A slave follows a master when its status shows the master's `term`, names that master
(`following`, by node id, and `masterId`, the master it trusts) and its link is live.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import subprocess
import threading
import time
import uuid as uuidlib

from lanharness import LanError, wait_until
from order_workload import UnixHTTPConnection, Workload
from ordersync_lab import OrderSyncNode, journal_entries, ordersync_binary, read_sqlite
from sync_checks import check_applied_once, check_final_orders, expected_orders

#: Longest time from `ordersync promote` to the first write the new master accepts (issue 26).
PROMOTE_BOUND = 5.0
#: Longest time from `ordersync promote` to every other slave following the new master.
FOLLOW_BOUND = 10.0
#: How long a promotion may take at most before its answer (design: a 10 s deadline for votes).
PROMOTE_TIMEOUT = 40.0


def seeded(label: str) -> random.Random:
    """A random source for one scenario: from $ORDERSYNC_FAILOVER_SEED when set, else from the
    clock; the seed is printed so that a failing run can be repeated."""
    seed = int(os.environ.get("ORDERSYNC_FAILOVER_SEED") or time.time_ns() % 1_000_000)
    print(f"\n{label}: seed {seed} (ORDERSYNC_FAILOVER_SEED={seed} repeats it)")
    return random.Random(seed)


def figure(**values) -> None:
    """Prints one `FIGURE name=value ...` line, as the other LAN tests do (`pytest -s`)."""
    print("\nFIGURE " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()),
          flush=True)


def store(lan, name: str, port: int, slaves: int = 3, extra: list[str] | None = None
          ) -> tuple[OrderSyncNode, list[OrderSyncNode]]:
    """A master on the LAN's first host (named after it) and `slaves` slaves on the next hosts,
    each paired under its host's name, all live."""
    first = lan.hosts[0]
    master = OrderSyncNode.master(first, store=name, name=first.name, port=port, extra=extra)
    followers = [OrderSyncNode.slave(h, store=name, pair_name=h.name) for h in lan.hosts[1:1 + slaves]]
    for slave in followers:
        slave.wait_live()
    return master, followers


# The local API, straight on its socket ----------------------------------------------------------


def api(node: OrderSyncNode, method: str, path: str, body: dict | None = None, timeout: float = 30
        ) -> tuple[int | None, dict]:
    """One request to a node's local API; (None, {}) when the socket gives no answer."""
    conn = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    conn.timeout = timeout
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    except (OSError, http.client.HTTPException, ValueError):
        return None, {}
    finally:
        conn.close()


def status_of(node: OrderSyncNode) -> dict | None:
    """The node's `/v1/status`, or None while its API does not answer."""
    code, answer = api(node, "GET", "/v1/status", timeout=5)
    return answer if code == 200 else None


def link_view(status: dict | None) -> dict | None:
    """What a status says about whom a node follows, for a failure message."""
    if status is None:
        return None
    return {k: status.get(k) for k in ("role", "term", "masterId", "following")} | \
        {"link": (status.get("master") or {}).get("state")}


def follows(status: dict | None, master_id: str, term: int) -> bool:
    """Whether a status is a slave's live on the master `master_id` in `term`."""
    return (status is not None and status.get("role") == "slave" and status.get("term") == term
            and (status.get("following") or {}).get("id") == master_id and status.get("masterId") == master_id
            and (status.get("master") or {}).get("state") == "live")


# Promotion ---------------------------------------------------------------------------------------


class Promotion:
    """`ordersync promote --data-dir DIR --json [--force]` on a slave's host, started at once;
    `result()` waits for it: (exit code, the JSON it printed: the report, or `{"error":…}`)."""

    def __init__(self, node: OrderSyncNode, force: bool = False):
        self.node = node
        self.argv = [ordersync_binary(), "promote", "--data-dir", node.data_dir, "--json"] + (["--force"] if force else [])
        self.started = time.monotonic()
        self.process = node.host.popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.took: float | None = None

    def result(self, timeout: float = PROMOTE_TIMEOUT) -> tuple[int, dict]:
        out, err = self.process.communicate(timeout=timeout)
        self.took = time.monotonic() - self.started
        for text in (out, err):
            try:
                return self.process.returncode, json.loads(text)
            except ValueError:
                continue
        raise LanError(f"{' '.join(self.argv)} exited {self.process.returncode} without JSON: {out!r} {err!r}")

    def promoted(self, timeout: float = PROMOTE_TIMEOUT) -> dict:
        """The report of a promotion that must succeed."""
        code, answer = self.result(timeout)
        assert code == 0 and answer.get("promoted") is True, f"promote on {self.node.host.name} exited {code}: {answer}"
        return answer

    def refused(self, timeout: float = PROMOTE_TIMEOUT) -> dict:
        """The `error` object of a promotion that must be refused."""
        code, answer = self.result(timeout)
        assert code != 0 and "error" in answer, f"promote on {self.node.host.name} was not refused ({code}): {answer}"
        return answer["error"]


def first_accepted_write(promotion: Promotion, tag: str, timeout: float = 30) -> tuple[float, dict]:
    """Waits until the promoted node is master and accepts a Create on its local API (the same
    operation id sent again after a refusal or no answer); returns the seconds since `promote`
    started and the operation, acknowledged, in `order_workload`'s shape. Fails at once when
    `promote` exits with an error."""
    node = promotion.node

    def master():
        if promotion.process.poll() not in (None, 0):
            code, answer = promotion.result()
            raise LanError(f"promote on {node.host.name} exited {code}: {answer}")
        status = status_of(node)
        return status if status is not None and status.get("role") == "master" else None
    wait_until(master, timeout, interval=0.02, what=f"{node.host.name} to be master")
    body = {"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"first write on {tag}", "note": f"{tag}:0"}
    op_id = f"{tag}-first-{uuidlib.uuid4()}"
    state = {}

    def accepted():
        code, answer = api(node, "POST", "/v1/operations", {"operation": 0, "orders": [body], "opId": op_id}, timeout=10)
        state["last"] = (code, answer)
        return code in (200, 201) and not answer.get("errors")
    wait_until(accepted, timeout, interval=0.02, what=f"a write accepted by {node.host.name} (last answer {state})")
    return time.monotonic() - promotion.started, {"opId": op_id, "operation": 0, "order": body, "status": 201,
                                                  "errors": [], "acked": True, "attempts": 1, "node": node.host.name}


def wait_following(slaves: list[OrderSyncNode], master_id: str, term: int, since: float,
                   timeout: float = 30) -> dict[str, float]:
    """Waits until every slave follows `master_id` in `term`; returns each slave's time (seconds
    since `since`, monotonic) as first seen."""
    times: dict[str, float] = {}
    last: dict[str, dict | None] = {}

    def all_follow():
        for slave in slaves:
            if slave.host.name in times:
                continue
            last[slave.host.name] = status = status_of(slave)
            if follows(status, master_id, term):
                times[slave.host.name] = time.monotonic() - since
        return len(times) == len(slaves)
    try:
        wait_until(all_follow, timeout, interval=0.05, what="every slave to follow the new master")
    except LanError:
        seen = {name: link_view(s) for name, s in last.items()}
        raise LanError(f"not every slave follows {master_id} in term {term} within {timeout}s: {seen}") from None
    return times


# A writer on one local API at a time ------------------------------------------------------------


class Writer(threading.Thread):
    """Sends `order_workload`'s mix to the local API of `target` with an operation id each, and
    records each operation as `order_workload.py` prints it. An operation that gets no answer
    (the node was killed, frozen or is switching roles) or `503` is sent again with the same id,
    to whichever node `target` names by then (`retarget`), until `give_up` seconds pass. `stop()`
    ends it after the operation in flight."""

    def __init__(self, target: OrderSyncNode, prefix: str, give_up: float = 60, pause: float = 0.0):
        super().__init__(daemon=True, name=f"writer {prefix}")
        self.target = target
        self.prefix = prefix
        self.give_up = give_up
        self.pause = pause
        self.results: list[dict] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def retarget(self, node: OrderSyncNode) -> None:
        self.target = node

    def stop(self, timeout: float = 90) -> list[dict]:
        """Ends the writer; returns what it sent."""
        self._halt.set()
        self.join(timeout)
        if self.is_alive():
            raise LanError(f"the writer {self.prefix} did not end within {timeout}s")
        if self.error is not None:
            raise self.error
        return self.results

    def run(self) -> None:
        try:
            workload, sent, started = Workload(self.prefix), 0, time.monotonic()
            while not self._halt.is_set():
                operation, body = workload.next()
                op_id = f"{self.prefix}-{sent}-{uuidlib.uuid4()}"
                message = {"operation": operation, "orders": [body], "opId": op_id}
                give_up, attempts = time.monotonic() + self.give_up, 0
                while True:
                    attempts += 1
                    code, answer = api(self.target, "POST", "/v1/operations", message)
                    if code == 409 and attempts > 1:
                        code = 202  # the first attempt waits in a slave's outbox
                    if code not in (None, 503) or time.monotonic() > give_up:
                        break
                    time.sleep(0.05)
                errors = answer.get("errors", []) if isinstance(answer, dict) else []
                acked = code in (200, 201, 202) and not errors
                if acked:
                    workload.acknowledged(operation, body)
                self.results.append({"opId": op_id, "operation": operation, "order": body, "status": code,
                                     "errors": errors, "acked": acked, "attempts": attempts,
                                     "at": round(time.monotonic() - started, 3), "node": self.target.host.name})
                sent += 1
                if self.pause:
                    self._halt.wait(self.pause)
        except BaseException as error:  # noqa: BLE001 - reported by stop()
            self.error = error


# What the new master holds ---------------------------------------------------------------------


def check_nothing_lost(master: OrderSyncNode, results: list[dict], orders: list[dict]) -> list[dict]:
    """Every acknowledged operation of `results` is in the master's journal exactly once (by
    operation id, as the operation and order sent, each order's entries in the order sent) and
    `orders` are what they make; nothing was refused. Returns the acknowledged operations."""
    unanswered = [op for op in results if not op["acked"]]
    assert not unanswered, f"{len(unanswered)} writes were not acknowledged (refused, or never answered): {unanswered[:3]}"
    acked = [op for op in results if op["acked"]]
    sent = [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in acked]
    check_applied_once(journal_entries(master.data_dir), sent)
    check_final_orders(expected_orders(acked), orders)
    return acked


#: K of Docs/PROTOCOL.md 7.16: a term T >= K belongs to member T mod K.
BALLOT_MODULUS = 1024


def member_number(node: OrderSyncNode) -> int:
    """The member number the node's standby copy holds for it (`paired_terminals.number`)."""
    rows = read_sqlite(node.data_dir, f"SELECT number FROM paired_terminals WHERE node_id = '{node.node_id()}'")
    assert rows and rows[0]["number"], f"{node.host.name} has no member number: {rows}"
    return int(rows[0]["number"])


def ballot(node: OrderSyncNode, above: int = 1) -> int:
    """The term `node` bids when the highest term it knows is `above` (Docs/PROTOCOL.md 7.16):
    the smallest term above it that its member number owns."""
    number = member_number(node)
    term = above // BALLOT_MODULUS * BALLOT_MODULUS + number
    return term if term > above else term + BALLOT_MODULUS


def master_ballot(master: OrderSyncNode, above: int = 1) -> int:
    """The term a master bids for itself above `above` (a restored master's new term,
    Docs/PROTOCOL.md 7.17): the smallest above it that its own number (`member.number`) owns."""
    rows = read_sqlite(master.data_dir, "SELECT value FROM metadata WHERE key = 'member.number'")
    assert rows, f"{master.host.name} has taken no member number"
    number = int(rows[0]["value"])
    term = above // BALLOT_MODULUS * BALLOT_MODULUS + number
    return term if term > above else term + BALLOT_MODULUS


def check_terms(master: OrderSyncNode, term: int, last_seq_before: int) -> None:
    """The master's journal: term 1 up to `last_seq_before`, `term` after it, seqs without a gap."""
    rows = [(r["seq"], r["term"]) for r in read_sqlite(master.data_dir, "SELECT seq, term FROM journal ORDER BY seq")]
    seqs = [seq for seq, _ in rows]
    assert seqs and seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"the journal has a gap: {seqs[:3]}…{seqs[-3:]}"
    wrong = [(seq, t) for seq, t in rows if t != (1 if seq <= last_seq_before else term)]
    assert not wrong, f"entries in the wrong term (term {term} starts after seq {last_seq_before}): {wrong[:5]}"


def snapshots_received(slaves: list[OrderSyncNode]) -> dict[str, int]:
    """How many snapshots each slave has applied so far (`snapshot.received` in its log)."""
    return {s.host.name: len(s.events("snapshot.received")) for s in slaves}
