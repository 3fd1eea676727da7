#!/usr/bin/env python3
"""Automatic failover, measured: how long after the master stops answering a slave becomes master
by itself and takes a write, and how long until every slave follows it (issue 26: "promotion in
under 5 s at p99 after the master stops answering"; Docs/PROTOCOL.md 7.14).

    sudo nice -n -5 python3 Scripts/bench/auto_failover.py --bin .build/debug/ordersync --rounds 40

A store of one master and `--slaves` paired slaves (3 by default: 4 voters), each on its own host
of a simulated LAN (`Tests/lan/lanharness.py`: network namespaces, an avahi-daemon per host), all
started with `--auto-failover`. Every round, writers take orders on every slave's local API (and
on the master's own till) throughout; then the current master stops answering, the faults taken
in turn:

* `kill`: its board dies (the process and its host's avahi-daemon SIGKILLed, no goodbye);
  afterwards its data directory is started again (`ordersync master`): it finds the newer term
  and steps down to slave;
* `stop`: the process frozen (SIGSTOP; its kernel still acknowledges TCP), resumed (SIGCONT)
  afterwards: it steps down;
* `cut`: its host's cable pulled (the interface down), plugged back afterwards: it steps down.

Measured per round, from the fault: (a) `promote_s`, until the first write the new master
acknowledges (`200`/`201` on the local API of the slave that became master; its writer retries
every 50 ms while it is a candidate); (b) `follow_s`, until every other slave follows the new
master (status polled every 50 ms: role slave, the new term, the new master's id, link live);
`rejoin_s`, from the old master's return until it follows too. Checked per round: exactly one
new master, its term above the old one, every slave following it; every write acknowledged since
the start (`200`/`201`, or `202` from a slave's outbox) in the new master's journal exactly once
as sent; each term's acknowledged writes (`200`/`201`) answered by one node only, and no term
seen as master on two nodes. A failed round stops the run (exit 1) with the logs' failover
events. Prints p50/p95/p99/max per figure and per fault (nearest rank: of 40 rounds the p99 is the
40th value, the maximum; of 100, the 99th), each round's line, the timings
the new master's log gives (`auto_failover.standing`'s silence, `promote.done`'s `took_ms`) and
`/proc/loadavg` at start and end; `--out-json` writes them all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "Tests", "lan"))

from failover_lab import Writer, follows, status_of  # noqa: E402
from lanharness import Lan, LanError, missing_prerequisites, wait_until  # noqa: E402
from ordersync_lab import OrderSyncNode, journal_entries, read_sqlite  # noqa: E402
from sync_checks import CheckFailed, check_applied_once, check_final_orders, expected_orders  # noqa: E402

FAULTS = ("kill", "stop", "cut")
AUTO = ["--auto-failover"]
STORE = "shop99"
#: The log events that tell how a round went (printed for a failed round).
FAILOVER_EVENTS = ("auto_failover", "election", "promote", "lease", "master.stepped", "master.stale")


class BenchError(RuntimeError):
    """A round that broke a rule (two masters, a write lost) or did not finish."""


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return f.read().strip()


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: the smallest value with at least p of them at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


class Poller(threading.Thread):
    """Asks one node's local API for its status every `interval` s and keeps each answer with the
    monotonic time it came (None while the node does not answer)."""

    def __init__(self, node: OrderSyncNode, interval: float = 0.05):
        super().__init__(daemon=True, name=f"poll {node.host.name}")
        self.node, self.interval = node, interval
        self.samples: list[tuple[float, dict | None]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            status = status_of(self.node)
            self.samples.append((time.monotonic(), status))
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def first(self, predicate, after: float) -> float | None:
        """The time of the first sample after `after` whose status matches."""
        return next((t for t, s in list(self.samples) if t >= after and predicate(s)), None)


class Store:
    """The nodes of the store, one per host; which one is master now, in which term."""

    def __init__(self, lan: Lan, slaves: int):
        first = lan.hosts[0]
        self.master = OrderSyncNode.master(first, store=STORE, name=first.name, port=0, extra=AUTO)
        self.nodes = [self.master] + [OrderSyncNode.slave(h, store=STORE, pair_name=h.name, extra=AUTO)
                                      for h in lan.hosts[1:1 + slaves]]
        for slave in self.nodes[1:]:
            slave.wait_live()
        wait_until(lambda: (status_of(self.master) or {}).get("autoFailover", {}).get("state") == "held", 30,
                   what="the master's lease")
        self.term = status_of(self.master)["term"]
        self.master_id = self.master.node_id()
        #: term -> host names seen as master in it (polls) or answering 201 for its entries.
        self.masters_by_term: dict[int, set[str]] = {self.term: {first.name}}
        #: Acknowledged writes below the journal of the master promoted after them (a snapshot).
        self.before_floor = 0

    def slaves(self) -> list[OrderSyncNode]:
        return [n for n in self.nodes if n is not self.master]


def fault(node: OrderSyncNode, kind: str) -> float:
    """Makes the master stop answering; returns the monotonic time of the fault."""
    if kind == "kill":
        node.process.send_signal(signal.SIGKILL)
        at = time.monotonic()
        node.host.kill_avahi()
        node.stop(signal.SIGKILL)
    elif kind == "stop":
        node.process.send_signal(signal.SIGSTOP)
        at = time.monotonic()
    else:
        node.host.link_down()
        at = time.monotonic()
    return at


def restore(store: Store, node: OrderSyncNode, kind: str) -> OrderSyncNode:
    """Brings the old master back (it then steps down to slave); returns its node object."""
    if kind == "kill":
        node.host.start_avahi()
        back = OrderSyncNode(node.host, "master", ["--port", "0", "--store", STORE] + AUTO, data_dir=node.data_dir,
                             store=STORE)
        store.nodes[store.nodes.index(node)] = back
        return back
    if kind == "stop":
        node.process.send_signal(signal.SIGCONT)
    else:
        node.host.link_up()
    return node


def make_voter(node: OrderSyncNode, master: OrderSyncNode) -> float | None:
    """A master that stepped down is no paired terminal of the store (the first master never
    paired): it follows the master it stepped down to, but the other members refuse it and it
    does not vote. Such a node is paired again with the master (`--pair`, its replica kept), as an
    operator would; returns when it was started again, None when it is a voter already (its
    watch is not `off`)."""
    if ((status_of(node) or {}).get("autoFailover") or {}).get("state") != "off":
        return None
    node.stop()
    node.role, node.args = "slave", ["--store", STORE] + AUTO
    node.pair_code = master.pairing_code(name=node.host.name)
    node.start()
    return time.monotonic()


def wait_for(poller: Poller, predicate, after: float, timeout: float, what: str) -> float:
    """Waits until `poller` saw a matching status after `after`; returns that sample's time."""
    return wait_until(lambda: poller.first(predicate, after), timeout, interval=0.05, what=what)


