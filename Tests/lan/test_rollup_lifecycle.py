"""`ordersync rollup` stopped and found wanting, with real processes and a real PostgreSQL (the
head office of test_rollup.py): SIGTERM and SIGINT end a following roll-up with exit 0 and a state
file that says `running:false` at the checkpoint head office holds; the node's `ordersync status`
shows that state file under `rollup` (JSON and text); and a store whose journal no longer holds
what head office lacks (its oldest entries pruned) makes the roll-up report the gap (exit 65,
`rollup.gap` naming the missing range, an alarm) instead of skipping it; so does a standby whose
copy starts at a snapshot above head office's checkpoint."""

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


def state_file_says(node, running: bool, seq: int) -> bool:
    """Whether the state file exists yet and says ``running`` at checkpoint ``seq`` (the roll-up
    writes it after head office's commit, so it may still be missing once head office has the
    entries)."""
    try:
        state = state_file(node)
    except FileNotFoundError:
        return False
    return state["running"] is running and (state.get("checkpoint") or {}).get("seq") == seq


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
        wait_until(lambda: state_file_says(shop, running=True, seq=3), 30,
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


def stopped_master_with_pruned_journal(host, through: int):
    """A master with five entries, stopped, whose journal lost entries 1..`through` as compaction
    drops them (Docs/PROTOCOL.md 7.2) before head office held them."""
    shop = OrderSyncNode.master(host, store="shop1")
    shop.wait_api()
    for i in range(5):
        shop.create(f"Order {i}")
    assert shop.stop() == 0
    db = sqlite3.connect(os.path.join(shop.data_dir, "ordersync.sqlite"))
    db.execute("DELETE FROM journal_orders WHERE seq <= ?", (through,))
    db.execute("DELETE FROM journal WHERE seq <= ?", (through,))
    db.commit()
    db.close()
    return shop


def test_a_pruned_journal_is_reported_as_a_gap(make_lan, head_office):
    (h1,) = make_lan(1).hosts
    shop = stopped_master_with_pruned_journal(h1, through=2)

    result = rollup(shop, head_office.url, "--once")
    assert result.returncode == 65, result.stderr
    gaps = events(result, "rollup.gap")
    assert [(int(g["first"]), int(g["last"]), int(g["checkpoint"])) for g in gaps] == [(1, 2, 0)], result.stderr
    assert events(result, "rollup.batch_committed") == [], "nothing after the gap is shipped"
    assert head_office.sql("SELECT kind, seq FROM ordersync.alarms WHERE store_id = 'shop1'") == [["gap", "1"]]
    assert head_office.sql("SELECT count(*) FROM ordersync.journal WHERE store_id = 'shop1'") == [["0"]]
    state = state_file(shop)
    assert state["state"] == "gap" and state["lastError"]["code"] == "gap" and "1-2" in state["lastError"]["message"], state


def test_a_standby_whose_copy_starts_at_a_snapshot_reports_the_gap(make_lan, head_office):
    """A till paired after the master's journal lost its first entries takes a snapshot: its
    copy starts above it (at the snapshot's base), above head office's checkpoint (0). A roll-up of
    that copy reports the gap, never skips it; the master, which still holds the rest, is where
    the roll-up must run."""
    h1, h2 = make_lan(2).hosts
    # Entries 1-3 pruned: the till cannot catch up by the journal and takes a snapshot
    # (Docs/PROTOCOL.md 7.2), whose base is the master's seq.
    shop = stopped_master_with_pruned_journal(h1, through=3)
    shop.start()
    shop.wait_api()
    till = OrderSyncNode.slave(h2, store="shop1", pair_name="till1")
    till.wait_live()
    wait_until(lambda: till.status()["seq"] >= 5, 60, what="the till at seq 5")
    assert till.stop() == 0
    db = sqlite3.connect(os.path.join(till.data_dir, "ordersync.sqlite"))
    copied = db.execute("SELECT min(seq), count(*) FROM journal").fetchone()
    db.close()
    assert copied == (None, 0), f"the till's copy should start at the snapshot, not hold {copied}"

    result = rollup(till, head_office.url, "--once")
    assert result.returncode == 65, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    gaps = events(result, "rollup.gap")
    assert [(int(g["first"]), int(g["last"]), int(g["checkpoint"])) for g in gaps] == [(1, 5, 0)], result.stderr
    assert events(result, "rollup.batch_committed") == []
    assert head_office.sql("SELECT kind, seq FROM ordersync.alarms WHERE store_id = 'shop1'") == [["gap", "1"]]
    assert head_office.sql("SELECT count(*) FROM ordersync.journal WHERE store_id = 'shop1'") == [["0"]]
    state = state_file(till)
    assert state["state"] == "gap" and state["lastError"]["code"] == "gap", state

    # The master still holds 4-5, not 1-3: its roll-up reports the same gap; nothing is shipped
    # around it.
    result = rollup(shop, head_office.url, "--once")
    assert result.returncode == 65, (result.returncode, result.stderr[-2000:])
    assert [(int(g["first"]), int(g["last"])) for g in events(result, "rollup.gap")] == [(1, 3)], result.stderr
