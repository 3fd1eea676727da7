"""A slave whose master's address died falls back to the other candidates of its store and to a
fresh browse, on a simulated store LAN with real `ordersync` processes and avahi-daemons.

Each test prints the time from the live master being reachable to the slave being live again
(`time to live`); the bound is 10 s.

Needs the `ordersync` binary (``ORDERSYNC_BIN``, default ``.build/debug/ordersync``) and, for the
stale announcement, python-zeroconf (``ORDERSYNC_PYTHON``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from lan_support import require
from lanharness import PYTHON, HERE, LanError, wait_until
from ordersync_lab import CommandError, OrderSyncNode, wait_converged

#: What the master publishes in its TXT record (Docs/PROTOCOL.md, section 1).
PROTO = "ordersync/1"
#: Longest time from a master reachable at its new address to the slave live on it.
BOUND = 10.0


pytestmark = pytest.mark.usefixtures("ordersync_built")


def wait_live_on(slave: OrderSyncNode, url: str, timeout: float) -> dict:
    """Waits until the slave's link is live with `url`; returns the status."""
    def live():
        if not slave.alive():
            raise LanError("slave exited: " + "\n".join(slave.log_lines()[-20:]))
        try:
            status = slave.status()
        except CommandError:
            return None
        return status if status["master"]["state"] == "live" and status["master"]["url"] == url else None
    return wait_until(live, timeout, interval=0.05, what=f"the slave to be live on {url}")


def link_events(slave: OrderSyncNode) -> str:
    """The slave's log lines about its masters, for a failure message."""
    return "\n".join(line for line in slave.log_lines() if '"master.' in line)


def mdns_silenced(host, silent: bool) -> None:
    """Drops (or lets through again) every mDNS packet the host sends: its avahi-daemon keeps
    working, but no announcement or goodbye of it reaches the LAN."""
    action = "-A" if silent else "-D"
    subprocess.run(["ip", "netns", "exec", host.netns, "iptables", action, "OUTPUT", "-p", "udp", "--dport", "5353",
                    "-j", "DROP"], check=True, timeout=10)


def test_master_killed_without_goodbye_and_moved_is_followed_within_bound(lan3):
    """The master's host dies (avahi-daemon and master SIGKILLed: no goodbye, the service stays
    cached on the slave's host) and its data dir is started on another host: the slave is live
    there within 10 s, not retrying the dead address."""
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, store="shop9", port=17451)
    slave = OrderSyncNode.slave(h3, store="shop9")
    wait_live_on(slave, f"ws://{h1.address}:17451/", timeout=30)
    before = slave.create(customer="served by h1")
    wait_converged([master, slave], timeout=15, expect=1)

    h1.kill_avahi()
    master.kill()
    moved_dir = os.path.join(h2.dir, "moved-master-data")
    # The store as the dead host left it (the database, its WAL, the keys), not its socket.
    shutil.copytree(master.data_dir, moved_dir, ignore=shutil.ignore_patterns("*.sock"))
    assert slave.wait_event("master.connect_failed", timeout=15)["master.address"] == f"ws://{h1.address}:17451/"
    started = time.monotonic()
    moved = OrderSyncNode.master(h2, store="shop9", port=17452, data_dir=moved_dir)
    wait_live_on(slave, f"ws://{h2.address}:17452/", timeout=BOUND)
    elapsed = time.monotonic() - started
    print(f"\ntime to live after the master moved without goodbye: {elapsed:.2f} s (bound {BOUND:.0f} s); "
          f"{len(slave.events('master.candidate_failed'))} failed attempts, {len(slave.events('master.rebrowse'))} fresh browses")
    assert elapsed < BOUND
    assert slave.events("master.candidate_failed"), "the failed attempts on h1 are logged"
    after = slave.create(customer="served by h2")
    final = wait_converged([moved, slave], timeout=15, expect=2)
    assert {o["uuid"] for o in final} == {before["uuid"], after["uuid"]}
    for node in (slave, moved):
        assert node.stop() == 0


def test_stale_announcement_of_the_store_does_not_keep_the_slave_from_its_master(lan3):
    """A responder on h3 announces the store and epoch under another instance name with a port
    nothing listens on, after the real master. The master restarts while its host's mDNS
    packets are dropped (so it is not announced anew): the slave tries the newest announcement,
    the dead one, falls back to the master and is live within 10 s of the master starting."""
    h1, h2, h3 = lan3.hosts
    has_zeroconf = subprocess.run([PYTHON, "-c", "import zeroconf"], capture_output=True).returncode == 0
    require(has_zeroconf, f"python-zeroconf is not installed for {PYTHON} (set ORDERSYNC_PYTHON)")
    master = OrderSyncNode.master(h1, store="shop10", name="Front", port=17461)
    slave = OrderSyncNode.slave(h2, store="shop10")
    url = f"ws://{h1.address}:17461/"
    wait_live_on(slave, url, timeout=30)
    epoch = master.status()["epoch"]
    ghost = h3.popen([PYTHON, os.path.join(HERE, "zc_announce.py"), "--interface", h3.address, "--name", "Front Ghost",
                      "--port", "17469", f"proto={PROTO}", "store=shop10", f"epoch={epoch}", "path=/"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    silenced = False
    try:
        slave.wait_event("master.found", timeout=20, where=lambda e: e.get("service.name") == "Front Ghost")
        mdns_silenced(h1, True)
        silenced = True
        master.kill()
        master.start()
        master.wait_event("node.started", timeout=20, count=2)
        started = time.monotonic()
        try:
            wait_live_on(slave, url, timeout=BOUND)
        except LanError as error:
            raise LanError(f"{error}; the slave's log:\n{link_events(slave)}") from None
        elapsed = time.monotonic() - started
        print(f"\ntime to live with a stale announcement of the store: {elapsed:.2f} s (bound {BOUND:.0f} s); "
              f"{len(slave.events('master.candidate_failed'))} failed attempts, {len(slave.events('master.rebrowse'))} fresh browses")
        assert elapsed < BOUND
        failed = [e["master.address"] for e in slave.events("master.candidate_failed")]
        assert f"ws://{h3.address}:17469/" in failed, f"the stale announcement was tried and failed: {failed}"
    finally:
        if silenced:
            mdns_silenced(h1, False)
        ghost.kill()
        ghost.wait(timeout=10)
    for node in (slave, master):
        assert node.stop() == 0
