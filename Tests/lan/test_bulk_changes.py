"""Bulk changes with real processes: no message the master builds outgrows what a link carries.

A paired terminal edits 818 orders of about 15 KB in one Update: the master's broadcast (about
12.5 MB, more than a secure link seals in one message) goes out in parts of at most 1 MiB that
each paired slave applies as one operation, while another terminal keeps taking orders. A slave
that was stopped meanwhile catches up with a snapshot (the missed entry is over the catch-up
budget). A plain StorePOS client removing 1,000 orders in one message reaches every paired
slave the same way, and reaches in its parts a StorePOS app (`storepos_app.py`) connected
throughout, which shows every order with the bulk edit's fields, then the one order left; the
client that sent it gets no echo (PROTOCOL 4.1: a StorePOS app applied its own change). Every
terminal converges, every outbox drains, and no link fails to seal (`peer.encrypt_failed`)."""

import json
import os
import time
import uuid as uuidlib

from lanharness import wait_until
from ordersync_lab import PYTHON, OrderSyncNode, UnixHTTPConnection, wait_converged
from test_storepos_app import apps, wait_shows  # noqa: F401 - `apps` is a fixture

HERE = os.path.dirname(os.path.abspath(__file__))
UPDATE, REMOVE, CREATE = 1, 2, 0
#: What one secure-link message may seal at most (`NodeDefaults.largestSnapshotPartBytes`).
SEALED_LIMIT = 3_547_136
PART_BYTES = 1 << 20


def figure(**values) -> None:
    print("\nFIGURE " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()),
          flush=True)


def post(node: OrderSyncNode, operation: int, orders: list[dict], op_id: str) -> dict:
    """One operation message of many orders through the node's local API (`POST /v1/operations`);
    it must be taken (200 or 202)."""
    conn = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    try:
        conn.request("POST", "/v1/operations", headers={"Content-Type": "application/json"},
                     body=json.dumps({"operation": operation, "orders": orders, "opId": op_id}))
        response = conn.getresponse()
        status, answer = response.status, json.loads(response.read())
    finally:
        conn.close()
    assert status in (200, 202), (status, answer)
    return answer


def big_order(i: int) -> dict:
    """An order of about 15 KB of JSON (a note, at most 4 KiB, and an unknown member carrying the
    kitchen ticket), as a busy kitchen's orders can be."""
    return {"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"bulk {i}", "note": f"{i:05d} " + "n" * 4_000,
            "x-ticket": "t" * 10_700}


def no_seal_failures(*nodes: OrderSyncNode) -> None:
    """No link failed to seal a message, and no slave saw the parts of a broadcast broken."""
    for node in nodes:
        failed = node.events("peer.encrypt_failed") + node.events("sync.parts_invalid")
        assert not failed, failed[:2]


