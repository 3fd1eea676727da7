"""A StorePOS app left open through a restore of its master from a backup does not crash (issue
23, item 1: a Create applied again after a master change), with real processes on a simulated
LAN: a master admitting StorePOS apps, a paired slave (the till) and the app emulation
(`storepos_app.py`, which crashes on a Create of an order its store holds: event `crashed`).

The till takes orders before and after `ordersync backup`; the app shows them all and keeps them
in its store. The till is switched off, the master is restored from the copy (a new term,
PROTOCOL 7.17) and the app reconnects to it and gets its connect sequence: the orders taken
after the copy are not in the restored store, so the app still holds them. The till comes back,
is answered `diverged` and sends those orders again; the master applies their Creates and sends
the app a Remove of each before its Create (PROTOCOL 4.2.1, "An order an app may already hold").

Checked: the app never crashes, shows every order of the master exactly once and its store holds
the same uuids; the master sent it a Remove of each order the till sent back
(`storepos.held_removed`).
"""

from __future__ import annotations

import json
import os
import shutil

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, wait_converged
from test_storepos_app import apps, storepos_master, wait_shows  # noqa: F401 (apps: a fixture)


def received(app, since: int) -> int:
    """The messages the app received after event `since`."""
    with app.changed:
        return sum(1 for e in app.events[since:] if e["ev"] == "received")


def crash(app, since: int) -> dict | None:
    """The app's `crashed` (or `exited`) event after event `since`, if any."""
    with app.changed:
        return next((e for e in app.events[since:] if e["ev"] in ("crashed", "exited")), None)


def test_an_app_open_through_a_restore_gets_the_tills_orders_back_without_crashing(lan3, apps):  # noqa: F811
    h1, h2, h3 = lan3.hosts
    master = storepos_master(h1)
    till = OrderSyncNode.slave(h2, store="shop1")
    till.wait_live()
    app = apps(h3, "A")
    app.start()
    app.wait_connected()

    before = [till.create(customer=f"before {i}") for i in range(2)]
    wait_converged([master, till], expect=len(before))
    till.wait_drained()
    backup = os.path.join(h1.dir, "shop1-backup.sqlite")
    made = json.loads(master.cli("backup", backup, "--json").stdout)
    assert made["orders"] == len(before), made

    after = [till.create(customer=f"after {i}") for i in range(3)]
    wait_converged([master, till], expect=len(before) + len(after))
    till.wait_drained()
    wait_shows(app, master.orders)
    held = {o["uuid"] for o in after}
    assert held <= {row["uuid"] for row in app.screen()["stored"]}, "the app keeps the orders taken after the copy"

    # The till is off; the master is restored from the copy and its keys (Docs/OPERATIONS.md).
    assert till.stop() == 0
    mark = app.mark()
    assert master.stop() == 0
    os.rename(master.data_dir, master.data_dir + ".lost")
    os.mkdir(master.data_dir, 0o700)
    database = os.path.join(master.data_dir, "ordersync.sqlite")
    shutil.copyfile(backup, database)
    os.chmod(database, 0o600)
    for name in os.listdir(made["keys"]):
        shutil.copy2(os.path.join(made["keys"], name), os.path.join(master.data_dir, name))
    master.start()
    master.wait_event("store.restored", timeout=20)
    master.wait_api()
    app.wait_connected(since=mark, timeout=60)
    # Its connect sequence is in (a Remove of each order of the restored store, a fence, their
    # Create, a fence): it shows each order once, the ones the restored store lacks included.
    sequence = len(before) + 256 + 1 + 256
    wait_until(lambda: received(app, mark) >= sequence or None, 60, 0.2, "the app's connect sequence")
    screen = app.screen()
    assert sorted(row["uuid"] for row in screen["rows"]) == sorted(o["uuid"] for o in before + after), screen
    assert held <= {row["uuid"] for row in screen["stored"]}, screen
    mark = app.mark()

    # The till comes back: answered `diverged`, it sends the orders taken after the copy again.
    till.start()
    till.wait_event("sync.diverged", timeout=30)
    wait_converged([master, till], expect=len(before) + len(after), timeout=60)
    till.wait_drained(timeout=60)
    # For each order: a Remove, 255 empty Removes, the Create (one crash ends it sooner).
    wait_until(lambda: crash(app, mark) or received(app, mark) >= len(after) * 257 or None, 60, 0.2,
               "the orders sent back")
    assert crash(app, mark) is None, f"app {app.label} (--seed {app.seed}): {crash(app, mark)}"
    screen = wait_shows(app, master.orders, timeout=60)
    assert {row["uuid"] for row in screen["stored"]} == {o["uuid"] for o in master.orders()}, screen
    assert crash(app, mark) is None, crash(app, mark)
    # The master sent the app a Remove of each order the till sent back, before its Create.
    removed = master.events("storepos.held_removed")
    assert sum(int(e["orders"]) for e in removed) == len(after), removed
