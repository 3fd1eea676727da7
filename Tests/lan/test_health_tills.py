"""Health that sees every till, with real processes on a simulated LAN: a paired till cut off
from the master is listed as away with how long and how far behind, and the master's
`ordersync check` counts it (`--max-away`, `--max-lag`); the till itself says its lag is
unknown while cut off (never 0) and reports the master's view once back; a slave whose disk
fills makes `ready.store` and `check` fail at once, naming the problem and the file, and its
links that fail before synced are not counted as connects; a second master of the same store
on the LAN shows in the first one's status, check, log and metrics, and goes with it. The
metrics are parsed strictly and linted by `promtool check metrics`."""

import math
import os
import re
import shutil
import subprocess
import time

import pytest

from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, UnixHTTPConnection

pytestmark = pytest.mark.usefixtures("ordersync_built")

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]
OK, WARNING, CRITICAL = 0, 1, 2
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$')


def check(node: OrderSyncNode, *args: str) -> tuple[int, str]:
    """`ordersync check` on the node's host: exit code and its one line."""
    result = node.cli("check", *args, check=False)
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and result.stdout.startswith("ORDERSYNC "), (result.stdout, result.stderr)
    return result.returncode, lines[0]


def metrics(node: OrderSyncNode) -> dict[str, float]:
    """`GET /metrics` on the node's socket, parsed strictly: every line a `# HELP`/`# TYPE`
    comment or one sample; samples by `name{labels}`. promtool lints the same text when present."""
    connection = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    text = response.read().decode()
    assert response.status == 200, text
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        key = match.group(1) + (match.group(2) or "")
        assert key not in samples, f"sample twice: {key}"
        samples[key] = float(match.group(3))
    # promtool's own parser too (skipped without it outside CI mode; a failure in it).
    require(shutil.which("promtool") is not None, "promtool is missing (apt-get install prometheus)")
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0, f"promtool: {lint.stdout}{lint.stderr}"
    return samples


