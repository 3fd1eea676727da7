"""A master whose avahi-daemon hangs (SIGSTOP: it keeps its D-Bus name but answers nothing, so
every call to it waits for D-Bus to give up, 25 s) keeps serving: its event loop never waits for
Avahi. Started while the daemon hangs, it answers a WebSocket handshake and its local API at
once, and publishes its service as soon as the daemon answers again."""

import os
import signal
import time

from avahi_cli import browse_until
from lanharness import PYTHON, Host
from ordersync_lab import OrderSyncNode

# Opens a WebSocket to argv[1] and prints how many seconds the opening handshake took.
HANDSHAKE = """
import sys, time
from websockets.sync.client import connect
started = time.monotonic()
with connect(sys.argv[1], open_timeout=float(sys.argv[2])):
    print(time.monotonic() - started)
"""

BOUND = 2.0


def avahi_daemon_pid(host: Host) -> int:
    pid = host.run(["cat", "/run/avahi-daemon/pid"]).stdout.strip()
    assert pid.isdigit(), f"no avahi-daemon pid on {host.name}: {pid!r}"
    return int(pid)


def handshake_seconds(host: Host, url: str) -> float:
    """The time a WebSocket opening handshake from `host` to `url` takes (fails past 10 s)."""
    return float(host.run([PYTHON, "-c", HANDSHAKE, url, "10"], timeout=20).stdout)


def status_seconds(node: OrderSyncNode) -> tuple[float, dict]:
    started = time.monotonic()
    status = node.status()
    return time.monotonic() - started, status


def test_a_master_started_while_avahi_daemon_hangs_serves_at_once_and_publishes_when_it_answers(lan2):
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, name="Counter", port=17900)
    master.wait_event("service.published")
    daemon = avahi_daemon_pid(h1)
    os.kill(daemon, signal.SIGSTOP)
    try:
        # A reboot of the master while the daemon hangs: its Avahi thread's first D-Bus call
        # (creating the client) holds Avahi's lock until the daemon answers.
        master.kill()
        master.args = ["--port", "17901", "--store", "shop1", "--name", "Counter"]
        master.start()
        # The log file is appended to: wait for the restarted master's own start, on its new port.
        master.wait_event("node.started", where=lambda e: int(e.get("port", 0)) == 17901)
        url = f"ws://{h1.address}:17901/"
        timings = []
        # Probed twice in a row: the second probe comes well after discovery started.
        for _ in range(2):
            handshake = handshake_seconds(h2, url)
            api, status = status_seconds(master)
            timings.append((handshake, api))
            assert handshake < BOUND, f"WebSocket handshake took {handshake:.2f}s while avahi-daemon hangs"
            assert api < BOUND, f"`ordersync status` took {api:.2f}s while avahi-daemon hangs"
            assert status["avahi"] == "starting", status["avahi"]
        assert not [e for e in master.events("service.published") if e.get("port") == 17901]
        resumed = time.monotonic()
    finally:
        os.kill(daemon, signal.SIGCONT)
    master.wait_event("service.published", timeout=30, where=lambda e: e.get("port") == 17901)
    published = time.monotonic() - resumed
    # The killed master's service is withdrawn by the daemon once it notices the client gone.
    browse_until(h2, lambda found: any(s.name == "Counter" and s.port == 17901 for s in found)
                 and not any(s.port == 17900 for s in found), timeout=30)
    assert master.status()["avahi"] == "up"
    assert master.stop() == 0
    print(f"handshake and status while avahi-daemon hangs: {timings}; published {published:.2f}s after it resumed")
