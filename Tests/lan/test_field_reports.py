"""Behaviours found by trying the product as a user would: a second master announcing the same
store, the creation time of orders taken offline, retries through the local API (on a master
and on a slave), a snapshot naming the pending operations it holds (to an independent slave),
StorePOS clients and `opId`, and half-sent local API requests."""

import json
import os
import re
import socket
import stat
import subprocess
import time
from datetime import datetime

from lanharness import PYTHON, SUPPORT, wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary, read_sqlite, wait_converged


def test_a_second_master_of_the_same_store_does_not_take_over_a_synced_terminal(make_lan):
    lan = make_lan(3)
    h1, h2, h3 = lan.hosts
    real = OrderSyncNode.master(h1, store="shop1", name="Counter", port=17700)
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    made = [slave.create(customer=f"c{i}") for i in range(3)]
    impostor = OrderSyncNode.master(h3, store="shop1", name="Totally legit", port=17701)
    impostor.wait_event("service.published")
    # Another key: the slave skips it by the id in its TXT record, and says so.
    impostor_id = impostor.node_id()
    slave.wait_event("master.untrusted", timeout=20, where=lambda e: e.get("master.announced_id") == impostor_id)
    # The real master reboots: the terminal comes back to it, not to the newer announcement.
    assert real.stop() == 0
    real.start()
    status = slave.wait_live(timeout=30)
    assert status["master"]["url"] == f"ws://{h1.address}:17700/", status
    assert {o["uuid"] for o in slave.orders()} == {o["uuid"] for o in made}
    assert not impostor.status()["peers"]
    for n in (slave, impostor, real):
        assert n.stop() == 0