def test_a_till_cut_off_is_away_behind_and_counted_and_knows_its_lag_is_unknown(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    till = master.terminals()[0]
    rc, line = check(master, "--max-lag", "10,100")
    assert rc == OK and line.endswith("away=0 away_seconds=0s;600;"), line
    live = metrics(master)
    assert live[f'ordersync_terminal_connected{{terminal="{till["id"]}",name="h2"}}'] == 1, live
    assert live["ordersync_ready"] == 1 and live["ordersync_published"] == 1 and live["ordersync_rival_masters"] == 0, live
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds",
                 "process_start_time_seconds", "process_virtual_memory_bytes"):
        assert live[name] > 0, (name, live.get(name))
    assert abs(live["process_start_time_seconds"] - time.time()) < 120, live["process_start_time_seconds"]
    slave_metrics = metrics(slave)
    assert slave_metrics["ordersync_lag_operations"] == 0 and slave_metrics["ordersync_master_connects_total"] == 1, slave_metrics

    cut_at = time.time()
    h2.link_down()
    away = wait_until(lambda: master.status()["away"] or None, 15, what="the master to see the till away")
    for i in range(20):
        master.create(customer=f"while away {i}")
    status = master.status()
    (entry,) = status["away"]
    assert entry["terminalId"] == till["id"] and entry["name"] == "h2" and entry["behind"] == 20, status["away"]
    assert entry["ackedSeq"] == 0 and entry["lastSeen"] and entry["awaySeconds"] < 15, entry
    assert status["seq"] == 20 and away[0]["behind"] == 0

    # The master's check counts the away till in the lag, and its time away.
    rc, line = check(master, "--max-lag", "10,100")
    assert rc == WARNING, line
    assert line.startswith("ORDERSYNC WARNING - master shop1, 0 terminals, 1 away, max lag 20: max lag 20 (h2, away) above 10 |"), line
    rc, line = check(master, "--max-lag", "5,15")
    assert rc == CRITICAL and "max lag 20 (h2, away) above 15 (critical)" in line, line
    wait_until(lambda: master.status()["away"][0]["awaySeconds"] >= 2, 10, what="two seconds away")
    rc, line = check(master, "--max-away", "1,3600")
    assert rc == WARNING and re.search(r"h2 away \d+ s, 20 behind, above 1 s \|", line), line
    rc, line = check(master, "--max-away", ",1")
    assert rc == CRITICAL and "above 1 (critical) s" in line, line
    text = master.cli("status").stdout
    assert re.search(r"  away       h2  \S+  last seen .+  away \d+ s  behind 20", text), text
    away_metrics = metrics(master)
    assert away_metrics[f'ordersync_terminal_connected{{terminal="{till["id"]}",name="h2"}}'] == 0, away_metrics
    seen = away_metrics[f'ordersync_terminal_last_seen_seconds{{terminal="{till["id"]}",name="h2"}}']
    assert cut_at - 1 <= seen <= cut_at + 10, (seen, cut_at)
    assert away_metrics[f'ordersync_terminal_lag_operations{{terminal="{till["id"]}",name="h2"}}'] == 20

    # The till cut off cannot know how far the master went: unknown, never 0.
    wait_until(lambda: slave.status()["master"]["state"] != "live", 10, what="the till to notice")
    s = slave.status()
    assert s["lag"] is None, s
    rc, line = check(slave, "--max-silence", "3600")
    assert rc == OK and ", lag unknown, " in line and "| lag=U;1000;" in line, line
    assert "lag:       unknown while not live" in slave.cli("status").stdout
    assert math.isnan(metrics(slave)["ordersync_lag_operations"])

    # Back on the LAN: it catches up, and its lag is the master's view of it.
    h2.link_up()
    slave.wait_live(timeout=30)

    def same_view():
        m, s = master.status(), slave.status()
        peer = next((p for p in m["peers"] if p.get("terminalId") == till["id"]), None)
        return (m, s) if peer and peer["lag"] == s["lag"] == 0 and s["seq"] == m["seq"] == 20 else None
    m, s = wait_until(same_view, 20, what="the till and the master to agree on its lag")
    assert m["away"] == [], m["away"]
    rc, line = check(master, "--max-lag", "10,100", "--max-away", "1")
    assert rc == OK and "away=0 " in line, line
    # One more connect: the link that got through its hello.
    assert metrics(slave)["ordersync_master_connects_total"] == 2
    assert slave.stop() == 0 and master.stop() == 0


