"""Before authentication (Docs/SECURITY.md "Before authentication"), with real processes on the
simulated store LAN: what a connection that has not authenticated may buffer, the memory they
hold together, the slots kept for paired terminals, and the handshake rate per address and in
total with its one summary line per address and interval.

The attackers are `preauth_peer.py` (raw sockets, Noise messages from PyPI's `noiseprotocol`
through Tests/support/secure_peer.py) on their own host, from many source addresses the harness
adds to it (`Host.add_addresses`). `pytest -s` prints each `FIGURE`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
import uuid as uuidlib

from lanharness import HERE, PYTHON, wait_until
from ordersync_lab import OrderSyncNode, wait_converged
# The fixture requires the independent secure peer (autouse here too).
from test_hostile_lan import figure, log_time, private_key, secure_peer_importable, ws_url  # noqa: F401

PEER = os.path.join(HERE, "preauth_peer.py")
SUMMARY_SECONDS = 4
#: NodeDefaults: the handshakes one address may start at once and per second, and all together.
BURST, RATE, BURST_TOTAL, RATE_TOTAL = 10, 2, 64, 32
#: What one unauthenticated connection is charged (PreAuthenticationBudget): the upgrade head
#: limit, the message limit before authentication and the connection's own state.
PER_CONNECTION = 8192 + 1024 + 7 * 1024
#: What all unauthenticated connections may hold together (NodeDefaults).
MEMORY_CAP = 16 << 20


class SummarisingMaster(OrderSyncNode):
    """A master whose log summarises handshakes every SUMMARY_SECONDS (not 60 s)."""

    def environment(self) -> dict:
        return dict(os.environ, ORDERSYNC_LOG_SUMMARY_SECONDS=str(SUMMARY_SECONDS))


def rss_bytes(node: OrderSyncNode) -> int:
    """The process's resident set (VmRSS of /proc/PID/status)."""
    with open(f"/proc/{node.process.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def cpu_seconds(node: OrderSyncNode) -> float:
    """User and system CPU time the process used so far."""
    with open(f"/proc/{node.process.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_trip_ms(slave: OrderSyncNode) -> float:
    """One order through the slave's local API until the master's answer is back, in ms."""
    started = time.monotonic()
    status, answer = slave.operation(0, {"uuid": str(uuidlib.uuid4()).upper(), "customerName": "p95"},
                                     op_id=str(uuidlib.uuid4()))
    if status not in (200, 201):
        # What the slave saw of its link, for the reader of a failure.
        events = [e for e in slave.events() if e.get("event", "").startswith(("link.", "master.", "peer.", "sync."))]
        raise AssertionError(f"{status} {answer} after {time.monotonic() - started:.2f} s; the slave's link events: "
                             f"{events[-12:]}; status: {slave.status().get('master')}")
    return (time.monotonic() - started) * 1000


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


def summaries(master: OrderSyncNode, host: str) -> list[dict]:
    return [e for e in master.events("peer.handshake_summary") if e.get("peer.host") == host]


# (a) Handshake-sized messages, bounded memory, a slot for the paired terminal ---------------

def test_unauthenticated_links_take_only_handshake_sized_messages_in_bounded_memory(lan3):
    h1, h2, h3 = lan3.hosts
    # 300 slots, 64 kept for authenticated terminals: 236 for unauthenticated links, so the 256
    # held below fill them. Their handshakes are not rate-limited here (the rate is the next
    # test's) and they may stay silent 30 s.
    master = OrderSyncNode.master(h1, extra=[
        "--max-connections", "300", "--handshake-timeout", "30", "--handshake-rate-total", "100000",
        "--handshake-burst-total", "100000", "--handshake-burst", "16"])
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    slave.create(customer="before the flood")
    wait_converged([master, slave], expect=1)
    url = ws_url(master)
    sources = h3.add_addresses(40)
    slave.stop()
    rss_before = rss_bytes(master)

    attacker = h3.popen([PYTHON, PEER, "hold", url, ",".join(sources), "256"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, text=True)
    try:
        held = json.loads(attacker.stdout.readline())
        assert held["upgraded"] == 256, held
        rss_held = rss_bytes(master)
        # Every unauthenticated slot is taken: the paired terminal still gets in (the oldest
        # unauthenticated link gives way) and syncs.
        restarted = time.monotonic()
        slave.start()
        slave.wait_live(timeout=20)
        live_s = time.monotonic() - restarted
        slave.create(customer="during the flood")
        wait_converged([master, slave], expect=2)
        # Now each held link starts a 1 MiB message.
        attacker.stdin.write("go\n")
        attacker.stdin.flush()
        result = json.loads(attacker.stdout.readline())
        assert attacker.wait(timeout=30) == 0
    finally:
        if attacker.poll() is None:
            attacker.kill()
    codes = result["codes"]
    # Each link is closed: 1009 as soon as its frame header announced 1 MiB, or 1013 for those
    # that gave their slot to a newer connection; none was left to buffer its megabyte.
    assert set(codes) <= {"1009", "1013"}, result
    assert codes.get("1009", 0) >= 200, result
    assert result["links"] == 256, result
    assert result["max_close_ms"] < 1000, result
    refused = master.events("peer.protocol_error")
    assert any("exceeds 1024" in e.get("error", "") for e in refused), refused[:3]
    rss_after = rss_bytes(master)
    budget = 236 * PER_CONNECTION
    # The links held at most their budget (the process's own growth aside: 8 MiB of slack), and
    # nothing of the megabytes they started stays.
    assert rss_held - rss_before <= budget + (8 << 20), (rss_before, rss_held)
    assert rss_after - rss_before <= budget + (8 << 20), (rss_before, rss_after)
    assert master.alive()
    figure(held_links=held["upgraded"], rss_before_mb=rss_before / 2**20, rss_held_mb=rss_held / 2**20,
           rss_after_mb=rss_after / 2**20, per_link_kb=(rss_held - rss_before) / 256 / 1024,
           closed_1009=codes.get("1009", 0), evicted_1013=codes.get("1013", 0),
           slowest_close_ms=result["max_close_ms"], paired_live_s=live_s)


def test_a_thousand_unauthenticated_connections_from_140_addresses_leave_paired_terminals_a_slot(lan3):
    h1, h2, h3 = lan3.hosts
    # Default slots (1024, 64 kept for authenticated terminals: 960 for the others) and memory
    # budget; the connections may stay silent 30 s. Before, 1,024 such connections from 128
    # addresses took 1.0 GB and refused paired terminals 2 times in 5.
    master = OrderSyncNode.master(h1, extra=["--handshake-timeout", "30"])
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    url = ws_url(master)
    sources = h3.add_addresses(140)
    rss_before = rss_bytes(master)
    attacker = h3.popen([PYTHON, PEER, "heads", url, ",".join(sources), "1100"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, text=True)
    try:
        held = json.loads(attacker.stdout.readline())
        assert held["held"] == 1100 and held["errors"] == 0, held
        rss_held = rss_bytes(master)
        live = []
        for n in range(5):
            slave.stop()
            restarted = time.monotonic()
            slave.start()
            slave.wait_live(timeout=10)
            live.append(time.monotonic() - restarted)
        slave.create(customer="through the crowd")
        wait_converged([master, slave], expect=1)
        attacker.stdin.write("done\n")
        attacker.stdin.flush()
        result = json.loads(attacker.stdout.readline())
        assert attacker.wait(timeout=30) == 0
    finally:
        if attacker.poll() is None:
            attacker.kill()
    # The 960 slots for unauthenticated connections were full: each connection beyond closed
    # the oldest one, and so did the slave's first (once authenticated it left a slot free).
    assert result["closed_by_master"] >= 1100 - 960 + 1, result
    # What they hold together, measured, stays under the cap the issue names (16 MiB whatever
    # the number of addresses), not only under what they are charged plus slack.
    assert 960 * PER_CONNECTION <= MEMORY_CAP
    assert rss_held - rss_before <= MEMORY_CAP, (rss_before, rss_held)
    figure(unauthenticated_connections=1100, addresses=len(sources), closed_to_make_room=result["closed_by_master"],
           rss_before_mb=rss_before / 2**20, rss_held_mb=rss_held / 2**20,
           per_connection_kb=(rss_held - rss_before) / 960 / 1024, paired_connects=f"{len(live)}/5",
           slowest_live_s=max(live))


# (b) A handshake flood from 16 addresses ------------------------------------------------------

def test_a_handshake_flood_from_16_addresses_is_rate_limited_and_summarised(lan3):
    h1, h2, h3 = lan3.hosts
    # The slave's writes go one after another for the whole flood: on a fast machine over 200 a
    # second, past the per-terminal operation limit (200/s, 1,000 of burst), which would then
    # answer them pending. That limit is not this test's: lifted, so every write is a round trip.
    master = SummarisingMaster(h1, "master", ["--port", "0", "--store", "shop1", "--rate-limit", "100000",
                                              "--rate-burst", "100000"], store="shop1")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    url = ws_url(master)
    baseline = [round_trip_ms(slave) for _ in range(40)]
    sources = h3.add_addresses(16)
    from secure_peer import public_key  # importable: the fixture checked

    key = public_key(private_key(master.data_dir)).hex()
    seconds = 12.0
    cpu_before = cpu_seconds(master)
    started = time.monotonic()
    # The attackers would be other machines: here they share the two cores with the master, the
    # slave and this test, so they run at the lowest priority (they still take what is left).
    flood = h3.popen(["nice", "-n", "19", PYTHON, PEER, "ikflood", url, ",".join(sources), str(seconds), key],
                     stdout=subprocess.PIPE, text=True)
    try:
        # The flood is on once each address's first refusal is in the log.
        wait_until(lambda: {e.get("peer.address", "").split(":")[0] for e in master.events("peer.unauthenticated")}
                   >= set(sources), timeout=10, what="a refusal from every flooding address")
        during = []
        while flood.poll() is None:
            during.append(round_trip_ms(slave))
        elapsed = time.monotonic() - started
        cpu = (cpu_seconds(master) - cpu_before) / elapsed
        counts = json.loads(flood.stdout.read())["per_source"]
    finally:
        if flood.poll() is None:
            flood.kill()
    assert len(during) >= 50, len(during)
    p95 = percentile(during, 95)

    # Every refusal the attackers saw (closed before the upgrade, or 1013) is counted in the
    # summaries, one line per address and interval.
    def all_counted():
        return all(sum(int(e["refused"]) for e in summaries(master, s)) == counts[s]["refused"] + counts[s]["busy"]
                   and sum(int(e["failed"]) for e in summaries(master, s)) == counts[s]["unknown"]
                   for s in sources)
    wait_until(all_counted, timeout=3 * SUMMARY_SECONDS, what="the last summaries")
    intervals = math.ceil(elapsed / SUMMARY_SECONDS) + 2
    started_total = 0
    for s in sources:
        c = counts[s]
        lines = summaries(master, s)
        assert c["tries"] > BURST + RATE * seconds, (s, c)
        assert c["busy"] + c["refused"] > 0 and c["other"] == 0, (s, c)
        times = [log_time(e) for e in lines]
        assert all(b - a >= SUMMARY_SECONDS - 0.5 for a, b in zip(times, times[1:])), (s, times)
        assert len(lines) <= intervals, (s, len(lines))
        handshakes = sum(int(e["handshakes"]) for e in lines)
        assert handshakes == c["unknown"], (s, handshakes, c)
        assert handshakes <= BURST + RATE * elapsed + 1, (s, handshakes, elapsed)
        assert sum(int(e["failed"]) for e in lines) == handshakes
        full = [e for e in master.events("peer.unauthenticated")
                if e.get("peer.address", "").split(":")[0] == s and e["level"] == "warning"]
        assert len(full) <= 5 * intervals, (s, len(full))
        started_total += handshakes
    assert started_total <= BURST_TOTAL + RATE_TOTAL * elapsed + 1, (started_total, elapsed)
    tries = sum(c["tries"] for c in counts.values())
    assert p95 < 100, (p95, percentile(baseline, 95))
    figure(flood_addresses=len(sources), flood_seconds=elapsed, tries=tries,
           tries_per_s=tries / elapsed, handshakes_admitted=started_total,
           handshakes_per_s=started_total / elapsed,
           refused=sum(c["refused"] + c["busy"] for c in counts.values()),
           master_cpu_pct=cpu * 100, baseline_p50_ms=percentile(baseline, 50),
           baseline_p95_ms=percentile(baseline, 95), flood_p50_ms=percentile(during, 50), flood_p95_ms=p95,
           samples=len(during), summary_lines=len(master.events("peer.handshake_summary")))


# (c) Abandoned pairing handshakes -------------------------------------------------------------

def test_abandoned_pairing_handshakes_count_as_failures(lan2):
    h1, h2 = lan2.hosts
    master = SummarisingMaster(h1, "master", ["--port", "0", "--store", "shop1"], store="shop1")
    url = ws_url(master)
    master.pairing_code(name="Till 9")
    [source] = h2.add_addresses(1)
    tries = 30
    out = json.loads(h2.run([PYTHON, PEER, "abandon", url, source, str(tries)], timeout=60).stdout)
    # The burst gets the master's second message; the rest are refused before any X25519 work.
    assert out["tries"] == tries and out["other"] == 0, out
    assert out["answered"] <= BURST + RATE * 5, out
    assert out["busy"] + out["refused"] >= tries - out["answered"], out
    wait_until(lambda: sum(int(e["refused"]) for e in summaries(master, source)) == out["busy"] + out["refused"]
               and sum(int(e["failed"]) for e in summaries(master, source)) == out["answered"],
               timeout=3 * SUMMARY_SECONDS, what="the summary of the abandoned pairing tries")
    lines = summaries(master, source)
    assert sum(int(e["handshakes"]) for e in lines) == out["answered"], (lines, out)
    # Each one the master answered and the attacker left is a failure.
    assert sum(int(e["failed"]) for e in lines) == out["answered"], (lines, out)
    assert sum(int(e["succeeded"]) for e in lines) == 0, lines
    failed = sum(int(e["failed"]) for e in lines)
    # What happened since the last summary is logged when the master stops.
    more = json.loads(h2.run([PYTHON, PEER, "abandon", url, source, "5"], timeout=60).stdout)
    assert master.stop() == 0
    lines = summaries(master, source)
    assert sum(int(e["refused"]) for e in lines) == out["busy"] + out["refused"] + more["busy"] + more["refused"], (lines, more)
    assert sum(int(e["failed"]) for e in lines) == out["answered"] + more["answered"], (lines, more)
    figure(pairing_tries=tries, answered=out["answered"], refused=out["busy"] + out["refused"],
           failed_counted=failed)
