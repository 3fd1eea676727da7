"""The store's first master comes back after a promotion and rejoins by itself (issue 26, item 4;
Docs/PROTOCOL.md 7.20): a master and two paired slaves (three voters) on a simulated store LAN.
The master's cable is pulled; its own till goes on writing through its local API, and the master
acknowledges those writes on its disk alone (no standby gets them). A slave is promoted with the
other's promise (2 of 3 voters), the old master is brought back (its cable plugged in again, or
its process restarted on the same data directory), sees the higher term, steps down, connects to
the new master as an ordinary paired slave (trusted by the key its own row in the member table
holds: nobody pairs it again) and its re-queued tail is applied once by the new master and
reaches every terminal.

Prints `FIGURE …` (`pytest -s`). Needs the `ordersync` binary (``ORDERSYNC_BIN``); under CI mode
a missing one fails the test.
"""

from __future__ import annotations

import time
import uuid as uuidlib

import pytest

from failover_lab import Promotion, ballot, figure, store, wait_following
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, journal_entries, read_sqlite, wait_converged
from sync_checks import check_applied_once

#: Writes the old master takes alone, with its cable pulled.
TAIL = 4

pytestmark = pytest.mark.usefixtures("ordersync_built")


def voters(node: OrderSyncNode) -> dict:
    return node.status()["voters"]


@pytest.mark.parametrize("back", ["plugged-in", "restarted"])
def test_the_first_master_steps_down_and_rejoins_without_pairing_its_tail_applied_once(make_lan, back):
    lan = make_lan(3)
    master, slaves = store(lan, "shop31", port=17310, slaves=2, extra=["--sync-timeout", "1"])
    old_id = master.node_id()
    # The master is a member of its store like a paired fixed terminal: its own row, a voter.
    rows = read_sqlite(master.data_dir, f"SELECT name, voter, number FROM paired_terminals WHERE node_id = '{old_id}'")
    assert rows and rows[0]["voter"] == 1 and rows[0]["name"] == lan.hosts[0].name, rows
    assert master.events("members.master_added"), "the new store's master row is logged"
    before = voters(master)
    assert before["count"] == 3 and before["majority"] == 2, before
    assert [t["name"] for t in master.terminals()] == sorted(s.host.name for s in slaves)
    shared = [s.create(customer=f"before {s.host.name}") for s in slaves]
    wait_converged([master, *slaves], expect=len(shared))
    for s in slaves:
        s.wait_drained()

    master.host.link_down()
    tail = []
    for i in range(TAIL):
        body = {"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"alone {i}"}
        op_id = f"alone-{i}-{uuidlib.uuid4()}"
        code, answer = master.operation(0, body, op_id)
        assert code in (200, 201) and not answer.get("errors"), (code, answer)
        tail.append({"opId": op_id, "operation": 0, "uuid": body["uuid"]})
    names = {o["customerName"] for o in master.orders()}
    assert all(f"alone {i}" in names for i in range(TAIL)), names
    for s in slaves:
        held = {o["customerName"] for o in s.orders()}
        assert not any(n.startswith("alone") for n in held), f"{s.host.name} got the cut master's writes: {held}"
    if back == "restarted":
        master.kill()

    chosen, other = slaves
    term = ballot(chosen)
    promotion = Promotion(chosen)
    report = promotion.promoted()
    assert report["term"] == term and report["forced"] is False, report
    assert sorted(report["voters"]) == sorted(n.host.name for n in [master, *slaves]), report
    wait_following([other], chosen.node_id(), term=term, since=promotion.started)
    after = voters(chosen)
    assert after["count"] == 3 and after["majority"] == 2, after

    master.host.link_up()
    returned = time.monotonic()
    if back == "restarted":
        master.start()
    master.wait_event("master.stepped_down", timeout=30)
    wait_following([master], chosen.node_id(), term=term, since=returned, timeout=30)
    rejoin_s = time.monotonic() - returned
    orders = wait_converged([chosen, other, master], timeout=60, expect=len(shared) + TAIL)
    master.wait_drained(timeout=30)
    check_applied_once(journal_entries(chosen.data_dir), tail)
    refusals = [e for e in chosen.events("peer.unauthenticated") if e.get("node.id") == old_id]
    assert not refusals, f"the new master refused the old one: {refusals}"
    assert master.status()["masterId"] == chosen.node_id()
    requeued = sum(int(e.get("requeued", 0)) for e in master.events("sync.diverged"))
    assert requeued >= TAIL, master.events("sync.diverged")
    figure(scenario=f"old-master-{back}", rejoin_ms=round(rejoin_s * 1000), tail=TAIL, requeued=requeued,
           orders=len(orders), refused=0, voters_before=before["count"], voters_after=after["count"])
    for node in (chosen, other, master):
        assert node.stop() == 0
