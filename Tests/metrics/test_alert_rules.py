"""The packaged Prometheus alerting rules (`Packaging/debian/ordersync-alerts.yml`): promtool
accepts them, and `promtool test rules` runs their unit tests (`ordersync-alerts.test.yml`
beside them: each alert fires on the series that should fire it, after its `for`, and not on
healthy ones). Every metric they name is in the metrics list of Docs/OPERATIONS.md; that the
daemon exports each of them is checked against live scrapes in Tests/lan/test_health_tills.py."""

import os
import re
import shutil
import subprocess

from lan_support import require

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGING = os.path.join(ROOT, "Packaging", "debian")
RULES = os.path.join(PACKAGING, "ordersync-alerts.yml")


def alert_metric_names(rules: str = RULES) -> set[str]:
    """The `ordersync_*` metric names the expressions of the rules file `rules` use."""
    with open(rules) as f:
        exprs = [line.split("expr:", 1)[1] for line in f if line.strip().startswith("expr:")]
    return {name for e in exprs for name in re.findall(r"\bordersync_[a-z_]+", e)}


def promtool_checks_and_tests(rules: str, tests: str, count: int) -> None:
    """`promtool check rules` accepts `rules` with `count` rules, and `promtool test rules`
    passes `tests` (a file beside it in Packaging/debian)."""
    require(shutil.which("promtool") is not None, "promtool is missing (apt-get install prometheus)")
    check = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {count} rules found" in check.stdout, check.stdout
    test = subprocess.run(["promtool", "test", "rules", tests], cwd=PACKAGING,
                          capture_output=True, text=True, timeout=120)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


def test_promtool_checks_and_unit_tests_the_alert_rules():
    promtool_checks_and_tests(RULES, "ordersync-alerts.test.yml", 9)


def test_every_metric_the_alerts_use_is_documented():
    names = alert_metric_names()
    assert {"ordersync_terminal_connected", "ordersync_terminal_last_seen_seconds", "ordersync_store_ready",
            "ordersync_published", "ordersync_rival_masters", "ordersync_commit_failures_total"} <= names, names
    with open(os.path.join(ROOT, "Docs", "OPERATIONS.md")) as f:
        operations = f.read()
    missing = sorted(n for n in names if f"`{n}" not in operations)
    assert not missing, f"metrics the alerts use but Docs/OPERATIONS.md does not list: {missing}"
