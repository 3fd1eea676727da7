"""Clock sense (Docs/PROTOCOL.md 4.8) on real processes: a slave whose clock is 10 minutes ahead
(`ORDERSYNC_TEST_CLOCK_OFFSET`, a test-only variable that sets the process's wall clock off) is
warned about on both sides (`clock.skewed` in the log, `clock` in the status, the offset in the
metrics), the order it takes is stamped on the master's clock (so `export --from` of the last
minutes has it), and once the till's clock is right again the master shows it within the bound."""

import datetime
import json
import os
import time

import pytest

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, UnixHTTPConnection, ordersync_binary

pytestmark = pytest.mark.usefixtures("ordersync_built")

AHEAD = 600  # seconds
BOUND_MS = 30_000


class SkewedNode(OrderSyncNode):
    """A node whose wall clock runs AHEAD seconds in front of the machine's."""

    def environment(self) -> dict:
        return dict(os.environ, ORDERSYNC_TEST_CLOCK_OFFSET=str(AHEAD))


def metrics(node: OrderSyncNode) -> dict[str, float]:
    """The node's metrics (its local API socket), as {series: value}."""
    conn = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def peer_clock(master: OrderSyncNode, terminal_id: str) -> dict | None:
    peer = next((p for p in master.status()["peers"] if p.get("terminalId") == terminal_id), None)
    return peer and peer["clock"]


def test_a_till_ten_minutes_ahead_is_warned_about_and_its_orders_keep_the_masters_time(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, extra=["--ping-interval", "1"])
    master.wait_event("node.started")
    slave = SkewedNode(h2, "slave", [], pair_code=master.pairing_code())
    slave.wait_live(timeout=30)
    terminal = slave.node_id()

    # The master: from the hello at once, then from each heartbeat's round trip.
    warned = master.wait_event("clock.skewed", timeout=10)
    assert warned["level"] in ("warning", "warn"), warned
    assert abs(int(warned["clock.offset_ms"]) - AHEAD * 1000) < 2_000, warned
    assert int(warned["clock.bound_ms"]) == BOUND_MS and warned["terminal.id"] == terminal, warned
    clock = wait_until(lambda: (c := peer_clock(master, terminal)) and c["roundTripMillis"] is not None and c, 15,
                       what="a round-trip sample of the slave's clock")
    print(f"FIGURE master measured the till {clock['offsetMillis']} ms ahead over a {clock['roundTripMillis']} ms round trip")
    assert clock["skewed"] is True and clock["boundMillis"] == BOUND_MS, clock
    assert abs(clock["offsetMillis"] - AHEAD * 1000) <= max(50, clock["roundTripMillis"]), clock
    # The slave: told by the master's next heartbeat.
    mine = slave.wait_event("clock.skewed", timeout=10)
    assert abs(int(mine["clock.offset_ms"]) - AHEAD * 1000) < 2_000, mine
    own = wait_until(lambda: slave.status()["clock"], 10, what="the slave's own clock in its status")
    assert own["skewed"] is True and abs(own["offsetMillis"] - AHEAD * 1000) < 2_000, own
    # The metrics on both sides.
    series = [(k, v) for k, v in metrics(master).items() if k.startswith("ordersync_terminal_clock_offset_seconds{")]
    assert len(series) == 1 and f'terminal="{terminal}"' in series[0][0], series
    assert abs(series[0][1] - AHEAD) < 2, series
    assert abs(metrics(slave)["ordersync_clock_offset_seconds"] - AHEAD) < 2

    # An order the till takes now is stamped on the master's clock, not 10 minutes ahead.
    before = datetime.datetime.now(datetime.timezone.utc)
    made = slave.create("late dinner", table="3")
    created = datetime.datetime.strptime(made["created"], "%Y-%m-%dT%H:%M:%S%z")
    drift = (created - before).total_seconds()
    print(f"FIGURE order created on the skewed till stamped {drift:+.1f} s from the real time")
    assert -2 <= drift <= 5, (made["created"], before)
    wait_until(lambda: any(o["uuid"] == made["uuid"] for o in master.orders()), 10, what="the order on the master")
    since = (before - datetime.timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    exported = master.host.run([ordersync_binary(), "export", "--data-dir", master.data_dir, "--format", "json",
                                "--from", since])
    assert made["uuid"] in [o["uuid"] for o in json.loads(exported.stdout)], exported.stdout

    # The till's clock set right (started without the offset): within the bound, no warning.
    slave.stop()
    fixed = OrderSyncNode(h2, "slave", [], data_dir=slave.data_dir)
    fixed.wait_live(timeout=30)
    clock = wait_until(lambda: (c := peer_clock(master, terminal)) and c["roundTripMillis"] is not None
                       and abs(c["offsetMillis"]) < 1_000 and c, 15, what="the corrected clock measured")
    assert clock["skewed"] is False and abs(clock["offsetMillis"]) < 1_000, clock
    assert fixed.events("clock.skewed") == []
    fixed.stop()
    master.stop()
