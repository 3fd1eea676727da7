"""StorePOS apps whose changes the master cannot take, on a real `ordersync master
--insecure-storepos` with the app emulation (`storepos_app.py`) on a simulated LAN, one master for
both parts (issue 23, items 2 and 3):

* refusals put right: app A edits a completed order (its table size) and removes another completed
  one; the master refuses both (`invalid_transition`) and sends A what undoes them (an Update, a
  Create): A shows the master's 4 orders with the master's table size within a second, and the
  master, app B and the OrderSync slave are unchanged; an order A takes with a table size out of
  range is refused (`invalid_field`) and taken off A's screen by a Remove within a second;
* an iPad coming from StorePOS: app O starts with 3 old orders in its store; its staff edit one,
  remove one and edit the third; the master lists the three (`ordersync storepos foreign`) with
  the app's copy; `adopt` brings the edited one into the store (the slave gets it, every app
  reconnects through the re-announcement and shows it once, O without crashing); `clear --all`
  removes the third from O's screen.

`pytest -s` prints the figures (`FIGURE ...`).
"""

from __future__ import annotations

import collections
import json
import os
import time

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary, wait_converged
from test_storepos_app import apps, new_uuid, storepos_master, wait_shows  # noqa: F401 (apps: a fixture)


def storepos_cli(master: OrderSyncNode, *args: str) -> dict:
    """`ordersync storepos ARGS --data-dir DIR --json` on the master's host, parsed."""
    argv = [ordersync_binary(), "storepos", *args, "--data-dir", master.data_dir, "--json"]
    result = master.host.run(argv, timeout=30, check=False)
    assert result.returncode == 0, f"{argv}: exit {result.returncode}: {result.stdout} {result.stderr}"
    return json.loads(result.stdout)


def complete(master: OrderSyncNode, uuid: str) -> None:
    for status in ("in_progress", "completed"):
        master.cli("order", "update", uuid, "--status", status)


def counts(app) -> collections.Counter:
    return collections.Counter(row["uuid"] for row in app.screen()["rows"])


