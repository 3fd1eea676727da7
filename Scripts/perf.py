"""OrderSync's master against a plain Python master, side by side, under one load generator.

Runs on loopback only. Each figure comes from fresh servers started alternately (OrderSync,
Python, OrderSync, Python, ...), the server pinned to core 0 and the load generator
(`Scripts/bench/loadgen.c`, raw sockets, built here with gcc) to core 1; medians of
`--repeat` runs. The generator reports its own CPU so it is never the hidden bottleneck.

    python3 Scripts/perf.py --bin .build/release/ordersync --plots Docs/perf --out-json perf.json
    python3 Scripts/perf.py --smoke --bin .build/debug/ordersync      # the pipeline, in seconds

Scenarios: (a) maximum sustained durable ops/s with 1, 10 and 50 receiving terminals, and
deliveries per server CPU-second; (b) latency p50/p99/p99.9 at 100, 1,000 and 5,000 ops/s with
10 terminals (`--latency-terminals`); (c) catch-up of an OrderSync slave that missed 100k operations; (d) 1,000
connected terminals: server RSS and CPU; (e) idle CPU and RSS; (f) the store of 100k orders to a
new terminal (a StorePOS terminal's connect sequence on both masters; a new OrderSync slave's
snapshot); (g) the roll-up into PostgreSQL: catch-up rows/s, head office back to the first
committed batch, lag per entry at 100 ops/s (Scripts/perf_rollup.py); (p) paired terminals (the generator on the
secure link) against StorePOS terminals: ops/s and master CPU per delivery with 1 and 10 receivers,
p99 at 1,000 ops/s with 8, 64 and 256 terminals, memory per connected terminal
(Scripts/perf_paired.py; pairing needs the project's .venv). Then the cost as the work grows (OrderSync): terminals 1 -> 50 -> 500, order size
200 B -> 16 KiB, store size 1k -> 1M orders: server CPU per operation and latency, as tables and
PNG plots. Also the disk's fdatasync time, measured beside them. With `--only join`: (h) a
store of `--join-orders` (1M) orders joined by a new paired slave and a new StorePOS app while
the master's local API is asked and three other StorePOS tills trade Creates
(`Scripts/bench/join_big.py`): join times, local API p50/p99, the other tills' latency, master
RSS (`--join-slave-dir`: the joining slave's data on another disk, as a shop's till has its own).
"""

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLK_TCK = os.sysconf("SC_CLK_TCK")


class PerfError(Exception):
    pass


# MARK: processes


def pinned(core, argv):
    """argv pinned to one core when the machine has two or more and taskset exists."""
    if os.cpu_count() and os.cpu_count() >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(core), *argv]
    return argv