def writer_times(writer: Writer, started: float) -> list[tuple[float, dict]]:
    """A writer's answers with the monotonic time each came (`at` counts from its start)."""
    return [(started + op["at"], op) for op in list(writer.results)]


def failover_lines(node: OrderSyncNode, since_wall: float) -> list[str]:
    """The node's failover events logged since `since_wall` (UNIX time), for a failure report."""
    out = []
    for event in node.events():
        name = str(event.get("event", ""))
        if name.startswith(FAILOVER_EVENTS) and _wall(event) >= since_wall:
            out.append(json.dumps(event)[:400])
    return out


def _wall(event: dict) -> float:
    """An event's UNIX time from its `ts` (RFC 3339), 0 when it has none."""
    stamp = event.get("ts") or event.get("timestamp") or event.get("time")
    if not stamp:
        return 0.0
    try:
        from datetime import datetime
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def check_round(store: Store, acked: list[dict]) -> dict[str, int]:
    """Every write acknowledged in the round is in the master's journal once, as sent, and no term
    was held by two nodes; returns each journalled operation id's term. (Only the round's: a
    master that joined from a snapshot journals from there on; the orders of every round are
    compared at the end.)"""
    journal = journal_entries(store.master.data_dir)
    floor = min((e["seq"] for e in journal), default=0)
    seqs = {e["opId"]: e["seq"] for n in store.nodes for e in journal_entries(n.data_dir)}
    # A master promoted from a snapshot journals from the snapshot's seq on: what came before is
    # in its orders (compared at the end), and in another node's journal at a lower seq.
    before = {op["opId"] for op in acked if seqs.get(op["opId"], floor) < floor}
    sent = [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in acked
            if op["opId"] not in before]
    store.before_floor += len(before)
    try:
        check_applied_once(journal, sent)
    except CheckFailed as failure:
        raise BenchError(f"acknowledged writes lost or applied twice: {failure}") from None
    two = {t: sorted(names) for t, names in store.masters_by_term.items() if len(names) > 1}
    if two:
        raise BenchError(f"one term, two masters: {two}")
    return {r["op_id"]: r["term"] for r in read_sqlite(store.master.data_dir, "SELECT op_id, term FROM journal")}


