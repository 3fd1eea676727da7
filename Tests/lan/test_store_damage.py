"""A store that refuses damage, with real processes and real SQLite files: a master whose
`orders` pages were overwritten with garbage refuses to start (exit 74, the file and
quick_check's lines and the way back on stderr) instead of serving an empty store; a slave
with a damaged replica moves it aside, keeps its outbox and resyncs; `ordersync backup` while
the master runs, a restore that keeps the epoch and starts a new term, and a slave that sends
back the orders made after the backup; a `--data-dir` whose parent is missing is refused, not created."""

import glob
import json
import os
import shutil
import sqlite3

from failover_lab import master_ballot
from ordersync_lab import OrderSyncNode, ordersync_binary, read_sqlite, wait_converged

# Docs/OPERATIONS.md, "Exit codes".
NOT_FOUND = 66
REFUSED = 73
STORAGE_FAILURE = 74


def database(node: OrderSyncNode) -> str:
    return os.path.join(node.data_dir, "ordersync.sqlite")


def overwrite_table_pages(path: str, table: str) -> list[int]:
    """Overwrites every page of `table` (found with the dbstat virtual table) with garbage, as
    a failing disk would; the node must be stopped. Returns the page numbers."""
    connection = sqlite3.connect(path)
    try:
        # Everything in the WAL goes into the file first, so the garbage is what SQLite reads.
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        try:
            pages = [row[0] for row in connection.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
        except sqlite3.OperationalError:  # an SQLite built without the dbstat table: the root page
            pages = [connection.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]]
    finally:
        connection.close()
    assert pages, f"no pages of {table} in {path}"
    garbage = bytes((i * 37 + 11) & 0xFF for i in range(page_size))
    with open(path, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * page_size)
            f.write(garbage)
        f.flush()
        os.fsync(f.fileno())
    return pages


def wait_exit(node: OrderSyncNode, timeout: float = 20) -> int:
    code = node.process.wait(timeout=timeout)
    node.log_file.close()
    node.process = None
    return code


def test_a_master_with_garbage_in_its_orders_pages_refuses_to_start(make_lan):
    h1 = make_lan(1).hosts[0]
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    for i in range(40):
        master.create(customer=f"customer {i}", note="x" * 200)
    assert master.stop() == 0
    pages = overwrite_table_pages(database(master), "orders")
    damaged = open(database(master), "rb").read()

    log_start = len(master.log_lines())
    master.start()
    code = wait_exit(master)
    output = "\n".join(master.log_lines()[log_start:])
    assert code == STORAGE_FAILURE, output
    assert not master.events("node.started")[1:], "the damaged master must not start serving"
    assert f"the order store {database(master)} is damaged" in output, output
    assert "quick_check" in output and "ordersync backup" in output and "Docs/OPERATIONS.md" in output, output
    # quick_check's own lines are quoted (one names a damaged page of the table), in the
    # refusal's event.
    refusal = master.events("start.store_unusable")[-1]
    assert refusal["level"] == "error" and refusal["exit_code"] == STORAGE_FAILURE, refusal
    assert f"\n    Page {pages[0]}: btreeInitPage() returns error code 11\n" in refusal["error"], refusal
    assert open(database(master), "rb").read() == damaged, "the refused file is left as it was"
    print(f"FIGURE damaged master: {len(pages)} pages overwritten, exit {code}")

    # The read-only commands and the backup refuse it too.
    listed = master.cli("order", "list", check=False)
    assert listed.returncode == STORAGE_FAILURE and "damaged" in listed.stderr, listed.stderr
    backup = os.path.join(h1.dir, "damaged-backup.sqlite")
    made = master.cli("backup", backup, check=False)
    assert made.returncode == STORAGE_FAILURE and "damaged" in made.stderr, made.stderr
    assert not glob.glob(backup + "*"), "no backup (or temporary file) is left from a damaged store"


def test_a_schema_newer_than_the_binary_is_refused(make_lan):
    h1 = make_lan(1).hosts[0]
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    assert master.stop() == 0
    connection = sqlite3.connect(database(master))
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    connection.execute(f"PRAGMA user_version = {version + 1}")
    connection.close()
    log_start = len(master.log_lines())
    master.start()
    code = wait_exit(master)
    output = "\n".join(master.log_lines()[log_start:])
    assert code == REFUSED, output
    assert f"schema version {version + 1}, newer than this build's {version}" in output, output


