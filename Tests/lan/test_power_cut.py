"""Power cuts below SQLite with real processes. SIGKILL never loses a write the kernel accepted, so
the master's and a slave's data dirs live on `powercut_fs` (a FUSE layer, see powercut.py and the
header of powercut_fs.c) that keeps every write since a file's last fsync apart and, at a cut,
undoes or tears it (and undoes every name change whose directory was not synced).

* The layer itself: a file never synced is gone after a cut, an overwrite not synced is undone,
  a synced file is intact; torn writes mix old and new sectors; SQLite commits made with
  `synchronous=OFF` are lost and those made with `FULL` are not. So the tests below could fail.
* The master, a slave, or both are SIGKILLed during a burst of creates, updates and removes
  (from two slaves' local APIs and the master's own), at a point chosen by seed: by the
  filesystem inside the Nth fsync (a commit written and not yet synced, so not acknowledged),
  or from outside once the master's seq reaches a point; then their filesystems lose what was
  not synced (dropped or torn, by seed). Restarted on the same mounts:
  every acknowledged operation is journalled exactly once, in order, the retries of operations in
  flight are not applied twice, and every node holds the orders they make.
* Orders a cut-off slave acknowledged (queued in its outbox) survive its power cut and reach the
  master exactly once when its link comes back; an order whose commit was cut inside its fsync
  (never acknowledged) is lost, and sent again with its operation id it is delivered once.
"""

import http.client
import os
import random
import sqlite3
import uuid as uuidlib

import pytest
from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, journal_entries, run_workload, wait_converged, workload_results
from powercut import PowerCutMount, missing_prerequisites
from sync_checks import CREATE, check_applied_once, check_final_orders, expected_orders

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]
#: Each round: (seed, whose power is cut, how the unsynced writes are lost, when: inside the Nth
#: fsync of a commit, the process SIGKILLed by the filesystem, or SIGKILL once the master's seq
#: reaches a point). N and the seq are drawn from the seed.
ROUNDS = [(11, "master", "drop", "fsync"), (12, "slave", "tear", "fsync"), (13, "both", "tear", "seq"),
          (14, "master", "tear", "fsync")]


def require_fuse() -> None:
    missing = missing_prerequisites()
    require(not missing, "powercut_fs cannot run here: " + "; ".join(missing))


