"""The packaged alert rules on a real Prometheus server (Debian's `prometheus`, rules evaluated
every second) scraping a live master: a second master of its store on the LAN fires
`OrderSyncRivalMaster` at once and it resolves when that master stops; the healthy master
fires neither `OrderSyncNoMasterPublished` nor `OrderSyncStoreNotReady`."""

import os

from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode
from prometheus_server import PrometheusServer, missing_prometheus

METRICS = "127.0.0.1:9420"
RULES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "Packaging", "debian", "ordersync-alerts.yml")


def firing(prometheus: PrometheusServer) -> set[str]:
    """The names of the alerts firing now."""
    return {s["metric"]["alertname"] for s in prometheus.query('ALERTS{alertstate="firing"}')}


def test_a_rival_master_fires_its_alert_on_a_real_prometheus_and_it_resolves(lan2):
    missing = missing_prometheus()
    require(not missing, "the alerts test needs " + ", ".join(missing) + " (apt-get install prometheus curl)")
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=["--metrics-listen", METRICS])
    master.wait_api()
    wait_until(lambda: master.status()["ready"]["published"] == "ok" or None, 20, what="the master to be published")
    prometheus = PrometheusServer(h1, METRICS, rule_files=[RULES])
    other = None
    try:
        prometheus.wait_value('up{job="ordersync"}', 1)
        prometheus.wait_value("ordersync_published", 1)
        prometheus.wait_value("ordersync_rival_masters", 0)
        groups = prometheus._get("/api/v1/rules")["data"]["groups"]
        assert [len(g["rules"]) for g in groups] == [9], groups
        assert firing(prometheus) == set(), firing(prometheus)

        other = OrderSyncNode.master(h2, store="shop1")
        other.wait_api()
        wait_until(lambda: "OrderSyncRivalMaster" in firing(prometheus) or None, 30, what="OrderSyncRivalMaster to fire")
        (alert,) = [s for s in prometheus.query('ALERTS{alertstate="firing"}')
                    if s["metric"]["alertname"] == "OrderSyncRivalMaster"]
        assert alert["metric"]["severity"] == "critical" and alert["metric"]["instance"] == METRICS, alert
        assert firing(prometheus) == {"OrderSyncRivalMaster"}, firing(prometheus)

        assert other.stop() == 0
        other = None
        wait_until(lambda: "OrderSyncRivalMaster" not in firing(prometheus) or None, 30, what="the alert to resolve")
        assert firing(prometheus) == set(), firing(prometheus)
    finally:
        prometheus.stop()
        if other:
            other.stop()
        master.stop()