def test_a_damaged_slave_replica_is_moved_aside_and_resynced_with_its_outbox_kept(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    for i in range(30):
        master.create(customer=f"before {i}", note="y" * 200)
    wait_converged([master, slave], expect=30)
    terminal_id = slave.status().get("terminalId")
    master_seq = master.status()["seq"]
    snapshots_before = len(slave.events("snapshot.received"))

    # The master is down: the slave takes an order and keeps it in its outbox.
    assert master.stop() == 0
    queued = slave.create(customer="queued while the master was down")
    assert queued.get("sync") == "pending", queued
    # A slave's backup says where its replica stands and what waits in its outbox.
    copy = json.loads(slave.cli("backup", os.path.join(h2.dir, "replica-backup.sqlite"), "--json").stdout)
    assert copy["role"] == "slave" and copy["orders"] == 31 and copy["outbox"] == 1, copy
    assert copy["replicaSeq"] == master_seq, (copy, master_seq)
    assert slave.stop() == 0
    pages = overwrite_table_pages(database(slave), "orders")

    master.start()
    slave.start()
    event = slave.wait_event("store.replica_damaged", timeout=20)
    assert event["outbox.kept"] in ("1", 1) and event["outbox.lost"] in ("0", 0), event
    moved = glob.glob(database(slave) + ".damaged-*")
    assert event["moved_to"] in moved, (event, moved)
    assert [p for p in moved if not p.endswith(("-wal", "-shm"))] == [event["moved_to"]], moved
    slave.wait_live(timeout=30)
    orders = wait_converged([master, slave], expect=31, timeout=30)
    assert queued["uuid"] in {o["uuid"] for o in orders}, "the order queued before the damage reached the master"
    assert slave.status().get("terminalId") == terminal_id, "the terminal keeps its id"
    assert len(slave.events("snapshot.received")) == snapshots_before + 1, "the fresh replica came from a snapshot"
    # The damaged file is kept as it was left, for inspection.
    kept = open(event["moved_to"], "rb").read()
    page_size = int.from_bytes(kept[16:18], "big")  # the database header's page size
    assert kept[(pages[0] - 1) * page_size:(pages[0] - 1) * page_size + 8] == bytes((i * 37 + 11) & 0xFF for i in range(8))
    print(f"FIGURE damaged slave: {len(pages)} pages overwritten, outbox kept {event['outbox.kept']}, converged on 31 orders")
    assert slave.stop() == 0 and master.stop() == 0


def test_backup_while_running_then_restore_keeps_the_epoch_and_the_slave_sends_back_later_orders(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    kept = [master.create(customer=f"kept {i}") for i in range(5)]
    kept.append(slave.create(customer="kept from the slave"))
    wait_converged([master, slave], expect=6)
    status = master.status()
    epoch = status["epoch"]

    backup = os.path.join(h1.dir, "shop1-backup.sqlite")
    made = json.loads(master.cli("backup", backup, "--json").stdout)
    assert made["orders"] == 6 and made["journalSeq"] == status["seq"] and made["epoch"] == epoch, made
    assert made["role"] == "master" and made["file"] == backup, made
    assert os.stat(backup).st_mode & 0o777 == 0o600
    assert not os.path.exists(backup + "-wal"), "the backup is one file"
    # An existing file is not overwritten without --force.
    before = open(backup, "rb").read()
    again = master.cli("backup", backup, check=False)
    assert again.returncode == REFUSED and "--force" in again.stderr, again.stderr
    assert open(backup, "rb").read() == before
    assert "backup written" in master.cli("backup", backup, "--force").stdout

    later = [master.create(customer=f"after the backup {i}") for i in range(3)]
    wait_converged([master, slave], expect=9)
    snapshots_before = len(slave.events("snapshot.received"))

    # Restore as Docs/OPERATIONS.md says: stop, move the store and its -wal/-shm aside, copy.
    assert master.stop() == 0
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(database(master) + suffix):
            os.rename(database(master) + suffix, database(master) + ".before-restore" + suffix)
    shutil.copyfile(backup, database(master))
    os.chmod(database(master), 0o600)
    master.start()
    restored = master.wait_event("store.restored", timeout=20)
    master.wait_api()
    # A master's store keeps its epoch and starts a new term after the backup's last seq; the
    # slave, ahead of it, puts the later entries back into its outbox and sends them again.
    assert master.status()["epoch"] == epoch and restored["epoch"] == epoch, restored
    # The new term is the master's own ballot (PROTOCOL 7.16), above the copy's term 1.
    new_term = str(master_ballot(master))
    assert restored["term"] == new_term and restored["term.start"] == str(made["journalSeq"] + 1), restored
    slave.wait_event("sync.diverged", timeout=30)
    slave.wait_event("snapshot.received", count=snapshots_before + 1, timeout=30)
    orders = wait_converged([master, slave], expect=9, timeout=30)
    assert {o["uuid"] for o in orders} == {o["uuid"] for o in kept + later}, "orders made after the backup come back"
    # The term stays on the next start: the mark was cleared.
    master.restart()
    master.wait_api()
    assert master.status()["epoch"] == epoch
    assert len(master.events("store.restored")) == 1
    terms = read_sqlite(master.data_dir, "SELECT value FROM metadata WHERE key = 'sync.term'")
    assert terms == [{"value": new_term}], terms
    print(f"FIGURE restore: epoch {epoch[:8]} kept, term {new_term}, the slave sent back {len(later)} orders made after the backup")
    assert slave.stop() == 0 and master.stop() == 0


def test_a_data_dir_whose_parent_is_missing_is_refused_and_not_created(make_lan):
    h1 = make_lan(1).hosts[0]
    typo = os.path.join(h1.dir, "shpo")
    for role, extra in (("master", ["--port", "0"]), ("slave", ["--master", "ws://127.0.0.1:9/"])):
        result = h1.run([ordersync_binary(), role, "--data-dir", os.path.join(typo, "data"), *extra], check=False)
        assert result.returncode == NOT_FOUND, result.stderr
        assert f"its parent directory {typo} does not exist" in result.stderr, result.stderr
        assert not os.path.exists(typo), "missing parents are never created"
    # The data directory itself is still made (0700) when its parent exists.
    made = os.path.join(h1.dir, "new-data")
    master = OrderSyncNode.master(h1, store="shop1", data_dir=made, umask=0o022)
    master.wait_api()
    assert os.stat(made).st_mode & 0o777 == 0o700
    assert master.stop() == 0
