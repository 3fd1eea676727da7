"""The StorePOS protocol end to end, against real `ordersync` processes on a simulated LAN.

A StorePOS-style terminal (Python `websockets`, no subprotocol, no extensions; see
`scen_proto_ws.py`) runs on h2 and talks to `ordersync master` on h1: snapshot, Create, the
broadcasts of other terminals, bad input, WebSocket limits, shutdown. The command line, the
local API on the Unix socket and the idle CPU use are checked against the same processes.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
import uuid as uuidlib

import pytest

from lan_support import require
from lanharness import HERE, PYTHON
from ordersync_lab import OrderSyncNode, ordersync_binary, wait_converged

DRIVER = os.path.join(HERE, "scen_proto_ws.py")
STOREPOS_CREATED = "2016-01-12T21:35:16+0800"
SQL_NAME = "Robert'); DROP TABLE orders;--"


def new_uuid() -> str:
    return str(uuidlib.uuid4()).upper()


def require_websockets() -> None:
    ok = subprocess.run([PYTHON, "-c", "import websockets.asyncio.client"], capture_output=True).returncode == 0
    require(ok, f"python `websockets` not importable by {PYTHON} (set ORDERSYNC_PYTHON)")


def master_port(master: OrderSyncNode) -> int:
    return int(master.wait_event("node.started")["port"])


def ws_url(master: OrderSyncNode) -> str:
    return f"ws://{master.host.address}:{master_port(master)}/"


def storepos_order(uuid: str, customer: str, **extra) -> dict:
    """An order exactly as the StorePOS seed example writes it."""
    order = {"uuid": uuid, "customerName": customer, "created": STOREPOS_CREATED,
             "shippingMethod": "DHL", "tableSize": -1}
    order.update(extra)
    return order


def create_message(*orders: dict) -> str:
    return json.dumps({"operation": 0, "orders": list(orders)})


# The terminal driver ------------------------------------------------------------------------


class Terminal:
    """`scen_proto_ws.py` running on a host: any number of WebSocket connections and raw TCP
    probes, each reporting events that the test waits for (bounded)."""

    def __init__(self, host):
        self.process = host.popen([PYTHON, DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.queues: dict[str, queue.Queue] = {}
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        ready = self.queue("").get(timeout=20)
        assert ready["ev"] == "ready", ready

    def queue(self, cid: str) -> queue.Queue:
        with self.lock:
            return self.queues.setdefault(cid, queue.Queue())

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.queue(event.get("id", "")).put(event)
        self.queue("").put({"ev": "driver_exited"})

    def command(self, **command) -> None:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def next_event(self, cid: str, timeout: float = 10) -> dict:
        try:
            return self.queue(cid).get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no event on connection {cid!r} within {timeout}s") from None

    def connect(self, cid: str, url: str) -> "Connection":
        self.command(cmd="connect", id=cid, url=url)
        event = self.next_event(cid, timeout=15)
        assert event["ev"] == "connected", event
        assert event["subprotocol"] is None and event["extensions"] == []
        return Connection(self, cid)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.command(cmd="quit")
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


class Connection:
    """One WebSocket connection of a Terminal."""

    def __init__(self, terminal: Terminal, cid: str):
        self.terminal = terminal
        self.id = cid

    def send(self, text: str) -> None:
        self.terminal.command(cmd="send", id=self.id, text=text)

    def send_json(self, value) -> None:
        self.send(json.dumps(value))

    def event(self, timeout: float = 10) -> dict:
        """The next message or close event (send confirmations are skipped)."""
        while True:
            event = self.terminal.next_event(self.id, timeout)
            if event["ev"] not in ("sent",):
                return event

    def recv(self, timeout: float = 10) -> dict:
        """The next message, parsed; fails on a close. The empty Removes that keep two messages
        about one order apart on a StorePOS app's queue (Docs/PROTOCOL.md 4.2.1) are skipped."""
        while True:
            event = self.event(timeout)
            assert event["ev"] == "message", f"expected a message on {self.id}, got {event}"
            message = json.loads(event["text"])
            if message != {"operation": 2, "orders": []}:
                return message

    def closed(self, timeout: float = 10) -> dict:
        """Waits for the close and returns it; fails when a message comes first."""
        event = self.event(timeout)
        assert event["ev"] == "closed", f"expected the connection {self.id} to close, got {event}"
        return event

    def snapshot(self) -> list[dict]:
        """Reads the connect sequence the master sends a StorePOS terminal right after the
        handshake (Docs/PROTOCOL.md 4.2.1): a Remove of one uuid per message for every order it
        holds or removed, then (when there is an order) 256 empty Removes, the Creates of every
        order and 256 empty Removes again; every message carries `snapshot`, the last one has
        part == parts. Returns the orders of the Creates; every Remove names one uuid, and every
        order created was removed first."""
        removed, orders, fences = [], [], [0, 0]
        while True:
            message = self.recv()
            assert "snapshot" in message and message["operation"] in (0, 2), message
            if message["operation"] == 2 and message["orders"] == []:
                fences[1 if orders else 0] += 1
            elif message["operation"] == 2:
                assert not orders and fences == [0, 0] and len(message["orders"]) == 1, message
                removed.append(message["orders"][0]["uuid"])
            else:
                assert fences[1] == 0, message
                orders += message["orders"]
            if message["snapshot"]["part"] == message["snapshot"]["parts"]:
                break
        assert {o["uuid"] for o in orders} <= set(removed), (removed, orders)
        assert fences == ([256, 256] if orders else [0, 0]), fences
        return orders

    def no_message(self, timeout: float = 1.0) -> None:
        """Asserts nothing arrives within `timeout` (a StorePOS terminal gets no echo)."""
        try:
            event = self.event(timeout)
        except AssertionError:
            return
        raise AssertionError(f"expected no message on {self.id}, got {event}")


