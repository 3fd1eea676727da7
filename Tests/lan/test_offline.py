"""The offline-first slave with real processes: a slave cut off from the LAN keeps taking
operations (durably, in its outbox) and delivers each exactly once when it comes back; a slave
killed with a full outbox delivers it after restart; a local change the master refuses is
reported and the terminal goes back to the master's truth.

The queued operations mix creates, updates and removes, each with its own operation id: the
master's journal must hold each id once, each order's entries in the order sent, and every node
the orders those operations make (notes, versions and unknown members included)."""

import json
import time

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, journal_entries, run_workload, wait_converged, workload_results
from sync_checks import CREATE, check_applied_once, check_final_orders, expected_orders

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]


def write_many(slave: OrderSyncNode, count: int, prefix: str) -> list[dict]:
    """Sends `count` mixed operations through the slave's local API; all must be queued (202)."""
    ops = workload_results(run_workload(slave, prefix, count=count), timeout=300)
    statuses = {op["status"] for op in ops}
    assert len(ops) == count and all(op["acked"] for op in ops) and statuses == {202}, \
        (statuses, [op for op in ops if not op["acked"]][:3])
    return ops


def check_delivered_once(master: OrderSyncNode, ops: list[dict], orders: list[dict]) -> None:
    sent = [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in ops]
    check_applied_once(journal_entries(master.data_dir), sent)
    check_final_orders(expected_orders(ops), orders)


def test_slave_cut_off_takes_500_operations_and_delivers_each_exactly_once(make_lan):
    lan = make_lan(3)
    h1, h2, h3 = lan.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    away = OrderSyncNode.slave(h2, extra=FAST)
    other = OrderSyncNode.slave(h3, extra=FAST)
    away.wait_live()
    other.wait_live()
    h2.link_down()
    wait_until(lambda: away.status()["master"]["state"] != "live", 10, what="the cut-off slave to notice")
    written = write_many(away, 500, "offline")
    assert away.status()["outbox"] == 500
    assert len(master.orders()) == 0, "nothing reached the master while the slave was cut off"
    other.create(customer="meanwhile on h3")
    back = time.time()
    h2.link_up()
    away.wait_live(timeout=30)
    kept = sum(1 for order in expected_orders(written).values() if order is not None)
    orders = wait_converged([master, away, other], timeout=60, expect=kept + 1)
    converge = time.time() - back
    away.wait_drained(timeout=30)
    check_delivered_once(master, written, orders)
    assert master.status()["seq"] == 501, "each queued operation applied exactly once"
    creates = sum(op["operation"] == CREATE for op in written)
    print(f"offline: 500 operations ({creates} creates) queued in {written[-1]['at']:.1f}s, delivered and converged "
          f"on 3 nodes {converge:.1f}s after the link came back; each journalled once, in order")
    for node in (away, other, master):
        assert node.stop() == 0


def test_slave_killed_with_a_full_outbox_delivers_it_after_restart(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", port=17650)
    # The till pairs once, then its master is away.
    slave = OrderSyncNode.slave(h2, master_url=f"ws://{h1.address}:17650/")
    slave.wait_live()
    assert master.stop() == 0
    wait_until(lambda: slave.status()["master"]["state"] != "live", 15, what="the slave to see its master gone")
    written = write_many(slave, 200, "queued")
    slave.kill()  # kill -9 with 200 entries in the outbox
    master.start()
    master.wait_event("node.started", count=2)
    slave.start()
    slave.wait_live(timeout=30)
    kept = sum(1 for order in expected_orders(written).values() if order is not None)
    orders = wait_converged([master, slave], timeout=60, expect=kept)
    check_delivered_once(master, written, orders)
    assert master.status()["seq"] == 200
    print("kill -9 with 200 queued operations: each delivered exactly once after restart")
    assert slave.stop() == 0 and master.stop() == 0


def test_a_refused_local_change_is_reported_and_the_replica_returns_to_the_masters_truth(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    order = slave.create(customer="Kim")
    h2.link_down()
    wait_until(lambda: slave.status()["master"]["state"] != "live", 10, what="the slave to notice")
    # While the slave is away, the kitchen completes the order on the master...
    master.cli("order", "update", order["uuid"], "--status", "in_progress")
    master.cli("order", "update", order["uuid"], "--status", "completed")
    # ...and the slave, not knowing, changes the table: accepted locally, pending.
    pending = json.loads(slave.cli("order", "update", order["uuid"], "--table", "T9", "--json").stdout)
    assert pending["sync"] == "pending" and pending["tableName"] == "T9"
    h2.link_up()
    slave.wait_event("outbox.rejected", timeout=30)
    slave.wait_event("snapshot.received", count=2, timeout=30)
    slave.wait_live(timeout=30)
    shown = json.loads(slave.cli("order", "show", order["uuid"], "--json").stdout)
    assert shown["status"] == "completed" and "tableName" not in shown, shown
    assert shown["sync"] == "rejected" and shown["syncError"]["code"] == "invalid_transition", shown
    assert slave.status()["outbox"] == 0
    rejected = json.loads(master.cli("journal", "--rejected", "--json").stdout)["rejections"]
    assert rejected[-1]["code"] == "invalid_transition" and rejected[-1]["origin"].startswith(slave.origin_prefix())
    assert slave.stop() == 0 and master.stop() == 0
