"""A master restored from a backup loses nothing its tills hold (issue 27, item 3), with real
processes on a simulated store LAN: a master and two paired slaves take orders; `ordersync
backup` copies the store and the key files (`FILE.keys/`, 0600); then both tills and the
master's own API take more orders, updates and a removal, each acknowledged (the slaves'
outboxes drained, every order `synced`; the master's writes answered). The master's terminal
is then lost whole: its data directory is moved away and a new one is made from the backup and
its keys only, as Docs/OPERATIONS.md says (one till is off meanwhile, and the restored master
takes a write before it is back). The restored master keeps its epoch and starts a new term
(`store.restored`); each slave, ahead of it, is answered `diverged` and sends back what it
holds beyond the backup; the master applies each operation once.

Checked: every acknowledged order is on every terminal with its last fields and the removed one
is gone (0 lost), every operation id of the second half is in the master's journal exactly once
and every order is created once (0 duplicated), the master's node id and epoch are unchanged,
no till pairs again (its `master.trust` unchanged, no `pairing.required`), and the replicas
equal the master's store. Prints `FIGURE restore: …` (`pytest -s`).

A master restored from the database file without its key says so (`store.restored_other_key`,
with the fix), and once the key is copied back the till follows it without pairing.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import stat

import pytest

from failover_lab import master_ballot
from ordersync_lab import OrderSyncNode, journal_entries, read_sqlite, wait_converged

pytestmark = pytest.mark.usefixtures("ordersync_built")


def database(node: OrderSyncNode) -> str:
    return os.path.join(node.data_dir, "ordersync.sqlite")


def file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_a_restored_master_takes_back_what_its_tills_hold(lan3):
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    tills = [OrderSyncNode.slave(h2), OrderSyncNode.slave(h3)]
    for till in tills:
        till.wait_live()
    node_id, epoch = master.node_id(), master.status()["epoch"]
    trusts = {till.host.name: file_bytes(os.path.join(till.data_dir, "master.trust")) for till in tills}

    # Before the backup: orders from every terminal.
    before = [master.create(customer=f"before {i}") for i in range(3)]
    for till in tills:
        before += [till.create(customer=f"before {till.host.name} {i}") for i in range(3)]
    wait_converged([master, *tills], expect=len(before))
    for till in tills:
        till.wait_drained()

    backup = os.path.join(h1.dir, "shop1-backup.sqlite")
    made = json.loads(master.cli("backup", backup, "--json").stdout)
    assert made["orders"] == len(before) and made["epoch"] == epoch, made
    keys = made["keys"]
    assert keys == backup + ".keys" and "node.key" in made["keyFiles"], made
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o700
    for name in made["keyFiles"]:
        assert stat.S_IMODE(os.stat(os.path.join(keys, name)).st_mode) == 0o600, name
    assert file_bytes(os.path.join(keys, "node.key")) == file_bytes(os.path.join(master.data_dir, "node.key"))
    human = master.cli("backup", os.path.join(h1.dir, "second.sqlite")).stdout
    assert "keys written: " in human and "SECRET" in human, human
    backup_seq = made["journalSeq"]

    # After the backup: each acknowledged, none in the backup.
    after = [master.create(customer=f"after master {i}") for i in range(3)]
    for till in tills:
        after += [till.create(customer=f"after {till.host.name} {i}") for i in range(4)]
    # A till changes an order made before the backup, the other one made after it; the master
    # removes one of before.
    changed_before = before[3]["uuid"]
    tills[0].update(changed_before, customer="changed after the backup")
    changed_after = after[3]["uuid"]  # made on tills[0] after the backup
    tills[1].update(changed_after, customer="changed on the other till")
    removed = before[0]["uuid"]
    master.remove(removed)
    expected = {o["uuid"] for o in before + after} - {removed}
    orders = wait_converged([master, *tills], expect=len(expected))
    for till in tills:
        till.wait_drained()
    acknowledged = {o["uuid"]: o for o in orders}
    journal = journal_entries(master.data_dir)
    lost_tail = [e for e in journal if e["seq"] > backup_seq]
    tail_ids = [e["opId"] for e in lost_tail if e["opId"]]
    assert len(lost_tail) == len(after) + 3, lost_tail

    # The master's terminal is lost: a new data directory from the backup and its keys only.
    # The second till is off meanwhile: the restored master takes a write before it is back,
    # at a seq that till holds another entry at.
    assert tills[1].stop() == 0
    assert master.stop() == 0
    gone = master.data_dir + ".lost"
    os.rename(master.data_dir, gone)
    os.mkdir(master.data_dir, 0o700)
    shutil.copyfile(backup, database(master))
    os.chmod(database(master), 0o600)
    for name in os.listdir(keys):
        shutil.copy2(os.path.join(keys, name), os.path.join(master.data_dir, name))
    master.start()
    restored = master.wait_event("store.restored", timeout=20)
    master.wait_api()
    # The new term is the master's own ballot (PROTOCOL 7.16): above the copy's term 1, owned by
    # its member number, so a till promoted meanwhile could never hold the same one.
    new_term = str(master_ballot(master))
    assert restored["epoch"] == epoch and restored["term"] == new_term and restored["term.start"] == str(backup_seq + 1), restored
    assert master.node_id() == node_id and master.status()["epoch"] == epoch
    tills[0].wait_event("sync.diverged", timeout=30)
    restored_write = master.create(customer="after the restore")
    expected.add(restored_write["uuid"])
    tills[1].start()

    # Every till sends back what it holds beyond the backup; all converge on every order.
    for till in tills:
        till.wait_event("sync.diverged", timeout=30)
    orders = wait_converged([master, *tills], expect=len(expected), timeout=60)
    for till in tills:
        till.wait_drained(timeout=60)
    held = {o["uuid"]: o for o in orders}
    assert set(held) == expected, f"lost: {sorted(expected - set(held))}; extra: {sorted(set(held) - expected)}"
    assert removed not in held
    assert held[changed_before]["customerName"] == "changed after the backup"
    assert held[changed_after]["customerName"] == "changed on the other till"
    for uuid, order in acknowledged.items():
        assert held[uuid]["customerName"] == order["customerName"], (uuid, held[uuid], order)

    # Exactly once: every op id of the lost tail once, every order created once.
    journal = journal_entries(master.data_dir)
    ids = collections.Counter(e["opId"] for e in journal if e["opId"])
    assert all(n == 1 for n in ids.values())
    assert set(tail_ids) <= set(ids), f"not brought back: {set(tail_ids) - set(ids)}"
    creates = collections.Counter(u.lower() for e in journal if e["operation"] == 0 for u in e["orders"])
    assert all(n == 1 for n in creates.values()), [u for u, n in creates.items() if n > 1]
    assert set(creates) >= {u.lower() for u in expected}

    # No till paired again.
    for till in tills:
        assert file_bytes(os.path.join(till.data_dir, "master.trust")) == trusts[till.host.name]
        assert not till.events("pairing.required")
        assert till.status()["master"]["state"] == "live"
    terms = read_sqlite(master.data_dir, "SELECT value FROM metadata WHERE key = 'sync.term'")
    assert terms == [{"value": new_term}], terms
    print(f"FIGURE restore: backup at seq {backup_seq}, {len(lost_tail)} entries after it "
          f"({len(after)} creates, 2 updates, 1 removal) brought back from the tills, 0 lost, 0 duplicated; "
          f"{len(held)} orders on every terminal")
    for node in (*tills, master):
        assert node.stop() == 0


def test_a_master_restored_without_its_key_says_so_and_is_mended_by_copying_the_key(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    till = OrderSyncNode.slave(h2)
    till.wait_live()
    node_id = master.node_id()
    orders = [master.create(customer=f"order {i}") for i in range(3)]
    wait_converged([master, till], expect=len(orders))
    backup = os.path.join(h1.dir, "shop1-backup.sqlite")
    keys = json.loads(master.cli("backup", backup, "--json").stdout)["keys"]
    # Without --force an existing key folder is refused, and the backup is left as it was.
    again = master.cli("backup", os.path.join(h1.dir, "other.sqlite"), check=False)
    assert again.returncode == 0, again.stderr
    os.remove(os.path.join(h1.dir, "other.sqlite"))
    refused = master.cli("backup", os.path.join(h1.dir, "other.sqlite"), check=False)
    assert refused.returncode == 73 and "other.sqlite.keys already exists" in refused.stderr, refused.stderr
    assert not os.path.exists(os.path.join(h1.dir, "other.sqlite"))

    # Restored from the database file alone: a new key, named as the problem with its fix.
    assert master.stop() == 0
    os.rename(master.data_dir, master.data_dir + ".lost")
    os.mkdir(master.data_dir, 0o700)
    shutil.copyfile(backup, database(master))
    os.chmod(database(master), 0o600)
    master.start()
    event = master.wait_event("store.restored_other_key", timeout=20)
    assert event["level"] == "error" and event["backup.node_id"] == node_id and event["node.id"] != node_id, event
    assert "FILE.keys" in event["hint"], event

    # The fix it names: the key copied back, a restart; the till follows without pairing.
    assert master.stop() == 0
    shutil.copy2(os.path.join(keys, "node.key"), os.path.join(master.data_dir, "node.key"))
    master.start()
    master.wait_api()
    assert master.node_id() == node_id
    assert len(master.events("store.restored_other_key")) == 1, "reported once: the backup's mark is cleared"
    till.wait_live(timeout=30)
    wait_converged([master, till], expect=len(orders))
    assert not till.events("pairing.required")
    for node in (till, master):
        assert node.stop() == 0