@pytest.fixture
def terminals():
    """Factory: ``terminals(host)`` starts a Terminal there; all are stopped after the test."""
    require_websockets()
    started = []

    def start(host) -> Terminal:
        terminal = Terminal(host)
        started.append(terminal)
        return terminal

    try:
        yield start
    finally:
        for terminal in started:
            terminal.close()


def broadcast_uuids(message: dict) -> list[str]:
    assert "type" not in message, f"expected a broadcast, got {message}"
    return [o["uuid"] for o in message["orders"]]


def show(node: OrderSyncNode, uuid: str) -> dict | None:
    """The order as the node's `order show --json` prints it, or None when it exits 66 (not
    found)."""
    result = node.cli("order", "show", uuid, "--json", check=False)
    if result.returncode == 66:
        return None
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# 1. A StorePOS terminal -----------------------------------------------------------------------


def test_storepos_client_gets_snapshot_creates_and_receives_other_terminals_orders(lan2, terminals):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front", insecure_storepos=True)
    url = ws_url(master)
    existing = master.create("Ann", table="T1", created="2016-01-10T09:00:00+0100")

    terminal = terminals(h2)
    client = terminal.connect("pos", url)
    snapshot = client.snapshot()
    assert [o["uuid"] for o in snapshot] == [existing["uuid"]]
    assert snapshot[0]["customerName"] == "Ann"
    assert snapshot[0]["created"] == "2016-01-10T09:00:00+0100"
    [peer] = master.status()["peers"]
    assert peer["protocol"] == "storepos" and peer["address"].startswith(h2.address + ":"), peer
    # A second StorePOS terminal sees what the first sends (the sender gets no echo, as with
    # StorePOS's own master: its next message below is another terminal's order).
    watch = terminal.connect("watch", url)
    assert [o["uuid"] for o in watch.snapshot()] == [existing["uuid"]]

    # The StorePOS seed example: one Create with two orders.
    kevin, lisa = storepos_order(new_uuid(), "Kevin"), storepos_order(new_uuid(), "Lisa")
    client.send(create_message(kevin, lisa))
    broadcast = watch.recv()
    assert broadcast["operation"] == 0
    assert broadcast_uuids(broadcast) == [kevin["uuid"], lisa["uuid"]]
    for sent, got in zip((kevin, lisa), broadcast["orders"]):
        for field in ("customerName", "created", "shippingMethod", "tableSize"):
            assert got[field] == sent[field], (field, got)
        assert got["version"] == 1
    assert isinstance(broadcast["seq"], int)

    # Another terminal: an OrderSync slave on h2, and the master's own CLI.
    slave = OrderSyncNode.slave(h2, store="shop1", master_url=url)
    slave.wait_live()
    from_slave = slave.create("Mona", shipping="Pickup", table_size=3)
    message = client.recv()
    assert message["operation"] == 0 and broadcast_uuids(message) == [from_slave["uuid"]]
    assert message["orders"][0]["customerName"] == "Mona"
    assert message["orders"][0]["tableSize"] == 3
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", message["orders"][0]["created"])
    from_master = master.create("Otto")
    message = client.recv()
    assert broadcast_uuids(message) == [from_master["uuid"]]
    assert message["seq"] == broadcast["seq"] + 2

    for sent in (kevin, lisa):
        stored = show(master, sent["uuid"])
        assert stored is not None, f"master did not store {sent['uuid']}"
        assert {k: stored.get(k) for k in sent} == sent
    assert show(master, from_slave["uuid"])["customerName"] == "Mona"
    wait_converged([master, slave], expect=5)


