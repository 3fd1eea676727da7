"""`perf.py --only paired`: paired terminals against StorePOS terminals, and 8 to 256 terminals.

Both kinds run against OrderSync masters started alike (the same flags), alternately, on fresh
servers: a StorePOS terminal is the load generator's plain WebSocket client; a paired terminal is
the same generator speaking the secure link (`loadgen --paired`: Noise IK on OpenSSL's libcrypto,
`Scripts/bench/loadgen_noise.c`), each with a key of its own that was first paired with the master
through `ordersync pair`'s local API and a pairing handshake (XXpsk3) of Python's `noiseprotocol`
(`Tests/support/secure_peer.py`), as the LAN tests pair. A paired terminal says `hello`, takes its
snapshot, `ready` and `members`, acknowledges what it applied every 200 ms and answers
heartbeats, as an OrderSync slave does; its operations carry an `opId`, so the sender gets its own
broadcast and a `result` back (a StorePOS sender gets neither).

* throughput: 1 and 10 receiving terminals, operations as fast as the master takes them (512 in
  flight): durable ops/s and the master's CPU per delivery (a delivery is one order reaching
  one receiving terminal), counted from the measured phase (connecting and pairing excluded).
* terminals: latency from send until every receiving terminal has the order at 1,000 ops/s with
  8, 64 and 256 receiving terminals (5 s after 1 s of warm-up): read by the generator (its one
  thread reads every terminal's socket in turn), and stamped when the kernel had it at each
  terminal's socket (`SO_TIMESTAMPNS`: the master's delivery without the generator's queueing),
  at the last receiver and at the first.
* memory: the master's RSS with N terminals connected (and, paired, `ready`) less its RSS just
  before they connected, divided by N.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

#: Flags that lift the master's per-terminal limits (handshakes, bytes, journal budget) so that
#: they do not cut a benchmark short; both kinds of terminal run against a master started with them.
LIMITS = ["--handshake-rate", "100000", "--handshake-burst", "100000", "--handshake-rate-total", "100000",
          "--handshake-burst-total", "100000", "--rate-limit-bytes", str(1 << 40), "--rate-burst-bytes", str(1 << 40),
          "--journal-budget", str(1 << 40)]


def pair_terminals(bench, master, count, api, error):
    """Pairs `count` fresh keys with `master` (one pairing window each); returns the path of the
    generator's key file: the master's public key, then one private key per terminal, in hex."""
    sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
    try:
        import secure_peer
    except ImportError as e:
        raise error(f"pairing needs Python's noiseprotocol, cryptography and websockets ({e}): "
                    "run perf.py with the project's .venv") from None
    keys, master_key = [], None
    for i in range(count):
        status, window = api(master.data, "POST", "/v1/pairing", {"name": f"loadgen-{i}"})
        if status != 201:
            raise error(f"pairing window refused: {status} {window}")
        static = os.urandom(32)
        peer = secure_peer.SecurePeer.pair(f"ws://127.0.0.1:{master.port}/", window["code"], static, name=f"loadgen-{i}")
        master_key = peer.master_key
        peer.close()
        keys.append(static)
    path = os.path.join(master.dir, "paired-keys.txt")
    with open(path, "w") as f:
        f.write(master_key.hex() + "\n" + "".join(k.hex() + "\n" for k in keys))
    return path


def measure(bench, memory_mib, cpu_seconds, median, error, api):
    """The scenario's figures: {"throughput": [...], "terminals": [...], "memory": [...]}."""
    smoke = bench.args.smoke
    bench.extra_master_args = LIMITS

    def run(kind, receivers, **options):
        """One fresh master, `receivers` (+1 sender, unless holding) terminals of `kind`."""
        s = bench.server("ordersync")
        try:
            terminals = receivers + (0 if options.get("mode") == "hold" else 1)
            if kind == "paired":
                options["paired"] = pair_terminals(bench, s, terminals, api, error)
                # Whether the paired terminals say their links read batched transport messages
                # (SECURITY.md, "Transport messages"); 0 measures an older slave's link.
                options["batches"] = getattr(bench.args, "paired_batches", 1)
            rss0 = memory_mib(s.pid)[0]
            rss_connected = []
            cpu0 = [cpu_seconds(s.pid)]

            def measuring():
                cpu0[0] = cpu_seconds(s.pid)
                rss_connected.append(memory_mib(s.pid)[0])

            f = bench.gen.run(s.port, on_measuring=measuring, receivers=receivers, **options)
            f["server_cpu_s"] = cpu_seconds(s.pid) - cpu0[0]
            if not f["complete"]:
                raise error(f"{kind}: the master did not deliver everything: {f}")
            f["rss_before_mib"], f["rss_connected_mib"] = rss0, rss_connected[0] if rss_connected else None
            f["load"] = os.getloadavg()
            return f
        finally:
            s.stop()

    def alternate(receivers, **options):
        out = {"storepos": [], "paired": []}
        for _ in range(bench.args.repeat):
            for kind in out:
                out[kind].append(run(kind, receivers, **dict(options)))
        return out

    results = {"throughput": [], "terminals": [], "memory": [], "load": [os.getloadavg()],
               "batches": getattr(bench.args, "paired_batches", 1)}
    parts = bench.args.paired_parts
    ops = 400 if smoke else 20000
    for receivers in ([2] if smoke else [1, 10]) if "throughput" in parts else []:
        runs = alternate(receivers, mode="max", ops=ops, window=512)
        row = {"receivers": receivers, "ops": ops}
        for kind, fs in runs.items():
            row[kind] = {
                "ops_per_s": median([f["ops_per_s"] for f in fs]),
                "cpu_us_per_delivery": median([f["server_cpu_s"] / f["delivered"] * 1e6 for f in fs]),
                "cpu_us_per_op": median([f["server_cpu_s"] / f["delivered_ops"] * 1e6 for f in fs]),
                "generator_cpu_s": median([f["generator_cpu_s"] for f in fs]),
                "wall_s": median([f["wall_s"] for f in fs]),
                "runs": [round(f["ops_per_s"]) for f in fs],
                "load": [round(f["load"][0], 1) for f in fs],
            }
        results["throughput"].append(row)
    results["load"].append(os.getloadavg())
    rate, duration, warmup = (200, 0.5, 0.2) if smoke else (1000, bench.args.paired_seconds, 1)
    for receivers in ([2, 8] if smoke else bench.args.paired_terminals) if "latency" in parts else []:
        runs = alternate(receivers, mode="rate", rate=rate, duration=duration, warmup=warmup)
        row = {"receivers": receivers, "rate": rate}
        for kind, fs in runs.items():
            row[kind] = {key: median([f["latency_ms"][key] for f in fs]) for key in ("p50", "p99", "p999")}
            row[kind]["p99_runs"] = [round(f["latency_ms"]["p99"], 2) for f in fs]
            # The same deliveries stamped when the kernel had them at each receiver's socket
            # (SO_TIMESTAMPNS): the last and the first receiver, without the generator's queueing.
            for name in ("arrival_ms", "first_arrival_ms"):
                row[kind][name] = {key: median([f[name][key] for f in fs]) for key in ("p50", "p99", "p999")}
            row[kind]["late_sends"] = [f["late_sends"] for f in fs]
            row[kind]["all_stamped"] = all(f["stamped_deliveries"] == f["delivered"] for f in fs)
            row[kind]["kept_up"] = all(f["kept_up"] for f in fs)
            row[kind]["generator_cpu_per_s"] = median([f["generator_cpu_s"] / f["wall_s"] for f in fs])
            row[kind]["server_cpu_per_s"] = median([f["server_cpu_s"] / f["wall_s"] for f in fs])
            row[kind]["load"] = [round(f["load"][0], 1) for f in fs]
        results["terminals"].append(row)
    results["load"].append(os.getloadavg())
    for receivers in ([4] if smoke else [64, 256]) if "memory" in parts else []:
        runs = alternate(receivers, mode="hold", duration=1 if smoke else 2)
        row = {"terminals": receivers}
        for kind, fs in runs.items():
            row[kind] = {
                "kib_per_terminal": median([(f["rss_connected_mib"] - f["rss_before_mib"]) * 1024 / receivers for f in fs]),
                "rss_before_mib": median([f["rss_before_mib"] for f in fs]),
                "rss_connected_mib": median([f["rss_connected_mib"] for f in fs]),
                "connect_s": median([f["connect_s"] for f in fs]),
            }
        results["memory"].append(row)
    results["load"].append(os.getloadavg())
    bench.extra_master_args = []
    return results


