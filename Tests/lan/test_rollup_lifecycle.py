"""`ordersync rollup` stopped and found wanting, with real processes and a real PostgreSQL (the
head office of test_rollup.py): SIGTERM and SIGINT end a following roll-up with exit 0 and a state
file that says `running:false` at the checkpoint head office holds; the node's `ordersync status`
shows that state file under `rollup` (JSON and text); and a store whose journal no longer holds
what head office lacks (its oldest entries pruned) makes the roll-up report the gap (exit 65,
`rollup.gap` naming the missing range, an alarm) instead of skipping it."""

import json
import os
import signal
import sqlite3
import subprocess

import pytest

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary
from test_rollup import events, head_office, rollup  # noqa: F401 (head_office is a fixture)

pytestmark = pytest.mark.usefixtures("ordersync_built")


def state_file(node) -> dict:
    with open(os.path.join(node.data_dir, "rollup.state.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_following_rollup_cleanly(make_lan, head_office, signo):
    (h1,) = make_lan(1).hosts
    shop = OrderSyncNode.master(h1, store="shop1")
    shop.wait_api()
    for i in range(3):
        shop.create(f"Order {i}")
    follower = subprocess.Popen([ordersync_binary(), "rollup", "--data-dir", shop.data_dir, "--database-url", head_office.url, "--json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: head_office.sql("SELECT seq FROM ordersync.checkpoints WHERE store_id = 'shop1'", check=False) == [["3"]], 30,
                   what="the three entries at head office")
        wait_until(lambda: state_file(shop)["running"] is True and state_file(shop)["checkpoint"]["seq"] == 3, 10,
                   what="the running roll-up's state file at seq 3")
        follower.send_signal(signo)
        assert follower.wait(timeout=15) == 0, follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    state = state_file(shop)
    assert state["running"] is False and state["checkpoint"]["seq"] == 3 and state["lastError"] is None, state
    assert rollup(shop, head_office.url, "verify").returncode == 0

    # The node's own status shows the state file under `rollup`, in JSON and in text.
    status = shop.status()
    assert status["rollup"]["running"] is False and status["rollup"]["checkpoint"]["seq"] == 3, status
    assert status["rollup"]["storeId"] == "shop1" and status["rollup"]["lag"]["entries"] == 0, status
    text = shop.cli("status").stdout
    assert "rollup: idle (not running), checkpoint 3, lag 0 entries" in text, text


def test_a_pruned_journal_is_reported_as_a_gap(make_lan, head_office):
    (h1,) = make_lan(1).hosts
    shop = OrderSyncNode.master(h1, store="shop1")
    shop.wait_api()
    for i in range(5):
        shop.create(f"Order {i}")
    assert shop.stop() == 0
    # What compaction does to entries 1-2 (Docs/PROTOCOL.md 7.2), before head office held them.
    db = sqlite3.connect(os.path.join(shop.data_dir, "ordersync.sqlite"))
    db.execute("DELETE FROM journal_orders WHERE seq <= 2")
    db.execute("DELETE FROM journal WHERE seq <= 2")
    db.commit()
    db.close()

    result = rollup(shop, head_office.url, "--once")
    assert result.returncode == 65, result.stderr
    gaps = events(result, "rollup.gap")
    assert [(int(g["first"]), int(g["last"]), int(g["checkpoint"])) for g in gaps] == [(1, 2, 0)], result.stderr
    assert events(result, "rollup.batch_committed") == [], "nothing after the gap is shipped"
    assert head_office.sql("SELECT kind, seq FROM ordersync.alarms WHERE store_id = 'shop1'") == [["gap", "1"]]
    assert head_office.sql("SELECT count(*) FROM ordersync.journal WHERE store_id = 'shop1'") == [["0"]]
    state = state_file(shop)
    assert state["state"] == "gap" and state["lastError"]["code"] == "gap" and "1-2" in state["lastError"]["message"], state