# 2. Bad input ---------------------------------------------------------------------------------


class BadInputBench:
    """A master, a sending terminal A and an observing terminal B on h2."""

    def __init__(self, master: OrderSyncNode, a: Connection, b: Connection):
        self.master, self.a, self.b = master, a, b

    def rejected_events(self) -> list[dict]:
        return self.master.events("message.rejected")

    def sentinel(self) -> str:
        """A valid Create from A; B must receive its broadcast as its next message (A, a StorePOS
        terminal, gets no echo: its next message is checked by the next step)."""
        uuid = new_uuid()
        self.a.send(create_message(storepos_order(uuid, "Sentinel")))
        return uuid

    def expect_only_sentinel(self, uuid: str) -> None:
        for conn in (self.b,):
            message = conn.recv()
            assert broadcast_uuids(message) == [uuid], f"{conn.id} received {message} before the sentinel"

    def reject(self, text: str, *expected: tuple) -> list[dict]:
        """Sends `text` from A; A must get one error per (code, uuid, word) in `expected`, B
        nothing, the master one `message.rejected` notice each (a client's mistake, not a fault
        of the master); the link stays usable."""
        before = len(self.rejected_events())
        self.a.send(text)
        errors = []
        for code, uuid, word in expected:
            error = self.a.recv()
            assert error.get("type") == "error", f"expected an error for {text!r}, got {error}"
            assert error["code"] == code, (text, error)
            assert word.lower() in error["message"].lower(), (word, error)
            if uuid is not None:
                assert error.get("uuid") == uuid, error
            errors.append(error)
        self.expect_only_sentinel(self.sentinel())
        self.master.wait_event("message.rejected", count=before + len(expected), timeout=5)
        events = self.rejected_events()[before:]
        assert [e["code"] for e in events] == [code for code, _, _ in expected]
        for event, (_, uuid, _) in zip(events, expected):
            assert event["level"] == "notice" and event.get("reason")
            if uuid is not None:
                assert event.get("order.uuid") == uuid, event
        return errors

    def stored(self, uuid: str) -> dict | None:
        return show(self.master, uuid)


def expect_taken_off(conn: Connection, uuid: str) -> None:
    """A StorePOS sender's Create refused for what it holds is taken off its screen: its next
    message is a Remove of that uuid alone (after the empty Removes that space it from an
    earlier message about the order; Docs/PROTOCOL.md 4.4.1, 4.2.1)."""
    message = conn.recv()
    while message.get("operation") == 2 and message.get("orders") == []:
        message = conn.recv()
    assert (message.get("operation"), broadcast_uuids(message)) == (2, [uuid]), message


