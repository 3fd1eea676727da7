"""Logs an operator reads at 2 a.m., from real processes: an operation a slave made leaves one
`order.applied` line on it and one on the master; a slave whose master is down logs the first
failed attempt, then one summary per interval with a count, and one line when it is back;
under journald (JOURNAL_STREAM naming stderr) each line starts with its syslog priority."""

import json
import os
import subprocess
import tempfile
import time
from datetime import datetime

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary

SUMMARY_SECONDS = 2


class SummarisingNode(OrderSyncNode):
    """A node whose log summarises repeated failures every SUMMARY_SECONDS (not 60 s)."""

    def environment(self) -> dict:
        return dict(os.environ, ORDERSYNC_LOG_SUMMARY_SECONDS=str(SUMMARY_SECONDS))


def same_moment(a, b):
    """The summary's `since` is read from the clock when the first failure is counted, the first
    line's `ts` when it is written: the same moment, give or take a few milliseconds."""
    def parse(t):
        return datetime.fromisoformat(t.replace("Z", "+00:00"))
    return abs((parse(a) - parse(b)).total_seconds()) < 0.05


def stamp(event: dict) -> datetime:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))


def test_connect_failures_are_summarised_and_the_reconnection_logged(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, port=17461)
    master.wait_event("node.started")
    slave = SummarisingNode.slave(h2, master_url=f"ws://{h1.address}:17461/")
    slave.wait_live(timeout=30)
    # An operation of the slave's own leaves one info line there once the master applied it.
    order = slave.create(customer="at the till")
    mine = slave.wait_event("order.applied", timeout=20)
    assert (mine["level"], mine["op"], mine["order"].lower(), mine["seq"]) == ("info", "create", order["uuid"].lower(), 1), mine
    assert mine["terminal"] and mine["op.id"], mine
    master.wait_event("order.applied", where=lambda e: e["order"].lower() == order["uuid"].lower())
    assert len(slave.events("order.applied")) == 1 and len(master.events("order.applied")) == 1
    master.stop()
    try:
        # Wait for the first failure and two summaries after it.
        def warnings():
            return [e for e in slave.events("master.connect_failed") if e["level"] == "warning"]
        wait_until(lambda: len(warnings()) >= 3, 40, what="two summaries of the failed attempts")
        lines = warnings()
        first, summaries = lines[0], lines[1:]
        assert "count" not in first and first["hint"], first
        for s in summaries:
            assert isinstance(s["count"], int) and s["count"] >= 1, s
            assert same_moment(s["since"], first["ts"]), s
        # At most one line per interval, and none between them: each other attempt is debug.
        for a, b in zip(lines, lines[1:]):
            assert (stamp(b) - stamp(a)).total_seconds() >= SUMMARY_SECONDS - 0.05, (a, b)
        every = slave.events("master.connect_failed")
        last = every.index(summaries[-1])
        assert all(e["level"] == "debug" for e in every[1:last] if e not in summaries)
        assert sum(s["count"] for s in summaries) == last, "each summary counts the attempts since the last line"

        master.start()
        back = slave.wait_event("master.reconnected", timeout=30)
        failed = len(slave.events("master.connect_failed"))
        assert back["level"] == "info" and back["failures"] == failed and same_moment(back["since"], first["ts"]), back
        slave.wait_live(timeout=30)
    finally:
        slave.stop()
        master.stop()


def run_slave_briefly(environment: dict, until_event: str) -> list[str]:
    """Starts a slave whose master is absent (loopback port 1, refused at once), with stderr to
    a file, until `until_event` is in it; returns its lines."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "slave")
        log_path = os.path.join(tmp, "stderr.log")
        with open(log_path, "wb") as log:
            st = os.fstat(log.fileno())
            env = dict(os.environ)
            env.pop("JOURNAL_STREAM", None)
            env.update({k: v.format(dev=st.st_dev, ino=st.st_ino) for k, v in environment.items()})
            process = subprocess.Popen(
                [ordersync_binary(), "slave", "--data-dir", data, "--master", "ws://127.0.0.1:1/",
                 "--pair", "7KQ4-M2XD-9HZC-B0RT"], stdout=log, stderr=log, env=env)
            try:
                wait_until(lambda: until_event in open(log_path, errors="replace").read(), 20,
                           what=f"{until_event} in the slave's log")
            finally:
                process.terminate()
                process.wait(timeout=15)
        with open(log_path, errors="replace") as f:
            return f.read().splitlines()


def test_lines_carry_their_syslog_priority_when_stderr_is_the_journal():
    lines = run_slave_briefly({"JOURNAL_STREAM": "{dev}:{ino}"}, "event=master.connect_failed")
    started = next(line for line in lines if "event=node.started" in line)
    failed = next(line for line in lines if "event=master.connect_failed" in line)
    assert started.startswith("<6>ts="), started
    assert failed.startswith("<4>ts=") and "level=warning" in failed, failed
    assert all(line.startswith("<") for line in lines), lines


def test_no_priority_when_journal_stream_names_another_file():
    lines = run_slave_briefly({"JOURNAL_STREAM": "{dev}:1"}, "event=master.connect_failed")
    assert lines and all(line.startswith("ts=") for line in lines), lines
