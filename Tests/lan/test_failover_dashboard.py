"""The store dashboard after a failover (issue 26, item 7): a slave started with the dashboard's
options (`--http-listen`) serves it once promoted, in the same process, without a restart.

A master (`--http-listen`) on h1 and two paired slaves: h2 started with `--http-listen` too,
h3 plain (the third voter), with a headless Chromium (`Tests/dashboard/cdp.py`) on h3, the
manager's phone. Before the failover h2's page answers that it is a standby and lets nobody in.
The master dies (SIGKILL, its data directory deleted); `ordersync promote` on h2. Then, the
same h2 process still running:

* its dashboard lets in the token made on the old master (the tokens reach every standby with
  the store's settings), and shows it as master with the new term;
* its status (`ordersync status --json`) shows role master, the new term, the three voters and
  h3's standby lag; its metrics the new term, the voters and h3's standby lag;
* it serves the terminals on the store's usual port (`--port`, 7420 by default), and h3 follows
  it there (its status names that port), as published through Avahi.

Needs the `ordersync` binary (``ORDERSYNC_BIN``) and Chromium; under CI mode a missing one fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard"))

from cdp import Browser, chromium_binary  # noqa: E402
from failover_lab import Promotion, api, follows, status_of, wait_following  # noqa: E402
from lan_support import require  # noqa: E402
from lanharness import wait_until  # noqa: E402
from ordersync_lab import OrderSyncNode, ordersync_binary, read_sqlite  # noqa: E402
from test_dashboard import spki_sha256  # noqa: E402

pytestmark = pytest.mark.usefixtures("ordersync_built")

HTTP_PORT = 8080
#: The master's TCP port when `--port` is not given (Docs/OPERATIONS.md, "Defaults and limits").
DEFAULT_PORT = 7420


def metrics(node: OrderSyncNode) -> str:
    """The node's `GET /metrics` (Prometheus text) through its local API."""
    from order_workload import UnixHTTPConnection
    conn = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    try:
        conn.request("GET", "/metrics")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def series(text: str, name: str) -> list[tuple[str, float]]:
    """Each sample of `name` in a Prometheus text: (its labels, its value)."""
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            head, value = line.rsplit(" ", 1)
            out.append((head[len(name):], float(value)))
    return out


def test_a_promoted_slave_serves_the_store_dashboard_at_once(make_lan):
    require(chromium_binary() is not None, "the dashboard tests need Chromium (apt-get install chromium)")
    lan = make_lan(3)
    h1, h2, h3 = lan.hosts
    dashboard_flags = ["--http-listen", f"0.0.0.0:{HTTP_PORT}"]
    master = OrderSyncNode.master(h1, store="shop7", name="front", port=DEFAULT_PORT, extra=dashboard_flags)
    master.wait_event("node.started")
    counter = OrderSyncNode.slave(h2, store="shop7", pair_name="counter", extra=dashboard_flags + ["--name", "counter"])
    bar = OrderSyncNode.slave(h3, store="shop7", pair_name="bar", extra=["--name", "bar"])
    for slave in (counter, bar):
        slave.wait_live(timeout=30)
    order = master.create("before the failover", table="4")

    # The store's token, made on the master; it reaches the standbys with the store's settings.
    argv = [ordersync_binary(), "dashboard", "--name", "office", "--data-dir", master.data_dir, "--json"]
    token = json.loads(h1.run(argv).stdout)

    def standby_holds_token():
        rows = read_sqlite(counter.data_dir, "SELECT value FROM metadata WHERE key = 'standby.settings'")
        return rows and token["id"] in rows[0]["value"]
    wait_until(standby_holds_token, 10, what="the token in the counter's standby copy")

    # Before: the counter's page answers, says it is a standby, and lets nobody in.
    browser = Browser(h3, flags=(f"--ignore-certificate-errors-spki-list={spki_sha256(counter)}",))
    try:
        base = f"https://{h2.address}:{HTTP_PORT}"
        browser.navigate(f"{base}/#token={token['token']}")
        browser.wait("document.getElementById('login-error').textContent.includes('standby')")
        assert browser.evaluate("document.getElementById('board').hidden") is True
        assert browser.evaluate("fetch('/api/status').then(r => r.status)") == 503

        # The master's board dies; the counter is promoted, in the same process.
        pid = counter.process.pid
        master.host.kill_avahi()
        master.kill()
        shutil.rmtree(master.data_dir)
        promotion = Promotion(counter)
        report = promotion.promoted()
        term = report["term"]
        assert term > 1, report
        assert counter.alive() and counter.process.pid == pid

        # Status right after the promotion: master of the new term, its voters.
        status = status_of(counter)
        assert status["role"] == "master" and status["term"] == term, status
        assert status["voters"]["count"] == 3 and sorted(status["voters"]["names"]) == ["bar", "counter", "front"], status
        # The terminals' port: the store's usual one, where the bar follows it (found through Avahi).
        assert status["port"] == DEFAULT_PORT, status
        wait_following([bar], status["nodeId"], term, promotion.started)
        assert (status_of(bar)["master"]["url"] or "").endswith(f":{DEFAULT_PORT}/"), status_of(bar)["master"]

        # The bar's standby lag, in the status and the metrics.
        def bar_lag():
            s = status_of(counter)
            peers = [p for p in s.get("peers", []) if p.get("terminal") == "bar"]
            return s if peers and peers[0].get("standbyLag") == 0 else None
        status = wait_until(bar_lag, 15, what="the bar's standby lag in the promoted node's status")
        text = metrics(counter)
        assert series(text, "ordersync_term") == [("", float(term))], series(text, "ordersync_term")
        assert series(text, "ordersync_voters") == [("", 3.0)], series(text, "ordersync_voters")
        lags = series(text, "ordersync_standby_lag_operations")
        assert any('name="bar"' in labels and value == 0 for labels, value in lags), lags
        assert any('role="master"' in labels for labels, _ in series(text, "ordersync_node_info")), text

        # The same page, the same token: the dashboard of the new master, with the new term.
        browser.navigate(f"{base}/#token={token['token']}")
        browser.wait("!document.getElementById('board').hidden && document.querySelectorAll('#orders tbody tr').length >= 1",
                     timeout=15)
        shown = browser.wait(
            "(() => { const d = Object.fromEntries([...document.querySelectorAll('#summary > div')]"
            ".map(e => [e.children[1].textContent, e.children[0].textContent]));"
            " return d.Role === 'master' ? d : null; })()", timeout=10)
        assert shown["Term"] == str(term), shown
        uuids = browser.evaluate("[...document.querySelectorAll('#orders tbody tr')].map(r => r.dataset.uuid)")
        assert order["uuid"] in uuids, uuids
        code, _ = api(counter, "GET", "/v1/status")
        assert code == 200 and follows(status_of(bar), status["nodeId"], term)
    finally:
        browser.close()
