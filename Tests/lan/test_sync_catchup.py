"""Catch-up after a reconnect: a slave that was away gets exactly the operations it missed from
the master's journal (not a snapshot), a removed order never comes back, and the journal tells
operators who did what."""

import json
import os
import shutil
import signal

import avahi_cli
from ordersync_lab import OrderSyncNode, wait_converged


def test_slave_catches_up_from_the_journal_after_being_away(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    kept = slave.create(customer="before")
    gone = slave.create(customer="to remove")
    assert slave.stop() == 0

    created = [master.create(customer=f"while away {i}") for i in range(5)]
    master.update(kept["uuid"], table_size=8)
    master.remove(gone["uuid"])
    seq_before_return = master.status()["seq"]

    slave.start()
    slave.wait_live()
    event = master.wait_event("catchup.sent", timeout=20)
    assert int(event["operations"]) == 7, event
    assert int(event["seq"]) == seq_before_return
    assert not [e for e in master.events("snapshot.sent") if e["peer.address"] == event["peer.address"]], \
        "a returning slave with a known epoch must not get a snapshot"
    orders = wait_converged([master, slave], expect=6)
    assert {o["uuid"] for o in orders} == {kept["uuid"], *[c["uuid"] for c in created]}
    assert next(o for o in slave.orders() if o["uuid"] == kept["uuid"])["tableSize"] == 8

    # A late Create of the removed order is refused: tombstones keep it removed.
    late = slave.cli("order", "create", "--customer", "to remove", "--uuid", gone["uuid"], check=False)
    assert late.returncode == 73 and "removed" in late.stderr, late.stderr
    assert all(o["uuid"] != gone["uuid"] for o in master.orders())

    rejected = json.loads(master.cli("journal", "--rejected", "--order", gone["uuid"], "--json").stdout)["rejections"]
    assert [r["code"] for r in rejected] == ["removed"], rejected
    assert rejected[0]["origin"].startswith(slave.origin_prefix()) and rejected[0]["operation"] == "create"
    history = json.loads(master.cli("journal", "--order", gone["uuid"], "--json").stdout)["entries"]
    assert [e["operation"] for e in history] == ["create", "remove"]
    assert history[0]["origin"].startswith(slave.origin_prefix()), history[0]
    # The local API names the caller's uid (SO_PEERCRED); the tests run the CLI as themselves.
    assert history[1]["origin"] == f"front (local API, uid {os.getuid()})", history[1]
    refused = slave.cli("journal", check=False)
    assert refused.returncode == 73 and "master" in refused.stderr
    assert slave.stop(signal.SIGTERM) == 0 and master.stop() == 0


def test_replaced_master_database_makes_slaves_resnapshot(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    slave.create(customer="old world")
    epoch, master_id = master.status()["epoch"], master.node_id()
    assert master.stop() == 0
    # The master's terminal is replaced: a new, empty database (a new epoch) for the same store,
    # with the master's key restored (a new key would be another master: never followed).
    fresh_dir = master.data_dir + "-new"
    os.makedirs(fresh_dir, mode=0o700)
    shutil.copy2(os.path.join(master.data_dir, "node.key"), os.path.join(fresh_dir, "node.key"))
    fresh = OrderSyncNode.master(h1, store="shop1", data_dir=fresh_dir)
    fresh.wait_event("node.started")
    assert fresh.node_id() == master_id
    # Its paired terminals went with the old database: the slave is told to pair again, and is.
    slave.wait_event("pairing.required", timeout=30)
    slave.pair_again(fresh)
    fresh.create(customer="new world")
    new_epoch = fresh.status()["epoch"]
    assert new_epoch != epoch
    # The TXT record carries the new epoch, as an independent DNS-SD browser on the slave's host sees it.
    name = fresh.wait_event("service.published", timeout=20)["service.name"]
    services = avahi_cli.browse_until(h2, lambda found: [s for s in found if s.name == name and s.txt.get("epoch") == new_epoch],
                                      timeout=20)
    assert all(s.txt.get("epoch") == new_epoch for s in services if s.name == name), [s.txt for s in services]
    slave.wait_event("snapshot.received", count=2, timeout=30)
    orders = wait_converged([fresh, slave], expect=1)
    assert orders[0]["customerName"] == "new world"
    assert slave.stop() == 0 and fresh.stop() == 0


def test_status_shows_each_slaves_acknowledged_sequence_and_lag(lan2):
    from lanharness import wait_until
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=["--ping-interval", "1", "--peer-timeout", "5"])
    slave = OrderSyncNode.slave(h2, extra=["--ping-interval", "1", "--peer-timeout", "5"])
    slave.wait_live()
    for i in range(3):
        master.create(customer=f"c{i}")
    seq = master.status()["seq"]

    def caught_up():
        peers = master.status()["peers"]
        return peers if peers and peers[0]["ackedSeq"] == seq and peers[0]["lag"] == 0 else None
    peers = wait_until(caught_up, 10, what="the master to see the slave's ack")
    assert peers[0]["terminal"] == "h2"
    status = slave.status()
    assert status["seq"] == seq and status["masterSeq"] == seq and status["lag"] == 0
    # A frozen slave stops acking: its lag grows on the master while operations continue.
    import os
    os.kill(slave.process.pid, signal.SIGSTOP)
    try:
        master.create(customer="while frozen")
        assert master.status()["peers"][0]["lag"] >= 1
    finally:
        os.kill(slave.process.pid, signal.SIGCONT)
    wait_until(lambda: master.status()["peers"] and master.status()["peers"][0]["lag"] == 0,
               10, what="the slave to catch up after thawing")
    # A slave that is away is still listed, with when it was last seen and how far behind it is.
    assert slave.stop() == 0
    master.create(customer="while away")
    known = wait_until(lambda: [t for t in master.status()["terminals"] if t["name"] == "h2" and not t["connected"]],
                       10, what="the master to list the stopped slave")
    assert known[0]["lag"] >= 1 and known[0]["lastSeen"], known
