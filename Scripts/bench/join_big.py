#!/usr/bin/env python3
"""A terminal joining a large store: how long a new paired terminal and a new StorePOS app
take to get every order, and how the master answers everyone else meanwhile.

    python3 Scripts/bench/join_big.py --bin .build/release/ordersync --orders 1000000

The store is made quickly: the master starts once (it creates its schema), one order goes in
through its local API, and that order's row is copied N times with sqlite3 (new uuids, later
`created`), so every row has the real schema and a shape the master wrote itself. The master
starts again on it. Then, one after the other:

* a paired slave (`ordersync slave --pair`) joins: seconds until its status says `live` at the
  master's sequence;
* a StorePOS app (the load generator's `snapshot` mode) connects: seconds until its connect
  sequence brought every order.

During each join a prober asks the master's local API, one request after the other, for one
order (`GET /v1/orders/{uuid}`) and writes one (`POST /v1/orders`, durable before it is
answered) every tenth request: p50/p99/max of those answers (and of the reads and the writes
apart: with `--sync-replicas` 1, the default, a write waits up to `--sync-timeout` for a standby;
one left waiting only for a standby receiving its snapshot, which holds nothing before its end,
is answered at once, unreplicated), and the master's RSS
(sampled every 50 ms, and its high-water mark). And the shop's other tills: three StorePOS
terminals that connected before the join (their own connect sequences over), one sending a Create
`--terminals-rate` times a second (100) and all three timed from each send until both others have
it (the load generator's `rate` mode, stopped with SIGUSR1 once the join is over), as the
generator read them and as the kernel had them at the last receiver's socket (`SO_TIMESTAMPNS`:
without the generator's own delays, which a slave decoding on the generator's core causes). `Scripts/perf.py --join` runs this and puts the figures
in its report.
"""

import argparse
import json
import os
import signal
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid as uuidlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import perf  # noqa: E402  (Scripts/perf.py: its processes and helpers)


def store_file(data_dir):
    for name in os.listdir(data_dir):
        if name.endswith((".sqlite", ".db", ".sqlite3")):
            return os.path.join(data_dir, name)
    raise perf.PerfError(f"no store file in {data_dir}: {os.listdir(data_dir)}")


