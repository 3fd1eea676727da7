"""Health a script can use, with real processes: `ordersync check` (monitoring-plugin exit
codes and one line) on a live master and slave, with the master stopped, with no daemon and
with a slave's outbox filling up while it is cut off; readiness, `connecting` and `lastError`
in `status`; and the documented exit codes of the CLI (bad input 65, not found 66, conflict 73, no
daemon 69, permission denied 77 on the socket, the database and the data directory)."""

import json
import os
import re
import signal
import time
import uuid as uuidlib
from datetime import datetime, timezone

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]
NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3


def check(node: OrderSyncNode, *args: str) -> tuple[int, str]:
    """`ordersync check` on the node's host: exit code and its one line."""
    result = node.cli("check", *args, check=False)
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and result.stdout.startswith("ORDERSYNC "), (result.stdout, result.stderr)
    return result.returncode, lines[0]


def wait_check(node: OrderSyncNode, code: int, *args: str, timeout: float = 20) -> str:
    """Polls `check` until it exits `code`; returns its line."""
    seen = []

    def done():
        rc, line = check(node, *args)
        seen.append(line)
        return line if rc == code else None
    try:
        return wait_until(done, timeout, interval=0.2, what=f"check to exit {code}")
    except Exception:
        raise AssertionError(f"check never exited {code}; last lines: {seen[-3:]}")


def published(master: OrderSyncNode) -> dict:
    """Waits until Avahi confirmed the master's service; returns its status."""
    return wait_until(lambda: (lambda s: s if s["ready"]["published"] == "ok" else None)(master.status()), 20,
                      what="the master to be published")