def report_lines(p, fmt):
    """The tables for Docs/PERFORMANCE.md."""
    loads = ", ".join(f"{load[0]:.1f}" for load in p["load"])
    lines = [f"(p) Paired terminals (secure link) against StorePOS terminals, the same master flags; load average "
             f"(1 min) at the start and after each part: {loads}.", "",
             "| receivers | StorePOS ops/s | paired ops/s | StorePOS CPU µs/delivery | paired CPU µs/delivery | ratio | "
             "StorePOS / paired CPU µs/op | generator CPU s (S / P) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in p["throughput"]:
        s, q = row["storepos"], row["paired"]
        lines.append(f"| {row['receivers']} | {fmt(s['ops_per_s'])} | {fmt(q['ops_per_s'])} | {s['cpu_us_per_delivery']:.2f} | "
                     f"{q['cpu_us_per_delivery']:.2f} | {q['cpu_us_per_delivery'] / s['cpu_us_per_delivery']:.2f}x | "
                     f"{s['cpu_us_per_op']:.1f} / {q['cpu_us_per_op']:.1f} | "
                     f"{s['generator_cpu_s']:.2f} / {q['generator_cpu_s']:.2f} of {s['wall_s']:.2f} / {q['wall_s']:.2f} wall |")
    if len(p["throughput"]) >= 2:
        a, b = p["throughput"][0], p["throughput"][-1]
        extra = b["receivers"] - a["receivers"]
        if extra > 0:
            marginal = {k: (b[k]["cpu_us_per_op"] - a[k]["cpu_us_per_op"]) / extra for k in ("storepos", "paired")}
            lines += ["", f"Each further receiving terminal (CPU per operation with {b['receivers']} less with {a['receivers']}, "
                      f"over {extra}): StorePOS {marginal['storepos']:.2f} µs, paired {marginal['paired']:.2f} µs per delivery."]
    lines += ["", "Latency from send until every receiving terminal has it, open loop:", "",
              "| terminals | ops/s | StorePOS p50 / p99 / p99.9 ms | paired p50 / p99 / p99.9 ms | StorePOS p99 runs | paired p99 runs | "
              "kept up (S/P) | master CPU s/s (S / P) | generator CPU s/s (S / P) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in p["terminals"]:
        s, q = row["storepos"], row["paired"]
        lines.append(f"| {row['receivers']} | {fmt(row['rate'])} | {s['p50']:.2f} / {s['p99']:.2f} / {s['p999']:.2f} | "
                     f"{q['p50']:.2f} / {q['p99']:.2f} / {q['p999']:.2f} | {', '.join(str(x) for x in s['p99_runs'])} | "
                     f"{', '.join(str(x) for x in q['p99_runs'])} | {'yes' if s['kept_up'] else 'no'} / {'yes' if q['kept_up'] else 'no'} | "
                     f"{s['server_cpu_per_s']:.2f} / {q['server_cpu_per_s']:.2f} | "
                     f"{s['generator_cpu_per_s']:.2f} / {q['generator_cpu_per_s']:.2f} |")
    if p["terminals"]:
        base = p["terminals"][0]
        for row in p["terminals"][1:]:
            lines.append(f"p99 with {row['receivers']} terminals against {base['receivers']}: StorePOS "
                         f"{row['storepos']['p99'] / base['storepos']['p99']:.2f}x, paired {row['paired']['p99'] / base['paired']['p99']:.2f}x.")
    lines += ["", "The same deliveries, stamped when the kernel had them at each terminal's socket (SO_TIMESTAMPNS), ms:", "",
              "| terminals | StorePOS last receiver p50 / p99 / p99.9 | first receiver | paired last receiver | first receiver | "
              "sends over 1 ms late, each run (S / P) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for row in p["terminals"]:
        cells = [" / ".join(f"{row[kind][name][key]:.2f}" for key in ("p50", "p99", "p999"))
                 for kind in ("storepos", "paired") for name in ("arrival_ms", "first_arrival_ms")]
        late = " / ".join(", ".join(str(n) for n in row[kind]["late_sends"]) for kind in ("storepos", "paired"))
        lines.append(f"| {row['receivers']} | " + " | ".join(cells) + f" | {late} |")
    if p["terminals"]:
        base = p["terminals"][0]
        for row in p["terminals"][1:]:
            ratio = {k: row[k]["arrival_ms"]["p99"] / max(base[k]["arrival_ms"]["p99"], 1e-9) for k in ("storepos", "paired")}
            lines.append(f"p99 at the last receiver's socket with {row['receivers']} terminals against {base['receivers']}: "
                         f"StorePOS {ratio['storepos']:.2f}x, paired {ratio['paired']:.2f}x.")
    lines += ["", "Memory per connected terminal ((RSS with N connected - RSS before) / N):", "",
              "| terminals | StorePOS KiB each | paired KiB each | RSS before / connected MiB (S) | (P) | all connected in s (S / P) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for row in p["memory"]:
        s, q = row["storepos"], row["paired"]
        lines.append(f"| {row['terminals']} | {s['kib_per_terminal']:.1f} | {q['kib_per_terminal']:.1f} | "
                     f"{s['rss_before_mib']:.1f} / {s['rss_connected_mib']:.1f} | {q['rss_before_mib']:.1f} / {q['rss_connected_mib']:.1f} | "
                     f"{s['connect_s']:.2f} / {q['connect_s']:.2f} |")
    return lines + [""]