def test_bad_input_is_rejected_per_order_and_the_link_stays_open(lan2, terminals):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    url = ws_url(master)
    terminal = terminals(h2)
    a, b = terminal.connect("a", url), terminal.connect("b", url)
    assert a.snapshot() == [] and b.snapshot() == []
    bench = BadInputBench(master, a, b)

    existing = storepos_order(new_uuid(), "Kevin", tableName="T4")
    a.send(create_message(existing))
    bench.expect_only_sentinel(existing["uuid"])

    bench.reject('{"operation":0,"orders":[{"uuid":', ("malformed_json", None, "json"))
    bench.reject('{"operation":7,"orders":[]}', ("unknown_operation", None, "7"))
    u = new_uuid()
    bench.reject(json.dumps({"operation": "0", "orders": [storepos_order(u, "Str")]}),
                 ("unknown_operation", None, "operation"))
    bench.reject(json.dumps({"operation": 0, "orders": storepos_order(u, "Obj")}), ("invalid_message", None, "orders"))
    bench.reject(json.dumps({"operation": 0, "orders": [{"customerName": "No uuid", "created": STOREPOS_CREATED}]}),
                 ("invalid_uuid", None, "uuid"))
    [error] = bench.reject(create_message(storepos_order("not-a-uuid", "Bad uuid")), ("invalid_uuid", None, "uuid"))
    assert error.get("index") == 0
    bench.reject(create_message(storepos_order(u, "Four", tableSize="four")), ("invalid_field", u, "tableSize"))
    expect_taken_off(a, u)
    bench.reject(json.dumps({"operation": 0, "orders": [{"uuid": u, "customerName": 5}]}),
                 ("invalid_field", u, "customerName"))
    expect_taken_off(a, u)
    assert bench.stored(u) is None
    bench.reject(json.dumps({"operation": 1, "orders": [{"uuid": u, "tableSize": 2}]}), ("not_found", u, "update"))
    bench.reject(json.dumps({"operation": 2, "orders": [{"uuid": u}]}), ("not_found", u, "remove"))
    assert bench.stored(u) is None

    # A Create of an existing uuid: different content is an error, identical is harmless.
    bench.reject(create_message(dict(existing, customerName="Mallory")), ("already_exists", existing["uuid"], "exists"))
    assert bench.stored(existing["uuid"])["customerName"] == "Kevin"
    # A StorePOS sender applied its Create before sending it: the master's copy puts it right.
    put_right = a.recv()
    assert (put_right["operation"], put_right["orders"][0]["customerName"]) == (1, "Kevin"), put_right
    before = len(bench.rejected_events())
    a.send(create_message(existing))
    bench.expect_only_sentinel(bench.sentinel())
    assert len(bench.rejected_events()) == before
    assert bench.stored(existing["uuid"])["version"] == 1

    # One good and one bad order in one message: the good one is applied and broadcast alone.
    good, bad = new_uuid(), new_uuid()
    before = len(bench.rejected_events())
    a.send(create_message(storepos_order(good, "Good"), storepos_order(bad, "Bad", tableSize="four")))
    # The sender hears of the refused order (and, a StorePOS terminal, gets no echo of the
    # good one); the other terminal gets the broadcast of the good one alone.
    error = a.recv()
    assert (error["type"], error["code"], error["uuid"], error["index"]) == ("error", "invalid_field", bad, 1)
    expect_taken_off(a, bad)
    message = b.recv()
    assert broadcast_uuids(message) == [good], message
    bench.expect_only_sentinel(bench.sentinel())
    master.wait_event("message.rejected", count=before + 1, timeout=5)
    assert bench.stored(good)["customerName"] == "Good"
    assert bench.stored(bad) is None

    # Text that looks like SQL is data.
    sql = new_uuid()
    a.send(create_message(storepos_order(sql, SQL_NAME)))
    assert b.recv()["orders"][0]["customerName"] == SQL_NAME
    assert bench.stored(sql)["customerName"] == SQL_NAME
    listed = json.loads(master.cli("order", "list", "--json", "--per", "1000").stdout)
    assert SQL_NAME in [o["customerName"] for o in listed["orders"]]
    assert master.alive()


# 3. Update, Remove, RFC 3339 ------------------------------------------------------------------


def test_update_keeps_other_fields_remove_needs_only_uuid_and_rfc3339_created(lan2, terminals):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    terminal = terminals(h2)
    client = terminal.connect("pos", ws_url(master))
    client.snapshot()
    # What `client` sends is seen on `watch` (a StorePOS sender gets no echo).
    watch = terminal.connect("watch", ws_url(master))
    watch.snapshot()

    u, v = new_uuid(), new_uuid()
    client.send(create_message(
        {"uuid": u, "customerName": "Kevin", "created": "2016-01-12T13:35:16Z", "shippingMethod": "DHL",
         "tableName": "T4", "tableSize": 2, "allergens": {"nuts": True}},
        {"uuid": v, "customerName": "Lisa", "created": "2016-01-12T21:35:16.250+08:00"}))
    created = watch.recv()["orders"]
    assert [o["created"] for o in created] == ["2016-01-12T13:35:16+0000", STOREPOS_CREATED]
    first = created[0]
    assert first["version"] == 1 and first["allergens"] == {"nuts": True}

    client.send_json({"operation": 1, "orders": [{"uuid": u, "tableSize": 6}]})
    updated = watch.recv()
    assert updated["operation"] == 1
    [order] = updated["orders"]
    assert order == dict(first, tableSize=6, version=2)
    assert show(master, u) == order

    # UUIDs compare case-insensitively.
    client.send_json({"operation": 1, "orders": [{"uuid": u.lower(), "customerName": "Kevin B."}]})
    [order] = watch.recv()["orders"]
    assert order == dict(first, tableSize=6, customerName="Kevin B.", version=3)

    client.send_json({"operation": 2, "orders": [{"uuid": u}]})
    removed = watch.recv()
    assert removed["operation"] == 2 and broadcast_uuids(removed) == [u]
    assert show(master, u) is None
    assert show(master, v)["created"] == STOREPOS_CREATED