def test_check_is_ok_on_a_live_master_and_slave_and_critical_once_the_master_is_gone(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    status = published(master)
    assert status["ready"] == {"store": "ok", "published": "ok", "link": None, "storeFailure": None} and status["state"] == "ready", status
    wait_until(lambda: any(p.get("lag") == 0 for p in master.status()["peers"]), 10, what="the slave to ack")

    rc, line = check(master)
    assert rc == OK, line
    assert line == "ORDERSYNC OK - master shop1, 1 terminal, max lag 0 | terminals=1 lag=0;1000; outbox=0 away=0 away_seconds=0s;600;", line
    rc, line = check(slave, "--max-lag", "10,100", "--max-outbox", "5", "--max-silence", "30,60")
    assert rc == OK, line
    assert line == "ORDERSYNC OK - slave h2 of shop1, link live, lag 0, outbox 0 | lag=0;10;100 outbox=0;5; silence=0s;30;60", line
    s = slave.status()
    assert s["ready"] == {"store": "ok", "published": None, "link": "live", "storeFailure": None} and s["state"] == "ready", s
    assert s["master"]["notLiveSeconds"] is None

    stopped_at = datetime.now(timezone.utc)
    assert master.stop() == 0
    # The master's data dir has no daemon now: CRITICAL, not a crash or UNKNOWN.
    rc, line = check(master)
    assert rc == CRITICAL and line.startswith("ORDERSYNC CRITICAL - no ordersync daemon is running for "), line

    # The slave retries its master: `connecting` through each attempt, never idle, and it says
    # why the link ended, and when.
    failures = len(slave.events("master.connect_failed"))
    links = set()

    def retried_twice():
        s = slave.status()
        if s["master"]["state"] != "live":
            links.add((s["ready"]["link"], s["state"]))
        return len(slave.events("master.connect_failed")) >= failures + 2
    wait_until(retried_twice, 30, interval=0.1, what="two failed attempts on the stopped master")
    assert links == {("connecting", "degraded")}, links
    s = slave.status()
    assert s["master"]["state"] in ("waiting", "connecting"), s["master"]
    error = s["lastError"]
    # The link's end, or the first failed attempt after it (a warning too, `reason` the refusal).
    assert error["event"] in ("master.disconnected", "master.connect_failed") and error["message"], error
    at = datetime.fromisoformat(error["at"].replace("Z", "+00:00"))
    assert abs((at - stopped_at).total_seconds()) < 10, (error, stopped_at)
    text = slave.cli("status").stdout
    assert "ready:     degraded (store ok, link connecting)" in text, text
    assert f"last warning: {error['at']} {error['event']}" in text, text

    # Below the silence threshold the slave is still OK; past it, CRITICAL.
    rc, line = check(slave, "--max-silence", "3600")
    assert rc == OK, line
    line = wait_check(slave, CRITICAL, "--max-silence", "2")
    assert re.search(r"not live to its master for \d+ s \(connecting, last error: .+\) above 2 \(critical\) s", line), line
    assert slave.status()["master"]["notLiveSeconds"] > 2

    master.start()
    slave.wait_live(timeout=30)
    rc, line = check(slave, "--max-silence", "2")
    assert rc == OK, line
    assert slave.stop() == 0 and master.stop() == 0


def test_check_warns_when_a_cut_off_slaves_outbox_passes_its_threshold(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    h2.link_down()
    wait_until(lambda: slave.status()["master"]["state"] != "live", 10, what="the cut-off slave to notice")
    for i in range(5):
        assert slave.create(customer=f"offline {i}")["sync"] == "pending"
    assert slave.status()["outbox"] == 5
    rc, line = check(slave, "--max-outbox", "3")
    assert rc == WARNING, line
    # Cut off, its lag is unknown (the master may have gone on), never 0.
    assert line.startswith("ORDERSYNC WARNING - slave h2 of shop1, link connecting, lag unknown, outbox 5: outbox 5 above 3 | lag=U;"), line
    rc, line = check(slave, "--max-outbox", "3,4")
    assert rc == CRITICAL and "outbox 5 above 4 (critical)" in line, line
    rc, line = check(slave, "--max-outbox", "10")
    assert rc == OK, line
    h2.link_up()
    slave.wait_live(timeout=30)
    wait_until(lambda: slave.status()["outbox"] == 0, 30, what="the outbox to drain")
    rc, line = check(slave, "--max-outbox", "3")
    assert rc == OK, line
    assert len(master.orders()) == 5
    assert slave.stop() == 0 and master.stop() == 0


def test_cli_exit_codes_say_what_went_wrong(make_lan):
    (h1,) = make_lan(1).hosts
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    missing = str(uuidlib.uuid4()).upper()

    def rc(*args: str) -> tuple[int, str]:
        r = master.cli(*args, check=False)
        return r.returncode, r.stderr

    order = master.create(customer="Kim")
    assert rc("order", "show", missing) == (66, f"ordersync: no order {missing} in {master.data_dir} [not_found]\n")
    code, err = rc("order", "update", missing, "--note", "x")
    assert code == 66 and "[not_found]" in err, err
    code, err = rc("order", "update", order["uuid"], "--note", "x", "--if-version", "7")
    assert code == 73 and "[conflict]" in err, err
    code, err = rc("order", "remove", order["uuid"], "--if-version", "7")
    assert code == 73 and "[conflict]" in err and "it is at version 1 now" in err, err
    code, err = rc("order", "create", "--customer", "Lee", "--uuid", order["uuid"])
    assert code == 73 and "[already_exists]" in err, err
    code, err = rc("terminal", "revoke", "no-such-till")
    assert code == 66 and "[not_found]" in err, err
    code, err = rc("order", "update", order["uuid"], "--table-size", "-7")
    assert code == 65 and "[invalid_field]" in err, err
    code, err = rc("order", "update", order["uuid"], "--status", "nonsense")
    assert code == 64 and "is invalid for '--status" in err and "'in_progress'" in err, err

    # A daemon that takes the connection but never answers (frozen): CRITICAL after --timeout.
    master.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        rc_frozen, line = check(master, "--timeout", "1")
        waited = time.monotonic() - started
    finally:
        master.process.send_signal(signal.SIGCONT)
    assert rc_frozen == CRITICAL and line == "ORDERSYNC CRITICAL - the daemon did not answer within 1 s", line
    assert waited < 5, waited

    # Permission denied on the socket (0660, root's group) says so, and whom to run as.
    os.chmod(master.data_dir, 0o755)
    socket_path = os.path.join(master.data_dir, "ordersync.sock")
    as_nobody = h1.run([*NOBODY, ordersync_binary(), "status", "--data-dir", master.data_dir], check=False)
    assert as_nobody.returncode == 77, as_nobody
    assert as_nobody.stderr == (f"ordersync: permission denied on {socket_path} "
                                "(run as a member of group root or as the service user root)\n"), as_nobody.stderr
    as_nobody = h1.run([*NOBODY, ordersync_binary(), "check", "--data-dir", master.data_dir], check=False)
    assert as_nobody.returncode == UNKNOWN, as_nobody
    assert as_nobody.stdout.startswith(f"ORDERSYNC UNKNOWN - permission denied on {socket_path}"), as_nobody.stdout

    assert master.stop() == 0
    # No daemon: 69 for what needs one; the read-only fallback still answers for the owner.
    code, err = rc("status")
    assert code == 69 and "no ordersync daemon is running" in err, err
    code, err = rc("pair")
    assert code == 69 and "managed by the running master" in err, err
    assert json.loads(master.cli("order", "show", order["uuid"], "--json").stdout)["uuid"] == order["uuid"]
    code, err = rc("order", "show", missing)
    assert code == 66, err

    # The read-only fallback cannot read the 0600 database: it says why.
    db = os.path.join(master.data_dir, "ordersync.sqlite")
    assert os.stat(db).st_mode & 0o777 == 0o600
    as_nobody = h1.run([*NOBODY, ordersync_binary(), "order", "list", "--data-dir", master.data_dir], check=False)
    assert as_nobody.returncode == 77, as_nobody
    assert as_nobody.stderr.startswith(f"ordersync: permission denied on {db} (run as a member of group root"), as_nobody.stderr
    # A data directory it may not enter: the directory is named.
    os.chmod(master.data_dir, 0o700)
    as_nobody = h1.run([*NOBODY, ordersync_binary(), "journal", "--data-dir", master.data_dir], check=False)
    assert as_nobody.returncode == 77, as_nobody
    assert as_nobody.stderr.startswith(f"ordersync: permission denied on {master.data_dir} ("), as_nobody.stderr

    # A data directory that does not exist is not found (66), for the fallback and the daemon.
    gone = master.data_dir + "-typo"
    for args in (["order", "list"], ["status"], ["journal"]):
        r = h1.run([ordersync_binary(), *args, "--data-dir", gone], check=False)
        assert r.returncode == 66 and f"the data directory {gone} does not exist" in r.stderr, (args, r)
    r = h1.run([ordersync_binary(), "check", "--data-dir", gone], check=False)
    assert r.returncode == UNKNOWN and "does not exist" in r.stdout, r
    r = h1.run([ordersync_binary(), "check", "--data-dir", master.data_dir, "--max-lag", "5,1"], check=False)
    assert r.returncode == UNKNOWN and r.stdout.startswith("ORDERSYNC UNKNOWN - --max-lag must be WARN[,CRIT]"), r
