"""The secure handshake has a deadline (issue 22, item 2; Docs/SECURITY.md "Before
authentication"): a connection that upgrades to `ordersync.ik.v1` or `ordersync.pair.v1` and then
sends no handshake message, silent or answering only pings, is closed 1008 `handshake timed out`
within `--handshake-timeout` (`MasterNode+Secure.swift`, `startAuthenticating`) and logged
`peer.handshake_failed` "no secure handshake in time", while a paired slave gets in meanwhile.

The silent links are `preauth_peer.py silent` on their own host. `pytest -s` prints the `FIGURE`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from lanharness import HERE, PYTHON
from ordersync_lab import OrderSyncNode, wait_converged
# The fixture requires the independent secure peer (autouse here too).
from test_hostile_lan import figure, secure_peer_importable, ws_url  # noqa: F401

PEER = os.path.join(HERE, "preauth_peer.py")
#: The deadline given to the master, short so that the test waits it out in seconds.
HANDSHAKE_TIMEOUT = 2.0
#: What the close may take past the deadline: the master's timer and a loaded machine.
SLACK = 2.0
LINKS = 6


def test_a_secure_link_that_never_starts_its_handshake_is_closed_at_the_deadline(lan3):
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, extra=["--handshake-timeout", str(HANDSHAKE_TIMEOUT), "--ping-interval", "0.5"])
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    slave.stop()
    sources = h3.add_addresses(2)

    attacker = h3.popen([PYTHON, PEER, "silent", ws_url(master), ",".join(sources), str(LINKS)],
                        stdout=subprocess.PIPE, text=True)
    try:
        opened = json.loads(attacker.stdout.readline())
        assert opened["upgraded"] == LINKS, opened
        # While the silent links hold their slots, the paired slave comes back and syncs.
        restarted = time.monotonic()
        slave.start()
        slave.wait_live(timeout=20)
        live_s = time.monotonic() - restarted
        slave.create(customer="while silent links wait")
        wait_converged([master, slave], expect=1)
        result = json.loads(attacker.stdout.readline())
        assert attacker.wait(timeout=30) == 0
    finally:
        if attacker.poll() is None:
            attacker.kill()

    links = result["links"]
    assert len(links) == LINKS, links
    for link in links:
        assert (link["code"], link["reason"]) == (1008, "handshake timed out"), link
        assert HANDSHAKE_TIMEOUT - 0.2 <= link["seconds"] <= HANDSHAKE_TIMEOUT + SLACK, link
    assert {link["subprotocol"] for link in links} == {"ordersync.ik.v1", "ordersync.pair.v1"}
    assert any(link["answers_pings"] for link in links) and not all(link["answers_pings"] for link in links)

    failed = [e for e in master.events("peer.handshake_failed")
              if e.get("error") == "no secure handshake in time"
              and str(e.get("peer.address", "")).split(":")[0] in sources]
    assert len(failed) == LINKS, failed
    assert {e.get("peer.protocol") for e in failed} == {"ordersync.ik.v1", "ordersync.pair.v1"}, failed
    assert slave.status()["master"]["state"] == "live"
    slowest = max(link["seconds"] for link in links)
    figure(secure_handshake_deadline_s=HANDSHAKE_TIMEOUT, silent_links=LINKS,
           closed_1008_first_s=min(link["seconds"] for link in links), closed_1008_last_s=slowest,
           pongs=sum(link["pongs"] for link in links), paired_slave_live_s=live_s)
    for node in (slave, master):
        assert node.stop() == 0
