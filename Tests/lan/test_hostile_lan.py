"""Issue 11's attacks, repeated on the simulated store LAN with real processes, each printing the
figure it measured (`FIGURE name=value ...`, run with `pytest -s`):

- an unpaired peer (a plain StorePOS client, a cleartext `ordersync.v1` client with a forged
  hello, a Noise IK client with an unpaired key, a pairing try without a window) reads 0 orders
  and applies 0; StorePOS mode is off by default and, when on, bounded by `--storepos-allow`;
- a capture of the link between a slave and its master holds no order text;
- a rogue master (python-zeroconf announcing the store, epoch and the master's id, answering
  with its own Noise key) and a second real master started by mistake get nothing readable
  while the real master is stopped (SIGTERM, then SIGKILL): no order lost, the slave back on
  the real master within 10 s of it returning, the rogue's death never making it stick;
- pairing with the right, a wrong (5 times, then that address is locked out), an expired and a
  reused code, and through a relaying TCP proxy;
- revoking a terminal closes its link within 1 s and its key is refused after;
- a master key rotation reaches a connected slave and one that was down;
- the independent Python secure peer (`Tests/support/secure_peer.py`) pairs with the real
  master and syncs orders with a real Swift slave.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import subprocess
import threading
import time
import uuid as uuidlib
from datetime import datetime, timezone

import pytest

import avahi_cli
from lanharness import HERE, PYTHON, SUPPORT, wait_until
from ordersync_lab import CommandError, OrderSyncNode, stored_orders, wait_converged
from lan_support import require

try:
    from secure_peer import encode_code, node_id, public_key
except ImportError as missing:  # noiseprotocol, cryptography or websockets not installed
    SECURE_PEER_MISSING = str(missing)
else:
    SECURE_PEER_MISSING = None

SECURE_PEER = os.path.join(SUPPORT, "secure_peer.py")
PROTO = "ordersync/1"


@pytest.fixture(autouse=True)
def secure_peer_importable():
    """The independent secure peer needs `noiseprotocol` and `websockets` (Scripts/setup.sh)."""
    require(SECURE_PEER_MISSING is None, f"the independent secure peer cannot be imported: {SECURE_PEER_MISSING}")


def figure(**values) -> None:
    print("\nFIGURE " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()),
          flush=True)


def ws_url(master: OrderSyncNode, host=None) -> str:
    """The master's URL, from the last `node.started` of its log."""
    master.wait_event("node.started")
    port = int(master.events("node.started")[-1]["port"])
    return f"ws://{(host or master.host).address}:{port}/"


def log_time(event: dict) -> float:
    """The wall-clock time of a JSON log line (`ts`, milliseconds)."""
    return datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def private_key(data_dir: str) -> bytes:
    """A node's static private key, as kept in DATA/node.key (base64)."""
    with open(os.path.join(data_dir, "node.key")) as f:
        return base64.b64decode(f.read().strip())


def secure_peer(host, url: str, state: str, *, code: str | None = None, master_key: bytes | None = None,
                steps: list | None = None, rekey_interval: int | None = None, timeout: float = 60) -> dict:
    """The independent secure peer on `host`: pairs with `code`, else IK with `master_key` (or
    the one kept in `state`), then runs `steps`; returns what it printed."""
    argv = [PYTHON, SECURE_PEER, "connect", url, "--state", state, "--steps", json.dumps(steps or [])]
    if code:
        argv += ["--pair", code]
    if master_key:
        argv += ["--master-key", master_key.hex()]
    if rekey_interval:
        argv += ["--rekey-interval", str(rekey_interval)]
    return json.loads(host.run(argv, timeout=timeout).stdout)


def pairing_tries(host, url: str, codes: list[str]) -> list[dict]:
    """Pairing tries from `host`, one per code, each with a fresh key."""
    out = host.run([PYTHON, SECURE_PEER, "tries", url, *codes], timeout=60).stdout
    return [json.loads(line) for line in out.splitlines()]


def hostile(host, mode: str, url: str, operations: list, quiet: float = 5, enough: int | None = None) -> dict:
    """`hostile_peer.py` on `host`: a StorePOS or cleartext `ordersync.v1` client."""
    args = [PYTHON, os.path.join(HERE, "hostile_peer.py"), mode, url, json.dumps(operations), str(quiet)]
    out = host.run(args + ([str(enough)] if enough is not None else []), timeout=60)
    return json.loads(out.stdout)


