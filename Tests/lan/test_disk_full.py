"""A master whose disk is full refuses to store a change (nothing is half-applied), and a
slave keeps that change in its outbox and delivers it once there is room again: nothing lost,
and nothing applied twice although it was sent again after each refusal."""

import os
import subprocess
import uuid
from datetime import datetime

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, journal_entries, wait_converged
from sync_checks import CREATE, UPDATE, check_applied_once, check_final_orders, expected_orders


def test_a_change_refused_for_a_full_disk_stays_queued_and_is_delivered_later(lan2, tmp_path):
    h1, h2 = lan2.hosts
    disk = tmp_path / "master-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        master = OrderSyncNode.master(h1, store="shop1", data_dir=str(disk / "data"))
        slave = OrderSyncNode.slave(h2)
        slave.wait_live()
        first = slave.create(customer="before")
        filler = disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k", "count=1000"], capture_output=True)
        big = "x" * 3000
        sent = [{"opId": "disk-full-create", "operation": CREATE,
                 "order": {"uuid": str(uuid.uuid4()).upper(), "customerName": big, "note": "0", "x-extra": {"big": True}}}]
        status, answer = slave.operation(CREATE, sent[0]["order"], sent[0]["opId"])
        assert status == 202, (status, answer)
        queued = answer["pending"][0]
        master.wait_event("message.rejected", where=lambda e: e.get("code") == "storage_failed", timeout=20)
        assert queued["sync"] == "pending", queued
        assert slave.status()["outbox"] == 1
        assert {o["uuid"] for o in master.orders()} == {first["uuid"]}
        slave.wait_event("outbox.retry", timeout=10)
        # The master ends the link after each failure; the slave comes back no sooner than the
        # longest backoff (2.5-5 s), not in a tight loop while the disk stays full.
        failures = lambda e: e.get("code") == "storage_failed"
        master.wait_event("message.rejected", where=failures, count=3, timeout=30)
        stamps = [datetime.fromisoformat(e["ts"].replace("Z", "+00:00")) for e in master.events("message.rejected") if failures(e)]
        spacing = (stamps[2] - stamps[0]).total_seconds()
        assert spacing >= 4.5, f"three tries within {spacing:.1f}s"
        print(f"disk full: tries spaced {spacing / 2:.1f}s apart on average")
        # A change queued behind the refused one: it must not overtake it, nor be applied twice.
        sent.append({"opId": "disk-full-update", "operation": UPDATE,
                     "order": {"uuid": queued["uuid"], "note": "0|1", "x-updates": 1}})
        status, answer = slave.operation(UPDATE, sent[1]["order"], sent[1]["opId"])
        assert status == 202, (status, answer)
        os.remove(filler)
        orders = wait_converged([master, slave], timeout=30, expect=2)
        wait_until(lambda: slave.status()["outbox"] == 0, 10, what="the outbox to empty")
        check_applied_once(journal_entries(master.data_dir),
                           [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in sent])
        check_final_orders(expected_orders(sent), orders)
        assert slave.stop() == 0 and master.stop() == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
