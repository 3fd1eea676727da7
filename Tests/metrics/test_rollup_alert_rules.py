"""The roll-up's packaged Prometheus alerting rules (`Packaging/debian/ordersync-rollup-alerts.yml`,
issue 28): promtool accepts them, `promtool test rules` runs their unit tests
(`ordersync-rollup-alerts.test.yml` beside them: behind, down, conflict, gap, stalled each fire on
the series that should fire them, after their `for`, and not on healthy ones), every metric they
name is in Docs/OPERATIONS.md, and the roll-up exports each of them: its metrics text, as
`ordersync rollup --metrics-listen` serves it, is checked with a real roll-up in
Tests/lan/test_rollup_faults.py (b) and here against the names the rules use."""

import os

from test_alert_rules import PACKAGING, ROOT, alert_metric_names, promtool_checks_and_tests

RULES = os.path.join(PACKAGING, "ordersync-rollup-alerts.yml")
STATUS_SOURCE = os.path.join(ROOT, "Sources", "Node", "OrderSyncNode", "Rollup", "RollupStatus.swift")


def test_promtool_checks_and_unit_tests_the_rollup_alert_rules():
    promtool_checks_and_tests(RULES, "ordersync-rollup-alerts.test.yml", 5)


def test_every_metric_the_rollup_alerts_use_is_documented_and_exported():
    names = alert_metric_names(RULES)
    assert {"ordersync_rollup_lag_seconds", "ordersync_rollup_up", "ordersync_rollup_state",
            "ordersync_rollup_lag_entries", "ordersync_rollup_checkpoint_seq"} <= names, names
    with open(os.path.join(ROOT, "Docs", "OPERATIONS.md")) as f:
        operations = f.read()
    missing = sorted(n for n in names if f"`{n}" not in operations)
    assert not missing, f"metrics the roll-up alerts use but Docs/OPERATIONS.md does not list: {missing}"
    with open(STATUS_SOURCE) as f:
        source = f.read()
    unexported = sorted(n for n in names if f'"{n}' not in source)
    assert not unexported, f"metrics the roll-up alerts use but RollupStatus.metricsText does not export: {unexported}"
