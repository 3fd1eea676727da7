#!/usr/bin/env python3
"""Compares the hot path's instruction and allocation counts with the baseline kept in the repository.

    Scripts/callgrind_check.py BASELINE MEASURED

Both files are what `Scripts/callgrind.sh --json` writes; the baseline also holds `margin_percent`
and `reason` (why it was last set). A case fails when it takes more instructions or allocations per
operation than the baseline plus the margin, or when a case of the baseline was not measured. A
case that got cheaper by more than the margin passes, with a line saying so: the baseline is
updated on purpose, in a commit of its own that gives the reason (Docs/TESTING.md).
"""
from __future__ import annotations

import json
import sys

GUARDED = (("instructions_per_op", "instructions"), ("mallocs_per_op", "allocations"))


def compare(baseline: dict, measured: dict) -> tuple[list[str], list[str]]:
    """Table rows and failures of `measured` against `baseline`."""
    margin = float(baseline["margin_percent"])
    now = {case["case"]: case for case in measured["cases"]}
    rows, failures = [], []
    for base in baseline["cases"]:
        name = base["case"]
        if name not in now:
            failures.append(f"{name}: in the baseline, not measured")
            continue
        for key, what in GUARDED:
            before, after = float(base[key]), float(now[name][key])
            change = (after - before) / before * 100 if before else (0.0 if after == 0 else float("inf"))
            verdict = "ok"
            if change > margin:
                verdict = "REGRESSION"
                failures.append(f"{name}: {what} per op {after:,.2f}, baseline {before:,.2f} ({change:+.1f}%, "
                                f"allowed +{margin:g}%)")
            elif change < -margin:
                verdict = "cheaper: update the baseline on purpose"
            rows.append(f"| {name} | {what} | {before:,.2f} | {after:,.2f} | {change:+.1f}% | {verdict} |")
    return rows, failures


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        baseline = json.load(f)
    with open(sys.argv[2]) as f:
        measured = json.load(f)
    if (baseline["n"], baseline["config"]) != (measured["n"], measured["config"]):
        print(f"callgrind: measured with n={measured['n']} {measured['config']}, the baseline with "
              f"n={baseline['n']} {baseline['config']}: not comparable", file=sys.stderr)
        return 2
    rows, failures = compare(baseline, measured)
    print(f"callgrind: against {sys.argv[1]} (margin {baseline['margin_percent']}%; set because: "
          f"{baseline['reason']})")
    print("| case | per op | baseline | now | change | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    for failure in failures:
        print(f"callgrind: {failure}", file=sys.stderr)
    if failures:
        print("callgrind: a regression over the margin fails the run. If it is wanted, update the baseline "
              "on purpose in a commit of its own (Docs/TESTING.md).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
