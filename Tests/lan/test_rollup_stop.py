"""`ordersync rollup` stopped by a signal while head office is out of reach (issue 28), with real
processes: a shop's master on one simulated host, PostgreSQL on another (`postgres_lab.py`), the
WAN between them dead (iptables DROP on head office's host: no reset, no ICMP).

* (a) SIGTERM while a batch is in flight on the dead WAN (its bytes unacknowledged in the
  roll-up's socket): the follower stops within seconds (not after the link's deadlines, 20 s and
  more), exits 0, its state file says `running:false` at head office's checkpoint, which did not
  move; once the WAN is back a `--once` ships everything exactly once and verify holds;
* (b) SIGTERM or SIGINT to a `--once` that cannot reach head office: it stops within seconds and
  exits 143 or 130 (128 + the signal), never 0, so a script does not take a partial shipment for a
  complete one.

Waits are on events (a log line, the socket's send queue, a row), never a sleep. Each prints its
`FIGURE` (`pytest -s`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from failover_lab import figure, store
from lan_support import require
from lanharness import wait_until
from ordersync_lab import ordersync_binary
from postgres_lab import HeadOffice, check_equals_journal, require_postgres
from rollup_lab import EXIT_OK, Rollup, once, rollup_available, verify

#: Longest a stop may take (issue 28's follow-up: "within a couple of seconds", plus the
#: process's own exit on a loaded machine).
STOP_BOUND = 5.0

pytestmark = pytest.mark.usefixtures("ordersync_built")


@pytest.fixture
def rollup_built(ordersync_built):
    require(rollup_available(), "this ordersync binary has no `rollup` command (issue 28's product)")
    require_postgres()


def shop_and_office(make_lan, store_id: str, port: int):
    lan = make_lan(2)
    office = HeadOffice(lan.hosts[-1]).start()
    url = office.add_shop(f"role_{store_id}", store_id)
    master, _ = store(lan, store_id, port=port, slaves=0)
    master.wait_api()
    return master, office, url


def unacknowledged_bytes(master, office: HeadOffice) -> int:
    """Bytes the master's host has sent head office and not had acknowledged (`ss` Send-Q)."""
    out = master.host.run(["ss", "-tnH", "dst", f"{office.host.address}:{office.port}"], timeout=15).stdout
    return sum(int(line.split()[2]) for line in out.splitlines() if len(line.split()) >= 5)


def state_file(node) -> dict:
    with open(os.path.join(node.data_dir, "rollup.state.json")) as f:
        return json.load(f)


def test_a_sigterm_during_a_batch_on_a_dead_wan_stops_in_seconds_and_loses_nothing(make_lan, rollup_built):
    master, office, url = shop_and_office(make_lan, "shopS", port=17291)
    for i in range(3):
        master.create(f"Order {i}")
    follower = Rollup(master, url)
    office.wait_checkpoint("shopS", 3, timeout=60)
    follower.wait_event("rollup.caught_up", timeout=30)
    office.wan_down(master.host)
    for i in range(3, 6):
        master.create(f"Order {i}")
    # The batch of entries 4-6 is at head office's door: sent, never acknowledged.
    wait_until(lambda: unacknowledged_bytes(master, office) > 0, 30, interval=0.05,
               what="the roll-up's batch in flight on the dead WAN")
    started = time.monotonic()
    code = follower.stop(signal.SIGTERM, timeout=90)
    took = time.monotonic() - started
    assert code == 0, follower.log_lines()[-10:]
    assert took < STOP_BOUND, f"SIGTERM during a batch on a dead WAN took {took:.1f}s (bound {STOP_BOUND}s)"
    state = state_file(master)
    assert state["running"] is False and state["checkpoint"]["seq"] == 3 and state["lastError"] is None, state
    assert not [e for e in follower.events("rollup.failed")], "a stop is not an error"

    office.wan_up(master.host)
    assert office.checkpoint_seq("shopS") == 3, "the batch in flight was not committed"
    code, answer, _ = once(master, url, timeout=120)
    assert code == EXIT_OK, (code, answer)
    assert office.checkpoint_seq("shopS") == 6
    checked = check_equals_journal(office, "shopS", master.data_dir)
    code, answer = verify(master, url)
    assert code == EXIT_OK and answer and answer.get("equal") is True and answer.get("seq") == 6, (code, answer)
    figure(stop_s=took, rows=checked["rows"])


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_b_a_once_stopped_by_a_signal_exits_non_zero(make_lan, rollup_built, signo):
    master, office, url = shop_and_office(make_lan, "shopT", port=17292)
    for i in range(3):
        master.create(f"Order {i}")
    office.wan_down(master.host)
    log_path = os.path.join(master.host.dir, "rollup-once.log")
    with open(log_path, "wb") as log:
        process = master.host.popen([ordersync_binary(), "rollup", "--data-dir", master.data_dir, "--database-url", url,
                                     "--once", "--json"], stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_until(lambda: "rollup.started" in open(log_path, errors="replace").read(), 30, interval=0.05,
                       what="the --once roll-up to start")
            started = time.monotonic()
            process.send_signal(signo)
            code = process.wait(timeout=90)
            took = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert code == 128 + signo, (code, open(log_path, errors="replace").read()[-2000:])
    assert took < STOP_BOUND, f"a --once stopped on a dead WAN took {took:.1f}s (bound {STOP_BOUND}s)"
    office.wan_up(master.host)
    assert office.checkpoint_seq("shopT") == 0
    figure(exit=code, stop_s=took)
