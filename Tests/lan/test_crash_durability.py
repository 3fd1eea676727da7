"""Durability under crashes with real processes: every operation a slave's local API
acknowledged is applied exactly once after the master is killed with SIGKILL in the middle of a
burst from three slaves and restarted. The burst mixes creates, updates and removes, each with
its own operation id: the master's journal must hold each id once, each order's entries must be
the operations sent for it in the order sent, and every node must hold the orders those
operations make (notes, versions and unknown members included)."""

import time

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, journal_entries, run_workload, wait_converged, workload_results
from sync_checks import check_applied_once, check_final_orders, expected_orders


def test_kill_9_of_the_master_during_a_burst_loses_and_duplicates_nothing_acknowledged(make_lan):
    lan = make_lan(4)
    h1 = lan.hosts[0]
    master = OrderSyncNode.master(h1, store="shop1", port=17600)
    slaves = [OrderSyncNode.slave(h) for h in lan.hosts[1:]]
    for s in slaves:
        s.wait_live()
    writers = [run_workload(s, s.host.name, seconds=6) for s in slaves]
    # Crash in the middle of the burst: once the master has applied 100 operations.
    wait_until(lambda: master.status()["seq"] >= 100, 20, what="the burst to reach 100 operations")
    master.kill()
    killed_at = time.time()
    master.start()
    for s in slaves:
        s.wait_live(timeout=30)
    reconnected = time.time() - killed_at
    results = [op for w in writers for op in workload_results(w, timeout=90)]
    acked = [op for op in results if op["acked"]]
    refused = [op for op in results if not op["acked"]]
    queued = [op for op in results if op["status"] == 202]
    kinds = {kind: sum(op["operation"] == k for op in acked) for k, kind in enumerate(("creates", "updates", "removes"))}
    assert not refused, f"{len(refused)} writes were refused: {refused[:3]}"
    assert len(acked) > 50 and min(kinds.values()) > 0, f"the burst acknowledged only {kinds}"
    started = time.time()
    orders = wait_converged([master, *slaves], timeout=60)
    converge = time.time() - started
    sent = [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in acked]
    check_applied_once(journal_entries(master.data_dir), sent)
    check_final_orders(expected_orders(acked), orders)
    print(f"burst: {len(results)} operations ({kinds}) acknowledged, {len(queued)} queued while the master was away; "
          f"each journalled once, in order; slaves live again {reconnected:.1f}s after the kill; "
          f"converged in {converge:.1f}s")
    for node in [*slaves, master]:
        assert node.stop() == 0
