"""Two forced promotions on tills cut off from each other, with real processes on a simulated
store LAN (Docs/PROTOCOL.md 7.16): the master dies for good, both slaves lose the LAN (their
cables pulled), and an operator at each runs `ordersync promote --force`. Each bids a term its
member number owns, so the two masters never share a term; each acknowledges its own till's
orders. When the LAN comes back, the master of the lower term steps down and follows the other,
and every acknowledged operation is in the surviving master's journal exactly once.

Prints its `FIGURE …` (`pytest -s`). Needs the `ordersync` binary (``ORDERSYNC_BIN``); under CI
mode a missing one fails the test.
"""

from __future__ import annotations

import shutil
import time

import pytest

from failover_lab import (Promotion, Writer, ballot, check_nothing_lost, figure, status_of, store,
                          wait_following)
from lanharness import wait_until
from ordersync_lab import wait_converged

pytestmark = pytest.mark.usefixtures("ordersync_built")


def test_two_forced_promotions_cut_off_from_each_other_never_share_a_term(make_lan):
    lan = make_lan(3)
    master, (a, b) = store(lan, "shop29", port=17290, slaves=2)
    writers = [Writer(s, s.host.name, pause=0.05, give_up=120) for s in (a, b)]
    for w in writers:
        w.start()
    wait_until(lambda: master.status()["seq"] >= 20, 30, what="the first writes")
    # The master's board dies (no goodbye), then each till loses the LAN.
    master.host.kill_avahi()
    master.kill()
    shutil.rmtree(master.data_dir)
    bids = {a.host.name: ballot(a), b.host.name: ballot(b)}
    assert bids[a.host.name] != bids[b.host.name], bids
    a.host.link_down()
    b.host.link_down()

    promotions = [Promotion(a, force=True), Promotion(b, force=True)]
    reports = [p.promoted() for p in promotions]
    terms = {s.host.name: r["term"] for s, r in zip((a, b), reports)}
    assert terms == bids, (terms, bids)
    assert all(r["forced"] for r in reports), reports
    assert len(set(terms.values())) == 2, f"two forced promotions share a term: {reports}"
    time.sleep(2.0)  # each master takes its own till's orders, cut off from the other

    lower, higher = sorted((a, b), key=lambda s: terms[s.host.name])
    healed = time.monotonic()
    a.host.link_up()
    b.host.link_up()
    try:
        stepped = lower.wait_event("master.stepped_down", timeout=60)
        followed = wait_following([lower], higher.node_id(), term=terms[higher.host.name], since=healed, timeout=60)
    except Exception:
        for node in (lower, higher):
            print(f"--- {node.host.name} (exit {node.process.poll()})")
            print("\n".join(node.log_lines()[-60:]))
        raise
    time.sleep(1.0)  # the tills go on, the lower one now through its slave role
    results = [op for w in writers for op in w.stop()]

    orders = wait_converged([higher, lower], timeout=60)
    acked = check_nothing_lost(higher, results, orders)
    lower.wait_drained(timeout=30)
    roles = {s.host.name: (status_of(s) or {}).get("role") for s in (a, b)}
    assert roles == {higher.host.name: "master", lower.host.name: "slave"}, roles
    diverged = lower.events("sync.diverged")
    figure(scenario="two-forced-cut-off", terms="/".join(str(t) for t in sorted(terms.values())),
           step_down_term=stepped.get("term.new", "?"), follow_ms=round(followed[lower.host.name] * 1000),
           requeued=sum(int(e.get("requeued", 0)) for e in diverged), acknowledged=len(acked), lost=0, duplicated=0)
    for node in (a, b):
        assert node.stop() == 0