def seen_as_master(store: Store, pollers: list[Poller], wall: float) -> None:
    """Adds to `store.masters_by_term` each node a poll showed as a master that can acknowledge
    (its lease held; a candidate shows role master in the term before its own), and each
    promotion its log has since `wall`, with the term."""
    for p in pollers:
        for _, s in list(p.samples):
            if s and s.get("role") == "master" and (s.get("autoFailover") or {}).get("state") == "held":
                store.masters_by_term.setdefault(int(s["term"]), set()).add(p.node.host.name)
    for n in store.nodes:
        for e in n.events("promote.done"):
            if _wall(e) >= wall:
                store.masters_by_term.setdefault(int(e["term"]), set()).add(n.host.name)


def one_round(store: Store, number: int, kind: str, args, acked: list[dict]) -> dict:
    """One fault and recovery; returns the round's figures. Raises BenchError when it broke a rule."""
    old, old_term = store.master, store.term
    survivors = store.slaves()
    # Every slave holds the master's last entry before the writers start: a slave that took a
    # snapshot (an old master whose tail diverged) journals only from its seq on.
    seq = (status_of(old) or {}).get("seq")
    wait_until(lambda: all((status_of(n) or {}).get("seq") == seq for n in survivors), 60, interval=0.1,
               what=f"every slave to hold seq {seq}")
    pollers = {n.host.name: Poller(n) for n in survivors + [old]}
    for p in pollers.values():
        p.start()
    writers = []
    for node in survivors + [old]:
        w = Writer(node, f"r{number}-{node.host.name}{'-till' if node is old else ''}", give_up=120,
                   pause=args.pause)
        writers.append((w, time.monotonic()))
        w.start()
    wall, mono = time.time(), time.monotonic()
    try:
        wait_until(lambda: all(sum(op["acked"] for op in w.results) >= 3 for w, _ in writers), 30,
                   what="every writer to have 3 writes acknowledged")
        at = fault(old, kind)

        def elected():
            return next(((n, s) for n in survivors for t, s in list(pollers[n.host.name].samples)
                         if t > at and s and s.get("role") == "master" and s.get("term", 0) > old_term), None)
        new, status = wait_until(elected, args.promote_timeout, interval=0.05, what="a slave to become master by itself")
        new_term, new_id = status["term"], status["nodeId"]
        followed = [wait_for(pollers[n.host.name], lambda s: follows(s, new_id, new_term), at, 30,
                             f"{n.host.name} to follow {new.host.name}") for n in survivors if n is not new]
        masters_now = [n.host.name for n in survivors if (status_of(n) or {}).get("role") == "master"]
        if masters_now != [new.host.name]:
            raise BenchError(f"masters after the promotion: {masters_now}")
        back_at = time.monotonic()
        back = restore(store, old, kind)
        rejoined = wait_for(pollers[old.host.name], lambda s: follows(s, new_id, new_term), back_at,
                            args.rejoin_timeout, f"the old master {old.host.name} to follow {new.host.name}")
        repaired = make_voter(back, new)
        if repaired:
            rejoined = wait_for(pollers[old.host.name], lambda s: follows(s, new_id, new_term), repaired,
                                args.rejoin_timeout, f"{old.host.name} paired again to follow {new.host.name}")
        results = [op for w, _ in writers for op in w.stop()]
        store.master, store.term, store.master_id = new, new_term, new_id
        for node in store.slaves():
            wait_until(lambda: (status_of(node) or {}).get("outbox") == 0, 60, interval=0.1,
                       what=f"{node.host.name} to empty its outbox")
        unanswered = [op for op in results if not op["acked"]]
        if unanswered:
            raise BenchError(f"{len(unanswered)} writes never acknowledged: {unanswered[:3]}")
        acked += results
        seen_as_master(store, list(pollers.values()), wall)
        terms = check_round(store, results)
        # The survivors' writers only: the old master's till may get a late answer from it for a
        # write that the new master journals in its term (the old master's diverged tail, requeued).
        answers = [(t, op) for w, start in writers[:-1] for t, op in writer_times(w, start)
                   if op["status"] in (200, 201)]
        first = min((t for t, op in answers if t > at and terms.get(op["opId"]) == new_term), default=None)
        if first is None:
            raise BenchError(f"no write was acknowledged in term {new_term}")
        stepped = [mono + _wall(e) - wall for e in back.events("master.stepped_down") if _wall(e) >= wall]
        if not stepped:
            raise BenchError(f"the old master {old.host.name} follows without having logged master.stepped_down")
        till, start = writers[-1]
        # Answers of the old master's own till after the new master's first one (reported: the
        # lease should have stopped them; each is checked above to be journalled once).
        late = [op["opId"] for t, op in writer_times(till, start)
                if op["status"] in (200, 201) and first < t < stepped[0]]
    except (LanError, BenchError) as failure:
        for n in store.nodes:
            print(f"--- {n.host.name} ({n.role} process, alive {n.alive()})", file=sys.stderr)
            print("\n".join(failover_lines(n, wall)[-40:]), file=sys.stderr)
            if args.keep_logs:
                os.makedirs(args.keep_logs, exist_ok=True)
                for name in os.listdir(n.host.dir):
                    if name.endswith(".log"):
                        shutil.copy(os.path.join(n.host.dir, name), os.path.join(args.keep_logs, f"{n.host.name}-{name}"))
        raise BenchError(f"round {number} ({kind} of {old.host.name}): {failure}") from None
    finally:
        for p in pollers.values():
            p.stop()
        for w, _ in writers:
            w._halt.set()
    standing = [e for e in new.events("auto_failover.standing") if _wall(e) >= wall]
    done = [e for e in new.events("promote.done") if _wall(e) >= wall]
    regained = [e for e in new.events("lease.regained") if done and _wall(e) >= _wall(done[-1])]
    since_fault = lambda e: round(mono + _wall(e) - wall - at, 3)  # noqa: E731 - a log time, from the fault
    stood = sum(len([e for e in n.events("auto_failover.standing") if _wall(e) >= wall]) for n in survivors)
    return {"round": number, "fault": kind, "old": old.host.name, "new": new.host.name, "old_term": old_term,
            "new_term": new_term, "promote_s": round(first - at, 3), "follow_s": round(max(followed) - at, 3),
            "rejoin_s": round(rejoined - back_at, 3), "old_master_late_acks": late, "paired_again": repaired is not None, "acknowledged": len(results),
            "queued_202": sum(op["status"] == 202 for op in results),
            "standing_silent_ms": int(standing[-1].get("silent_ms", -1)) if standing else None,
            "promote_took_ms": int(done[-1].get("took_ms", -1)) if done else None, "candidacies": stood,
            "master_at_s": since_fault(done[-1]) if done else None,
            "lease_at_s": since_fault(regained[0]) if regained else None}