def process_cpu_seconds(pid):
    """CPU time of the whole process so far, threads that ended included (user + system, from
    /proc/PID/stat): a slave's decode and commit threads come and go."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sync_folder(folder):
    """Syncs every file in `folder`: a shop's store was written by checkpoints that synced it,
    while the one made here (`synchronous=OFF`) or copied would otherwise leave hundreds of
    megabytes to the kernel, and the master's first sync of its database file (the first complete
    checkpoint, during the first join) would write them out: a stall of the benchmark, not of the
    master."""
    started = time.time()
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    return time.time() - started


def make_store(bench, orders, cache=None):
    """A stopped master whose store holds `orders` orders; returns the server (stopped) and the
    uuid of an order it holds. With `cache` (a folder), the master's data folder is copied from
    there when an earlier run left one of `orders` orders, and left there otherwise: runs that
    compare builds skip the minutes of making the store (its schema must be the builds')."""
    s = bench.server("ordersync")
    kept = os.path.join(cache, f"master-{orders}") if cache else None
    if kept and os.path.exists(os.path.join(kept, "first-order")):
        s.stop()
        shutil.rmtree(s.data)
        shutil.copytree(kept, s.data, ignore=shutil.ignore_patterns("*.sock", "first-order"))
        sync_folder(s.data)
        with open(os.path.join(kept, "first-order")) as f:
            return s, f.read().strip()
    first = str(uuidlib.uuid4()).upper()
    status, body = perf.api(s.data, "POST", "/v1/orders", {
        "uuid": first, "customerName": "Kevin", "created": "2016-01-12T21:35:16+0800",
        "shippingMethod": "DHL", "tableName": "T4", "tableSize": 4})
    if status not in (200, 201):
        raise perf.PerfError(f"the first order was refused: {status} {body}")
    s.stop()
    path = store_file(s.data)
    db = sqlite3.connect(path)
    columns = [row[1] for row in db.execute("PRAGMA table_info(orders)")]
    started = time.time()
    db.execute("PRAGMA synchronous=OFF")
    # In SQLite itself (a recursive CTE), not row by row from Python: seconds, not minutes.
    uuid = "printf('%08X-0000-4000-8000-%012X', c.i, c.i)"
    made = {"uuid": uuid, "uuid_key": f"lower({uuid})", "created_ms": "t.created_ms + c.i",
            "customer_name": "'Customer ' || c.i"}
    values = ", ".join(made.get(col, f"t.{col}") for col in columns)
    db.execute("BEGIN")
    db.execute(f"""
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
        INSERT INTO orders ({', '.join(columns)})
        SELECT {values} FROM c, (SELECT * FROM orders LIMIT 1) AS t""", (orders - 1,))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    synced = sync_folder(s.data)
    print(f"join: {orders} orders written in {time.time() - started:.1f}s (synced in {synced:.1f}s)", file=sys.stderr, flush=True)
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(s.data, kept, ignore=shutil.ignore_patterns("*.sock"))
        with open(os.path.join(kept, "first-order"), "w") as f:
            f.write(first)
    return s, first


class TerminalProbe:
    """The shop's other tills during a join: the load generator's rate mode (a StorePOS sender at
    `rate` Creates a second, two receivers), connected and quiet before the join starts (quiet for
    1.5 s: a StorePOS connect sequence pauses 1 s at each of its fences), stopped
    (SIGUSR1: nothing more is sent, what was sent is waited for) once it is over, and measured for
    at least `least_s` (a small store's join is over in a fraction of a second)."""

    least_s = 1.0

    def __init__(self, bench, server, rate):
        self.bench, self.server, self.rate = bench, server, rate
        self.measuring = threading.Event()
        self.process, self.figures, self.error = None, None, None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        try:
            self.figures = self.bench.gen.run(
                self.server.port, on_measuring=self.measuring.set, started=self.started, mode="rate", rate=self.rate,
                duration=3600, warmup=0, receivers=2, settle_ms=1500)
        except Exception as e:  # reported by stop()
            self.error = e
        finally:
            self.measuring.set()

    def started(self, process):
        self.process = process

    def start(self):
        self.thread.start()
        self.measuring.wait(timeout=900)
        if self.error or not self.thread.is_alive():
            raise perf.PerfError(f"the other tills did not connect: {self.error or self.figures}")
        self.since = time.monotonic()
        return self

    def stop(self):
        # The measured window's least length (not a wait for an event: the tills send on a clock).
        time.sleep(max(0.0, self.since + self.least_s - time.monotonic()))
        self.process.send_signal(signal.SIGUSR1)
        self.thread.join(timeout=300)
        f = self.figures
        if self.error or not f or not f["complete"]:
            raise perf.PerfError(f"the other tills did not get every operation: {self.error or f}")
        return {key: f[key] for key in ("latency_ms", "arrival_ms", "delivered_ops", "late_sends", "kept_up", "receivers")}

    def kill(self):
        """Ends the tills at once (a join that failed: nothing is measured)."""
        if self.process and self.process.poll() is None:
            self.process.kill()


class Prober:
    """Asks the master's local API, one request after the other, until stopped."""

    def __init__(self, server, known_uuid):
        self.server, self.known = server, known_uuid
        self.latencies, self.reads, self.writes, self.rss, self.errors = [], [], [], [], []
        #: (wall-clock start, ms) of every write that took 100 ms or more
        self.slow_writes = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.sampler = threading.Thread(target=self.sample, daemon=True)

    def start(self):
        self.thread.start()
        self.sampler.start()
        return self

    def run(self):
        n = 0
        while self.running:
            n += 1
            started, wall = time.perf_counter(), time.time()
            try:
                if n % 10 == 0:
                    status, _ = perf.api(self.server.data, "POST", "/v1/orders", {
                        "uuid": str(uuidlib.uuid4()).upper(), "customerName": "Probe",
                        "created": "2016-01-12T21:35:16+0800", "shippingMethod": "DHL", "tableName": "T1",
                        "tableSize": 1})
                else:
                    status, _ = perf.api(self.server.data, "GET", f"/v1/orders/{self.known}")
                if status not in (200, 201):
                    self.errors.append(status)
            except OSError as e:
                self.errors.append(str(e))
            self.latencies.append((time.perf_counter() - started) * 1000)
            (self.writes if n % 10 == 0 else self.reads).append(self.latencies[-1])
            if n % 10 == 0 and self.latencies[-1] >= 100:
                self.slow_writes.append((wall, self.latencies[-1]))
            time.sleep(0.005)

    def sample(self):
        while self.running:
            try:
                self.rss.append(perf.memory_mib(self.server.pid)[0])
            except OSError:
                pass
            time.sleep(0.05)

    def stop(self):
        self.running = False
        self.thread.join()
        self.sampler.join()
        lat = sorted(self.latencies)

        def q(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else None

        reads, writes = sorted(self.reads), sorted(self.writes)
        return {"requests": len(lat), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": lat[-1] if lat else None,
                "read_p50_ms": reads[len(reads) // 2] if reads else None,
                "read_p99_ms": reads[min(len(reads) - 1, int(0.99 * len(reads)))] if reads else None,
                "write_p50_ms": writes[len(writes) // 2] if writes else None,
                "write_max_ms": writes[-1] if writes else None, "writes": len(writes),
                "writes_over_100ms": len(self.slow_writes),
                "errors": len(self.errors), "rss_max_mib": max(self.rss) if self.rss else None,
                "rss_median_mib": statistics.median(self.rss) if self.rss else None}


def join(bench, orders, apps=1, cache=None, slave_joins=True, profile=None, terminals_rate=100, slave_dir=None):
    """The figures of one run: a paired slave's join (unless `slave_joins` is false), then `apps`
    StorePOS apps' at once (a power cut brings every till back together; none with `apps` 0).
    `profile` (a folder): `perf stat` and `perf record -g` of the master while the apps join.
    `terminals_rate` (0: none): the other tills' operations a second during each join.
    `slave_dir`: a folder on another disk, under which the slave keeps its data (in a shop it
    has a disk of its own; on one machine its writes otherwise slow the master's syncs)."""
    s, known = make_store(bench, orders, cache)
    s.log = open(os.path.join(s.dir, "server.log"), "ab")
    s.start()
    out = {"orders": orders, "slave_dir": slave_dir}
    slave_folder = tempfile.mkdtemp(prefix="ordersync-join-slave-", dir=slave_dir) if slave_dir else None
    probes = []

    def tills():
        """The other tills for the next join, connected (none with `terminals_rate` 0)."""
        probe = TerminalProbe(bench, s, terminals_rate).start() if terminals_rate else None
        probes.append(probe)
        return probe

    try:
        base = perf.memory_mib(s.pid)[0]
        out["rss_before_mib"] = base
        out["load_before"] = os.getloadavg()
        if slave_joins:
            probe = tills()
            join_slave(bench, s, known, out, slave_folder)
            if probe:
                out["slave_terminals"] = probe.stop()
        out["apps"] = apps
        if apps == 0:
            out["load"] = os.getloadavg()
            return out
        probe = tills()
        prober = Prober(s, known).start()
        # One generator per app (its snapshot mode is one terminal), all started at once.
        runs = [None] * apps

        def app(k):
            runs[k] = bench.gen.run(s.port, mode="snapshot", expect=orders)

        threads = [threading.Thread(target=app, args=(k,)) for k in range(apps)]
        profilers = start_profile(profile, s.pid) if profile else []
        master_cpu = process_cpu_seconds(s.pid)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["master_cpu_s_during_apps"] = process_cpu_seconds(s.pid) - master_cpu
        for p in profilers:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=120)
        out["storepos_probe"] = prober.stop()
        if probe:
            out["storepos_terminals"] = probe.stop()
        for figures in runs:
            if not figures or not figures["complete"] or figures["snapshot_orders"] < orders:
                raise perf.PerfError(f"a StorePOS app did not get every order: {figures}")
        out["storepos_s"] = max(f["snapshot_s"] for f in runs)
        out["generator_cpu_s"] = [f.get("generator_cpu_s") for f in runs]
        out["messages"] = [f.get("messages") for f in runs]
        out["hwm_mib"] = perf.memory_mib(s.pid)[1]
        out["load"] = os.getloadavg()
    finally:
        for probe in probes:
            if probe:
                probe.kill()
        s.stop()
        if slave_folder:
            shutil.rmtree(slave_folder, ignore_errors=True)
    return out


def start_profile(folder, pid):
    """`perf stat` and `perf record -g` attached to the master until sent SIGINT."""
    os.makedirs(folder, exist_ok=True)
    stat = open(os.path.join(folder, "perf-stat.txt"), "w")
    return [subprocess.Popen(["perf", "stat", "-p", str(pid)], stderr=stat, stdout=stat),
            subprocess.Popen(["perf", "record", "-g", "-F", "499", "-o", os.path.join(folder, "perf.data"),
                              "-p", str(pid)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)]


def join_slave(bench, s, known, out, folder=None):
    """A paired slave joins the master `s`: its figures go in `out`."""
    prober = Prober(s, known).start()
    started, master_cpu = time.time(), process_cpu_seconds(s.pid)
    slave = bench.pair_slave(s, "join-slave", folder)
    try:
        slave.wait_synced(s, timeout=600)
        out["slave_s"] = time.time() - started
        out["slave_hwm_mib"] = perf.memory_mib(slave.process.pid)[1]
        # CPU seconds, which a loaded machine stretches less than wall time: the slave's
        # whole run (pairing included) and the master's meanwhile (the prober's requests too).
        out["slave_cpu_s"] = process_cpu_seconds(slave.process.pid)
        out["master_cpu_s_during_slave"] = process_cpu_seconds(s.pid) - master_cpu
        # The prober stops (its last request answered) while the slave still runs: a write
        # left waiting for a standby that is stopping would measure the stop, not the join.
        out["slave_probe"] = prober.stop()
    finally:
        if prober.running:
            prober.stop()
        slave.stop()
    # When the slow writes began, in seconds after the slave started (its join ended at slave_s).
    out["slave_probe"]["slow_writes"] = [[round(t - started, 2), round(ms, 1)] for t, ms in prober.slow_writes]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(perf.REPO, ".build", "release", "ordersync"))
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--apps", type=int, default=1, help="StorePOS apps connecting at once (0: none, the slave only)")
    parser.add_argument("--store-cache", help="a folder keeping the made store between runs (see make_store)")
    parser.add_argument("--no-slave", action="store_true", help="the StorePOS apps only, no paired slave first")
    parser.add_argument("--profile", metavar="DIR", help="perf stat and perf record -g of the master while the apps join")
    parser.add_argument("--terminals-rate", type=int, default=100,
                        help="the other tills' Creates a second during each join (0: no other tills)")
    parser.add_argument("--slave-dir", help="a folder on another disk for the slave's data (e.g. /dev/shm)")
    parser.add_argument("--out-json")
    args = parser.parse_args()
    bench = perf.Bench(argparse.Namespace(bin=args.bin, smoke=False, repeat=1))
    try:
        result = join(bench, args.orders, args.apps, args.store_cache, not args.no_slave, args.profile,
                      args.terminals_rate, args.slave_dir)
    finally:
        bench.cleanup()
    text = json.dumps(result, indent=1)
    if args.out_json:
        with open(args.out_json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    try:
        main()
    except perf.PerfError as e:
        raise SystemExit(f"join: {e}")
