#!/usr/bin/env python3
"""The master's system calls per operation under the load generator, counted by `strace -c -f`.

    python3 Scripts/bench/syscalls.py --bin .build/release/ordersync [--receivers 10] [--mode max]

Starts an OrderSync master as `Scripts/perf.py` does (loopback, pinned to core 0, StorePOS
terminals), attaches `strace -c -f` to it (every thread: the loop, the commit thread, the
snapshot thread) once the generator's terminals are connected, runs the generator's measured
phase (`--mode max`: `--ops` Creates with 512 in flight; `--mode rate`: `--rate` ops/s for
`--duration` s) and prints each system call's count per operation, and the operations per
`fdatasync` (the group commit's size). strace stops the master at every system call, so the
master runs slower than without it and its groups are larger than in `perf.py`'s runs: the
counts per group are the master's, the groups per operation are strace's. Connecting is not
counted too (a few hundred calls).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import perf  # noqa: E402  (Scripts/perf.py: the same master and generator)


def parse_strace_summary(text: str) -> dict[str, int]:
    """{syscall: calls} from `strace -c` output."""
    calls = {}
    for line in text.splitlines():
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(parts) >= 5 and parts[0].replace(".", "").isdigit() and parts[-1] != "total":
            try:
                calls[parts[-1]] = int(parts[3])
            except ValueError:
                continue
    return calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--receivers", type=int, default=10)
    ap.add_argument("--mode", choices=["max", "rate"], default="max")
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--rate", type=float, default=2000)
    ap.add_argument("--duration", type=float, default=5)
    args = ap.parse_args()
    if not shutil.which("strace"):
        sys.exit("syscalls: strace is needed (apt-get install strace)")
    tmp = tempfile.mkdtemp(prefix="ordersync-syscalls-")
    gen = perf.Generator(tmp)
    server = perf.OrderSyncServer(tmp, "master", os.path.abspath(args.bin)).start()
    out = os.path.join(tmp, "strace.txt")
    # Attached before the generator starts (strace says so on stderr once every thread is
    # traced); its terminals' connecting is counted too: 1 + receivers connections, a few
    # hundred calls against the tens of thousands of the operations.
    tracer = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", str(server.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in tracer.stderr:
        if "attached" in line:
            break
    try:
        options = {"mode": args.mode, "receivers": args.receivers}
        if args.mode == "max":
            options.update(ops=args.ops, window=512)
        else:
            options.update(rate=args.rate, duration=args.duration, warmup=1)
        figures = gen.run(server.port, **options)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=60)
        server.stop()
    with open(out) as f:
        calls = parse_strace_summary(f.read())
    ops = figures.get("sent") or args.ops
    groups = calls.get("fdatasync", 0) + calls.get("fsync", 0)
    print(f"master {args.bin}, {args.receivers} receiving terminals, --mode {args.mode}: {ops} operations measured, "
          f"{figures.get('ops_per_s', 0):,.0f} ops/s under strace, "
          f"{ops / groups if groups else float('nan'):,.1f} operations per fdatasync\n")
    print("| system call | calls | per operation | per group (fdatasync) |")
    print("| --- | --- | --- | --- |")
    for name, n in sorted(calls.items(), key=lambda kv: -kv[1]):
        per_group = f"{n / groups:,.2f}" if groups else "-"
        print(f"| {name} | {n:,} | {n / ops:,.3f} | {per_group} |")
    total = sum(calls.values())
    print(f"| **all** | {total:,} | {total / ops:,.3f} | {total / groups if groups else 0:,.2f} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