def sync_dir(path: str) -> None:
    """fsync(2) of a directory: the names made in it are durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: str, data: bytes, sync: bool) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def durable_dir(mount: PowerCutMount, name: str) -> str:
    """A data dir on the mount whose own name survives a cut (what the node writes in it is the
    node's business)."""
    path = os.path.join(mount.path, name)
    os.makedirs(path, mode=0o700)
    sync_dir(mount.path)
    return path


def test_the_layer_loses_what_was_not_synced_and_keeps_what_was(tmp_path):
    require_fuse()
    with PowerCutMount(tmp_path) as disk:
        root = disk.path
        write_file(f"{root}/synced", b"A" * 8192, sync=True)
        sync_dir(root)
        write_file(f"{root}/never-synced", b"B" * 5000, sync=False)
        write_file(f"{root}/data-synced-name-not", b"C" * 100, sync=True)
        # Overwrites the second half and grows the file, not synced, through a write-only fd.
        fd = os.open(f"{root}/synced", os.O_WRONLY)
        os.pwrite(fd, b"D" * 10000, 4096)
        os.close(fd)
        os.rename(f"{root}/synced", f"{root}/renamed")
        dropped = disk.cut("drop", seed=1)
        assert sorted(os.listdir(root)) == ["synced"], os.listdir(root)
        with open(f"{root}/synced", "rb") as f:
            assert f.read() == b"A" * 8192
        assert dropped == {"bytes": 5000 + 10000, "files": 2, "names": 3}, dropped

        # Torn: each 512-byte sector of an unsynced write is old or new at random (by seed).
        with open(f"{root}/synced", "r+b") as f:
            f.write(b"E" * 8192)
        disk.cut("tear", seed=2)
        with open(f"{root}/synced", "rb") as f:
            sectors = {f.read(512)[:1] for _ in range(16)}
        assert sectors == {b"A", b"E"}, f"a torn write should leave old and new sectors, found {sectors}"

        # SQLite on the layer: the table is made durably, then 50 commits with synchronous=OFF or
        # FULL. Closing checkpoints, which syncs only under FULL.
        databases = {mode: sqlite3.connect(f"{root}/{mode}.sqlite", isolation_level=None) for mode in ("OFF", "FULL")}
        for db in databases.values():
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            db.execute("CREATE TABLE t(x)")
        sync_dir(root)
        for mode, db in databases.items():
            db.execute(f"PRAGMA synchronous = {mode}")
            for i in range(50):
                db.execute("INSERT INTO t VALUES (?)", (i,))
            db.close()
        assert disk.status()["unsynced_bytes"] > 0
        dropped = disk.cut("drop", seed=3)
        kept = {}
        for mode in ("OFF", "FULL"):
            db = sqlite3.connect(f"{root}/{mode}.sqlite")
            kept[mode] = db.execute("SELECT count(*) FROM t").fetchone()[0]
            db.close()
        assert kept == {"OFF": 0, "FULL": 50}, f"commits kept after the cut: {kept}"
        print(f"FIGURE power cut sanity: synchronous=FULL kept {kept['FULL']}/50 commits, OFF kept {kept['OFF']}/50; "
              f"{dropped['bytes']} unsynced bytes dropped")


def acked_ops(writers: list) -> tuple[list[dict], list[dict]]:
    """The operations the workload processes sent: (acknowledged, all)."""
    results = [op for w in writers for op in workload_results(w, timeout=90)]
    return [op for op in results if op["acked"]], results


def count_lost_and_doubled(journal: list[dict], sent: list[dict]) -> tuple[int, int]:
    """Acknowledged operations missing from the journal, and journal entries beyond one per
    acknowledged operation among those naming the orders they name (for the FIGURE lines;
    `check_applied_once` says which)."""
    ids = {e["opId"] for e in journal}
    uuids = {op["uuid"].lower() for op in sent}
    naming = sum(1 for e in journal if {u.lower() for u in e["orders"]} & uuids)
    lost = sum(1 for op in sent if op["opId"] not in ids)
    return lost, max(0, naming - (len(sent) - lost))


def test_power_cuts_of_master_and_slave_lose_and_duplicate_nothing_acknowledged(make_lan, tmp_path):
    require_fuse()
    lan = make_lan(3)
    h1, h2, h3 = lan.hosts
    with PowerCutMount(tmp_path / "master-disk") as master_disk, PowerCutMount(tmp_path / "slave-disk") as slave_disk:
        master = OrderSyncNode.master(h1, store="shop1", port=17620, extra=FAST,
                                      data_dir=durable_dir(master_disk, "master-data"))
        on_disk = OrderSyncNode.slave(h2, extra=FAST, data_dir=durable_dir(slave_disk, "slave-data"))
        other = OrderSyncNode.slave(h3, extra=FAST)
        for s in (on_disk, other):
            s.wait_live()
        sent, dropped, retried = [], {"bytes": 0, "names": 0}, 0
        for seed, whom, mode, when in ROUNDS:
            chooser = random.Random(seed)
            victims = [(n, d) for n, d in ((master, master_disk), (on_disk, slave_disk)) if whom in ("both", n.role)]
            cut_at = master.status()["seq"] + chooser.randint(10, 70)
            fsyncs = chooser.randint(5, 40)
            if when == "fsync":
                for _, disk in victims:
                    disk.kill_at_fsync(fsyncs)
            writers = [run_workload(node, f"{node.host.name}r{seed}", count=40) for node in (master, on_disk, other)]
            if when == "fsync":
                where = f"inside its fsync #{fsyncs}"
                for node, disk in victims:
                    wait_until(lambda: not node.alive(), 30, what=f"the {node.role} killed in its fsync #{fsyncs}")
                    assert disk.status()["killed_pid"] > 0
                    node.stop()
            else:
                where = f"at seq {cut_at}"
                wait_until(lambda: master.status()["seq"] >= cut_at, 30, what=f"the burst to reach seq {cut_at}")
                for node, _ in victims:
                    node.kill()
            round_bytes, files = 0, {}
            for node, disk in victims:
                disk.wait_closed()
                files.update({f"{node.role}:{os.path.basename(p)}": n for p, n in disk.unsynced_files().items()})
                lost = disk.cut(mode, seed=seed)
                round_bytes += lost["bytes"]
                dropped["names"] += lost["names"]
            dropped["bytes"] += round_bytes
            for node, _ in victims:
                node.start()
            for s in (on_disk, other):
                s.wait_live(timeout=30)
            acked, results = acked_ops(writers)
            assert len(acked) == len(results), f"refused: {[op for op in results if not op['acked']][:3]}"
            sent += acked
            retries = sum(op["attempts"] > 1 for op in acked)
            retried += retries
            orders = wait_converged([master, on_disk, other], timeout=30)
            for s in (on_disk, other):
                s.wait_drained(timeout=30)
            journal = journal_entries(master.data_dir)
            brief = [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in sent]
            lost_ops, doubled = count_lost_and_doubled(journal, brief)
            check_applied_once(journal, brief)
            check_final_orders(expected_orders(sent), orders)
            print(f"FIGURE power cut round {seed}: {whom} cut ({mode}) {where}, {round_bytes} unsynced bytes "
                  f"dropped; {len(acked)} operations acknowledged ({sum(op['status'] == 202 for op in acked)} queued "
                  f"by a slave, {retries} sent again after no answer), lost {lost_ops}, duplicated {doubled}; "
                  f"unsynced at the cut: {files}")
        print(f"FIGURE power cuts: {len(ROUNDS)} rounds, {len(sent)} acknowledged operations ({retried} sent again), "
              f"lost 0, duplicated 0; {dropped['bytes']} unsynced bytes and {dropped['names']} unsynced names dropped")
        assert dropped["bytes"] > 0, "no cut found anything unsynced to drop: the test proved nothing"
        for node in (other, on_disk, master):
            assert node.stop() == 0


def test_orders_a_cut_off_slave_acknowledged_survive_its_power_cut(lan2, tmp_path):
    require_fuse()
    h1, h2 = lan2.hosts
    with PowerCutMount(tmp_path / "slave-disk") as disk:
        master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
        slave = OrderSyncNode.slave(h2, extra=FAST, data_dir=durable_dir(disk, "slave-data"))
        slave.wait_live()
        h2.link_down()
        wait_until(lambda: slave.status()["master"]["state"] != "live", 10, what="the cut-off slave to notice")
        sent = []
        for i in range(5):
            op = {"opId": f"queued-{i}", "operation": CREATE,
                  "order": {"uuid": str(uuidlib.uuid4()).upper(), "customerName": f"queued {i}", "note": "0"}}
            status, answer = slave.operation(CREATE, op["order"], op["opId"])
            assert status == 202, (status, answer)
            sent.append(op)
        assert slave.status()["outbox"] == 5
        # A sixth order whose commit is cut inside its fsync: never acknowledged, and lost.
        in_flight = {"opId": "in-flight", "operation": CREATE,
                     "order": {"uuid": str(uuidlib.uuid4()).upper(), "customerName": "in flight", "note": "0"}}
        disk.kill_at_fsync(1)
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            slave.operation(CREATE, in_flight["order"], in_flight["opId"])
        wait_until(lambda: not slave.alive(), 10, what="the slave killed inside its fsync")
        slave.stop()
        disk.wait_closed()
        dropped = disk.cut("drop", seed=5)
        slave.start()
        slave.wait_api()
        assert slave.status()["outbox"] == 5, "the acknowledged orders left the outbox in the power cut"
        # The till sends it again with the same operation id: queued once.
        status, answer = slave.operation(CREATE, in_flight["order"], in_flight["opId"])
        assert status == 202, (status, answer)
        sent.append(in_flight)
        assert slave.status()["outbox"] == 6
        h2.link_up()
        slave.wait_live(timeout=30)
        orders = wait_converged([master, slave], timeout=30, expect=6)
        slave.wait_drained(timeout=30)
        check_applied_once(journal_entries(master.data_dir),
                           [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in sent])
        check_final_orders(expected_orders(sent), orders)
        print(f"FIGURE slave power cut with 5 queued orders and one inside its commit: 5 kept, the one in flight "
              f"lost and sent again, 6 delivered once, lost 0, duplicated 0; {dropped['bytes']} unsynced bytes dropped")
        assert slave.stop() == 0 and master.stop() == 0
