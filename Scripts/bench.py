"""Measures OrderSync on this machine and prints the figures (Docs/PERFORMANCE.md keeps them).

Runs on loopback only: one master and N slaves (`--master ws://127.0.0.1:PORT/`), real
processes, real SQLite files in a temporary folder.

  python3 Scripts/bench.py [--bin .build/debug/ordersync] [--slaves 50] [--orders 500]

Figures:
  1. writes on the master's local API: sequential creates per second (each one committed with
     synchronous=FULL and broadcast to every slave before the answer);
  2. end-to-end: a create on one slave until it is listed on another slave (median, p95);
  3. the worst day: N slaves connected, the master killed (SIGKILL) and restarted: time until
     all N are live again, and until all hold the same orders;
  4. memory: the master's RSS with N slaves connected, and one slave's RSS.
"""

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path_)


def api(data_dir, method, path, body=None):
    c = UnixHTTP(os.path.join(data_dir, "ordersync.sock"))
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None


def wait(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = predicate()
        except (OSError, ValueError):
            v = None
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit(f"bench: timed out waiting for {what}")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, ".build", "debug", "ordersync"))
    ap.add_argument("--slaves", type=int, default=50)
    ap.add_argument("--orders", type=int, default=500)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ordersync-bench-")
    procs = []
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")  # no Avahi: loopback only

    def start(role, d, extra):
        log = open(os.path.join(tmp, os.path.basename(d) + ".log"), "ab")
        p = subprocess.Popen([args.bin, role, "--data-dir", d, "--log-level", "warning", *extra],
                             stdout=log, stderr=log, env=env)
        procs.append(p)
        return p

    try:
        port = 17990
        mdir = os.path.join(tmp, "master")
        master = start("master", mdir, ["--port", str(port), "--listen", "127.0.0.1", "--store", "bench"])
        wait(lambda: api(mdir, "GET", "/v1/status")[0] == 200, 20, "the master")
        sdirs = [os.path.join(tmp, f"slave{i:02d}") for i in range(args.slaves)]
        # Each slave pairs with its own one-time code (a pairing window is single use), one
        # after the other; the figure below counts from the last pairing.
        slaves = []
        for i, d in enumerate(sdirs):
            status, window = api(mdir, "POST", "/v1/pairing", {"name": os.path.basename(d)})
            if status != 201:
                raise SystemExit(f"bench: the master did not open a pairing window: {status} {window}")
            slaves.append(start("slave", d, ["--master", f"ws://127.0.0.1:{port}/", "--name", os.path.basename(d),
                                             "--pair", window["code"]]))
            wait(lambda: len(api(mdir, "GET", "/v1/terminals")[1]["terminals"]) == i + 1, 30, f"{d} to pair")
        t0 = time.time()
        wait(lambda: all(api(d, "GET", "/v1/status")[1]["master"]["state"] == "live" for d in sdirs), 120, "all slaves live")
        print(f"bench: {args.slaves} slaves connected and live in {time.time() - t0:.2f} s")

        # 1. master API write rate
        t0 = time.time()
        for i in range(args.orders):
            status, _ = api(mdir, "POST", "/v1/orders", {"uuid": str(uuid.uuid4()), "customerName": f"m{i}"})
            assert status == 201, status
        rate = args.orders / (time.time() - t0)
        print(f"bench: master local API: {args.orders} creates in {time.time() - t0:.2f} s = {rate:.0f} creates/s "
              f"(each committed with synchronous=FULL and broadcast to {args.slaves} slaves)")
        wait(lambda: all(api(d, "GET", "/v1/orders?per=1")[1]["total"] == args.orders for d in sdirs), 120, "slaves to converge")

        if args.slaves < 2:
            print("bench: fewer than 2 slaves: end-to-end, memory and reconnect figures skipped")
            return 0

        # 2. end-to-end latency slave -> other slave
        lat = []
        a, b = sdirs[0], sdirs[-1]
        for i in range(50):
            u = str(uuid.uuid4())
            t0 = time.time()
            status, _ = api(a, "POST", "/v1/orders", {"uuid": u, "customerName": f"e2e{i}"})
            assert status == 201, status
            wait(lambda: api(b, "GET", f"/v1/orders/{u}")[0] == 200, 10, "the order on the other slave")
            lat.append((time.time() - t0) * 1000)
        lat.sort()
        print(f"bench: slave -> master -> other slave: median {statistics.median(lat):.1f} ms, "
              f"p95 {lat[int(len(lat) * 0.95) - 1]:.1f} ms (50 creates, acknowledged after the master committed)")

        # 4. memory
        print(f"bench: RSS master {rss_mib(master.pid):.1f} MiB with {args.slaves} slaves; one slave {rss_mib(slaves[0].pid):.1f} MiB")

        # 3. the worst day: master killed, everybody reconnects at once
        total = api(mdir, "GET", "/v1/status")[1]["orders"]
        master.send_signal(signal.SIGKILL)
        master.wait()
        wait(lambda: all(api(d, "GET", "/v1/status")[1]["master"]["state"] != "live" for d in sdirs), 60,
             "slaves to notice the master is gone")
        master = start("master", mdir, ["--port", str(port), "--listen", "127.0.0.1", "--store", "bench"])
        t0 = time.time()
        wait(lambda: all(api(d, "GET", "/v1/status")[1]["master"]["state"] == "live" for d in sdirs), 120,
             "all slaves live again")
        live = time.time() - t0
        wait(lambda: all(api(d, "GET", "/v1/orders?per=1")[1]["total"] == total for d in sdirs), 120, "convergence")
        print(f"bench: master killed and restarted: all {args.slaves} slaves live again after {live:.2f} s "
              f"(jittered backoff), all holding the same {total} orders after {time.time() - t0:.2f} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