def other_code(code: str) -> str:
    """A valid pairing code that is not `code`."""
    while True:
        candidate = encode_code(secrets.token_bytes(10))
        if candidate != code:
            return candidate


def new_uuid() -> str:
    return str(uuidlib.uuid4()).upper()


# (a) An unpaired peer ------------------------------------------------------------------------


def test_an_unpaired_peer_reads_nothing_and_applies_nothing(lan3):
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front")
    slave = OrderSyncNode.slave(h2)
    slave.wait_live()
    made = [slave.create(customer=f"Guest {i}", note="table by the window") for i in range(3)]
    wait_converged([master, slave], expect=3)
    before, seq = stored_orders(master.data_dir), master.status()["seq"]
    url = ws_url(master)
    uuids = [o["uuid"] for o in made]
    # What the attacker of the issue did: overwrite, complete (locks them), remove, create.
    attack = [{"operation": 1, "orders": [{"uuid": u, "customerName": "overwritten", "status": "completed"}]}
              for u in uuids[:2]]
    attack += [{"operation": 2, "orders": [{"uuid": uuids[2]}]},
               {"operation": 0, "orders": [{"uuid": new_uuid(), "customerName": "forged"}]}]
    hello = {"type": "hello", "proto": PROTO, "terminal": "front", "name": "front (local API)", "store": "shop1",
             "lastSeq": 0}
    refusals_before = len(master.events("peer.unauthenticated"))

    storepos = hostile(h3, "storepos", url, attack)
    cleartext = hostile(h3, "cleartext", url, attack)
    unpaired = secure_peer(h3, url, os.path.join(h3.dir, "unpaired.json"),
                           master_key=public_key(private_key(master.data_dir)),
                           steps=[{"send": hello}, *[{"send": m} for m in attack], {"until": {"type": "close"}}])
    [no_window] = pairing_tries(h3, url, [encode_code(secrets.token_bytes(10))])

    for result in (storepos, cleartext):
        assert result["orders_read"] == 0 and result["messages"] == 0, result
        assert result["close"]["code"] == 1008, result
    assert "--insecure-storepos" in storepos["close"]["reason"], storepos
    assert "pairing required" in cleartext["close"]["reason"], cleartext
    assert not unpaired["established"] and unpaired["received"] == [], unpaired
    assert unpaired["close"]["code"] == 1008 and "unknown terminal" in unpaired["close"]["reason"], unpaired
    assert not no_window["established"] and no_window["close"]["code"] == 1008, no_window
    refusals = master.wait_event("peer.unauthenticated", count=refusals_before + 3, timeout=10)
    assert refusals["level"] == "warning", refusals
    # The pairing try with no code open fails as a wrong code does, counted against its address.
    assert master.wait_event("pairing.failed", timeout=10)["peer.address"].startswith(h3.address + ":")
    reasons = [e["reason"] for e in master.events("peer.unauthenticated")[refusals_before:]]
    # Nothing changed: every column of every order, the sequence, the paired terminals.
    assert stored_orders(master.data_dir) == before
    assert master.status()["seq"] == seq
    assert [t["name"] for t in master.terminals()] == ["h2"], master.terminals()
    assert not master.events("storepos.insecure"), "legacy StorePOS mode is off by default"
    journal = master.cli("journal").stdout
    assert "front (local API)" not in journal and "overwritten" not in journal
    refused_ms = max(r["seconds"] for r in (storepos, cleartext, unpaired, no_window)) * 1000
    figure(unpaired_orders_read=0, unpaired_operations_applied=0, unpaired_attempts=4,
           peer_unauthenticated_logged=len(reasons), slowest_refusal_ms=refused_ms)

    # Legacy StorePOS mode, bounded: only the allowed range gets in.
    master.restart(args=master.args + ["--insecure-storepos", "--storepos-allow", f"{h2.address}/32"])
    assert master.wait_event("storepos.insecure")["level"] == "warning"
    master.wait_event("node.started", count=2)
    url = ws_url(master)
    outside = hostile(h3, "storepos", url, attack)
    assert outside["orders_read"] == 0 and outside["close"]["code"] == 1008, outside
    assert "--storepos-allow" in outside["close"]["reason"], outside
    # The connect sequence holds a second's pause before the Creates: wait for the orders, not for silence.
    inside = hostile(h2, "storepos", url, [], quiet=10, enough=3)
    assert inside["orders_read"] == 3, inside
    assert stored_orders(master.data_dir) == before
    figure(storepos_outside_range_orders_read=outside["orders_read"], storepos_inside_range_orders_read=3)
    for node in (slave, master):
        assert node.stop() == 0