def test_refusals_put_right_and_an_ipad_coming_from_storepos(make_lan, apps):  # noqa: F811
    h1, h2, h3, h4 = make_lan(4).hosts
    master = storepos_master(h1)
    edited = master.create("Ann", table="T1", table_size=4)["uuid"]
    removed = master.create("Ben", table="T2", table_size=2)["uuid"]
    master.create("Cem", table="T3", table_size=3)
    master.create("Dan")
    complete(master, edited)
    complete(master, removed)
    a, b = apps(h2, "A"), apps(h3, "B")
    a.start()
    b.start()
    slave = OrderSyncNode.slave(h2, store="shop1")
    slave.wait_live()
    before = master.orders()
    assert len(before) == 4
    wait_shows(a, before)
    wait_shows(b, before)
    # Both apps' connect sequences are over (what puts a refusal right during one is held until
    # its last wait, Docs/PROTOCOL.md 4.4.1): two StorePOS sequences and the slave's snapshot.
    master.wait_event("snapshot.sent", count=3, timeout=20)

    # (2) A edits one completed order and removes another: both refused, both put right on A.
    started = time.monotonic()
    requests = [a.update(edited, tableSize=9), a.remove(removed)]
    assert all(a.answer(req)["found"] for req in requests), "the app applied its own changes first"
    wait_shows(a, before, timeout=5)
    elapsed = time.monotonic() - started
    print(f"FIGURE refusals put right: app A shows the master's {len(before)} orders (table size 4, "
          f"the removed order back) {elapsed * 1000:.0f} ms after its Update and Remove")
    assert elapsed < 1.0, f"app A took {elapsed:.2f}s to show the master's orders again"
    put_right = master.wait_event("storepos.put_right", count=2)
    assert {e["sent"] for e in master.events("storepos.put_right")} == {"update", "create"}, put_right
    assert master.orders() == before, "the master's orders changed"
    wait_shows(b, before, timeout=5)
    wait_converged([master, slave], timeout=20)
    screen = a.screen()
    assert next(r for r in screen["rows"] if r["uuid"] == edited)["tableSize"] == 4
    assert sorted(r["uuid"] for r in screen["stored"]) == sorted(o["uuid"] for o in before), \
        "app A's store holds the master's orders again"

    # A takes an order with a table size out of range (the app reads the field with
    # `integerValue`, EditOrderViewController.m line 111): refused (`invalid_field`) and taken
    # off A's screen and store by a Remove.
    started = time.monotonic()
    a.create(customerName="Big table", tableSize=500000)
    wait_shows(a, before, timeout=5)
    elapsed = time.monotonic() - started
    print(f"FIGURE refused Create put right: app A shows the master's {len(before)} orders again "
          f"{elapsed * 1000:.0f} ms after taking an order with table size 500000")
    assert elapsed < 1.0, f"app A took {elapsed:.2f}s to drop the refused order"
    master.wait_event("storepos.put_right", count=3)
    assert [e["sent"] for e in master.events("storepos.put_right")][2:] == ["remove"]
    assert sorted(r["uuid"] for r in a.screen()["stored"]) == sorted(o["uuid"] for o in before)
    assert master.orders() == before

    # (3) An iPad coming from StorePOS: 3 old orders in its store, which the master never had.
    old = [{"uuid": new_uuid(), "customerName": f"Old {i}", "created": "2015-03-01T10:00:0{i}+0000",
            "shippingMethod": "DHL", "tableName": f"Old T{i}", "tableSize": i + 1} for i in range(3)]
    o = apps(h4, "O")
    with open(o.store, "w") as f:
        json.dump({"rows": old}, f)
    o.start()
    wait_until(lambda: sum(counts(o).values()) == len(before) + 3, 20, 0.1, "app O to show the master's and its old orders")
    assert all(counts(o)[row["uuid"]] == 1 for row in old), "O shows its old orders (the master cannot name them)"
    requests = [o.update(old[0]["uuid"], customerName="Old 0, edited"), o.remove(old[1]["uuid"]),
                o.update(old[2]["uuid"], tableSize=7)]
    assert all(o.answer(req)["found"] for req in requests)
    master.wait_event("storepos.foreign_order", count=3)
    listed = wait_until(lambda: (lambda d: d if len(d["foreign"]) == 3 else None)(storepos_cli(master, "foreign")),
                        10, 0.2, "three foreign orders listed")
    by_uuid = {f["uuid"]: f for f in listed["foreign"]}
    assert set(by_uuid) == {row["uuid"] for row in old}, "listed as the app wrote the uuids"
    assert by_uuid[old[0]["uuid"]]["order"]["customerName"] == "Old 0, edited"
    assert by_uuid[old[1]["uuid"]]["order"]["tableName"] == "Old T1", "a Remove carries the app's whole order"
    assert all(f["state"] == "seen" and f["address"].startswith(h4.address) for f in listed["foreign"])
    assert master.status()["storeposForeign"] == 3

    # Adopt the edited one: the slave gets it, every app reconnects and shows it once.
    marks = {app.label: app.mark() for app in (a, b, o)}
    started = time.monotonic()
    adopted = storepos_cli(master, "adopt", old[0]["uuid"])
    assert [f["uuid"] for f in adopted["adopted"]] == [old[0]["uuid"]] and adopted["errors"] == []
    orders = master.orders()
    mine = next(x for x in orders if x["uuid"] == old[0]["uuid"])
    assert (mine["customerName"], mine["tableName"], mine["tableSize"], mine["status"]) == \
        ("Old 0, edited", "Old T0", 1, "open"), mine
    wait_converged([master, slave], timeout=20)
    for app in (a, b, o):
        app.wait_connected(marks[app.label], timeout=30)
    wait_shows(a, orders, timeout=20)
    wait_shows(b, orders, timeout=20)
    wait_until(lambda: counts(o) == collections.Counter([x["uuid"] for x in orders] + [old[2]["uuid"]]), 20, 0.1,
               "app O to show the master's orders once and its one old order left")
    print(f"FIGURE adopt: every app shows the adopted order once {time.monotonic() - started:.2f} s after "
          f"`storepos adopt` (reconnect through the re-announcement); app O did not crash")
    assert master.status()["storeposForeign"] == 2

    # Clear the rest: the old order still on O's screen goes.
    started = time.monotonic()
    cleared = storepos_cli(master, "clear", "--all")
    assert {f["uuid"] for f in cleared["cleared"]} == {old[1]["uuid"], old[2]["uuid"]}
    wait_shows(o, orders, timeout=10)
    print(f"FIGURE clear: app O's last old order gone {(time.monotonic() - started) * 1000:.0f} ms after "
          f"`storepos clear --all`")
    assert master.orders() == orders
    assert master.status()["storeposForeign"] == 0
    for app in (a, b):
        wait_shows(app, orders, timeout=5)