def test_an_order_taken_offline_keeps_the_time_it_was_taken(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", port=17710)
    # The till pairs once, then its master is away.
    slave = OrderSyncNode.slave(h2, master_url=f"ws://{h1.address}:17710/")
    slave.wait_live()
    assert master.stop() == 0
    wait_until(lambda: slave.status()["master"]["state"] != "live", 15, what="the slave to see its master gone")
    taken = slave.create(customer="offline")
    assert taken["sync"] == "pending"
    # The master receives the order in a later second than the one it was taken in.
    taken_at = datetime.strptime(taken["created"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    wait_until(lambda: time.time() >= taken_at + 1.5, 5, what="the clock to pass the order's second")
    master.start()
    slave.wait_live(timeout=30)
    orders = wait_converged([master, slave], expect=1)
    assert orders[0]["created"] == taken["created"], (orders[0]["created"], taken["created"])
    assert slave.stop() == 0 and master.stop() == 0


def test_retrying_an_operation_through_the_api_gives_the_same_answer(lan2):
    h1, _ = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_event("node.started")
    good = master.create(customer="x")
    body = json.dumps({"operation": 1, "opId": "retry-1",
                       "orders": [{"uuid": good["uuid"], "note": "via ops"}, {"uuid": "bad"}]})
    sock = os.path.join(master.data_dir, "ordersync.sock")

    def post():
        out = h1.run(["curl", "-sS", "--unix-socket", sock, "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@-",
                      "http://localhost/v1/operations"], input=body)
        return json.loads(out.stdout)
    first, second = post(), post()
    assert [e["code"] for e in first["errors"]] == ["invalid_uuid"]
    assert [e["code"] for e in second["errors"]] == ["invalid_uuid"], second
    assert first["seq"] == second["seq"]
    assert master.status()["seq"] == 2, "the retry was not applied again"
    assert master.stop() == 0


def test_a_pos_retry_on_a_slave_after_the_answer_gets_that_answer_and_brings_nothing_back(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    uuid = "5D5E7A1C-0B7E-4C1A-9D7B-2D4F0C9A1E11"
    body = json.dumps({"operation": 0, "opId": "till-retry-1", "orders": [{"uuid": uuid, "customerName": "Nia"}]})
    sock = os.path.join(slave.data_dir, "ordersync.sock")

    def post():
        out = h2.run(["curl", "-sS", "-w", "\n%{http_code}", "--unix-socket", sock, "-X", "POST", "-H", "Content-Type: application/json",
                      "--data-binary", "@-",
                      "http://localhost/v1/operations"], input=body)
        text, code = out.stdout.rsplit("\n", 1)
        return int(code), json.loads(text)
    code, first = post()
    assert code == 200 and [o["uuid"] for o in first["applied"]] == [uuid], (code, first)
    # The kitchen removes the order; the till, which lost the answer, sends the same operation.
    master.remove(uuid)
    assert wait_converged([master, slave], timeout=20, expect=0) == [], "the removal did not reach the till"
    seq = master.status()["seq"]
    slave.restart()
    slave.wait_live()
    code, again = post()
    assert code == 200, again
    assert again["seq"] == first["seq"] and [o["uuid"] for o in again["applied"]] == [uuid], again
    assert slave.orders() == [] and slave.status()["outbox"] == 0, "the removed order came back on the till"
    assert master.status()["seq"] == seq and master.orders() == [], "the retry reached the master"
    print(f"retry of an answered operation on a slave: first answer (seq {first['seq']}) again, nothing applied")
    assert slave.stop() == 0 and master.stop() == 0


def run_peer(host, url: str, steps: list, state: str, code: str | None = None) -> dict:
    """An independent OrderSync slave on `host` (`Tests/support/secure_peer.py`: Noise from
    `noiseprotocol`, WebSockets from Python `websockets`): pairs with `code`, else connects with
    IK to the master key kept in its `state` file, then runs `steps`."""
    argv = [PYTHON, os.path.join(SUPPORT, "secure_peer.py"), "connect", url, "--state", state,
            "--steps", json.dumps(steps), *(["--pair", code] if code else [])]
    out = json.loads(host.run(argv, timeout=60).stdout)
    assert out["established"], out
    return out


def test_a_snapshot_names_the_pending_operations_it_already_holds_to_an_independent_slave(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    url = f"ws://{h1.address}:{int(master.wait_event('node.started')['port'])}/"
    uuid = "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"
    hello = {"type": "hello", "proto": "ordersync/1", "terminal": "py-till", "name": "py-till", "lastSeq": 0}
    state = os.path.join(h2.dir, "py-till.json")
    first = run_peer(h2, url, state=state, code=master.pairing_code(name="py-till"), steps=[
        {"send": hello}, {"until": {"type": "ready"}},
        {"send": {"operation": 0, "opId": "py-op-1", "orders": [{"uuid": uuid, "customerName": "Ola"}]}},
        {"until": {"type": "result", "opId": "py-op-1"}},
        {"send": {"operation": 1, "opId": "py-op-2", "orders": [{"uuid": uuid, "tableName": "T3"}]}},
        {"until": {"type": "result", "opId": "py-op-2"}},
    ])
    results = [m for m in first["received"] if m.get("type") == "result"]
    assert [(r["opId"], r["seq"]) for r in results] == [("py-op-1", 1), ("py-op-2", 2)], first
    # The link dropped before the till heard the answers: it comes back without an epoch (a
    # snapshot) and lists its outbox.
    again = run_peer(h2, url, state=state, steps=[
        {"send": dict(hello, pending=["py-op-1", "py-op-2", "py-op-never-sent"])}, {"until": {"type": "ready"}},
    ])
    parts = [m for m in again["received"] if "snapshot" in m]
    assert parts and parts[-1]["snapshot"]["part"] == parts[-1]["snapshot"]["parts"], again
    assert parts[-1]["snapshot"]["applied"] == {"py-op-1": 1, "py-op-2": 2}, parts[-1]["snapshot"]
    assert all("applied" not in p["snapshot"] for p in parts[:-1])
    [order] = [o for p in parts for o in p["orders"]]
    assert order["tableName"] == "T3" and order["version"] == 2, order
    # A malformed list is refused with a clear error.
    bad = run_peer(h2, url, state=state, steps=[{"send": dict(hello, pending=[7])}, {"until": {"type": "error"}}])
    assert bad["received"][-1]["code"] == "invalid_message" and "pending" in bad["received"][-1]["message"], bad
    assert master.status()["seq"] == 2
    print("independent slave: snapshot named 2 of 3 pending operations as applied; malformed list refused")
    assert master.stop() == 0


def test_a_storepos_client_gets_no_result_messages_and_a_stalled_api_request_is_closed(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    port = int(master.wait_event("node.started")["port"])
    script = (
        "import asyncio, json, sys, websockets\n"
        "async def main():\n"
        f"    async with websockets.connect('ws://{h1.address}:{port}/', compression=None) as ws:\n"
        "        await ws.recv()\n"
        "        await ws.send(json.dumps({'operation': 0, 'opId': 'op-1', 'orders': [{'uuid': '11111111-1111-4111-8111-111111111111'}]}))\n"
        "        seen = []\n"
        "        try:\n"
        "            while True:\n"
        "                seen.append(json.loads(await asyncio.wait_for(ws.recv(), 1.5)))\n"
        "        except asyncio.TimeoutError:\n"
        "            pass\n"
        "        print(json.dumps(seen))\n"
        "asyncio.run(main())\n")
    out = json.loads(h2.run([PYTHON, "-c", script], timeout=30).stdout)
    # No `result` and, as with StorePOS's own master, no echo of its own operation; the master
    # applied it.
    assert out == [], out
    assert json.loads(master.cli("order", "show", "11111111-1111-4111-8111-111111111111", "--json").stdout)["uuid"]

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(master.data_dir, "ordersync.sock"))
    s.sendall(b"POST /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    s.settimeout(20)
    started = time.time()
    answer = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    assert time.time() - started < 15
    assert master.stop() == 0


def test_a_master_given_by_host_name_is_looked_up_without_stalling_the_terminal(lan2):
    h1, _ = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", port=17720)
    master.wait_event("node.started")
    # A name that resolves: the terminal connects to it.
    named = OrderSyncNode.slave(h1, master_url="ws://localhost:17720/")
    status = named.wait_live(timeout=30)
    assert status["master"]["url"] == "ws://localhost:17720/"
    order = named.create(customer="by name")
    wait_converged([master, named], expect=1)
    # A name that does not: the local API keeps answering and says why there is no master.
    lost = OrderSyncNode.slave(h1, master_url="ws://no-such-master.invalid:17720/",
                               data_dir=os.path.join(os.path.dirname(named.data_dir), "lost-slave-data"))
    lost.wait_event("node.started")
    failed = lost.wait_event("master.connect_failed", timeout=20)
    assert "no-such-master.invalid" in failed["reason"], failed
    started = time.monotonic()
    taken = lost.create(customer="offline")
    assert taken["sync"] == "pending"
    assert lost.status()["master"]["lastError"]
    assert time.monotonic() - started < 5
    assert master.orders()[0]["uuid"] == order["uuid"]
    for n in (lost, named, master):
        assert n.stop() == 0


def test_a_master_run_with_umask_000_keeps_its_files_private_and_names_the_api_callers_uid(lan2):
    h1 = lan2.hosts[0]
    data = os.path.join(h1.dir, "umask000", "data")
    os.makedirs(os.path.dirname(data))  # a missing parent of --data-dir is refused
    master = OrderSyncNode.master(h1, store="shop1", name="front", data_dir=data, umask=0)
    started = master.wait_event("node.started")
    master.create(customer="Ada")

    def mode(name):
        return stat.S_IMODE(os.lstat(os.path.join(data, name)).st_mode)

    assert mode("") == 0o700
    for name in ("ordersync.sqlite", "ordersync.sqlite-wal", "ordersync.sqlite-shm", "ordersync.lock", "node.key"):
        assert mode(name) == 0o600, name
    assert mode("ordersync.sock") == 0o660
    node_id = master.status()["nodeId"]
    assert re.fullmatch(r"([A-Z2-7]{4}-){7}[A-Z2-7]{4}", node_id), node_id
    assert started["node.id"] == node_id
    assert f"node id:   {node_id}" in master.cli("status").stdout
    origins = [row["origin"] for row in read_sqlite(data, "SELECT origin FROM journal")]
    assert origins == [f"front (local API, uid {os.geteuid()})"]
    assert master.stop() == 0

    # The same key, so the same id, after a restart.
    master.start()
    master.wait_event("node.started", count=2)
    assert master.status()["nodeId"] == node_id
    assert master.stop() == 0

    # A data directory any user may write is refused before anything is written in it.
    shared = os.path.join(h1.dir, "shared-data")
    os.makedirs(shared)
    os.chmod(shared, 0o777)
    refused = h1.run([ordersync_binary(), "master", "--data-dir", shared, "--store", "shop1", "--port", "0"],
                     check=False, timeout=15)
    assert refused.returncode == 77  # permission denied
    assert "event=start.permission_denied" in refused.stderr, refused.stderr
    assert "is writable by its group and others (mode 777)" in refused.stderr, refused.stderr
    assert os.listdir(shared) == []
