"""A demo store on a simulated LAN: one master and two slaves on three hosts (network namespaces,
each with its own avahi-daemon). Each slave is paired with the master by a one-time code
(`ordersync pair`), finds it through DNS-SD and syncs over an encrypted link; orders are
created, changed and removed on different terminals, and every terminal ends with the same
orders."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "Tests", "lan"))

from lanharness import Lan  # noqa: E402
from lanharness import wait_until  # noqa: E402
from ordersync_lab import OrderSyncNode, wait_converged  # noqa: E402


def say(text: str) -> None:
    print(f"demo: {text}", flush=True)


def table(orders: list[dict]) -> str:
    rows = [f"  {'uuid':36}  {'customer':12}  {'created':24}  {'shipping':8}  {'table':6}  size  ver"]
    for o in orders:
        rows.append(f"  {o['uuid']:36}  {o.get('customerName', ''):12}  {o.get('created', ''):24}  "
                    f"{o.get('shippingMethod') or '-':8}  {o.get('tableName') or '-':6}  "
                    f"{o.get('tableSize', '-')!s:>4}  {o.get('version')}")
    return "\n".join(rows)


def main() -> int:
    say("building a store LAN: 3 hosts on a private bridge, each with its own D-Bus and avahi-daemon")
    with Lan(3) as lan:
        h1, h2, h3 = lan.hosts
        for h in lan.hosts:
            say(f"  {h.name} at {h.address}")
        fast = ["--ping-interval", "2", "--peer-timeout", "6"]
        master = OrderSyncNode.master(h1, store="demo-shop", name="Front counter", extra=fast)
        published = master.wait_event("service.published")
        say(f"master on h1 published '{published['service.name']}' (_pos._tcp, port {published['port']})")
        browse = h2.run(["avahi-browse", "-rpt", "_pos._tcp"], timeout=20).stdout
        for line in browse.splitlines():
            if line.startswith("="):
                say(f"avahi-browse on h2 sees: {line}")
        say(f"master id {master.node_id()}: each new terminal is paired once with a one-time code from "
            "`ordersync pair` on h1, passed to `ordersync slave --pair CODE`")
        slaves = []
        for h, till in ((h2, "Bar"), (h3, "Terrace")):
            slaves.append(OrderSyncNode.slave(h, extra=fast, pair_with=master, pair_name=till))
            say(f"slave on {h.name} started with a pairing code for terminal '{till}'")
        for s in slaves:
            st = s.wait_live()
            paired = s.events("pairing.done")[0]
            say(f"slave on {s.host.name} found the master through Avahi and paired with it "
                f"(master id {paired['master.id']}): {st['master']['url']} ({st['master']['serviceName']})")
        for t in master.terminals():
            say(f"master's paired terminal: {t['name']} ({t['id']})")

        a = slaves[0].create(customer="Kevin", shipping="DHL", table="T4", table_size=4)
        say(f"h2 created order {a['uuid']} for Kevin")
        b = slaves[1].create(customer="Aiko", table="T7", table_size=2)
        say(f"h3 created order {b['uuid']} for Aiko")
        c = master.create(customer="Walk-in", shipping="pickup", table_size=-1)
        say(f"h1 (master terminal) created order {c['uuid']} for Walk-in")
        u = slaves[1].update(a["uuid"], table_size=6)
        say(f"h3 changed Kevin's table size to {u['tableSize']} (version {u['version']})")
        r = slaves[0].remove(c["uuid"])
        say(f"h2 removed order {r['uuid']}")

        say("h3 loses the network (cable pulled) and keeps taking orders")
        h3.link_down()
        wait_until(lambda: slaves[1].status()["master"]["state"] != "live", 40, what="h3 to notice")
        d = slaves[1].create(customer="Offline Olga", table="T9", table_size=3)
        say(f"h3 created order {d['uuid']} while cut off: sync={d['sync']}, outbox={slaves[1].status()['outbox']}")
        h3.link_up()
        slaves[1].wait_live(timeout=40)
        say("h3 is back: its outbox was delivered")

        orders = wait_converged([master, *slaves], timeout=30, expect=3)
        say("every terminal holds the same orders:")
        for node in [master, *slaves]:
            say(f"{node.host.name} ({node.role}): {len(node.orders())} orders")
        print(table(orders), flush=True)
        for p in master.status()["peers"]:
            say(f"master sees terminal {p['terminal']} at {p['address']}: acked seq {p['ackedSeq']}, lag {p['lag']}, "
                f"outbox {p['outbox']}")
        say("the master's journal (who did what):")
        print(master.cli("journal").stdout.rstrip(), flush=True)

        say("stopping: SIGTERM to every node (close 1001, unpublish, exit 0)")
        codes = [s.stop() for s in slaves] + [master.stop()]
        say(f"exit codes: {codes}")
        if any(codes):
            return 1
    say("LAN torn down. Done.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