# 4. WebSocket limits and the handshake deadline -----------------------------------------------


def test_binary_and_oversized_messages_close_the_link_and_silent_sockets_are_dropped(lan2, terminals):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    url, port = ws_url(master), master_port(master)
    terminal = terminals(h2)

    # Starts the 5 s handshake clock first; the other checks run meanwhile.
    terminal.command(cmd="tcp_idle", id="idle", host=h1.address, port=port)
    assert terminal.next_event("idle")["ev"] == "tcp_connected"

    binary = terminal.connect("binary", url)
    binary.snapshot()
    terminal.command(cmd="send_binary", id="binary", hex="7b7d")
    closed = binary.closed()
    assert (closed["code"], closed["by"]) == (1003, "peer"), closed

    big = terminal.connect("big", url)
    big.snapshot()
    terminal.command(cmd="send_big", id="big", bytes=2 * 1024 * 1024)
    closed = big.closed()
    assert (closed["code"], closed["by"]) == (1009, "peer"), closed
    master.wait_event("peer.disconnected", where=lambda e: e.get("ws.close_code") == 1009, timeout=5)

    after = terminal.connect("after", url)
    after.snapshot()
    watch = terminal.connect("watch", url)
    watch.snapshot()
    u = new_uuid()
    after.send(create_message(storepos_order(u, "After")))
    assert broadcast_uuids(watch.recv()) == [u]
    terminal.command(cmd="ping", id="after")
    assert after.event()["ev"] == "pong"
    # One message in three frames (a text frame and two continuations).
    text = create_message(storepos_order(new_uuid(), "Fragmented"))
    terminal.command(cmd="send_fragments", id="after", parts=[text[:10], text[10:30], text[30:]])
    assert watch.recv()["orders"][0]["customerName"] == "Fragmented"

    terminal.command(cmd="http", id="plain", host=h1.address, port=port,
                     request=f"GET / HTTP/1.1\r\nHost: {h1.address}\r\n\r\n")
    answer = terminal.next_event("plain")
    status_line = answer["text"].split("\r\n", 1)[0]
    assert re.fullmatch(r"HTTP/1\.1 4\d\d .*", status_line), answer
    assert answer["elapsed"] < 2 and answer["eof"], answer

    dropped = terminal.next_event("idle", timeout=15)
    assert dropped["ev"] == "tcp_closed", dropped
    assert 4.0 <= dropped["elapsed"] < 8.0, dropped
    master.wait_event("peer.handshake_timeout", timeout=2)
    assert master.alive()


# 5. Shutdown ----------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_closes_clients_with_1001_and_exits_0(lan2, terminals, signum):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    client = terminals(h2).connect("pos", ws_url(master))
    client.snapshot()
    master.wait_event("peer.connected")
    # SIGHUP is logged and ignored (the node, not its role, answers the signals).
    master.process.send_signal(signal.SIGHUP)
    assert master.wait_event("signal.ignored")["signal"] == "SIGHUP"
    assert master.process.poll() is None

    master.process.send_signal(signum)
    closed = client.closed()
    assert (closed["code"], closed["by"]) == (1001, "peer"), closed
    assert master.stop(timeout=10) == 0
    [stopping] = master.events("node.stopping")
    assert stopping["signal"] == signal.Signals(signum).name
    assert len(master.events("node.stopped")) == 1
    names = [e["event"] for e in master.events()]
    assert names.index("node.stopping") < names.index("node.stopped")


# 6. The command line --------------------------------------------------------------------------