def test_a_full_disk_fails_readiness_and_check_at_once_and_failed_links_are_no_connects(lan2, tmp_path):
    h1, h2 = lan2.hosts
    disk = tmp_path / "slave-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
        data = str(disk / "data")
        slave = OrderSyncNode.slave(h2, extra=FAST, data_dir=data)
        slave.wait_live()
        before = metrics(slave)
        assert slave.status()["ready"]["storeFailure"] is None
        filler = disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k", "count=1000"], capture_output=True)
        big = "x" * 3000
        failed_at = None
        for i in range(10):
            result = slave.cli("order", "create", "--customer", big, "--note", str(i), check=False)
            if result.returncode != 0:
                failed_at = time.monotonic()
                break
        assert failed_at is not None, "no write failed on a full disk"
        assert result.returncode == 74, (result.returncode, result.stderr)
        rc, line = check(slave)
        elapsed = time.monotonic() - failed_at
        assert rc == CRITICAL and elapsed < 1, (line, elapsed)
        db = os.path.join(data, "ordersync.sqlite")
        assert f"store failing: disk full ({db}), " in line, line
        s = slave.status()
        assert s["ready"]["store"] == "failed" and s["state"] == "failed", s["ready"]
        failure = s["ready"]["storeFailure"]
        assert failure["problem"] == "disk full" and failure["path"] == db and failure["failures"] >= 1, failure
        assert metrics(slave)["ordersync_store_ready"] == 0
        assert "store failing: disk full" in slave.cli("status").stdout

        # The master's changes fail on the replica too: each link is secured, then ends before
        # its hello completes. Attempts grow; connects (links that got through) do not.
        master.create(customer=big)
        attempts = before["ordersync_master_connect_attempts_total"]
        wait_until(lambda: metrics(slave)["ordersync_master_connect_attempts_total"] >= attempts + 2, 30,
                   what="two more attempts on the master")
        after = metrics(slave)
        assert after["ordersync_master_connects_total"] == before["ordersync_master_connects_total"], (before, after)
        assert slave.status()["lag"] is None

        # Room again: the next commit clears it, and the till goes live.
        os.remove(filler)
        slave.wait_live(timeout=30)
        wait_until(lambda: slave.status()["ready"]["storeFailure"] is None, 10, what="the store to be healthy")
        rc, line = check(slave)
        assert rc == OK, line
        assert metrics(slave)["ordersync_store_ready"] == 1
        assert slave.stop() == 0 and master.stop() == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_second_master_of_the_store_is_seen_and_goes_with_it(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    master.wait_api()
    wait_until(lambda: master.status()["ready"]["published"] == "ok" or None, 20, what="the master to be published")
    rc, line = check(master)
    assert rc == OK, line
    other = OrderSyncNode.master(h2, store="shop1", extra=FAST)
    other.wait_api()
    rivals = wait_until(lambda: master.status()["rivals"] or None, 20, what="the master to see the other one")
    (rival,) = rivals
    assert rival["name"] == "h2" and rival["address"].startswith(h2.address + ":"), rival
    assert rival["nodeId"] == other.status()["nodeId"] and rival["role"] == "master" and rival["term"] == 1, rival
    event = master.wait_event("master.rival_seen")
    assert event["level"] == "warning" and event["rival.address"] == rival["address"] and "hint" in event, event
    rc, line = check(master)
    assert rc == CRITICAL, line
    assert f"another master of store shop1 on the LAN: h2 at {rival['address']}" in line, line
    assert metrics(master)["ordersync_rival_masters"] == 1
    assert "rival:     another master of store shop1: h2 at " in master.cli("status").stdout
    # The other one sees this one as well.
    wait_until(lambda: other.status()["rivals"] or None, 20, what="the second master to see the first")
    # Another store's master is no rival.
    third = OrderSyncNode.master(h2, store="shop2", extra=FAST, data_dir=os.path.join(h2.dir, "shop2-data"), name="elsewhere")
    third.wait_api()
    wait_until(lambda: third.status()["ready"]["published"] == "ok" or None, 20, what="the other store's master")
    assert [r["name"] for r in master.status()["rivals"]] == ["h2"]

    assert other.stop() == 0
    wait_until(lambda: master.status()["rivals"] == [] or None, 20, what="the rival to go")
    master.wait_event("master.rival_gone")
    rc, line = check(master)
    assert rc == OK, line
    assert metrics(master)["ordersync_rival_masters"] == 0
    assert third.stop() == 0 and master.stop() == 0


def test_every_metric_the_alert_rules_use_is_exported(lan2):
    """The packaged alert rules name only series a master or a slave exports."""
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    wait_until(lambda: master.terminals() or None, 10, what="the till to be known")
    names = {re.sub(r"\{.*", "", key) for key in [*metrics(master), *metrics(slave)]}
    rules = os.path.join(os.path.dirname(__file__), "..", "..", "Packaging", "debian", "ordersync-alerts.yml")
    with open(rules) as f:
        used = set(re.findall(r"\bordersync_[a-z_]+", "".join(line for line in f if "expr:" in line)))
    missing = sorted(n for n in used if n not in names and not any(k.startswith(n + "_") for k in names))
    assert not missing, f"alert rules name series no node exports: {missing}"
    assert slave.stop() == 0 and master.stop() == 0
