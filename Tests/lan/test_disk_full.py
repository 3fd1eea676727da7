"""A master whose disk is full refuses to store a change (nothing is half-applied), and a
slave keeps that change in its outbox and delivers it once there is room again: nothing lost."""

import os
import subprocess
from datetime import datetime

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, wait_converged


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
        queued = slave.create(customer=big)
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
        os.remove(filler)
        orders = wait_converged([master, slave], timeout=30, expect=2)
        assert queued["uuid"] in {o["uuid"] for o in orders}
        wait_until(lambda: slave.status()["outbox"] == 0, 10, what="the outbox to empty")
        assert slave.stop() == 0 and master.stop() == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