def summary(rows: list[dict], key: str) -> dict:
    values = [r[key] for r in rows]
    return {"n": len(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "p99": percentile(values, 0.99), "max": max(values)}


def report(rows: list[dict], load_start: str, load_end: str, args, store: Store) -> dict:
    out = {"rounds": rows, "loadavg_start": load_start, "loadavg_end": load_end, "slaves": args.slaves}
    print(f"\nAutomatic failover: 1 master + {args.slaves} slaves (all --auto-failover), {len(rows)} rounds")
    print(f"loadavg at start: {load_start}\nloadavg at end:   {load_end}\n")
    print("| faults | n | promote p50 / p95 / p99 / max (s) | all slaves follow p50 / p95 / p99 / max (s) | "
          "old master rejoins p50 / max (s) |")
    print("| --- | --- | --- | --- | --- |")
    for label, subset in [("all", rows)] + [(k, [r for r in rows if r["fault"] == k]) for k in FAULTS]:
        if not subset:
            continue
        a, b, c = summary(subset, "promote_s"), summary(subset, "follow_s"), summary(subset, "rejoin_s")
        out[f"promote_{label}"], out[f"follow_{label}"], out[f"rejoin_{label}"] = a, b, c
        print(f"| {label} | {a['n']} | {a['p50']:.2f} / {a['p95']:.2f} / {a['p99']:.2f} / {a['max']:.2f} | "
              f"{b['p50']:.2f} / {b['p95']:.2f} / {b['p99']:.2f} / {b['max']:.2f} | {c['p50']:.2f} / {c['max']:.2f} |")
    late = [op for r in rows for op in r["old_master_late_acks"]]
    print(f"\nthe old master's till answered 200/201 after the new master's first answer: {len(late)} writes in "
          f"{sum(bool(r['old_master_late_acks']) for r in rows)} rounds (each journalled once by the new master)")
    over = [r for r in rows if r["promote_s"] >= 5.0]
    print(f"\nrounds at or over 5 s: {len(over)} of {len(rows)}; acknowledged writes checked: "
          f"{sum(r['acknowledged'] for r in rows)} (0 lost, 0 applied twice, one master per term; "
          f"{store.before_floor} came before the snapshot a new master was promoted from: checked in its orders)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", help="the ordersync binary (default $ORDERSYNC_BIN or .build/debug/ordersync)")
    parser.add_argument("--rounds", type=int, default=40, help="faults to make (default 40, about 20 s each)")
    parser.add_argument("--slaves", type=int, default=3, choices=(3, 4), help="slaves besides the master")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between one writer's writes")
    parser.add_argument("--promote-timeout", type=float, default=30.0)
    parser.add_argument("--rejoin-timeout", type=float, default=60.0)
    parser.add_argument("--keep-logs", help="copy the nodes' logs here when a round fails")
    parser.add_argument("--out-json", help="write the figures and every round here")
    args = parser.parse_args()
    if args.bin:
        os.environ["ORDERSYNC_BIN"] = os.path.abspath(args.bin)
    missing = missing_prerequisites()
    if missing:
        print(f"auto_failover: the simulated LAN needs {', '.join(missing)}", file=sys.stderr)
        return 2
    load_start, rows, acked, status = loadavg(), [], [], 0
    print(f"loadavg at start: {load_start}", flush=True)
    with Lan(args.slaves + 1) as lan:
        store = Store(lan, args.slaves)
        for number in range(1, args.rounds + 1):
            kind = FAULTS[(number - 1) % len(FAULTS)]
            try:
                row = one_round(store, number, kind, args, acked)
            except BenchError as failure:
                print(f"FAILED {failure}", file=sys.stderr, flush=True)
                status = 1
                break
            rows.append(row)
            print(" ".join(f"{k}={v}" for k, v in row.items()) + f" load={loadavg().split()[0]}", flush=True)
            if args.out_json:
                with open(args.out_json, "w") as f:
                    json.dump({"rounds": rows, "loadavg_start": load_start, "failed": None}, f, indent=1)
        if status == 0 and rows:
            try:
                check_final_orders(expected_orders(acked), store.master.orders())
            except CheckFailed as failure:
                print(f"FAILED the orders at the end: {failure}", file=sys.stderr, flush=True)
                status = 1
    out = report(rows, load_start, loadavg(), args, store) if rows else {"rounds": []}
    out["failed"] = status != 0
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump(out, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