# (b) A capture of the link ------------------------------------------------------------------


def test_a_capture_of_the_link_holds_no_order_text(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", port=17810)
    out = os.path.join(h1.dir, "capture")
    capture = h1.popen([PYTHON, os.path.join(HERE, "packet_capture.py"), "--interface", h1.interface, "--port", "17810",
                        "--out", out], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert capture.stdout.readline().strip() == "capturing"
    try:
        # Pairing, the first snapshot, orders both ways, and a reconnect (IK, a snapshot again).
        slave = OrderSyncNode.slave(h2)
        slave.wait_live()
        tag = secrets.token_hex(4)
        names = [f"Quokka{tag}{i}" for i in range(4)]
        notes = [f"allergic to walnuts {tag} {i}" for i in range(4)]
        made = [slave.create(customer=names[i], note=notes[i]) for i in range(2)]
        made += [master.create(customer=names[i], note=notes[i]) for i in range(2, 4)]
        slave.update(made[2]["uuid"], table="Terrace" + tag)
        wait_converged([master, slave], expect=4)
        slave.restart()
        slave.wait_live()
        wait_converged([master, slave], expect=4)
    finally:
        capture.stdin.write("stop\n")
        capture.stdin.flush()
        summary = json.loads(capture.stdout.readline())
        capture.wait(timeout=10)
    with open(out + ".to-port", "rb") as f:
        up = f.read()
    with open(out + ".from-port", "rb") as f:
        down = f.read()
    captured = up + down
    # The capture sees the link: the WebSocket upgrades are the only cleartext on it.
    assert b"Sec-WebSocket-Protocol: ordersync.pair.v1" in up and b"Sec-WebSocket-Protocol: ordersync.ik.v1" in up
    assert summary["connections"] >= 2, summary
    needles = [n.encode() for n in names + notes] + [tag.encode(), b'"operation"', b"customerName", b'"orders"',
                                                      b"snapshot", b"hello", b"walnuts"]
    hits = {n.decode(): captured.count(n) for n in needles if captured.count(n)}
    assert not hits, f"cleartext on the wire: {hits}"
    figure(captured_bytes=summary["bytes"], captured_segments=summary["segments"],
           captured_connections=summary["connections"], cleartext_order_hits=0)
    for node in (slave, master):
        assert node.stop() == 0


# (c) A rogue master and a mistaken second master --------------------------------------------


def wait_live_on(slave: OrderSyncNode, url: str, timeout: float) -> None:
    def on_url():
        try:
            status = slave.status()
        except CommandError:
            return None
        return status["master"].get("state") == "live" and status["master"].get("url") == url
    wait_until(on_url, timeout, interval=0.05, what=f"slave live on {url}")


def test_a_rogue_and_a_mistaken_master_get_nothing_and_lose_nothing(lan3):
    h1, h2, h3 = lan3.hosts
    real = OrderSyncNode.master(h1, store="shop1", name="Counter", port=17820)
    real_url = f"ws://{h1.address}:17820/"
    slave = OrderSyncNode.slave(h2)
    wait_live_on(slave, real_url, 30)
    made = [slave.create(customer=f"before {i}") for i in range(2)]
    wait_converged([real, slave], expect=2)
    epoch, real_id = real.status()["epoch"], real.node_id()

    # The rogue: its own key, the store, epoch and id of the real master in its TXT record.
    rogue = h3.popen([PYTHON, SECURE_PEER, "respond", "--listen", h3.address, "--port", "17821", "--store", "shop1"],
                     stdout=subprocess.PIPE, text=True)
    assert json.loads(rogue.stdout.readline())["event"] == "listening"
    seen: list[dict] = []
    reader = threading.Thread(target=lambda: seen.extend(json.loads(line) for line in rogue.stdout), daemon=True)
    reader.start()
    announce = h3.popen([PYTHON, os.path.join(HERE, "zc_announce.py"), "--interface", h3.address,
                         "--name", "Counter Rogue", "--host", "rogue", "--port", "17821",
                         f"proto={PROTO}", "store=shop1", f"epoch={epoch}", "path=/", f"id={real_id}"],
                        stdout=subprocess.PIPE, text=True)
    assert announce.stdout.readline().startswith("announced")
    # The mistake: a second real master of the store, with its own data dir (another key).
    mistaken = OrderSyncNode.master(h3, store="shop1", name="Counter 2", port=17822,
                                    data_dir=os.path.join(h3.dir, "mistaken-master"))
    mistaken_id = mistaken.node_id()
    slave.wait_event("master.untrusted", timeout=20, where=lambda e: e.get("master.announced_id") == mistaken_id)
    slave.wait_event("master.found", timeout=20, where=lambda e: e.get("service.name") == "Counter Rogue")

    rogue_address = f"{h3.address}:17821"
    total = list(made)
    back = {}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        real.stop(sig)
        taken = [slave.create(customer=f"while away {sig.name} {i}") for i in range(2)]
        assert all(o["sync"] == "pending" for o in taken), taken
        total += taken
        # The slave tries the rogue (its TXT names the real id) and refuses it.
        attempts = len([e for e in slave.events("master.untrusted") if rogue_address in e.get("master.address", "")])
        slave.wait_event("master.untrusted", timeout=20, count=attempts + 1,
                         where=lambda e: rogue_address in e.get("master.address", ""))
        assert slave.status()["outbox"] == 2, slave.status()
        if sig == signal.SIGKILL:
            # The rogue dies without a goodbye: its announcement stays cached on the slave's host.
            for process in (rogue, announce):
                process.kill()
                process.wait(timeout=10)
        started = time.monotonic()
        real.start()
        wait_live_on(slave, real_url, 10)
        back[sig.name] = time.monotonic() - started
        wait_converged([real, slave], expect=len(total))
        slave.wait_drained(timeout=15)
    reader.join(timeout=10)

    held = {o["uuid"] for o in real.orders()}
    lost = [o["uuid"] for o in total if o["uuid"] not in held]
    assert not lost, lost
    assert seen, "the rogue was tried"
    readable = [p for record in seen for p in record["plaintexts"]]
    assert readable == [] and all(r["handshake"] == "failed" for r in seen), seen
    assert mistaken.orders() == [] and not mistaken.status()["peers"] and not mistaken.events("peer.connected")
    assert not mistaken.events("peer.hello")
    figure(rogue_connections=len(seen), rogue_bytes_received=sum(r["bytes"] for r in seen),
           rogue_plaintexts_read=len(readable), mistaken_master_connections=0, orders_lost=len(lost),
           back_after_sigterm_s=back["SIGTERM"], back_after_sigkill_and_rogue_death_s=back["SIGKILL"])
    for node in (slave, real, mistaken):
        assert node.stop() == 0


# (d) Pairing -------------------------------------------------------------------------------


def test_pairing_right_wrong_expired_reused_and_through_a_relay(lan3):
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, store="shop1", port=17830)
    url = ws_url(master)

    # The right code: a real slave pairs and syncs.
    started = time.monotonic()
    slave = OrderSyncNode.slave(h2, pair_name="till-2")
    paired = slave.wait_event("pairing.done", timeout=30)
    pairing_s = time.monotonic() - started
    slave.wait_live()
    assert paired["master.id"] == master.node_id()
    assert [t["name"] for t in master.terminals()] == ["till-2"]
    assert master.wait_event("terminal.paired")["name"] == "till-2"

    # Wrong codes: five tries lock their address out, even for the right code after them; the
    # code stays open for everyone else (h2's tries; h3 pairs with it below).
    code = master.pair()["code"]
    tries = pairing_tries(h2, url, [other_code(code) for _ in range(5)] + [code])
    assert all(not t["established"] and t["close"] == {"code": 1008, "reason": "pairing failed"} for t in tries), tries
    master.wait_event("pairing.locked_out")
    assert master.status()["pairing"]["state"] == "open", master.status()["pairing"]
    assert master.status()["pairing"]["lockedOutAddresses"] == 1, master.status()["pairing"]
    assert len(master.terminals()) == 1
    assert master.cli("pair", "cancel", code).returncode == 0
    # A real slave given a wrong code is refused and stops, asking for a new one.
    code = master.pair()["code"]
    wrong = OrderSyncNode.slave(h3, pair=False, data_dir=os.path.join(h3.dir, "wrong-code"),
                                extra=["--pair", other_code(code), "--master", url])
    assert wrong.process.wait(timeout=30) == 78  # not paired: a restart cannot mend it
    assert wrong.events("pairing.failed"), wrong.log_lines()[-5:]
    assert "ordersync pair" in wrong.events("start.not_paired")[-1]["fix"], wrong.log_lines()[-5:]
    assert not os.path.exists(os.path.join(wrong.data_dir, "master.trust"))

    # An expired code.
    window = master.pair(valid_for=1)
    wait_until(lambda: time.time() * 1000 > window["expiresAtMillis"] + 50, 5, what="the code to expire")
    [expired] = pairing_tries(h3, url, [window["code"]])
    assert not expired["established"] and expired["close"]["code"] == 1008, expired

    # A reused code: the first terminal pairs, the second is refused.
    code = master.pair()["code"]
    first, second = pairing_tries(h3, url, [code, code])
    assert first["established"] and not second["established"] and second["close"]["code"] == 1008, (first, second)
    assert len(master.terminals()) == 2

    # Through a relaying TCP proxy on h3: pairing works and the relay sees no order text.
    out = os.path.join(h3.dir, "relay")
    relay = h3.popen([PYTHON, os.path.join(HERE, "tcp_relay.py"), "--listen", h3.address, "--port", "17831",
                      "--target", h1.address, "--target-port", "17830", "--out", out],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert relay.stdout.readline().startswith("relaying")
    try:
        relayed_slave = OrderSyncNode.slave(h3, master_url=f"ws://{h3.address}:17831/", pair_name="behind-relay",
                                            data_dir=os.path.join(h3.dir, "relayed"))
        relayed_slave.wait_live()
        tag = secrets.token_hex(4)
        relayed_slave.create(customer=f"Relayed{tag}", note=f"secret note {tag}")
        master.create(customer=f"Counter{tag}", note=f"other note {tag}")
        wait_converged([master, slave, relayed_slave], expect=2)
    finally:
        relay.stdin.write("stop\n")
        relay.stdin.flush()
        relayed = json.loads(relay.stdout.readline())
        relay.wait(timeout=10)
    with open(out + ".up", "rb") as f:
        data = f.read()
    with open(out + ".down", "rb") as f:
        data += f.read()
    assert relayed["connections"] >= 1 and b"ordersync.pair.v1" in data, relayed
    assert tag.encode() not in data and b'"operation"' not in data and b"customerName" not in data
    for node in (slave, relayed_slave, master):
        assert node.stop() == 0
    figure(pairing_s=pairing_s, wrong_code_tries_refused=5, right_code_after_five_wrong_same_address="refused",
           expired_code="refused", reused_code="refused", relay_bytes=len(data), relay_cleartext_hits=0)


# (e) Revoke --------------------------------------------------------------------------------


def test_a_revoked_terminal_is_cut_off_within_a_second_and_refused_after(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    # A paired name may hold '/': the revocation by name still finds it (sent as %2F).
    slave = OrderSyncNode.slave(h2, pair_name="till-2/bar")
    slave.wait_live()
    master.create(customer="before the revoke")
    wait_converged([master, slave], expect=1)
    slave_id = slave.node_id()

    requested = time.time()
    answer = json.loads(master.cli("terminal", "revoke", "till-2/bar", "--json").stdout)
    assert answer.get("id") == slave_id, answer
    closed = master.wait_event("peer.disconnected", timeout=5, where=lambda e: log_time(e) >= requested - 0.01)
    noticed = slave.wait_event("master.disconnected", timeout=5, where=lambda e: log_time(e) >= requested - 0.01)
    closed_s, noticed_s = log_time(closed) - requested, log_time(noticed) - requested
    assert closed_s < 1.0 and noticed_s < 1.0, (closed_s, noticed_s)

    # Its reconnects are refused: it reads nothing more.
    slave.wait_event("pairing.required", timeout=30)
    master.wait_event("peer.unauthenticated", where=lambda e: e.get("node.id") == slave_id)
    master.create(customer="after the revoke")
    revoked_key = {"static": private_key(slave.data_dir).hex()}
    state = os.path.join(h2.dir, "revoked.json")
    with open(state, "w") as f:
        json.dump(revoked_key, f)
    again = secure_peer(h2, ws_url(master), state, master_key=public_key(private_key(master.data_dir)))
    assert not again["established"] and again["close"]["code"] == 1008, again
    assert [o["customerName"] for o in slave.orders()] == ["before the revoke"]
    assert slave.status()["master"]["state"] != "live"
    assert slave_id not in [t["id"] for t in master.terminals()], master.terminals()
    figure(revoke_link_closed_ms=closed_s * 1000, revoke_noticed_by_slave_ms=noticed_s * 1000,
           revoked_orders_read=0)
    for node in (slave, master):
        assert node.stop() == 0


# (f) Key rotation --------------------------------------------------------------------------


def trusted_id(slave: OrderSyncNode) -> str:
    with open(os.path.join(slave.data_dir, "master.trust")) as f:
        return json.load(f)["master"]


def test_a_master_key_rotation_reaches_a_connected_slave(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front")
    connected = OrderSyncNode.slave(h2)
    connected.wait_live()
    old_id = master.node_id()

    rotated = json.loads(master.cli("key", "rotate", "--json").stdout)
    new_id = rotated["master"]
    assert rotated["previous"] == old_id and new_id != old_id and rotated["linksHandedOver"] == 1, rotated
    handed = connected.wait_event("master.key_rotated", timeout=10)
    assert handed["master.id"] == new_id and trusted_id(connected) == new_id
    # The TXT record names both keys while the previous one is kept.
    name = master.wait_event("service.published")["service.name"]
    avahi_cli.browse_until(h2, lambda found: [s for s in found if s.name == name and s.txt.get("id") == new_id
                                              and s.txt.get("previd") == old_id], timeout=20)

    master.restart()
    started = time.monotonic()
    connected.wait_live(timeout=20)
    followed_s = time.monotonic() - started
    assert master.status()["nodeId"] == new_id and master.status()["previousNodeId"] == old_id
    order = connected.create(customer="after the rotation")
    orders = wait_converged([master, connected], expect=1)
    assert orders[0]["uuid"] == order["uuid"]
    figure(rotation_connected_slave_back_after_restart_s=followed_s)
    for node in (connected, master):
        assert node.stop() == 0


def test_a_slave_down_during_a_key_rotation_follows_the_new_key(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", name="front")
    returning = OrderSyncNode.slave(h2)
    returning.wait_live()
    assert returning.stop() == 0
    new_id = json.loads(master.cli("key", "rotate", "--json").stdout)["master"]
    # It still knows only the old key: the master answers with the previous key and hands the
    # new one over.
    returning.start()
    try:
        assert returning.wait_event("master.key_rotated", timeout=10)["master.id"] == new_id
        returning.wait_live()
        assert trusted_id(returning) == new_id
        returning.create(customer="after the rotation")
        wait_converged([master, returning], expect=1)
    finally:
        for node in (returning, master):
            node.stop()


# (g) The independent Python peer with the real master and a real Swift slave -------------


def test_the_independent_python_peer_syncs_with_a_real_master_and_slave(lan3):
    h1, h2, h3 = lan3.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    swift = OrderSyncNode.slave(h2)
    swift.wait_live()
    url = ws_url(master)
    state = os.path.join(h3.dir, "py-till.json")
    hello = {"type": "hello", "proto": PROTO, "terminal": "py-till", "name": "py-till", "store": "shop1"}
    # One message of 20 orders with 4,000-byte notes (about 80 KB: two chunks), then three
    # small ones; the peer rekeys its sending cipher every 3 messages.
    big = [{"uuid": new_uuid(), "customerName": f"py big {i}", "note": "n" * 4000} for i in range(20)]
    small = [{"uuid": new_uuid(), "customerName": f"py small {i}"} for i in range(3)]
    steps = [{"send": hello}, {"until": {"type": "ready"}},
             {"send": {"operation": 0, "opId": "py-big", "orders": big}}, {"until": {"type": "result", "opId": "py-big"}}]
    for i, order in enumerate(small):
        steps += [{"send": {"operation": 0, "opId": f"py-{i}", "orders": [order]}},
                  {"until": {"type": "result", "opId": f"py-{i}"}}]
    out = secure_peer(h3, url, state, code=master.pairing_code(name="py-till"), steps=steps, rekey_interval=3)
    assert out["established"] and out["controls"][0]["type"] == "paired", out
    results = [m for m in out["received"] if m.get("type") == "result"]
    assert [r["applied"] for r in results] == [20, 1, 1, 1], results
    assert out["rekeys"] >= 2, out["rekeys"]
    expected = {o["uuid"] for o in big + small}
    wait_until(lambda: expected <= {o["uuid"] for o in swift.orders()}, 20, what="the Swift slave to hold them")
    from_swift = swift.create(customer="from the Swift slave")
    # The Python peer comes back with IK and reads it in its snapshot.
    again = secure_peer(h3, url, state, steps=[{"send": hello}, {"until": {"type": "ready"}}])
    read = {o["uuid"] for m in again["received"] for o in m.get("orders", [])}
    assert from_swift["uuid"] in read and expected <= read, again
    assert out["master"]["master"] == master.node_id() == node_id(bytes.fromhex(out["masterKey"]))
    origins = {e["origin"] for e in json.loads(master.cli("journal", "--json").stdout)["entries"]}
    assert any(o.startswith("py-till [") for o in origins), origins
    figure(python_peer_orders_synced=len(expected), python_peer_messages_sent=out["messagesSent"],
           python_peer_rekeys=out["rekeys"], swift_order_read_by_python_peer=1)
    wait_converged([master, swift], expect=len(expected) + 1)
    for node in (swift, master):
        assert node.stop() == 0


# (h) A man in the middle editing the link ----------------------------------------------------


def test_a_flipped_bit_a_replay_or_a_reorder_closes_the_link_and_applies_nothing_of_it(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1")
    url = ws_url(master)
    state = os.path.join(h2.dir, "edited.json")
    hello = {"type": "hello", "proto": PROTO, "terminal": "edited", "name": "edited", "store": "shop1"}

    def create(op_id: str, customer: str) -> dict:
        return {"operation": 0, "opId": op_id, "orders": [{"uuid": new_uuid(), "customerName": customer}]}

    flipped, replayed = create("edit-flip", "Flipped Fiona"), create("edit-replay", "Replayed Rita")
    early, late = create("edit-early", "Early Erin"), create("edit-late", "Late Lars")
    runs = {
        "flip": secure_peer(h2, url, state, code=master.pairing_code(name="edited"),
                            steps=[{"send": hello}, {"until": {"type": "ready"}}, {"tamper": "flip", "send": flipped},
                                   {"until": {"type": "close"}}]),
        "replay": secure_peer(h2, url, state, steps=[{"send": hello}, {"until": {"type": "ready"}},
                                                     {"tamper": "replay", "send": replayed}, {"until": {"type": "close"}}]),
        "reorder": secure_peer(h2, url, state, steps=[{"send": hello}, {"until": {"type": "ready"}},
                                                      {"tamper": "reorder", "send": early, "then": late},
                                                      {"until": {"type": "close"}}]),
    }
    for how, out in runs.items():
        assert out["established"], (how, out)
        assert out["close"] and out["close"]["code"] == 1008, (how, out["close"])
    names = [o["customerName"] for o in master.orders()]
    # The replayed message was applied once (its first copy is genuine), its copy not at all;
    # nothing of the flipped or reordered messages was applied.
    assert names.count("Replayed Rita") == 1, names
    assert not {"Flipped Fiona", "Early Erin", "Late Lars"} & set(names), names
    journal = json.loads(master.cli("journal", "--json").stdout)["entries"]
    assert sum(1 for e in journal if e.get("opId") == "edit-replay") == 1, journal
    failures = master.events("peer.decrypt_failed")
    assert len(failures) >= 3, failures
    figure(tampered_links_closed=3, tampered_operations_applied=0, replayed_copies_applied=0)
    assert master.stop() == 0