def test_a_bulk_update_and_a_1000_order_storepos_remove_reach_every_terminal(make_lan, apps):
    lan = make_lan(4)
    h1, h2, h3, h4 = lan.hosts
    master = OrderSyncNode.master(h1, store="shop1", insecure_storepos=True)
    bulk = OrderSyncNode.slave(h2)
    taker = OrderSyncNode.slave(h3)
    sleeper = OrderSyncNode.slave(h4)
    slaves = [bulk, taker, sleeper]
    for slave in slaves:
        slave.wait_live()
    # A StorePOS app, connected before the orders are taken and through everything below.
    master.wait_event("service.published", timeout=20)
    pos = apps(h4, "A")
    mark = pos.mark()
    pos.start()
    pos.wait_connected(mark)

    # 818 orders of about 15 KB, 60 per message, and 182 small ones: 1,000 orders.
    big = [big_order(i) for i in range(818)]
    for k in range(0, len(big), 60):
        post(bulk, CREATE, big[k:k + 60], f"create-{k}")
    small = [{"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"small {i}"} for i in range(182)]
    post(bulk, CREATE, small, "create-small")
    wait_converged([master] + slaves, timeout=60, expect=1000)

    # One till is switched off; the bulk edit is made while another takes an order.
    assert sleeper.stop() == 0
    started = time.monotonic()
    post(bulk, UPDATE, [{"uuid": o["uuid"], "customerName": "Table party"} for o in big], "bulk-update")
    taker.create(customer="meanwhile on h3")
    orders = wait_converged([master, bulk, taker], timeout=60, expect=1001)
    converged = time.monotonic() - started
    assert sum(o["customerName"] == "Table party" for o in orders) == 818
    for slave in (bulk, taker):
        slave.wait_drained(timeout=30)
    # The app shows every order once, the 818 with the bulk edit's fields (its rows compared
    # field by field with the master's orders).
    rows = wait_shows(pos, orders, timeout=60)["rows"]
    pos_shown = time.monotonic() - started
    assert sum(row.get("customerName") == "Table party" for row in rows) == 818
    parts = master.wait_event("broadcast.parts", where=lambda e: int(e["bytes"]) > 10_000_000)
    update_bytes, update_parts = int(parts["bytes"]), int(parts["parts"])
    assert update_bytes > SEALED_LIMIT, "the broadcast is larger than a secure link seals in one message"
    assert update_parts >= update_bytes // PART_BYTES + 1
    no_seal_failures(master, bulk, taker)

    # The switched-off till comes back: its one missed entry is over the catch-up budget, it
    # gets the snapshot instead, and converges.
    back = time.monotonic()
    sleeper.start()
    sleeper.wait_live(timeout=60)
    over = master.wait_event("catchup.over_budget")
    assert int(over["bytes"]) >= update_bytes
    orders = wait_converged([master] + slaves, timeout=60, expect=1001)
    caught_up = time.monotonic() - back

    # A plain StorePOS client removes 1,000 orders in one message.
    removal = {"operation": REMOVE, "orders": [{"uuid": o["uuid"]} for o in big + small]}
    path = os.path.join(h3.dir, "storepos-remove.json")
    with open(path, "w") as f:
        json.dump(removal, f)
    master.wait_event("node.started")
    url = f"ws://{h1.address}:{int(master.events('node.started')[-1]['port'])}/"
    removed_at = time.monotonic()
    pos_mark = pos.mark()
    # 4 s of silence end each reading: the connect sequence's own pauses are 1 s, and the
    # master applies the 1,000 removals before its parts come back.
    result = json.loads(h3.run([PYTHON, os.path.join(HERE, "storepos_bulk_client.py"), url, path, "4"],
                               timeout=120).stdout)
    assert result["close"] is None, result
    assert result["connect_messages"] > 1000, result
    left = wait_converged([master] + slaves, timeout=60, expect=1)
    removed = time.monotonic() - removed_at
    assert left[0]["customerName"] == "meanwhile on h3"
    for slave in slaves:
        slave.wait_drained(timeout=30)
    remove_parts = master.wait_event("broadcast.parts", count=2, where=lambda e: int(e["bytes"]) > 10_000_000)
    remove_bytes = int(remove_parts["bytes"])
    assert remove_bytes > SEALED_LIMIT
    # The client that sent the Remove gets none of it back (it applied its own change; an echo
    # would double a Create on the app); the other StorePOS app gets every part, each an
    # ordinary Remove, and shows the one order left.
    assert result["after_messages"] == 0, result
    wait_shows(pos, left, timeout=30)
    pos_parts = [e for e in pos.events[pos_mark:] if e["ev"] == "received" and e.get("operation") == REMOVE
                 and e.get("orders")]
    assert len(pos_parts) >= int(remove_parts["parts"]), (len(pos_parts), remove_parts)
    assert sum(e["orders"] for e in pos_parts) == 1000
    no_seal_failures(master, *slaves)
    wait_until(lambda: all(s.status()["master"]["state"] == "live" for s in slaves), 10, what="every slave live")
    figure(bulk_update_broadcast_bytes=update_bytes, bulk_update_parts=update_parts,
           bulk_update_converged_s=converged, bulk_update_shown_by_storepos_app_s=pos_shown,
           over_budget_catchup_snapshot_s=caught_up, storepos_app_remove_parts=len(pos_parts),
           storepos_remove_1000_broadcast_bytes=remove_bytes, storepos_remove_parts=int(remove_parts["parts"]),
           storepos_remove_converged_s=removed)
    for node in slaves + [master]:
        assert node.stop() == 0
