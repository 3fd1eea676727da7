"""Where a master's groups spend their time: reads the stage traces an OrderSync master writes
with `ORDERSYNC_STAGE_TRACE=FILE` (one line per group: the monotonic instants, in ns, of each
stage; `GroupStageTrace.swift`) and prints, per stage, its percentiles in microseconds, then
what the slowest groups (at and above the p99 of the whole) spent in each stage.

    python3 Scripts/bench/stage_trace.py TRACE [TRACE ...] [--skip-seconds 1]

`perf.py --only b --stage-trace DIR` leaves one trace per OrderSync master in DIR.
"""

import argparse

FIELDS = ("read", "queued", "applying", "handed_off", "commit_began", "commit_ended", "loop_woke", "finished", "sent")
STAGES = [
    ("parse", "read", "queued"),
    ("wait for the group", "queued", "applying"),
    ("apply on the loop", "applying", "handed_off"),
    ("commit thread wakes", "handed_off", "commit_began"),
    ("COMMIT (fsync)", "commit_began", "commit_ended"),
    ("loop wakes", "commit_ended", "loop_woke"),
    ("hand back", "loop_woke", "finished"),
    ("answers written", "finished", "sent"),
    ("total: read until sent", "read", "sent"),
]


def load(path, skip_seconds):
    groups = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != len(FIELDS) + 2:
                continue
            g = dict(zip(FIELDS, (int(x) for x in parts[: len(FIELDS)])))
            g["messages"], g["operations"] = int(parts[-2]), int(parts[-1])
            groups.append(g)
    # Only groups of operations; the first seconds (connecting, warm-up) are left out.
    groups = [g for g in groups if g["operations"] > 0]
    if groups and skip_seconds:
        start = groups[0]["read"] + skip_seconds * 1e9
        groups = [g for g in groups if g["read"] >= start]
    return groups


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def micros(g, a, b):
    return (g[b] - g[a]) / 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--skip-seconds", type=float, default=1)
    args = parser.parse_args()
    groups = [g for path in args.traces for g in load(path, args.skip_seconds)]
    if not groups:
        raise SystemExit("stage_trace: no groups of operations in the traces")
    totals = sorted(micros(g, "read", "sent") for g in groups)
    cut = percentile(totals, 0.99)
    slow = [g for g in groups if micros(g, "read", "sent") >= cut]
    ops = sum(g["operations"] for g in groups)
    print(f"{len(groups)} groups, {ops} operations ({ops / len(groups):.2f} a group); "
          f"{len(slow)} groups at or above the p99 of the total ({cut:.0f} µs)")
    print()
    print("| stage | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | mean in the slowest 1% µs |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, a, b in STAGES:
        values = sorted(micros(g, a, b) for g in groups)
        tail = sum(micros(g, a, b) for g in slow) / len(slow)
        print(f"| {name} | {percentile(values, 0.5):.0f} | {percentile(values, 0.9):.0f} | {percentile(values, 0.99):.0f} | "
              f"{percentile(values, 0.999):.0f} | {values[-1]:.0f} | {tail:.0f} |")


if __name__ == "__main__":
    main()
