#!/usr/bin/env python3
"""Where a hot-path operation's instructions go: callgrind's costs grouped by library and module.

    Scripts/callgrind.sh --breakdown              # builds, runs, prints the tables (about 3 minutes)
    Scripts/callgrind_breakdown.py --microbench BIN --floor BIN [-n N] [--cases apply,fanout]
    Scripts/callgrind_breakdown.py --files CG_N CG_2N N   # two callgrind outputs already made

Each case of `ordersync-microbench` runs N and 2N times under callgrind (counting inside
`MicroBenchCase.run` only); every function's own cost (its "self" instructions) is put in one
group by the object it is in and, for Swift, by the module its mangled name starts with, and
the figure per operation is (group's cost at 2N - at N) / N, as `Scripts/callgrind.sh` does for
the totals. Two views:

- **own**: each function's own instructions in its group (SQLite, JSON, engine, store wrapper,
  Swift runtime, allocator, libc). The groups add up to the total exactly.
- **charged to callers**: the allocator, libc and the Swift runtime (retain/release, allocation,
  hashing, string and array code of the standard library) do nothing for themselves, so their
  cost is charged to whoever called them, in proportion to each caller's calls (as gprof does
  for call graphs): what SQLite costs with its mallocs, what JSON costs with its allocations.

`--floor` also runs `Scripts/bench/sqlite_floor.c` (the least SQLite work that keeps the
master's guarantees, and the master's statements added one by one) and prints its instructions
per operation next to the SQLite share of `apply`.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

# Groups, in the order the tables show them. A Swift symbol belongs to the module its mangled
# name names first ($s<length><module>...); the standard library's generic code specialized into
# our binary ($sS..., $ss...) is the Swift runtime's, with libswiftCore itself.
SWIFT_MODULES = {
    "JSON": "JSON",
    "SyncCore": "engine (SyncCore)",
    "OrderStore": "store wrapper (OrderStore)",
    "WebSocket": "WebSocket",
    "MicroBenchCases": "microbench",
    "CryptoPrimitives": "crypto",
    "SecureLink": "crypto",
    "Noise": "crypto",
    "NodePolicy": "engine (SyncCore)",
}
GROUPS = [
    "SQLite", "JSON", "engine (SyncCore)", "store wrapper (OrderStore)", "WebSocket", "crypto",
    "Swift runtime", "allocator", "libc", "microbench", "other",
]
# Groups whose cost is charged to their callers in the second view.
HELPERS = {"Swift runtime", "allocator", "libc"}
ALLOCATOR = re.compile(r"^(malloc|free|calloc|realloc|_int_malloc|_int_free|malloc_consolidate|"
                       r"ordersync_|cfree|__libc_|tcache|unlink_chunk|_int_realloc|posix_memalign|"
                       r"aligned_alloc|memalign|_mid_memalign|_int_memalign|sysmalloc|__default_morecore|"
                       r"__sbrk|brk|sbrk)")


def group_of(obj: str, fn: str) -> str:
    base = os.path.basename(obj)
    if "libsqlite3" in base:
        return "SQLite"
    if "libcrypto" in base or "libssl" in base or "BoringSSL" in fn:
        return "crypto"
    if base.startswith("libswift") or base.startswith("libFoundation") or base.startswith("libdispatch"):
        return "Swift runtime"
    if ALLOCATOR.match(fn):
        return "allocator"
    if base.startswith("libc.so") or base.startswith("libm.so") or base.startswith("ld-linux"):
        return "libc"
    m = re.match(r"^(?:\$s|_\$s|\$S|_T0)(\d+)([A-Za-z_][A-Za-z0-9_]*)", fn)
    if m:
        module = m.group(2)[: int(m.group(1))]
        if module in SWIFT_MODULES:
            return SWIFT_MODULES[module]
        return "Swift runtime"
    if fn.startswith(("$sS", "$ss", "_$sS", "_$ss", "swift_", "$sSo", "$sSD", "$sSS")):
        return "Swift runtime"
    if fn.startswith("sqlite3") or fn.startswith("ordersync_sqlite"):
        return "SQLite"
    if fn.startswith("ordersync_malloc"):
        return "allocator"
    if fn.startswith(("mem", "str", "__mem", "__str")):
        return "libc"
    return "other"


def parse(path: str):
    """Self cost per (object, function) and inclusive cost per call edge, from a callgrind file."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    kinds = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "fn": "fn", "cfn": "fn"}

    def name(kind: str, value: str) -> str:
        table = names[kinds[kind]]
        m = re.match(r"^\((\d+)\)(?:\s(.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), value)

    own: dict[tuple[str, str], int] = defaultdict(int)
    edges: dict[tuple[tuple[str, str], tuple[str, str]], int] = defaultdict(int)
    ob = fn = ""
    cob = cfn = None
    pending_call = False
    total = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending_call:
                    edges[((ob, fn), (cob if cob is not None else ob, cfn))] += cost
                    pending_call = False
                    cob = cfn = None
                else:
                    own[(ob, fn)] += cost
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                ob = name("ob", value)
            elif key == "fn":
                fn = name("fn", value)
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                name(key, value)
            elif key == "cob":
                cob = name("cob", value)
            elif key == "cfn":
                cfn = name("cfn", value)
            elif key == "calls":
                pending_call = True
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    return own, edges, total


def breakdown(path: str) -> tuple[dict[str, int], dict[str, int], int, dict[str, dict[str, int]]]:
    """(own cost per group, cost per group with helpers charged to callers, total, top functions per group)."""
    own, edges, total = parse(path)
    groups: dict[str, int] = defaultdict(int)
    top: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (ob, fn), cost in own.items():
        g = group_of(ob, fn)
        groups[g] += cost
        top[g][fn] += cost
    # Charged to callers: each helper function's own cost goes up its incoming call edges in
    # proportion to their inclusive cost, through other helpers, until it reaches a function of
    # another group.
    incoming: dict[tuple[str, str], list[tuple[tuple[str, str], int]]] = defaultdict(list)
    for (caller, callee), cost in edges.items():
        if caller != callee:
            incoming[callee].append((caller, cost))
    charged: dict[str, float] = defaultdict(float)
    # Where each helper function's calls come from, as fractions per non-helper group,
    # computed once per function (a cycle among helpers keeps its cost in the helper's group).
    shares: dict[tuple[str, str], dict[str, float]] = {}
    visiting: set[tuple[str, str]] = set()

    def share(fnkey: tuple[str, str]) -> dict[str, float]:
        g = group_of(*fnkey)
        if g not in HELPERS:
            return {g: 1.0}
        if fnkey in shares:
            return shares[fnkey]
        callers = incoming.get(fnkey, [])
        weight = sum(c for _, c in callers)
        if weight <= 0 or fnkey in visiting:
            return {g: 1.0}
        visiting.add(fnkey)
        out: dict[str, float] = defaultdict(float)
        for caller, c in callers:
            for group, fraction in share(caller).items():
                out[group] += fraction * c / weight
        visiting.discard(fnkey)
        shares[fnkey] = dict(out)
        return shares[fnkey]

    sys.setrecursionlimit(100000)
    for key, cost in own.items():
        if cost:
            for group, fraction in share(key).items():
                charged[group] += cost * fraction
    return dict(groups), {k: int(round(v)) for k, v in charged.items()}, total or sum(own.values()), top


def callgrind(cmd: list[str], toggle: str, out: str) -> None:
    env = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={toggle}", f"--callgrind-out-file={out}", *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"callgrind_breakdown: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")


def per_op(one: str, two: str, n: int):
    g1, c1, t1, top1 = breakdown(one)
    g2, c2, t2, top2 = breakdown(two)
    own = {g: (g2.get(g, 0) - g1.get(g, 0)) / n for g in GROUPS}
    charged = {g: (c2.get(g, 0) - c1.get(g, 0)) / n for g in GROUPS}
    top = {g: {fn: (cost - top1.get(g, {}).get(fn, 0)) / n for fn, cost in fns.items()} for g, fns in top2.items()}
    return own, charged, (t2 - t1) / n, top


def table(cases: dict[str, tuple]) -> str:
    names = list(cases)
    lines = ["| group | " + " | ".join(f"{c}: own | {c}: charged to callers" for c in names) + " |",
             "| --- |" + " --- | --- |" * len(names)]
    for g in GROUPS:
        cells = []
        for c in names:
            own, charged, total, _ = cases[c]
            if not own[g] and not charged[g]:
                cells += ["0", "0"]
                continue
            cells += [f"{own[g]:,.0f} ({own[g] / total:.0%})", f"{charged[g]:,.0f} ({charged[g] / total:.0%})"]
        if any(x != "0" for x in cells):
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
    cells = []
    for c in names:
        total = cases[c][2]
        cells += [f"{total:,.0f}", f"{total:,.0f}"]
    lines.append("| **total** | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def top_functions(top: dict[str, dict[str, float]], groups: list[str], count: int = 6) -> str:
    lines = []
    for g in groups:
        items = sorted(top.get(g, {}).items(), key=lambda kv: -kv[1])[:count]
        if items:
            lines.append(f"{g}: " + ", ".join(f"{fn[:70]} {cost:,.0f}" for fn, cost in items))
    return "\n".join(lines)


FLOOR_STEPS = [
    ("floor", "the floor: one order row (primary key only), one journal row (integer key), statements prepared once"),
    ("c", "+ orders_by_created"),
    ("cs", "+ orders_by_status"),
    ("cso", "+ journal.op_id UNIQUE (NULL for StorePOS)"),
    ("csoj", "+ a journal_orders row and its index by seq"),
    ("csojf", "+ foreign keys checked (journal_orders.seq)"),
    ("csojfl", "+ the two reads first (order by key, tombstone)"),
    ("csojflp", "+ a savepoint per operation"),
    ("csojflpn", "+ a second, nested savepoint around the journal rows (= the master's statements)"),
    ("csojflpnt", "+ sqlite3_clear_bindings after every statement, as the Swift wrapper does"),
]
# After the cuts (Docs/PERFORMANCE.md): no memory statistics, no savepoint per operation.
CUT_STEPS = [
    ("M", "the floor, SQLite keeping no memory statistics"),
    ("csojflM", "the master's statements after the cuts: no memory statistics, no savepoints"),
]


def floor_table(floor_bin: str, n: int, group: int, path: str, steps=FLOOR_STEPS) -> str:
    lines = [f"| statements per operation (group of {group}, {'in memory' if path == ':memory:' else 'WAL file, synchronous=FULL'}) "
             "| instructions per op | added |", "| --- | --- | --- |"]
    before = None
    with tempfile.TemporaryDirectory() as work:
        for features, what in steps:
            irs = []
            for iterations in (n, 2 * n):
                out = os.path.join(work, f"cg.{features}.{iterations}")
                callgrind([floor_bin, features, str(iterations), str(group), path], "run_ops", out)
                irs.append(breakdown(out)[2])
            per = (irs[1] - irs[0]) / n
            added = "" if before is None else f"{per - before:+,.0f}"
            lines.append(f"| {what} | {per:,.0f} | {added} |")
            before = per
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--microbench", help="ordersync-microbench, debug info stripped (valgrind 3.19 cannot read Swift's DWARF 5)")
    ap.add_argument("--floor", help="sqlite_floor built from Scripts/bench/sqlite_floor.c")
    ap.add_argument("--files", nargs=3, metavar=("CG_N", "CG_2N", "N"), help="two callgrind outputs of N and 2N iterations")
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--cases", default="apply,fanout")
    ap.add_argument("--group", type=int, default=0, help="the floor's group size (default: N, one group per run as in the microbench)")
    ap.add_argument("--top", action="store_true", help="also the costliest functions of each group")
    args = ap.parse_args()
    if args.files:
        one, two, n = args.files[0], args.files[1], int(args.files[2])
        result = per_op(one, two, n)
        print(table({"case": result}))
        if args.top:
            print(top_functions(result[3], GROUPS))
        return
    if not args.microbench and not args.floor:
        ap.error("give --microbench, --floor or --files")
    n = args.n
    if args.microbench:
        results = {}
        with tempfile.TemporaryDirectory() as work:
            for case in args.cases.split(","):
                outs = []
                for iterations in (n, 2 * n):
                    out = os.path.join(work, f"cg.{case}.{iterations}")
                    callgrind([args.microbench, case, str(iterations)], "*MicroBenchCases*CaseC3run*", out)
                    outs.append(out)
                results[case] = per_op(outs[0], outs[1], n)
        print(f"Instructions per operation by group (ordersync-microbench, N={n}; own and with the allocator, libc and Swift runtime charged to their callers):\n")
        print(table(results))
        if args.top:
            for case, r in results.items():
                print(f"\nCostliest functions of {case} (own instructions per op):")
                print(top_functions(r[3], GROUPS))
    if args.floor:
        group = args.group or n
        print()
        print(floor_table(args.floor, n, group, ":memory:", FLOOR_STEPS + CUT_STEPS))
        print()
        with tempfile.TemporaryDirectory() as work:
            print(floor_table(args.floor, n, 100, os.path.join(work, "floor.db"), [FLOOR_STEPS[0], FLOOR_STEPS[8]] + CUT_STEPS))


if __name__ == "__main__":
    main()
