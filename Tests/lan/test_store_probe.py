"""An idle till whose store failed a commit (a full disk) is healthy again once the disk has
room, without a write: while the store fails, the writer probes it with one metadata row every
10 s (`store.probed_ms`, committed off the loop like any write), so `ready.store` and
`ordersync check` come back on their own (Docs/OPERATIONS.md, "A failing store"). Real
processes: a master and a till on one simulated host, the till's data directory on a 4 MiB
tmpfs; the master is stopped once the till joined, so nothing else could commit on the till.
"""

import os
import subprocess
import time

import pytest

from lanharness import wait_until
from ordersync_lab import OrderSyncNode
from test_health_tills import CRITICAL, check, metrics

pytestmark = pytest.mark.usefixtures("ordersync_built")


def test_an_idle_tills_store_is_healthy_again_without_a_write_once_the_disk_has_room(make_lan, tmp_path):
    h1 = make_lan(1).hosts[0]
    disk = tmp_path / "till-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        master = OrderSyncNode.master(h1, store="shop1", port=17753, data_dir=os.path.join(h1.dir, "master"))
        till = OrderSyncNode.slave(h1, master_url="ws://127.0.0.1:17753/", data_dir=str(disk / "data"))
        till.wait_live()
        till.create(customer="before")
        wait_until(lambda: till.status()["outbox"] == 0 or None, 20, what="the order to reach the master")
        assert master.stop() == 0
        filler = disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k", "count=1000"], capture_output=True)
        big = "x" * 3000
        for i in range(10):
            result = till.cli("order", "create", "--customer", big, "--note", str(i), check=False)
            if result.returncode != 0:
                break
        assert result.returncode == 74, (result.returncode, result.stderr)
        failed = till.status()
        assert failed["ready"]["store"] == "failed", failed["ready"]
        orders, outbox = len(till.orders()), failed["outbox"]
        assert check(till)[0] == CRITICAL

        # Room again, and nothing written: the probe finds the store takes commits.
        os.remove(filler)
        freed = time.monotonic()
        wait_until(lambda: till.status()["ready"]["storeFailure"] is None or None, 30, what="the store to be healthy")
        took = time.monotonic() - freed
        s = till.status()
        assert s["ready"]["store"] == "ok" and s["outbox"] == outbox, s
        assert len(till.orders()) == orders
        assert metrics(till)["ordersync_store_ready"] == 1
        assert "store failing" not in check(till)[1]
        # One probe interval (10 s), and slack for a loaded machine.
        assert took <= 10 + 10, took
        print(f"FIGURE store probe: healthy {took:.1f} s after the disk had room, with no write")
        assert till.stop() == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
