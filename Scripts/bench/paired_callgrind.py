#!/usr/bin/env python3
"""Instructions per operation of the master under `perf.py --only paired`'s load, by callgrind.

    python3 Scripts/bench/paired_callgrind.py --bin .build/release/ordersync            # ~10 min
    python3 Scripts/bench/paired_callgrind.py --bin BIN --kinds paired -n 1000 --keep DIR

The release master runs under `valgrind --tool=callgrind` (its debug info stripped: valgrind 3.19
cannot read Swift's DWARF 5), started with `perf_paired.LIMITS` and driven by the load generator
as `perf.py --only paired` drives it (paired keys through the local API, then
`loadgen --mode max --window 512 --receivers R`, `--paired` for paired terminals), once with N
operations and once with 2N. (Ir(2N) - Ir(N)) / N is one operation's cost: start-up, pairing
and connecting cancel out, and the load of the machine changes nothing. User-space
instructions only: the kernel's work for system calls is not counted. Prints the totals and
`Scripts/callgrind_breakdown.py --files`'s groups for each kind (Docs/PERFORMANCE.md, "Where a
paired delivery's instructions go").
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
sys.path.insert(0, SCRIPTS)
import perf  # noqa: E402
import perf_paired  # noqa: E402


class _Bench:
    """What `perf_paired.pair_terminals` reads of a `perf.Bench`."""

    extra_master_args = perf_paired.LIMITS


def total_instructions(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise perf.PerfError(f"{path}: no totals line (did valgrind end before writing it?)")


def run_once(gen, stripped, work, kind, ops, receivers):
    """One master under callgrind through `ops` operations; returns its callgrind file."""
    out = os.path.join(work, f"cg.{kind}.{ops}.out")
    wrapper = os.path.join(work, "valgrind-master.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={out} {stripped} "$@"\n')
    os.chmod(wrapper, 0o755)
    server = perf.OrderSyncServer(work, f"{kind}-{ops}", wrapper, perf_paired.LIMITS)
    server.start()
    try:
        options = dict(mode="max", ops=ops, window=512, receivers=receivers)
        if kind == "paired":
            options["paired"] = perf_paired.pair_terminals(_Bench(), server, receivers + 1, perf.api, perf.PerfError)
        figures = gen.run(server.port, **options)
        if not figures.get("complete"):
            raise perf.PerfError(f"{kind}, {ops} operations: the run did not complete under valgrind: {figures}")
    finally:
        # SIGTERM: the master ends cleanly and callgrind writes its file.
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(timeout=600)
        server.log.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the master's release build")
    ap.add_argument("-n", type=int, default=2000, help="operations of the first run (the second has twice as many)")
    ap.add_argument("--receivers", type=int, default=10)
    ap.add_argument("--kinds", default="storepos,paired")
    ap.add_argument("--keep", help="a folder to keep the callgrind files in (default: a temporary one, removed)")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("paired_callgrind: valgrind is not installed (apt-get install valgrind)")
    work = args.keep or tempfile.mkdtemp(prefix="ordersync-paired-cg-")
    os.makedirs(work, exist_ok=True)
    # Swift's per-process random hashing seed changes the path through dictionaries and sets.
    os.environ["SWIFT_DETERMINISTIC_HASHING"] = "1"
    # A master under valgrind takes tens of seconds to start.
    wait_for = perf.wait_for
    perf.wait_for = lambda predicate, timeout, what: wait_for(predicate, max(timeout, 600), what)
    try:
        stripped = os.path.join(work, "ordersync")
        subprocess.run(["strip", "--strip-debug", "-o", stripped, args.bin], check=True)
        gen = perf.Generator(work)
        for kind in args.kinds.split(","):
            one, two = (run_once(gen, stripped, work, kind, ops, args.receivers) for ops in (args.n, 2 * args.n))
            per_op = (total_instructions(two) - total_instructions(one)) / args.n
            print(f"\n{kind}, {args.receivers} receivers: {per_op:,.0f} instructions per operation, "
                  f"{per_op / args.receivers:,.0f} per delivery\n", flush=True)
            subprocess.run([sys.executable, os.path.join(SCRIPTS, "callgrind_breakdown.py"), "--files", one, two, str(args.n)],
                           check=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
