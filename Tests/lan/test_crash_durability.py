"""Durability under crashes with real processes: every operation a slave's local API
acknowledged is present exactly once on every node after the master is killed with SIGKILL in
the middle of a burst from three slaves and restarted."""

import json
import os
import signal
import subprocess
import time

from lanharness import PYTHON, HERE, wait_until
from ordersync_lab import OrderSyncNode, wait_converged


def test_kill_9_of_the_master_during_a_burst_loses_and_duplicates_nothing_acknowledged(make_lan):
    lan = make_lan(4)
    h1 = lan.hosts[0]
    master = OrderSyncNode.master(h1, store="shop1", port=17600)
    slaves = [OrderSyncNode.slave(h) for h in lan.hosts[1:]]
    for s in slaves:
        s.wait_live()
    writers = [s.host.popen([PYTHON, os.path.join(HERE, "burst_writer.py"), os.path.join(s.data_dir, "ordersync.sock"),
                             "6", s.host.name], stdout=subprocess.PIPE, text=True) for s in slaves]
    # Crash in the middle of the burst: once the master has applied 100 operations.
    wait_until(lambda: master.status()["seq"] >= 100, 20, what="the burst to reach 100 operations")
    master.kill()
    killed_at = time.time()
    master.start()
    for s in slaves:
        s.wait_live(timeout=30)
    reconnected = time.time() - killed_at
    results = []
    for w in writers:
        out, _ = w.communicate(timeout=60)
        results += [json.loads(line) for line in out.splitlines() if line.strip()]
    acked = [r["uuid"] for r in results if r["acked"]]
    refused = [r for r in results if not r["acked"]]
    queued = [r for r in results if r["status"] == 202]
    assert len(acked) > 50, f"the burst acknowledged only {len(acked)} orders"
    started = time.time()
    orders = wait_converged([master, *slaves], timeout=60)
    converge = time.time() - started
    uuids = [o["uuid"] for o in orders]
    assert len(uuids) == len(set(u.lower() for u in uuids)), "an order is stored twice"
    missing = set(acked) - set(uuids)
    assert not missing, f"{len(missing)} acknowledged orders were lost: {sorted(missing)[:5]}"
    lost = len(missing)
    assert not refused, f"{len(refused)} writes were refused: {refused[:3]}"
    print(f"burst: {len(results)} writes, {len(acked)} acknowledged ({len(queued)} queued while the master was away); "
          f"lost {lost}, duplicated 0; slaves live again {reconnected:.1f}s after the kill; converged in {converge:.1f}s")
    for node in [*slaves, master]:
        assert node.stop() == 0
