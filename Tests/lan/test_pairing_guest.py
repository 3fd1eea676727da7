"""Issue 22, items 4 and 7, on the simulated store LAN with real processes, each printing the
figures it measured (`FIGURE name=value ...`, run with `pytest -s`):

- three codes printed in a row stay open together; three tills pair with them (the code given
  on standard input, in a file and in `ORDERSYNC_PAIR_CODE`, never in `ps`) while a guest on
  another host tries a wrong code every 0.2 s: the guest locks out only its own address, and
  its answers are the same whether a code is open or not;
- a device answering `unknown terminal` (1008) while the real master restarts never makes the
  slave ask to pair again, and the slave is live on the real master within 2 s of its return.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from lanharness import HERE, PYTHON, wait_until
from ordersync_lab import CommandError, OrderSyncNode
# The secure peer's prerequisite check (an autouse fixture), its path and the figure printer.
from test_hostile_lan import SECURE_PEER, figure, log_time, secure_peer_importable  # noqa: F401

PROTO = "ordersync/1"


def answer(t: dict) -> tuple:
    """What a guest's try showed it: the master's message 2 (its size), the close, the outcome."""
    return (t["second"], json.dumps(t["close"], sort_keys=True), t["established"], t.get("error"))


def cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def test_three_codes_three_tills_while_a_guest_hammers_wrong_codes(lan3):
    h1, h2, h3 = lan3.hosts
    # The guest tries 5 times a second, over the per-address handshake rate (2/s): raised here so
    # that the pairing lockout, not the handshake rate limit (test_preauth_limits.py), answers it.
    master = OrderSyncNode.master(h1, store="shop1", port=17850,
                                  extra=["--handshake-rate", "50", "--handshake-burst", "50"])
    url = f"ws://{h1.address}:17850/"
    master.wait_api()

    # The guest, before any code is open: every try refused after message 2.
    guest = h3.popen([PYTHON, SECURE_PEER, "hammer", url, "--interval", "0.2", "--seconds", "120",
                      "--until-stdin-closes"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tries: list[dict] = []

    def guest_tries(n: int) -> list[dict]:
        while len(tries) < n:
            line = guest.stdout.readline()
            assert line, "the guest stopped"
            tries.append(json.loads(line))
        return tries

    closed_answers = guest_tries(3)[:3]
    locked = master.wait_event("pairing.locked_out", timeout=20)
    assert locked["peer.address"].startswith(h3.address + ":"), locked

    # Three codes in a row, while the guest keeps trying: all three stay open.
    codes = {name: master.pair(name=name)["code"] for name in ("till-a", "till-b", "till-c")}
    listed = json.loads(master.cli("pair", "list", "--json").stdout)["codes"]
    assert [c["code"] for c in listed] == list(codes.values()), listed
    assert [c["name"] for c in listed] == list(codes), listed
    opened = time.monotonic()
    n = len(tries)
    open_answers = guest_tries(n + 3)[n:]

    # Three tills on h2, each given its code where `ps` does not show it.
    tills = {}
    for (name, code), via in zip(codes.items(), ("stdin", "file", "env")):
        node = OrderSyncNode(h2, "slave", ["--name", name], data_dir=os.path.join(h2.dir, name),
                             pair_code=code, store="shop1", pair_via=via)
        tills[name] = node
    for name, node in tills.items():
        done = node.wait_event("pairing.done", timeout=30)
        assert done["master.id"] == master.node_id(), done
        node.wait_live()
        # Not in `ps` (read once the process surely runs the slave, not the namespace wrapper).
        line = cmdline(node.process.pid)
        assert "slave" in line and codes[name].replace("-", "") not in line.replace("-", ""), line
    paired_s = time.monotonic() - opened
    assert sorted(t["name"] for t in master.terminals()) == ["till-a", "till-b", "till-c"], master.terminals()
    assert json.loads(master.cli("pair", "list", "--json").stdout)["codes"] == []

    # No code open any more: the guest sees what it saw before and while they were open.
    n = len(tries)
    used_answers = guest_tries(n + 3)[n:]
    guest.stdin.close()
    guest.wait(timeout=15)
    tries.extend(json.loads(line) for line in guest.stdout.read().splitlines())

    for t in tries:
        assert not t["established"] and t["close"] == {"code": 1008, "reason": "pairing failed"}, t
    assert {answer(t) for t in closed_answers} == {answer(t) for t in open_answers} == {answer(t) for t in used_answers}
    assert not [e for e in master.events("terminal.paired") if e["peer.address"].startswith(h3.address + ":")]
    status = master.status()["pairing"]
    assert status["state"] == "used" and status["lockedOutAddresses"] == 1, status
    lockouts = master.events("pairing.locked_out")
    assert len(lockouts) == 1, lockouts

    # A code opened and cancelled by its name pairs nothing.
    master.pair(name="till-d")
    cancelled = json.loads(master.cli("pair", "cancel", "till-d", "--json").stdout)["cancelled"]
    assert [c["name"] for c in cancelled] == ["till-d"], cancelled
    with pytest.raises(CommandError):
        master.cli("pair", "cancel", "till-d")
    for node in (*tills.values(), master):
        assert node.stop() == 0
    figure(codes_open_at_once=3, tills_paired=3, tills_paired_in_s=paired_s, guest_tries=len(tries),
           guest_try_interval_s=0.2, guest_paired=0, guest_answers_distinct=len({answer(t) for t in tries}),
           guest_lockouts=len(lockouts), code_in_ps=0)


def test_a_device_refusing_unknown_terminal_never_sends_the_slave_to_pairing(lan3):
    h1, h2, h3 = lan3.hosts
    real = OrderSyncNode.master(h1, store="shop1", name="Counter", port=17860)
    real_url = f"ws://{h1.address}:17860/"
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    epoch, real_id = real.status()["epoch"], real.node_id()

    # The device: the real master's id, store and epoch in its TXT record; it closes every link
    # with 1008 `unknown terminal` once the slave's first handshake message came.
    rogue = h3.popen([PYTHON, SECURE_PEER, "respond", "--listen", h3.address, "--port", "17861", "--store", "shop1",
                      "--refuse", "unknown terminal"], stdout=subprocess.PIPE, text=True)
    assert json.loads(rogue.stdout.readline())["event"] == "listening"
    announce = h3.popen([PYTHON, os.path.join(HERE, "zc_announce.py"), "--interface", h3.address,
                         "--name", "Counter Rogue", "--host", "rogue", "--port", "17861",
                         f"proto={PROTO}", "store=shop1", f"epoch={epoch}", "path=/", f"id={real_id}"],
                        stdout=subprocess.PIPE, text=True)
    assert announce.stdout.readline().startswith("announced")
    slave.wait_event("master.found", timeout=20, where=lambda e: e.get("service.name") == "Counter Rogue")
    rogue_address = f"{h3.address}:17861"

    real.stop()
    refusals = slave.wait_event("master.untrusted", timeout=20,
                                where=lambda e: rogue_address in e.get("master.address", "")
                                and "unknown terminal" in e.get("reason", ""))
    # A few refusals in a row, then the real master comes back.
    slave.wait_event("master.untrusted", timeout=20, count=3,
                     where=lambda e: rogue_address in e.get("master.address", ""))
    assert slave.status()["pairing"] == "paired", slave.status()
    real.start()
    started = real.wait_event("node.started", count=2, timeout=20)

    def live_on_real():
        try:
            status = slave.status()
        except CommandError:
            return None
        return status["master"].get("state") == "live" and status["master"].get("url") == real_url
    wait_until(live_on_real, 15, interval=0.05, what="the slave live on the real master")
    back_s = time.time() - log_time(started)
    tried = len([e for e in slave.events("master.untrusted") if rogue_address in e.get("master.address", "")])
    assert back_s < 2.0, f"the slave was live on the real master {back_s:.2f} s after it started"
    assert not slave.events("pairing.required"), slave.events("pairing.required")
    assert not [line for line in slave.log_lines() if "pair again" in line]
    assert slave.status()["pairing"] == "paired", slave.status()
    assert refusals["level"] == "warning"
    for process in (rogue, announce):
        process.kill()
        process.wait(timeout=10)
    for node in (slave, real):
        assert node.stop() == 0
    figure(rogue_refusals=tried, back_on_real_master_s=back_s, pairing_required_logged=0)