def test_cli_lists_pages_prints_json_and_works_read_only_without_a_daemon(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    slave = OrderSyncNode.slave(h2, store="shop1", master_url=ws_url(master))
    slave.wait_live()

    status = master.status()
    assert status["role"] == "master"
    [peer] = status["peers"]
    assert peer["address"].startswith(h2.address + ":") and peer["protocol"] == "ordersync", peer

    # Five orders, created out of order; two share `created` and sort by uuid.
    same = "2016-01-12T21:35:16+0800"
    plan = [("Eve", "E0000000-0000-4000-8000-000000000005", "2016-01-13T08:00:00+0800"),
            ("Bea", "B0000000-0000-4000-8000-000000000002", same),
            ("Ann", "A0000000-0000-4000-8000-000000000001", "2016-01-12T13:00:00Z"),
            ("Dan", "D0000000-0000-4000-8000-000000000004", "2016-01-12T14:00:00Z"),
            ("Cid", "C0000000-0000-4000-8000-000000000003", same)]
    for name, uuid, created in plan:
        result = master.cli("order", "create", "--customer", name, "--uuid", uuid, "--created", created,
                            "--shipping", "DHL", "--json")
        lines = result.stdout.strip().splitlines()
        assert len(lines) == 1
        order = json.loads(lines[0])
        assert (order["uuid"], order["customerName"], order["shippingMethod"]) == (uuid, name, "DHL")
    expected = ["Ann", "Bea", "Cid", "Dan", "Eve"]

    def page(node, number, per):
        data = json.loads(node.cli("order", "list", "--json", "--page", str(number), "--per", str(per)).stdout)
        assert set(data) == {"page", "per", "total", "orders"}, data
        assert (data["page"], data["per"], data["total"]) == (number, per, 5)
        return [o["customerName"] for o in data["orders"]]

    assert page(master, 1, 2) == expected[:2]
    assert page(master, 2, 2) == expected[2:4]
    assert page(master, 3, 2) == expected[4:]
    first = json.loads(master.cli("order", "list", "--json", "--per", "1").stdout)["orders"][0]
    assert {"uuid", "customerName", "created", "shippingMethod"} <= set(first)
    assert first["created"] == "2016-01-12T13:00:00+0000"

    updated = json.loads(master.cli("order", "update", plan[0][1], "--table-size", "4", "--table", "T9", "--json").stdout)
    assert (updated["tableSize"], updated["tableName"], updated["customerName"], updated["version"]) == (4, "T9", "Eve", 2)
    shown = master.cli("order", "show", plan[0][1], "--json").stdout.strip().splitlines()
    assert len(shown) == 1 and json.loads(shown[0]) == updated
    assert master.cli("order", "show", new_uuid(), check=False).returncode == 66

    env = dict(os.environ, ORDERSYNC_DATA_DIR=master.data_dir)
    by_env = h1.run([ordersync_binary(), "order", "list", "--json"], env=env)
    assert json.loads(by_env.stdout)["total"] == 5
    assert json.loads(h1.run([ordersync_binary(), "status", "--json"], env=env).stdout)["role"] == "master"
    wait_converged([master, slave], expect=5)

    # No daemon: reads still work from the file, writes say how to start one.
    assert slave.stop() == 0 and master.stop() == 0
    for node in (master, slave):
        assert page(node, 1, 2) == expected[:2]
        shown_offline = show(node, plan[0][1])
        # A slave's view adds its sync state (everything was delivered before it stopped).
        assert shown_offline.pop("sync", "synced") == "synced"
        assert shown_offline == updated
        assert show(node, new_uuid()) is None
    for argv in (["order", "create", "--customer", "Nobody"],
                 ["order", "update", plan[1][1], "--customer", "Nobody"],
                 ["order", "remove", plan[1][1]]):
        result = master.cli(*argv, check=False)
        assert result.returncode == 69, (argv, result)
        assert "no ordersync daemon is running" in result.stderr, result.stderr
        assert f"ordersync master --data-dir {master.data_dir}" in result.stderr, result.stderr
    assert page(master, 1, 5) == expected

    # A daemon killed -9 leaves its socket file behind: the same answers.
    master.start()
    master.wait_event("node.started", count=2)  # the log file is appended to
    master.kill()
    assert os.path.exists(os.path.join(master.data_dir, "ordersync.sock"))
    assert page(master, 3, 2) == expected[4:]
    result = master.cli("order", "create", "--customer", "Nobody", check=False)
    assert result.returncode == 69 and "no ordersync daemon is running" in result.stderr, result


# 7. Idle CPU ----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of proc(5); fields[0] is field 3 (state).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_master_and_slave_use_no_cpu(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    slave = OrderSyncNode.slave(h2, store="shop1", master_url=ws_url(master))
    slave.wait_live()
    master.wait_event("snapshot.sent")
    pids = [master.process.pid, slave.process.pid]
    for pid in pids:
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().strip() == "ordersync"
    before = sum(cpu_seconds(pid) for pid in pids)
    time.sleep(5)  # the measurement window, not a synchronisation
    used = sum(cpu_seconds(pid) for pid in pids) - before
    assert master.alive() and slave.alive()
    assert used < 0.05, f"idle master and slave used {used:.3f} s CPU in 5 s"


# 8. The local API over its Unix socket --------------------------------------------------------


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over the node's Unix domain socket."""

    def __init__(self, path: str):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def api(conn: UnixHTTPConnection, method: str, path: str, body: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    assert response.getheader("Content-Type", "").startswith("application/json"), response.getheaders()
    return response.status, json.loads(data)


def test_local_api_operations_and_errors_over_the_unix_socket(lan2, terminals):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front", insecure_storepos=True)
    client = terminals(h2).connect("pos", ws_url(master))
    client.snapshot()
    conn = UnixHTTPConnection(os.path.join(master.data_dir, "ordersync.sock"))

    orders = [storepos_order(new_uuid(), name) for name in ("Kevin", "Lisa", "Mona")]
    status, body = api(conn, "POST", "/v1/operations", json.dumps({"operation": 0, "orders": orders}))
    assert status == 200, body
    assert [o["uuid"] for o in body["applied"]] == [o["uuid"] for o in orders]
    assert body["errors"] == [] and isinstance(body["seq"], int)
    broadcast = client.recv()
    assert broadcast_uuids(broadcast) == [o["uuid"] for o in orders]
    assert "local API" in broadcast.get("origin", "")

    good, bad = new_uuid(), new_uuid()
    status, body = api(conn, "POST", "/v1/operations", json.dumps(
        {"operation": 0, "orders": [orders[0], storepos_order(good, "Good"), storepos_order(bad, "Bad", tableSize="four")]}))
    assert status == 200, body
    assert [o["uuid"] for o in body["applied"]] == [good]
    assert [o["uuid"] for o in body["unchanged"]] == [orders[0]["uuid"]]
    [error] = body["errors"]
    assert (error["code"], error["uuid"], error["index"]) == ("invalid_field", bad, 2)
    assert broadcast_uuids(client.recv()) == [good]

    status, body = api(conn, "GET", "/v1/orders?page=1&per=10")
    assert status == 200 and body["total"] == 4

    for path in ("/v1/nothing", "/nothing"):
        status, body = api(conn, "GET", path)
        assert status == 404 and body["error"]["code"] == "no_route", body
    status, body = api(conn, "POST", "/v1/operations", '{"operation":0,"orders":[')
    assert status == 400 and body["error"]["code"] == "malformed_json", body
    assert body["error"]["message"]
    status, body = api(conn, "GET", f"/v1/orders/{bad}")
    assert status == 404 and body["error"]["code"] == "not_found", body
    conn.close()

    # The terminal saw nothing of the rejected requests: its next message is the next order.
    last = master.create("Last")
    assert broadcast_uuids(client.recv()) == [last["uuid"]]


def raw_api_request(path: str, data: bytes) -> tuple[int, dict]:
    """Writes `data` to the API socket (the daemon may answer and close before reading it all)
    and parses the one answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_local_api_body_over_1_mib_is_413_too_large(lan2):
    master = OrderSyncNode.master(lan2.hosts[0], store="shop1", insecure_storepos=True)
    master.wait_event("node.started")
    body = json.dumps({"operation": 0, "orders": [], "pad": "x" * (1024 * 1024 + 1)}).encode()
    request = (b"POST /v1/operations HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body
    status, answer = raw_api_request(os.path.join(master.data_dir, "ordersync.sock"), request)
    assert status == 413, answer
    assert answer["error"]["code"] == "too_large", answer
