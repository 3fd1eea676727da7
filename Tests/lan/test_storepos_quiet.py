"""StorePOS apps are never dropped for being quiet (issue "never stuck", item 8).

A StorePOS app does not answer WebSocket pings while its iPad is locked, and it never reconnects
after a close unless the master's service disappears and comes back. So the master keeps a plain
StorePOS link while TCP holds it (keepalive finds a dead host), and when one is lost anyway it
withdraws and re-announces its service, so the app connects again and receives its connect
sequence. Real processes on a simulated LAN: a master with `--insecure-storepos`, the StorePOS
app emulation (`storepos_app.py`) and an OrderSync slave. `pytest -s` prints the figures.
"""

from __future__ import annotations

import signal
import subprocess
import time

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, wait_converged
from test_hostile_lan import log_time
from test_storepos_app import apps, check_apps, storepos_master, wait_shows  # noqa: F401 - `apps` is a fixture

# Short times, so that the test sees in seconds what a shop sees in a minute: the master pings an
# idle link after 0.5 s and would drop a silent peer after 1.5 s; keepalive probes after 2 s.
LINK_TIMES = ["--ping-interval", "0.5", "--peer-timeout", "1.5", "--storepos-keepalive", "2"]


def reset_links_to(host, peer_address: str, on: bool) -> None:
    """On `host`, answers every TCP segment it sends to `peer_address` with a reset to itself
    (iptables REJECT in OUTPUT): its sockets to that peer fail at their next send, while the
    peer sees nothing."""
    action = "-A" if on else "-D"
    subprocess.run(["ip", "netns", "exec", host.netns, "iptables", action, "OUTPUT", "-p", "tcp", "-d", peer_address,
                    "-j", "REJECT", "--reject-with", "tcp-reset"], check=True, timeout=10)


def drop_links_to(host, peer_address: str, on: bool) -> None:
    """On `host`, drops every TCP segment to and from `peer_address` (iptables DROP in INPUT and
    OUTPUT): its links to that peer go silent both ways, with no reset, as when the host leaves
    the Wi-Fi; mDNS (UDP) still flows, so the host sees the master's service withdrawn and
    announced again."""
    action = "-A" if on else "-D"
    for chain, side in (("INPUT", "-s"), ("OUTPUT", "-d")):
        subprocess.run(["ip", "netns", "exec", host.netns, "iptables", action, chain, "-p", "tcp", side, peer_address,
                        "-j", "DROP"], check=True, timeout=10)


def connected_app(apps, host, label: str):
    """A StorePOS app started on `host`, once it connected to the master."""
    app = apps(host, label)
    mark = app.mark()
    app.start()
    app.wait_connected(mark)
    return app


def comes_back_with(master, app, mark: int, missed: str, while_: str) -> dict:
    """Waits for the master to announce its service again, the app to connect again (after
    `mark`) and show the order `missed`; returns the master's `storepos.reannounce`."""
    reannounce = master.wait_event("storepos.reannounce", timeout=20)
    app.wait_connected(mark, timeout=30)
    wait_until(lambda: any(r["uuid"] == missed for r in app.screen()["rows"]), 30, 0.1,
               f"the app to show the order taken while {while_}")
    return reannounce


def from_host(host):
    return lambda e: str(e.get("peer.address", "")).startswith(f"{host.address}:")