def cpu_seconds(pid):
    """CPU time of every thread of `pid` so far: the scheduler's nanoseconds on CPU
    (/proc/PID/task/*/schedstat) where the kernel keeps them, else utime + stime in clock ticks.
    Threads that already ended count only in the fallback."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_mib(pid):
    rss = hwm = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while True:
        try:
            value = predicate()
        except (OSError, ValueError, http.client.HTTPException):
            value = None
        if value:
            return value
        if time.time() > deadline:
            raise PerfError(f"timed out waiting for {what}")
        time.sleep(0.01)


def raise_files_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def api(data_dir, method, path, body=None):
    c = UnixHTTP(os.path.join(data_dir, "ordersync.sock"))
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None
    finally:
        c.close()


class Server:
    """One master process on 127.0.0.1, pinned to core 0."""

    kind = "?"

    def __init__(self, tmp, name):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.process = None
        self.log = open(os.path.join(self.dir, "server.log"), "ab")

    def argv(self):
        raise NotImplementedError

    def start(self):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent", **self.extra_env())
        self.process = subprocess.Popen(pinned(0, self.argv()), stdout=self.log, stderr=self.log, env=env,
                                        preexec_fn=raise_files_limit)
        wait_for(self.accepting, 30, f"the {self.kind} master on port {self.port}")
        return self

    def extra_env(self):
        return {}

    def accepting(self):
        if self.process.poll() is not None:
            raise PerfError(f"the {self.kind} master exited: {self.tail()}")
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def tail(self):
        with open(os.path.join(self.dir, "server.log"), "rb") as f:
            return f.read()[-2000:].decode(errors="replace")

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class OrderSyncServer(Server):
    kind = "OrderSync"

    def __init__(self, tmp, name, binary, extra=(), trace=None):
        super().__init__(tmp, name)
        self.binary = binary
        self.extra = list(extra)
        self.data = os.path.join(self.dir, "data")
        #: With `--stage-trace DIR`: the master's per-group stage trace (ORDERSYNC_STAGE_TRACE).
        self.trace = trace

    def extra_env(self):
        return {"ORDERSYNC_STAGE_TRACE": self.trace} if self.trace else {}

    def argv(self):
        big = "1000000"
        # The per-terminal limits lifted, bytes included (4 MiB of burst is about 19,000 Creates:
        # a fast machine's sender was cut off inside one run of (a), and its window never came back).
        return [self.binary, "master", "--data-dir", self.data, "--store", "bench", "--port", str(self.port),
                "--listen", "127.0.0.1", "--insecure-storepos", "--log-level", "warning", "--rate-limit", big,
                "--rate-burst", big, "--rate-limit-bytes", str(1 << 40), "--rate-burst-bytes", str(1 << 40),
                "--max-connections", "5000", "--max-connections-per-address", "5000",
                "--max-handshakes-per-address", "5000", *self.extra]

    def status(self):
        return api(self.data, "GET", "/v1/status")[1]

    def accepting(self):
        # The master binds its terminals' port before it opens the store (a refused start
        # writes nothing), so the port accepts before the local API socket exists: wait for both.
        # The socket's file exists from its bind(), before its listen(): a connection in between
        # is refused, so what is waited for is a connection the local API takes.
        if not super().accepting():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(os.path.join(self.data, "ordersync.sock"))
            except OSError:
                return False
        return True


class PythonServer(Server):
    kind = "Python"

    def __init__(self, tmp, name, synchronous="NORMAL"):
        super().__init__(tmp, name)
        self.synchronous = synchronous

    def argv(self):
        return [sys.executable, os.path.join(HERE, "bench", "python_master.py"), "--port", str(self.port),
                "--db", os.path.join(self.dir, "orders.sqlite"), "--synchronous", self.synchronous]


# MARK: the generator


class Generator:
    def __init__(self, tmp):
        self.binary = os.path.join(tmp, "loadgen")
        sources = [os.path.join(HERE, "bench", name) for name in ("loadgen.c", "loadgen_noise.c")]
        gcc = shutil.which("gcc") or shutil.which("cc")
        if not gcc:
            raise PerfError("gcc is needed to build the load generator (apt-get install gcc)")
        # libcrypto (OpenSSL, apt-get install libssl-dev) for the secure link of paired terminals.
        subprocess.run([gcc, "-O2", "-Wall", "-Wextra", "-o", self.binary, *sources, "-lm", "-lcrypto"], check=True)

    def run(self, port, on_measuring=None, started=None, **options):
        """Runs the generator; `on_measuring()` is called when it starts the measured phase
        (after its terminals connected and, with `settle_ms`, went quiet); `started(process)`
        once it runs (in rate mode, SIGUSR1 ends it early: nothing more is sent)."""
        argv = [self.binary, "--port", str(port)]
        for key, value in options.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        process = subprocess.Popen(pinned(1, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=raise_files_limit)
        if started:
            started(process)
        errors = []
        for line in process.stderr:
            if line.strip() == "measuring":
                if on_measuring:
                    on_measuring()
                break
            errors.append(line)
        stdout, stderr = process.communicate(timeout=600)
        try:
            figures = json.loads(stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise PerfError(f"loadgen gave no figures: {''.join(errors)}{stderr.strip()} {stdout.strip()}")
        return figures


# MARK: measuring


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="ordersync-perf-")
        self.gen = Generator(self.tmp)
        self.results = {"machine": machine(), "command": " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
                        "smoke": args.smoke, "repeat": args.repeat}
        self.runs = 0
        self.servers = []
        #: Flags added to every OrderSync master started (the paired scenario lifts limits with them).
        self.extra_master_args = []

    def server(self, kind):
        self.runs += 1
        name = f"{kind}-{self.runs}"
        if kind in ("ordersync", "baseline"):
            binary = self.args.bin if kind == "ordersync" else self.args.baseline_bin
            stage_trace = getattr(self.args, "stage_trace", None)  # scripts that drive a Bench of their own leave it out
            if stage_trace:
                os.makedirs(stage_trace, exist_ok=True)
            trace = os.path.join(stage_trace, f"{name}.trace") if stage_trace else None
            s = OrderSyncServer(self.tmp, name, binary, self.extra_master_args, trace=trace)
        else:
            s = PythonServer(self.tmp, name, "FULL" if kind == "python-full" else "NORMAL")
        self.servers.append(s)
        return s.start()

    def alternate(self, measure, kinds=("ordersync", "python")):
        """`measure(server)` on fresh servers, alternately, `repeat` times each: {kind: [figures]}."""
        out = {k: [] for k in kinds}
        for _ in range(self.args.repeat):
            for kind in kinds:
                s = self.server(kind)
                try:
                    out[kind].append(measure(s))
                finally:
                    s.stop()
        return out

    def loaded(self, s, from_measuring=False, **options):
        """Runs the generator against `s`; adds the server's CPU and memory over the run (with
        `from_measuring`, from the start of the measured phase, connecting excluded)."""
        cpu0 = [cpu_seconds(s.pid)]

        def measuring():
            if from_measuring:
                cpu0[0] = cpu_seconds(s.pid)

        figures = self.gen.run(s.port, on_measuring=measuring, **options)
        figures["server_cpu_s"] = cpu_seconds(s.pid) - cpu0[0]
        figures["server_rss_mib"], figures["server_hwm_mib"] = memory_mib(s.pid)
        if not figures["complete"]:
            raise PerfError(f"the {s.kind} master did not deliver everything: {figures}")
        return figures

    # (a)
    def throughput(self):
        ops = 400 if self.args.smoke else 20000
        rows = []
        for receivers in ([2] if self.args.smoke else [1, 10, 50]):
            # CPU from the measured phase, the terminals connected: with 50 terminals a fast
            # master's run is about 0.7 s, of which connecting 51 terminals took 5% of its CPU
            # (and 1% of the Python master's 7 s); 10,000 operations made runs of 0.35 s, whose
            # figure moved by 10% between repeats (Docs/PERFORMANCE.md, "The spacing tables kept small").
            runs = self.alternate(lambda s: self.loaded(s, from_measuring=True, mode="max", receivers=receivers, ops=ops, window=512))
            row = {"receivers": receivers, "ops": ops}
            for kind, figures in runs.items():
                row[kind] = {
                    "ops_per_s": median([f["ops_per_s"] for f in figures]),
                    "deliveries_per_cpu_s": median([f["delivered"] / max(f["server_cpu_s"], 1e-9) for f in figures]),
                    "server_cpu_s": median([f["server_cpu_s"] for f in figures]),
                    "generator_cpu_s": median([f["generator_cpu_s"] for f in figures]),
                    "p99_ms": median([f["latency_ms"]["p99"] for f in figures]),
                    "runs": [round(f["ops_per_s"]) for f in figures],
                }
            rows.append(row)
        self.results["throughput"] = rows

    # (b)
    def latency(self):
        rows = []
        rates = [200] if self.args.smoke else self.args.rates
        duration, warmup = (0.5, 0.2) if self.args.smoke else (self.args.latency_seconds, 1)
        counts = [2] if self.args.smoke else getattr(self.args, "latency_terminals", [10])
        # With --baseline-bin, an OrderSync built before a change runs in turn with the two others.
        kinds = ("baseline", "ordersync", "python") if self.args.baseline_bin else ("ordersync", "python")
        # With --durable-python, the Python master with synchronous=FULL (a sync of the log at each
        # commit, as OrderSync makes) runs in turn too.
        if getattr(self.args, "durable_python", False):
            kinds += ("python-full",)
        for receivers, rate in [(n, r) for n in counts for r in rates]:
            def measure(s):
                before = os.getloadavg()[0]
                figures = self.loaded(s, mode="rate", receivers=receivers, rate=rate, duration=duration, warmup=warmup)
                figures["loadavg"] = (before, os.getloadavg()[0])
                return figures

            runs = self.alternate(measure, kinds)
            row = {"rate": rate, "receivers": receivers, "seconds": duration}
            for kind, figures in runs.items():
                row[kind] = {key: median([f["latency_ms"][key] for f in figures]) for key in ("p50", "p99", "p999", "max")}
                row[kind]["p99_runs"] = [round(f["latency_ms"]["p99"], 3) for f in figures]
                row[kind]["p999_runs"] = [round(f["latency_ms"]["p999"], 3) for f in figures]
                row[kind]["kept_up"] = all(f["kept_up"] for f in figures)
                row[kind]["server_cpu_per_s"] = median([f["server_cpu_s"] / f["wall_s"] for f in figures])
                row[kind]["loadavg"] = [round(x, 2) for f in figures for x in f["loadavg"]]
            rows.append(row)
        self.results["latency"] = rows

    # (c) and the OrderSync slave's snapshot in (f)
    def pair_slave(self, master, name, folder=None):
        """A slave paired with `master`, its data in `folder` (default: beside the master's)."""
        status, window = api(master.data, "POST", "/v1/pairing", {"name": name})
        if status != 201:
            raise PerfError(f"pairing window refused: {status} {window}")
        return SlaveProcess(folder or self.tmp, name, self.args.bin, master.port, window["code"]).start()

    def catch_up(self):
        missed = 500 if self.args.smoke else 100_000
        times, paths = [], []
        for _ in range(self.args.repeat):
            master = self.server("ordersync")
            slave = None
            try:
                slave = self.pair_slave(master, f"till-{self.runs}")
                slave.wait_synced(master, timeout=60)
                slave.stop()
                self.loaded(master, mode="max", receivers=1, ops=missed, window=512)
                seq = master.status()["seq"]
                started = time.time()
                slave.start()
                slave.wait_synced(master, timeout=300, seq=seq)
                times.append(time.time() - started)
                paths.append("journal" if "catchup.sent" in master.tail() else "snapshot")
            finally:
                if slave:
                    slave.stop()
                master.stop()
        self.results["catch_up"] = {"missed": missed, "seconds": median(times), "runs": [round(t, 3) for t in times],
                                    "path": paths[-1] if paths else None}

    # (d)
    def many_terminals(self):
        terminals = 20 if self.args.smoke else 1000
        hold = 1 if self.args.smoke else 10

        def measure(s):
            figures = self.loaded(s, mode="hold", receivers=terminals, duration=hold)
            if figures["still_open"] != terminals:
                raise PerfError(f"{s.kind}: {figures['still_open']} of {terminals} terminals still open")
            return figures

        runs = self.alternate(measure)
        self.results["many_terminals"] = {
            "terminals": terminals, "hold_s": hold,
            **{kind: {"rss_mib": median([f["server_rss_mib"] for f in fs]), "hwm_mib": median([f["server_hwm_mib"] for f in fs]),
                      "cpu_s": median([f["server_cpu_s"] for f in fs]), "connect_s": median([f["connect_s"] for f in fs])}
               for kind, fs in runs.items()}}

    # (e)
    def idle(self):
        seconds = 1 if self.args.smoke else 10

        def measure(s):
            time.sleep(0.5)  # past start-up
            cpu0 = cpu_seconds(s.pid)
            time.sleep(seconds)  # the measured interval itself: nothing to wait for
            rss, _ = memory_mib(s.pid)
            return {"cpu_s": cpu_seconds(s.pid) - cpu0, "rss_mib": rss}

        runs = self.alternate(measure)
        self.results["idle"] = {"seconds": seconds, **{kind: {"cpu_s": median([f["cpu_s"] for f in fs]),
                                                             "rss_mib": median([f["rss_mib"] for f in fs])}
                                                      for kind, fs in runs.items()}}

    # (f)
    def snapshot(self):
        orders = 300 if self.args.smoke else 100_000

        def measure(s):
            self.loaded(s, mode="max", receivers=1, ops=orders, window=512)
            figures = self.gen.run(s.port, mode="snapshot", expect=orders)
            if not figures["complete"] or figures["snapshot_orders"] < orders:
                raise PerfError(f"{s.kind}: the snapshot held {figures['snapshot_orders']} of {orders} orders")
            figures["server_hwm_mib"] = memory_mib(s.pid)[1]
            if isinstance(s, OrderSyncServer):
                slave = self.pair_slave(s, f"new-{self.runs}")
                try:
                    started = time.time()
                    slave.wait_synced(s, timeout=300)
                    figures["slave_s"] = time.time() - started
                finally:
                    slave.stop()
            return figures

        runs = self.alternate(measure)
        self.results["snapshot"] = {
            "orders": orders,
            **{kind: {"storepos_s": median([f["snapshot_s"] for f in fs]), "hwm_mib": median([f["server_hwm_mib"] for f in fs]),
                      "slave_s": median([f.get("slave_s") for f in fs])}
               for kind, fs in runs.items()}}

    # (h) a large store joined while the master serves its local API (Scripts/bench/join_big.py)
    def join(self):
        sys.path.insert(0, os.path.join(HERE, "bench"))  # Scripts/bench.py hides the folder as a package
        import join_big
        self.results["join"] = join_big.join(
            self, 2000 if self.args.smoke else self.args.join_orders, slave_dir=self.args.join_slave_dir)

    # (p) paired terminals against StorePOS terminals, 8 to 256 terminals (Scripts/perf_paired.py)
    def paired(self):
        import perf_paired
        self.results["paired"] = perf_paired.measure(self, memory_mib, cpu_seconds, median, PerfError, api)

    # (g)
    def rollup(self):
        import perf_rollup
        try:
            self.results["rollup"] = perf_rollup.measure(self, free_port, api, median)
        except perf_rollup.RollupPerfError as e:
            raise PerfError(f"roll-up: {e}") from None

    # cost sweeps
    def sweeps(self):
        smoke = self.args.smoke
        rate, duration, warmup = (100, 0.5, 0.2) if smoke else (200, 3, 1)

        def cost(s, receivers, order_bytes):
            # The terminals connect, get what the master sends a new terminal, and go quiet
            # before the measured operations; CPU is counted from there.
            f = self.loaded(s, from_measuring=True, mode="rate", receivers=receivers, rate=rate, duration=duration,
                            warmup=warmup, order_bytes=order_bytes, settle_ms=300)
            return {"cpu_us_per_op": f["server_cpu_s"] / f["sent"] * 1e6, "p50_ms": f["latency_ms"]["p50"],
                    "p99_ms": f["latency_ms"]["p99"], "kept_up": f["kept_up"]}

        def summarize(values):
            return {key: median([v[key] for v in values]) for key in ("cpu_us_per_op", "p50_ms", "p99_ms")} | {
                "kept_up": all(v["kept_up"] for v in values)}

        sweeps = {}
        parts = self.args.sweeps.split(",")
        # Rows land in the results as they are measured: a failure keeps what came before.
        self.results["sweeps"] = {"rate": rate, **sweeps}
        rows = []
        for terminals in ([] if "terminals" not in parts else ([1, 4] if smoke else [1, 10, 50, 500])):
            runs = self.alternate(lambda s: cost(s, terminals, 200))
            rows.append({"x": terminals, **{k: summarize(v) for k, v in runs.items()}})
        self.results["sweeps"]["terminals"] = rows
        rows = []
        for size in ([] if "size" not in parts else ([200, 2048] if smoke else [200, 1024, 4096, 16000])):
            runs = self.alternate(lambda s: cost(s, 10 if not smoke else 2, size))
            rows.append({"x": size, **{k: summarize(v) for k, v in runs.items()}})
        self.results["sweeps"]["order_bytes"] = rows
        rows = []
        self.results["sweeps"]["store_orders"] = rows
        # One receiving terminal: each terminal that connects to a large store first gets every
        # order (a StorePOS terminal's connect sequence), which is (f)'s figure, not this one's.
        sizes = [] if "store" not in parts else ([100, 1000] if smoke else [1000, 10_000, 100_000])
        if sizes and not smoke and self.args.largest_store > sizes[-1]:
            sizes.append(self.args.largest_store)
        for stored in sizes:
            def measure(s):
                self.loaded(s, mode="max", receivers=1, ops=stored, window=1024)
                return cost(s, 1, 200)
            runs = self.alternate(measure, kinds=("ordersync",)) if stored > 100_000 else self.alternate(measure)
            rows.append({"x": stored, **{k: summarize(v) for k, v in runs.items()}})

    def fsync(self):
        path = os.path.join(self.tmp, "fsync-probe")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        times = []
        for i in range(50 if self.args.smoke else 500):
            os.pwrite(fd, b"x" * 4096, (i % 16) * 4096)
            t = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - t) * 1000)
        os.close(fd)
        times.sort()
        self.results["fdatasync_ms"] = {"p50": times[len(times) // 2], "p99": times[int(len(times) * 0.99) - 1], "max": times[-1]}

    def cleanup(self):
        for s in self.servers:
            if s.process and s.process.poll() is None:
                s.process.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


class SlaveProcess:
    """An OrderSync slave paired with the master on loopback (`--master ws://127.0.0.1:P/`)."""

    def __init__(self, tmp, name, binary, port, code):
        self.data = os.path.join(tmp, name)
        self.binary, self.port, self.code = binary, port, code
        self.process = None

    def start(self):
        argv = [self.binary, "slave", "--data-dir", self.data, "--store", "bench", "--master", f"ws://127.0.0.1:{self.port}/",
                "--log-level", "warning"]
        if self.code:
            argv += ["--pair", self.code]
            self.code = None
        os.makedirs(self.data, exist_ok=True)
        log = open(os.path.join(self.data, "..", os.path.basename(self.data) + ".log"), "ab")
        self.process = subprocess.Popen(argv, stdout=log, stderr=log,
                                        env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent"))
        return self

    def wait_synced(self, master, timeout, seq=None):
        want = seq if seq is not None else master.status()["seq"]

        def synced():
            if self.process.poll() is not None:
                raise PerfError(f"the slave exited ({self.process.returncode})")
            status = api(self.data, "GET", "/v1/status")[1]
            return status["master"]["state"] == "live" and status["seq"] >= want

        wait_for(synced, timeout, "the slave to sync")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "kernel": os.uname().release}


# MARK: reporting


def fmt(value, digits=0):
    if value is None:
        return "-"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def ratio(a, b, higher_is_better=True):
    if not a or not b:
        return "-"
    return f"{(a / b if higher_is_better else b / a):.1f}x"


def report(r):
    lines = [f"Command: `{r['command']}`", f"Machine: {r['machine']['cpus']} cores, {r['machine']['cpu']}, Linux {r['machine']['kernel']}",
             f"Medians of {r['repeat']} alternating runs.", ""]
    if "fdatasync_ms" in r:
        f = r["fdatasync_ms"]
        lines += [f"The disk's fdatasync (4 KiB rewritten, beside the runs): p50 {f['p50']:.3f} ms, p99 {f['p99']:.3f} ms, "
                  f"max {f['max']:.3f} ms.", ""]
    if "throughput" in r:
        lines += ["(a) Maximum sustained durable ops/s (StorePOS Creates, 20,000 of them, 512 in flight) and deliveries per server CPU-second (the CPU of the measured phase, the terminals connected):", "",
                  "| receivers | OrderSync ops/s | Python ops/s | ratio | OrderSync deliveries/CPU-s | Python deliveries/CPU-s | ratio |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for row in r["throughput"]:
            o, p = row["ordersync"], row["python"]
            lines.append(f"| {row['receivers']} | {fmt(o['ops_per_s'])} | {fmt(p['ops_per_s'])} | {ratio(o['ops_per_s'], p['ops_per_s'])} | "
                         f"{fmt(o['deliveries_per_cpu_s'])} | {fmt(p['deliveries_per_cpu_s'])} | "
                         f"{ratio(o['deliveries_per_cpu_s'], p['deliveries_per_cpu_s'])} |")
        lines.append("")
    if "latency" in r:
        lines += ["(b) Latency from send until every terminal has it (ms), open-loop rate:", "",
                  "| ops/s | terminals | OrderSync p50 / p99 / p99.9 | Python p50 / p99 / p99.9 | p99 ratio | OrderSync p99 runs | kept up (O/P) |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        def percentiles(k):
            return f"{k['p50']:.2f} / {k['p99']:.2f} / {k['p999']:.2f}"

        def against(other, runs_of):
            """One row per latency run: OrderSync beside `other` (a kind of master run in turn),
            the p99 runs of `runs_of`, and whether each kept up."""
            for row in r["latency"]:
                o, p = row["ordersync"], row[other]
                kept = " / ".join("yes" if k["kept_up"] else "no" for k in ((o, p) if runs_of == "ordersync" else (p,)))
                lines.append(f"| {fmt(row['rate'])} | {row['receivers']} | {percentiles(o)} | {percentiles(p)} | "
                             f"{ratio(o['p99'], p['p99'], False)} | {', '.join(str(x) for x in row[runs_of]['p99_runs'])} | {kept} |")
            lines.append("")

        against("python", "ordersync")
        if any("python-full" in row for row in r["latency"]):
            lines += ["The same runs with the Python master committing durably (`synchronous=FULL`, `--durable-python`):", "",
                      "| ops/s | terminals | OrderSync p50 / p99 / p99.9 | durable Python p50 / p99 / p99.9 | p99 ratio | durable Python p99 runs | kept up |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            against("python-full", "python-full")
        if any("baseline" in row for row in r["latency"]):
            lines += ["The same runs with the baseline build (`--baseline-bin`) in turn, and the load average (1 min) "
                      "before and after each run:", "",
                      "| ops/s | s measured | baseline p50 / p99 / p99.9 | OrderSync p50 / p99 / p99.9 | Python p50 / p99 / p99.9 "
                      "| p99 runs (baseline; OrderSync; Python) | load average |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for row in r["latency"]:
                b, o, p = row["baseline"], row["ordersync"], row["python"]
                runs = "; ".join(", ".join(f"{x:.2f}" for x in k["p99_runs"]) for k in (b, o, p))
                loads = [x for k in (b, o, p) for x in k.get("loadavg", [])]
                lines.append(f"| {fmt(row['rate'])} | {row.get('seconds', '')} | {b['p50']:.2f} / {b['p99']:.2f} / {b['p999']:.2f} | "
                             f"{o['p50']:.2f} / {o['p99']:.2f} / {o['p999']:.2f} | {p['p50']:.2f} / {p['p99']:.2f} / {p['p999']:.2f} | "
                             f"{runs} | {min(loads):.2f}-{max(loads):.2f} |")
            lines.append("")
    if "catch_up" in r:
        c = r["catch_up"]
        lines += [f"(c) Catch-up: an OrderSync slave that missed {c['missed']:,} operations is in sync {fmt(c['seconds'], 2)} s after it "
                  f"starts again (runs: {c['runs']}; by {c['path']}). The Python master has no catch-up: a terminal gets every order again.", ""]
    if "many_terminals" in r:
        m = r["many_terminals"]
        o, p = m["ordersync"], m["python"]
        lines += [f"(d) {m['terminals']:,} connected terminals held {m['hold_s']} s:", "",
                  "| | OrderSync | Python |", "| --- | --- | --- |",
                  f"| RSS (MiB) | {fmt(o['rss_mib'], 1)} | {fmt(p['rss_mib'], 1)} |",
                  f"| peak RSS (MiB) | {fmt(o['hwm_mib'], 1)} | {fmt(p['hwm_mib'], 1)} |",
                  f"| CPU while held, connecting included (s) | {fmt(o['cpu_s'], 2)} | {fmt(p['cpu_s'], 2)} |",
                  f"| all connected in (s) | {fmt(o['connect_s'], 2)} | {fmt(p['connect_s'], 2)} |", ""]
    if "idle" in r:
        i = r["idle"]
        lines += [f"(e) Idle for {i['seconds']} s: OrderSync {fmt(i['ordersync']['cpu_s'], 2)} s CPU, {fmt(i['ordersync']['rss_mib'], 1)} MiB RSS; "
                  f"Python {fmt(i['python']['cpu_s'], 2)} s CPU, {fmt(i['python']['rss_mib'], 1)} MiB RSS.", ""]
    if "snapshot" in r:
        s = r["snapshot"]
        lines += [f"(f) A store of {s['orders']:,} orders to a new terminal:", "",
                  "| | OrderSync | Python |", "| --- | --- | --- |",
                  f"| StorePOS terminal: connect until every order is in (s) | {fmt(s['ordersync']['storepos_s'], 2)} | {fmt(s['python']['storepos_s'], 2)} |",
                  f"| OrderSync slave: start until live with every order (s) | {fmt(s['ordersync']['slave_s'], 2)} | n/a |",
                  f"| server peak RSS (MiB) | {fmt(s['ordersync']['hwm_mib'], 1)} | {fmt(s['python']['hwm_mib'], 1)} |", ""]
    if "join" in r:
        lines += join_report(r["join"])
    if "paired" in r:
        import perf_paired
        lines += perf_paired.report_lines(r["paired"], fmt)
    if "rollup" in r:
        import perf_rollup
        lines += perf_rollup.report_lines(r["rollup"], fmt)
    if "sweeps" in r:
        titles = {"terminals": "terminals", "order_bytes": "order size (bytes of JSON)", "store_orders": "orders in the store"}
        for key, rows in r["sweeps"].items():
            if key == "rate" or not rows:
                continue
            lines += [f"Cost as the {titles[key]} grow(s), {r['sweeps']['rate']} ops/s:", "",
                      f"| {titles[key]} | OrderSync CPU µs/op | OrderSync p50 / p99 ms | Python CPU µs/op | Python p50 / p99 ms |",
                      "| --- | --- | --- | --- | --- |"]
            for row in rows:
                o, p = row["ordersync"], row.get("python")
                py = f"{fmt(p['cpu_us_per_op'])} | {p['p50_ms']:.2f} / {p['p99_ms']:.2f}" if p else "- | -"
                lines.append(f"| {fmt(row['x'])} | {fmt(o['cpu_us_per_op'])} | {o['p50_ms']:.2f} / {o['p99_ms']:.2f} | {py} |")
            lines.append("")
    return "\n".join(lines)


def join_report(j):
    """(h)'s lines: a paired slave's and a StorePOS app's join of a large store."""
    sp, pp = j["slave_probe"], j["storepos_probe"]

    where = f"in {j['slave_dir']}, another disk than the master's" if j.get("slave_dir") else "on the master's disk"

    def terminals(t):
        lat, at = t["latency_ms"], t["arrival_ms"]
        return (f"{lat['p50']:.1f} / {lat['p99']:.1f} / {lat['max']:.1f}; at the socket {at['p50']:.1f} / {at['p99']:.1f} / "
                f"{at['p999']:.1f} p99.9 ({t['delivered_ops']:,} operations, {t['late_sends']} sent over 1 ms late)")

    return [f"(h) A store of {j['orders']:,} orders joined, the local API asked meanwhile (one request after another):", "",
            "| | paired slave | StorePOS app |", "| --- | --- | --- |",
            f"| join (s) | {fmt(j['slave_s'], 2)} | {fmt(j['storepos_s'], 2)} |",
            f"| local API p50 / p99 / max (ms) | {sp['p50_ms']:.1f} / {sp['p99_ms']:.1f} / {sp['max_ms']:.1f} | "
            f"{pp['p50_ms']:.1f} / {pp['p99_ms']:.1f} / {pp['max_ms']:.1f} |",
            f"| local API reads p50 / p99 (ms) | {sp['read_p50_ms']:.1f} / {sp['read_p99_ms']:.1f} | "
            f"{pp['read_p50_ms']:.1f} / {pp['read_p99_ms']:.1f} |",
            f"| local API writes p50 / max (ms) | {sp['write_p50_ms']:.1f} / {sp['write_max_ms']:.1f} | "
            f"{pp['write_p50_ms']:.1f} / {pp['write_max_ms']:.1f} |",
            f"| local API requests answered | {sp['requests']} | {pp['requests']} |",
            *([f"| other tills meanwhile: p50 / p99 / max (ms) | {terminals(j['slave_terminals'])} | "
               f"{terminals(j['storepos_terminals'])} |"] if "slave_terminals" in j else []),
            f"| master RSS max during the join (MiB) | {fmt(sp['rss_max_mib'], 1)} | {fmt(pp['rss_max_mib'], 1)} |",
            f"| slave peak RSS (MiB) | {fmt(j.get('slave_hwm_mib'), 1)} | n/a |",
            f"The slave's data: {where}. Master RSS before: {fmt(j['rss_before_mib'], 1)} MiB; load average at the end {', '.join(f'{x:.1f}' for x in j['load'])}.", ""]


def plot(r, folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    written = []
    titles = {"terminals": "receiving terminals", "order_bytes": "order size (bytes)", "store_orders": "orders in the store"}
    for key, rows in r.get("sweeps", {}).items():
        if key == "rate" or not rows:
            continue
        fig, (cpu, lat) = plt.subplots(1, 2, figsize=(10, 4))
        for kind, style in (("ordersync", "o-"), ("python", "s--")):
            points = [(row["x"], row[kind]) for row in rows if row.get(kind)]
            if not points:
                continue
            xs = [x for x, _ in points]
            cpu.plot(xs, [v["cpu_us_per_op"] for _, v in points], style, label=kind)
            lat.plot(xs, [v["p99_ms"] for _, v in points], style, label=f"{kind} p99")
            lat.plot(xs, [v["p50_ms"] for _, v in points], style, alpha=0.4, label=f"{kind} p50")
        for axis in (cpu, lat):
            axis.set_xscale("log")
            axis.set_xlabel(titles[key])
            axis.grid(True, alpha=0.3)
            axis.legend()
        cpu.set_ylabel("master CPU per operation (µs)")
        lat.set_ylabel("send to every terminal (ms)")
        fig.suptitle(f"Cost as the {titles[key]} grow ({r['sweeps']['rate']} ops/s)")
        fig.tight_layout()
        path = os.path.join(folder, f"cost-{key.replace('_', '-')}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(REPO, ".build", "release", "ordersync"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="a,b,c,d,e,f,g,paired,sweeps", help="scenarios: a,b,c,d,e,f,g,paired,sweeps,join")
    parser.add_argument("--largest-store", type=int, default=1_000_000,
                        help="the last store size of the sweep (OrderSync only; 100000 or less: none beyond 100k)")
    parser.add_argument("--rollup-entries", type=int, default=100_000, help="(g): entries the roll-up catches up")
    parser.add_argument("--sweeps", default="terminals,size,store", help="which cost sweeps: terminals,size,store")
    parser.add_argument("--join-orders", type=int, default=1_000_000, help="the store size of (h), the join (--only join)")
    parser.add_argument("--join-slave-dir", help="(h): a folder on another disk for the joining slave's data (e.g. /dev/shm): "
                        "in a shop it writes to a disk of its own, not the master's")
    parser.add_argument("--paired-terminals", type=lambda v: [int(x) for x in v.split(",")], default=[8, 64, 256],
                        help="(p): the terminal counts of its latency rows at 1,000 ops/s")
    parser.add_argument("--paired-parts", type=lambda v: set(v.split(",")), default={"throughput", "latency", "memory"},
                        help="(p): which of its parts run: throughput,latency,memory")
    parser.add_argument("--paired-batches", type=int, choices=(0, 1), default=1,
                        help="(p): 1: the paired terminals read batched transport messages (as OrderSync slaves do); 0: as an older slave")
    parser.add_argument("--paired-seconds", type=float, default=5, help="(p): seconds measured per latency run (after 1 s of warm-up)")
    parser.add_argument("--rates", type=lambda v: [int(x) for x in v.split(",")], default=[100, 1000, 5000],
                        help="(b): the open-loop rates, ops/s")
    parser.add_argument("--latency-seconds", type=float, default=5, help="(b): seconds measured per run (after 1 s of warm-up)")
    parser.add_argument("--baseline-bin", help="(b): an OrderSync built before a change, run in turn with the other two")
    parser.add_argument("--latency-terminals", type=lambda v: [int(x) for x in v.split(",")], default=[10],
                        help="(b): the receiving terminals of the latency runs (each count at each rate)")
    parser.add_argument("--durable-python", action="store_true",
                        help="(b): also the Python master with synchronous=FULL (each commit synced), in turn with the others")
    parser.add_argument("--stage-trace", help="(b, paired): a folder for each OrderSync master's stage trace (ORDERSYNC_STAGE_TRACE)")
    parser.add_argument("--out-json")
    parser.add_argument("--plots", help="write the sweeps' PNG plots into this folder")
    parser.add_argument("--smoke", action="store_true", help="every scenario, tiny: checks the pipeline, not the speed")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"perf: {args.bin} is not an executable (swift build -c release first)")
    only = set(args.only.split(","))
    bench = Bench(args)
    steps = [("fsync", bench.fsync), ("a", bench.throughput), ("b", bench.latency), ("c", bench.catch_up),
             ("d", bench.many_terminals), ("e", bench.idle), ("f", bench.snapshot), ("g", bench.rollup), ("paired", bench.paired),
             ("sweeps", bench.sweeps),
             ("join", bench.join)]
    failures = []

    def save():
        # After every scenario: a run cut short (or one scenario's crash) keeps the figures so far.
        bench.results["failures"] = failures
        if args.out_json:
            with open(args.out_json + ".partial", "w") as f:
                json.dump(bench.results, f, indent=1)
            os.replace(args.out_json + ".partial", args.out_json)

    try:
        for name, step in steps:
            if name == "fsync" or name in only:
                started = time.time()
                try:
                    step()
                except (PerfError, OSError) as e:
                    # A refused or reset connection (a master that died mid-scenario) is an
                    # OSError: the other scenarios still run; the run fails at the end.
                    failures.append(f"{name}: {type(e).__name__}: {e}")
                    print(f"perf: {name} FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                    save()
                    continue
                print(f"perf: {name} done in {time.time() - started:.1f}s", file=sys.stderr, flush=True)
                save()
    finally:
        bench.cleanup()
    save()
    if args.plots:
        for path in plot(bench.results, args.plots):
            print(f"perf: wrote {path}", file=sys.stderr)
    print(report(bench.results))
    if failures:
        raise SystemExit("perf: " + "; ".join(failures))


if __name__ == "__main__":
    try:
        main()
    except PerfError as e:
        raise SystemExit(f"perf: {e}")
