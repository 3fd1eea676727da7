"""A real Prometheus server scrapes a live master (`--metrics-listen`) on a simulated host and
the series are read back through its HTTP API; `promtool check metrics` accepts the exposition,
and the local API socket serves the same text."""

import json
import os
import subprocess
import uuid

import pytest

from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, UnixHTTPConnection
from prometheus_server import PrometheusServer, missing_prometheus

METRICS = "127.0.0.1:9420"


def scrape(host) -> str:
    """`GET /metrics` over TCP on the master's host, as Prometheus does."""
    return host.run(["curl", "-s", "--max-time", "5", f"http://{METRICS}/metrics"]).stdout


def test_prometheus_scrapes_a_live_master(lan2):
    missing = missing_prometheus()
    require(not missing, "the metrics test needs " + ", ".join(missing) + " (apt-get install prometheus curl)")
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, extra=["--metrics-listen", METRICS])
    master.wait_event("node.started")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live(timeout=30)
    prometheus = PrometheusServer(h1, METRICS)
    try:
        # Orders through the CLI: three creates, one update, one refused update.
        uuids = [str(uuid.uuid4()) for _ in range(3)]
        for i, u in enumerate(uuids):
            master.cli("order", "create", "--customer", f"guest {i}", "--uuid", u)
        master.cli("order", "update", uuids[0], "--note", "window seat")
        refused = master.cli("order", "update", str(uuid.uuid4()), "--note", "x", check=False)
        assert refused.returncode != 0, refused

        prometheus.wait_value('up{job="ordersync"}', 1)
        prometheus.wait_value('ordersync_operations_applied_total{op="create"}', 3)
        prometheus.wait_value('ordersync_operations_applied_total{op="update"}', 1)
        prometheus.wait_value('ordersync_operations_applied_total{op="remove"}', 0)
        prometheus.wait_value('ordersync_operations_refused_total{code="not_found"}', 1)
        prometheus.wait_value("ordersync_journal_seq", 4)
        prometheus.wait_value('ordersync_terminals_connected{protocol="ordersync"}', 1)
        prometheus.wait_value('ordersync_terminals_connected{protocol="storepos"}', 0)
        terminal = master.terminals()[0]
        # The slave acknowledged all four operations.
        prometheus.wait_value(f'ordersync_terminal_lag_operations{{terminal="{terminal["id"]}"}}', 0)
        # It said its outbox is empty (its acks carry the count).
        prometheus.wait_value(f'ordersync_terminal_outbox_operations{{terminal="{terminal["id"]}"}}', 0)
        count = prometheus.value("ordersync_commit_duration_seconds_count")
        assert count is not None and count >= 4, count
        assert prometheus.value('ordersync_commit_duration_seconds_bucket{le="+Inf"}') == count
        assert (prometheus.value("ordersync_sent_messages_total") or 0) > 0
        assert (prometheus.value("ordersync_received_bytes_total") or 0) > 0
        health = [t["health"] for t in prometheus.targets()]
        assert health == ["up"], prometheus.targets()

        # promtool lints the exposition as scraped.
        text = scrape(h1)
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert lint.returncode == 0, f"promtool: {lint.stdout}{lint.stderr}\n{text}"
        assert 'ordersync_operations_applied_total{op="create"} 3' in text, text

        # The same series on the local API socket.
        connection = UnixHTTPConnection(os.path.join(master.data_dir, "ordersync.sock"))
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        body = response.read().decode()
        assert response.status == 200
        assert response.getheader("Content-Type").startswith("text/plain; version=0.0.4")
        assert 'ordersync_operations_applied_total{op="create"} 3' in body, body
        assert "ordersync_journal_seq 4" in body, body

        # Anything else than GET /metrics on the metrics port is refused.
        other = h1.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://{METRICS}/v1/orders"])
        assert other.stdout == "404", other

        # Revoking the terminal removes its lag series.
        master.cli("terminal", "revoke", terminal["id"])
        wait_until(lambda: not prometheus.query("ordersync_terminal_lag_operations"), 30,
                   what="the revoked terminal's lag series to go")
        wait_until(lambda: not prometheus.query("ordersync_terminal_outbox_operations"), 30,
                   what="the revoked terminal's outbox series to go")

        # Each applied operation left exactly one info line, with its sequence, kind, order and
        # origin; the refusal is a notice.
        applied = master.events("order.applied")
        assert [(e["seq"], e["op"], e["order"].lower()) for e in applied] == \
            [(1, "create", uuids[0]), (2, "create", uuids[1]), (3, "create", uuids[2]), (4, "update", uuids[0])], applied
        assert all(e["level"] == "info" and "local API" in e["terminal"] for e in applied), applied
        rejected = master.events("message.rejected")
        assert [(e["level"], e["code"]) for e in rejected] == [("notice", "not_found")], rejected
    finally:
        prometheus.stop()
        slave.stop()
        master.stop()