def test_a_locked_app_is_kept_and_a_lost_link_brings_the_app_back(lan3, apps):
    h1, h2, h3 = lan3.hosts
    master = storepos_master(h1, extra=LINK_TIMES)
    master.create("Ann", table="T1")
    app = connected_app(apps, h2, "A")
    # Another app, whose link stays healthy throughout, and an OrderSync slave.
    other = connected_app(apps, h3, "B")
    slave = OrderSyncNode.slave(h3, store="shop1")
    slave.wait_live()
    wait_shows(app, master.orders)

    # (1) The iPad is locked: the app's process is stopped, so it answers no ping (its host's TCP
    # still acknowledges). The master keeps the link past its peer timeout and the app, unlocked,
    # shows what was taken meanwhile on the same connection.
    connected_before = len([e for e in app.events if e["ev"] == "connected"])
    app.process.send_signal(signal.SIGSTOP)
    try:
        quiet = master.wait_event("storepos.quiet", timeout=20, where=from_host(h2))
        during = master.create("taken while the iPad was locked")["uuid"]
        # Two more silence checks after the order's broadcast: still no drop.
        master.wait_event("storepos.quiet", timeout=20, where=from_host(h2))
        held_ms = quiet["silent_ms"]
    finally:
        app.process.send_signal(signal.SIGCONT)
    wait_until(lambda: any(r["uuid"] == during for r in app.screen()["rows"]), 20, 0.1,
               "the unlocked app to show the order taken while it was locked")
    dead = [e for e in master.events("peer.dead") if from_host(h2)(e)]
    dropped = [e for e in master.events("peer.disconnected") if from_host(h2)(e)]
    connected_after = len([e for e in app.events if e["ev"] == "connected"])
    print(f"FIGURE quiet StorePOS app: silent {held_ms} ms past a 1500 ms peer timeout, kept; "
          f"{len(dead)} dropped as dead, {connected_after - connected_before} reconnects")
    assert not dead and not dropped, f"the master dropped the quiet app: {dead or dropped}"
    assert connected_after == connected_before, "the app had to connect again"

    # (2) The link is lost anyway (here: the master's next send to the app is answered by a
    # reset). The app never reconnects by itself; the master withdraws and re-announces its
    # service, and the app connects again and shows the order it missed. The other app
    # reconnects too, without closing its old socket: the master closes that old link.
    mark, other_mark = app.mark(), other.mark()
    reset_links_to(h1, h2.address, True)
    try:
        lost_at = time.monotonic()
        missed = master.create("taken while the app's link broke")["uuid"]
        master.wait_event("storepos.link_lost", timeout=20, where=from_host(h2))
    finally:
        reset_links_to(h1, h2.address, False)
    reannounce = comes_back_with(master, app, mark, missed, "its link was broken")
    back_in = time.monotonic() - lost_at
    print(f"FIGURE lost StorePOS link: the app showed the missed order {back_in:.2f} s after its link "
          f"broke (service withdrawn and announced again, {reannounce['links_lost']} lost link(s))")
    assert back_in < 15, f"the app took {back_in:.1f} s to come back"

    other.wait_connected(other_mark, timeout=30)
    replaced = master.wait_event("storepos.replaced", timeout=20, where=from_host(h3))
    assert replaced["new.peer.address"].startswith(f"{h3.address}:")
    other.wait_event(lambda e: e["ev"] == "closed", timeout=20, what="its old link closed by the master",
                     since=other_mark)

    # The re-announcement does not disturb the OrderSync slave, and everything converges: each
    # app shows each order of the master once.
    assert not slave.events("master.disconnected") and not slave.events("master.dead"), \
        "the OrderSync slave lost its link when the service was announced again"
    slave.create("after the app came back")
    wait_converged([master, slave], timeout=20)
    check_apps(master, [app, other], "StorePOS apps after a quiet spell and a lost link")


def test_an_app_whose_host_goes_silent_is_found_dead_by_tcp_and_brought_back(lan3, apps):
    """A host that vanishes without a word (its packets dropped, no reset): only TCP can find
    it, through the keepalive and user timeout `--storepos-keepalive` sets on the socket (here
    2 s: probes after 2 s idle, unacknowledged data ends the link after 4 s). The master must
    find the dead link within those bounds, withdraw and announce its service again, and the app,
    its host back, reconnects and shows the order it missed."""
    h1, h2, h3 = lan3.hosts
    keepalive = float(LINK_TIMES[LINK_TIMES.index("--storepos-keepalive") + 1])
    master = storepos_master(h1, extra=LINK_TIMES)
    master.create("Ann", table="T1")
    app = connected_app(apps, h2, "A")
    slave = OrderSyncNode.slave(h3, store="shop1")
    slave.wait_live()
    wait_shows(app, master.orders)

    mark = app.mark()
    drop_links_to(h2, h1.address, True)
    try:
        vanished = time.time()
        missed = master.create("taken while the app's host was gone")["uuid"]
        lost = master.wait_event("storepos.link_lost", timeout=20, where=from_host(h2))
    finally:
        drop_links_to(h2, h1.address, False)
    back = time.monotonic()
    found_s = log_time(lost) - vanished
    reannounce = comes_back_with(master, app, mark, missed, "its host was gone")
    shown_s = time.monotonic() - back
    print(f"FIGURE silent StorePOS host: the master found the dead link {found_s:.2f} s after the host went "
          f"silent (--storepos-keepalive {keepalive:g} s: bound {2 * keepalive + 2:g} s; {lost['reason']}), "
          f"the app showed the missed order {shown_s:.2f} s after its host was back "
          f"({reannounce['links_lost']} lost link(s))")
    # Not the quiet check (a StorePOS link is never dropped for silence): TCP found it, after
    # the peer timeout and within twice the keepalive (the user timeout) and some slack.
    assert not [e for e in master.events("peer.dead") if from_host(h2)(e)]
    assert 1.5 < found_s <= 2 * keepalive + 2, f"the dead link was found after {found_s:.2f} s"
    assert not slave.events("master.disconnected") and not slave.events("master.dead")
    slave.create("after the app came back")
    wait_converged([master, slave], timeout=20)
    check_apps(master, [app], "StorePOS app after its host went silent")
