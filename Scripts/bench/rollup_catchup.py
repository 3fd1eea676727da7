"""Catch-up of `ordersync rollup --once` into PostgreSQL on loopback (issue 28, Docs/PERFORMANCE.md,
"The roll-up into PostgreSQL"): rows per second for a journal of N entries.

The store is made once: a master started with a data directory of its own, three orders created
through the CLI, the master stopped, then the journal filled to N entries with Python's sqlite3
(each a copy of the first Create with a UUID and an operation id of its own, one order each). Each
binary given with `--bin` (several, to compare builds under the same load) ships it with
`--once` into a fresh database of one throw-away PostgreSQL 15 (fsync on, default settings);
the runs alternate between the binaries. Wall time of the whole process, start included.

    python3 Scripts/bench/rollup_catchup.py --bin .build/release/ordersync --entries 100000 --repeat 3

The load average is printed with each run: on a shared machine compare only runs made together.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from perf_rollup import Postgres, RollupPerfError  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_store(binary: str, folder: str, entries: int) -> str:
    """A master's data directory whose journal holds `entries` one-order Creates."""
    data = os.path.join(folder, "data")
    port = free_port()
    env = dict(os.environ, ORDERSYNC_CONFIG="/dev/null", DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
    log = open(os.path.join(folder, "master.log"), "ab")
    master = subprocess.Popen([binary, "master", "--data-dir", data, "--store", "bench", "--port", str(port),
                               "--listen", "127.0.0.1", "--log-level", "warning"], stdout=log, stderr=log, env=env)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(data, "ordersync.sock")):
            if master.poll() is not None or time.monotonic() > deadline:
                raise RollupPerfError("the master did not start: see " + os.path.join(folder, "master.log"))
            time.sleep(0.05)
        for name in ("Ada", "Grace", "Edsger"):
            subprocess.run([binary, "order", "create", "--data-dir", data, "--customer", name, "--json"],
                           check=True, capture_output=True, env=env, timeout=60)
    finally:
        master.terminate()
        master.wait(timeout=30)
        log.close()
    db = sqlite3.connect(os.path.join(data, "ordersync.sqlite"))
    seq, op_id, origin, operation, uuids, message, recorded, term = db.execute(
        "SELECT seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term FROM journal ORDER BY seq LIMIT 1"
    ).fetchone()
    template_uuid = json.loads(uuids)[0]
    last = db.execute("SELECT max(seq) FROM journal").fetchone()[0]
    rows, links = [], []
    for n in range(last + 1, entries + 1):
        u = str(uuid.UUID(int=n)).upper()
        rows.append((n, str(uuid.uuid4()), origin, operation, json.dumps([u]), message.replace(template_uuid, u),
                     recorded + n, term))
        links.append((u.lower(), n))
    with db:
        db.executemany("INSERT INTO journal (seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.executemany("INSERT INTO journal_orders (uuid_key, seq) VALUES (?, ?)", links)
    db.close()
    return data


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", required=True, help="an ordersync binary (repeatable)")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="ordersync-bench-rollup-")
    pg = Postgres(free_port())
    results: dict[str, list[float]] = {b: [] for b in args.bin}
    try:
        data = make_store(args.bin[0], folder, args.entries)
        for run in range(args.repeat):
            for i, binary in enumerate(args.bin):
                database = f"bench_{run}_{i}"
                pg.sql(f"CREATE DATABASE {database}")
                before = loadavg()
                started = time.monotonic()
                result = subprocess.run([binary, "rollup", "--data-dir", data, "--database-url", pg.url(database),
                                         "--once", "--json", "--log-level", "warning"], capture_output=True, text=True,
                                        timeout=1800, env=dict(os.environ, ORDERSYNC_CONFIG="/dev/null"))
                took = time.monotonic() - started
                checkpoint = int(pg.sql("SELECT coalesce(max(seq), 0) FROM ordersync.checkpoints", database)[0][0])
                if result.returncode != 0 or checkpoint != args.entries:
                    raise RollupPerfError(f"{binary} exited {result.returncode} at checkpoint {checkpoint}: "
                                          f"{result.stderr.strip()[-800:]}")
                results[binary].append(args.entries / took)
                print(f"run {run + 1} {binary}: {took:.2f} s, {args.entries / took:,.0f} rows/s "
                      f"(load {before} -> {loadavg()})", flush=True)
                pg.sql(f"DROP DATABASE {database}")
        for binary, rates in results.items():
            print(f"{binary}: median {statistics.median(rates):,.0f} rows/s over {len(rates)} runs "
                  f"({', '.join(f'{r:,.0f}' for r in rates)})")
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
