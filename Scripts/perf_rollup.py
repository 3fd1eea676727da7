"""Scenario (g) of Scripts/perf.py: `ordersync rollup` into PostgreSQL on loopback (issue 28).

* catch-up: a master's journal of 100k entries (StorePOS Creates from the load generator) shipped
  by `ordersync rollup --once` into an empty database: rows per second (batches of at most 500
  entries, each one transaction with its checkpoint, fsync on);
* link-up: a following roll-up whose head office is down (PostgreSQL stopped, the roll-up
  backing off) and a backlog waiting: seconds from head office accepting connections again to
  the first committed batch (`rollup.batch_committed` in its log), the backoff included;
* lag at 100 operations per second: the follower caught up, the load generator sending 100
  Creates a second; per entry, head office's `shipped_at` minus the entry's `recorded_at`
  (p50, p99, max), and whether the checkpoint reached the last entry.

PostgreSQL (`initdb`, `pg_ctl`) is started here in a temporary folder, as the user `postgres`
when run as root (it refuses root), listening on 127.0.0.1 only, trust authentication.

    python3 Scripts/perf.py --only g --bin .build/release/ordersync
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_BINDIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")


class RollupPerfError(Exception):
    pass


def tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for folder in _BINDIRS:
        if os.access(os.path.join(folder, name), os.X_OK):
            return os.path.join(folder, name)
    raise RollupPerfError(f"`{name}` not found (apt-get install postgresql; Scripts/setup.sh)")


class Postgres:
    """A throw-away PostgreSQL cluster on 127.0.0.1:port."""

    def __init__(self, port: int):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="ordersync-perf-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.as_user = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.run([tool("initdb"), "--no-sync", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--locale=C.UTF-8"])
        self.start()

    def run(self, argv, check=True):
        result = subprocess.run(self.as_user + argv, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RollupPerfError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
        return result

    def start(self):
        self.run([tool("pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1", "start"])

    def stop(self):
        self.run([tool("pg_ctl"), "-D", self.data, "-w", "-m", "fast", "stop"], check=False)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def sql(self, sql: str, database: str = "postgres") -> list[list[str]]:
        result = subprocess.run([tool("psql"), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                                 "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RollupPerfError(f"psql: {result.stderr.strip()}")
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Follower:
    """`ordersync rollup` following, its log in a file."""

    def __init__(self, binary: str, data_dir: str, url: str, log_path: str):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen([binary, "rollup", "--data-dir", data_dir, "--database-url", url,
                                         "--log-level", "info"], stdout=self.log, stderr=self.log)

    def count(self, event: str) -> int:
        with open(self.log_path, errors="replace") as f:
            return sum(1 for line in f if re.search(rf'(event=|"event":"){re.escape(event)}\b', line))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _wait(predicate, timeout: float, what: str, interval: float = 0.01):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RollupPerfError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def _checkpoint(pg: Postgres, database: str) -> int:
    try:
        rows = pg.sql("SELECT coalesce(max(seq), 0) FROM ordersync.checkpoints", database)
    except RollupPerfError:
        return 0
    return int(rows[0][0]) if rows else 0


def measure(bench, free_port, api, median) -> dict:
    """The three figures, medians of `bench.args.repeat` runs; `bench` is perf.py's Bench (its
    load generator, fresh masters, `--smoke` and `--repeat`)."""
    smoke = bench.args.smoke
    entries = 2000 if smoke else bench.args.rollup_entries
    rate, duration = (100, 1) if smoke else (100, 10)
    pg = Postgres(free_port())
    runs = {"catch_up_rows_per_s": [], "catch_up_s": [], "link_up_s": [], "lag_p50_ms": [], "lag_p99_ms": [],
            "lag_max_ms": []}
    try:
        for run in range(bench.args.repeat):
            database = f"bench{run}"
            pg.sql(f"CREATE DATABASE {database}")
            master = bench.server("ordersync")
            follower = None
            try:
                bench.loaded(master, mode="max", receivers=1, ops=entries, window=512)
                seq = master.status()["seq"]
                started = time.monotonic()
                result = subprocess.run([bench.args.bin, "rollup", "--data-dir", master.data, "--database-url",
                                         pg.url(database), "--once", "--json"], capture_output=True, text=True,
                                        timeout=1800)
                took = time.monotonic() - started
                if result.returncode != 0 or _checkpoint(pg, database) != seq:
                    raise RollupPerfError(f"rollup --once exited {result.returncode} at checkpoint "
                                          f"{_checkpoint(pg, database)} of {seq}: {result.stderr.strip()[-500:]}")
                runs["catch_up_s"].append(took)
                runs["catch_up_rows_per_s"].append(seq / took)

                # Link-up: head office down, a backlog waiting, the follower backing off.
                pg.stop()
                follower = Follower(bench.args.bin, master.data, pg.url(database),
                                    os.path.join(bench.tmp, f"rollup-{run}.log"))
                _wait(lambda: follower.count("rollup.backoff") >= 1, 60, "the follower to back off")
                bench.loaded(master, mode="max", receivers=1, ops=500 if smoke else 5000, window=512)
                pg.start()
                up = time.monotonic()
                _wait(lambda: follower.count("rollup.batch_committed") >= 1, 120, "the first batch after link-up")
                runs["link_up_s"].append(time.monotonic() - up)
                seq = master.status()["seq"]
                _wait(lambda: _checkpoint(pg, database) >= seq, 300, f"the checkpoint at {seq}", interval=0.1)

                # Lag at 100 operations per second, the follower caught up.
                bench.loaded(master, mode="rate", receivers=1, rate=rate, duration=duration, warmup=0)
                seq_after = master.status()["seq"]
                _wait(lambda: _checkpoint(pg, database) >= seq_after, 120, f"the checkpoint at {seq_after}", interval=0.05)
                lag = pg.sql("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), "
                             "percentile_cont(0.99) WITHIN GROUP (ORDER BY d), max(d) FROM "
                             "(SELECT extract(epoch FROM shipped_at - recorded_at) * 1000 AS d FROM ordersync.journal "
                             f"WHERE seq > {seq}) AS lags", database)[0]
                for key, value in zip(("lag_p50_ms", "lag_p99_ms", "lag_max_ms"), lag):
                    runs[key].append(float(value))
            finally:
                if follower:
                    follower.stop()
                master.stop()
    finally:
        pg.cleanup()
    return {"entries": entries, "batch": 500, "rate": rate, "duration_s": duration,
            **{key: median(values) for key, values in runs.items()},
            "runs": {key: [round(v, 3) for v in values] for key, values in runs.items()}}


def report_lines(g: dict, fmt) -> list[str]:
    """Scenario (g)'s lines of perf.py's report."""
    return [f"(g) The roll-up into PostgreSQL on loopback (batches of at most {g['batch']} entries, fsync on):", "",
            "| | figure |", "| --- | --- |",
            f"| catch-up of {g['entries']:,} entries (`rollup --once`) | {fmt(g['catch_up_rows_per_s'])} rows/s "
            f"({fmt(g['catch_up_s'], 2)} s) |",
            f"| head office back (PostgreSQL started) to the first committed batch, backoff included | "
            f"{fmt(g['link_up_s'], 2)} s |",
            f"| lag per entry at {g['rate']} ops/s for {g['duration_s']} s (shipped_at - recorded_at), p50 / p99 / max | "
            f"{fmt(g['lag_p50_ms'], 1)} / {fmt(g['lag_p99_ms'], 1)} / {fmt(g['lag_max_ms'], 1)} ms |", ""]


if __name__ == "__main__":
    print(json.dumps({"see": "python3 Scripts/perf.py --only g"}))
