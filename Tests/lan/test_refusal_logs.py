"""What refusals before any handshake work cost in the master's log (Docs/SECURITY.md, "Logged
as a summary"), with real processes on the simulated store LAN. Issue 22 found 810 KB of
refusal lines in 15 s from one host (4.7 GB a day, no summary): each refused connection had a
line of its own. Now, per address, the first few refusals of each interval are logged in full
and the rest only counted, in one `peer.handshake_summary` line per address and interval.

The attacker (`refusal_peer.py`, one source address) is refused as fast as the master answers:
plain WebSocket upgrades (a StorePOS client) to a master without `--insecure-storepos`, then
connections over its address's cap of unauthenticated ones. `pytest -s` prints the `FIGURE`.
"""

from __future__ import annotations

import json
import math
import os
import time

from lanharness import HERE, PYTHON, wait_until
# The independent secure peer's prerequisite (autouse), the figures and the master's URL.
from test_hostile_lan import figure, secure_peer_importable, ws_url  # noqa: F401
from test_preauth_limits import SUMMARY_SECONDS, SummarisingMaster, summaries

PEER = os.path.join(HERE, "refusal_peer.py")
SECONDS = 8.0
#: Failures and refusals logged in full per address and interval (NodeDefaults.handshakeFailureLines).
FULL_LINES = 5


def operator_lines(master, source: str) -> list[str]:
    """The master's log lines at the default level (info) or above that name `source`."""
    out = []
    for line in master.log_lines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("level") not in ("trace", "debug") and source in line:
            out.append(line)
    return out


def test_refusals_before_any_handshake_cost_a_few_lines_and_one_summary_per_address_and_interval(lan2):
    h1, h2 = lan2.hosts
    # The held connections of the crowd stay within the handshake timeout throughout.
    master = SummarisingMaster(h1, "master", ["--port", "0", "--store", "shop1", "--handshake-timeout", "60"],
                               store="shop1")
    url = ws_url(master)
    [source] = h2.add_addresses(1)
    started = time.monotonic()
    plain = json.loads(h2.run([PYTHON, PEER, "plain", url, source, str(SECONDS)], timeout=SECONDS + 60).stdout)
    crowd = json.loads(h2.run([PYTHON, PEER, "crowd", url, source, str(SECONDS)], timeout=SECONDS + 60).stdout)
    elapsed = time.monotonic() - started
    assert plain["tries"] >= 100 and plain["refused"] == plain["tries"], plain
    assert any("--insecure-storepos" in r for r in plain["reasons"]), plain
    assert crowd["tries"] >= 100 and crowd["closed"] == crowd["tries"] and crowd["held"] == 8, crowd

    # Every refusal is counted in the address's summaries.
    refused = plain["refused"] + crowd["closed"]
    wait_until(lambda: sum(int(e["refused"]) for e in summaries(master, source)) == refused,
               timeout=3 * SUMMARY_SECONDS, what="every refusal counted in the summaries")
    lines = summaries(master, source)
    assert sum(int(e["unlogged"]) for e in lines) >= refused - FULL_LINES * len(lines), lines
    # What an operator's log (the default level) holds of it: a few lines in full per interval
    # and one summary per interval, not a line per refusal.
    intervals = math.ceil(elapsed / SUMMARY_SECONDS) + 2
    logged = operator_lines(master, source)
    assert len(lines) <= intervals, len(lines)
    assert len(logged) <= (FULL_LINES + 1) * intervals, (len(logged), logged[:12])
    log_bytes = sum(len(line) + 1 for line in logged)
    assert master.stop() == 0
    figure(refused_connections=refused, refused_per_s=refused / elapsed, seconds=elapsed, operator_log_lines=len(logged),
           operator_log_bytes=log_bytes, summary_lines=len(lines),
           log_mb_per_day=log_bytes / elapsed * 86400 / 1e6)
