"""An upgrade with orders flowing (issue 27, item 4), with real processes on a simulated store
LAN: a master and a paired till take orders; the master is stopped while the till goes on
taking orders (they wait in its outbox), its store is taken back to the previous schema
version, and the master is started again: before migrating, it copies the store to
`backups/store-v<old>-<time>.db` (`store.migration_backup`), a file that opens at the old
version with every entry the store had; the till's queued orders and the orders taken during
and after the start reach every terminal once. Then the till is upgraded the same way while the
master takes orders.

The store of the previous version is made by this build and taken back: migrations 13, 14 and 15
(the newest, `Sources/Shell/OrderStore/Schema.swift`) only added `journal.term`,
`paired_terminals.voter`, `paired_terminals.number` (with its index) and the table
`applied_op_ids` (with its index), so dropping those (and
the term and member-number metadata that came with them) and setting `user_version` to 12 gives
the layout the previous release wrote. Building
the previous release from git instead would take most of an hour on a CI machine.
`MigrationBackupTests.testTheUpgradeTestsWayBackGivesThePreviousLayout` checks that these
statements give exactly the tables, columns and indexes the migrations up to 12 make.
Prints `FIGURE upgrade: …`.
"""

from __future__ import annotations

import collections
import os
import sqlite3
import stat

import pytest

from ordersync_lab import OrderSyncNode, journal_entries, wait_converged

pytestmark = pytest.mark.usefixtures("ordersync_built")

#: The schema version this build writes, and the one before it.
CURRENT, PREVIOUS = 15, 12


def database(node: OrderSyncNode) -> str:
    return os.path.join(node.data_dir, "ordersync.sqlite")


def user_version(path: str) -> int:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return connection.execute("PRAGMA user_version").fetchone()[0]
    finally:
        connection.close()


def columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]


def previous_schema(path: str) -> None:
    """Takes the stopped node's store back to schema 12, as the previous release left it:
    undoes migrations 15 (its table), 14 (its column and index) and 13 (its two columns) and the term and
    member-number metadata that came with them."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert connection.execute("PRAGMA user_version").fetchone()[0] == CURRENT
        connection.execute("BEGIN")
        connection.execute("DROP TABLE applied_op_ids")
        connection.execute("DROP INDEX paired_terminals_by_number")
        connection.execute("ALTER TABLE paired_terminals DROP COLUMN number")
        connection.execute("ALTER TABLE journal DROP COLUMN term")
        connection.execute("ALTER TABLE paired_terminals DROP COLUMN voter")
        connection.execute(
            "DELETE FROM metadata WHERE key IN ('sync.term', 'sync.term_starts', 'sync.vote', 'sync.lineage', 'member.number')")
        connection.execute(f"PRAGMA user_version = {PREVIOUS}")
        connection.execute("COMMIT")
        assert "term" not in columns(connection, "journal") and "voter" not in columns(connection, "paired_terminals")
    finally:
        connection.close()


def check_migration_copy(node: OrderSyncNode, event: dict, journal_rows: int) -> str:
    """The copy named by `store.migration_backup`: in DATADIR/backups, 0600, one file, at the
    previous version with the store's entries as they were."""
    copy = event["backup"]
    assert os.path.dirname(copy) == os.path.join(node.data_dir, "backups"), event
    assert os.path.basename(copy).startswith(f"store-v{PREVIOUS}-") and copy.endswith(".db"), event
    assert event["schema.from"] == str(PREVIOUS) and event["schema.to"] == str(CURRENT), event
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(copy)).st_mode) == 0o700
    assert not os.path.exists(copy + "-wal")
    connection = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == PREVIOUS
        assert connection.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert "term" not in columns(connection, "journal")
        assert connection.execute("SELECT count(*) FROM journal").fetchone()[0] == journal_rows
    finally:
        connection.close()
    assert user_version(database(node)) == CURRENT
    return copy


def test_an_upgrade_from_the_previous_schema_with_orders_flowing(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    till = OrderSyncNode.slave(h2)
    till.wait_live()
    acknowledged = [master.create(customer=f"before {i}") for i in range(4)]
    acknowledged += [till.create(customer=f"till before {i}") for i in range(4)]
    wait_converged([master, till], expect=len(acknowledged))
    till.wait_drained()

    # The master is upgraded first: stopped, its store of the previous version, started again.
    # The till takes orders all along.
    assert master.stop() == 0
    previous_schema(database(master))
    rows = len(journal_entries(master.data_dir))
    acknowledged += [till.create(customer=f"till while the master is down {i}") for i in range(3)]
    master.start()
    acknowledged += [till.create(customer=f"till while the master starts {i}") for i in range(3)]
    event = master.wait_event("store.migration_backup", timeout=20)
    master.wait_api()
    master_copy = check_migration_copy(master, event, rows)
    till.wait_live()
    acknowledged += [master.create(customer=f"after the upgrade {i}") for i in range(3)]
    acknowledged += [till.create(customer=f"till after the upgrade {i}") for i in range(3)]
    wait_converged([master, till], expect=len(acknowledged), timeout=30)
    till.wait_drained()

    # Then the till, while the master takes orders.
    assert till.stop() == 0
    previous_schema(database(till))
    till_rows = len(journal_entries(till.data_dir))
    acknowledged += [master.create(customer=f"while the till upgrades {i}") for i in range(3)]
    till.start()
    till_copy = check_migration_copy(till, till.wait_event("store.migration_backup", timeout=20), till_rows)
    till.wait_live()
    acknowledged += [till.create(customer=f"till upgraded {i}") for i in range(3)]
    orders = wait_converged([master, till], expect=len(acknowledged), timeout=30)
    till.wait_drained()

    assert {o["uuid"] for o in orders} == {o["uuid"] for o in acknowledged}, "0 lost"
    journal = journal_entries(master.data_dir)
    ids = collections.Counter(e["opId"] for e in journal if e["opId"])
    assert all(n == 1 for n in ids.values())
    creates = collections.Counter(u.lower() for e in journal if e["operation"] == 0 for u in e["orders"])
    assert sorted(creates.values()) == [1] * len(acknowledged), "each order created once"
    # A restart finds the store current: no second copy.
    master.restart()
    master.wait_api()
    assert len(master.events("store.migration_backup")) == 1
    assert os.listdir(os.path.dirname(master_copy)) == [os.path.basename(master_copy)]
    print(f"FIGURE upgrade: schema {PREVIOUS} -> {CURRENT} on the master and the till with orders flowing, "
          f"{len(acknowledged)} acknowledged orders, 0 lost, 0 duplicated; copies {os.path.basename(master_copy)}, "
          f"{os.path.basename(till_copy)}")
    for node in (till, master):
        assert node.stop() == 0
