#!/usr/bin/env python3
"""Mutation testing of the sync engine and the store's commit path (Docs/MUTANTS.md).

Each mutant changes one place of the code (a negated condition, `<` for `<=`, `!=` for `==`,
`||` for `&&`, `- 1` for `+ 1`, a deleted statement, `false` for `true`, ...), is built, and runs
the tests that cover that code: the mutant is *killed* when a test fails (or crashes, or hangs
past a deadline), *survived* when every test passes, and *did not compile* (not counted) when
the build fails.

Nothing runs in the repository's own tree or build folder: the script copies the few modules it
needs (JSON, SyncCore, CSQLite3, OrderStore and their tests) into a scratch folder with a trimmed
Package.swift, so each mutant rebuilds one module and relinks one small test bundle.

  python3 Scripts/mutants.py --list                 # every mutation site, numbered
  python3 Scripts/mutants.py --count 40 --seed 1    # a seeded sample, half engine, half store
  python3 Scripts/mutants.py --only ID [--only ID]  # the given mutants (ids from --list)
  python3 Scripts/mutants.py --only ID --tests NewTests  # does NewTests alone kill it?

Builds and tests run under `nice -n 15`. The report (a Markdown table) goes to
WORK/report.md; results are kept in WORK/results.json so that a run can be resumed (a mutant
that survived is tried again).
"""

import argparse
import fcntl
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "support"))
from process_tree import descendants  # noqa: E402 (Tests/support, shared with the LAN tests)

# The files (and line ranges) mutated: the engine whole, the store's commit path.
ENGINE = [("Sources/Core/SyncCore/Engine", None)]
STORE = [
    ("Sources/Shell/OrderStore/OrderDatabase.swift", (180, 265)),  # transaction, savepoint, reading
    ("Sources/Shell/OrderStore/OrderDatabase+Group.swift", None),  # group commit
    ("Sources/Shell/OrderStore/DetachedCommit.swift", None),
    ("Sources/Shell/OrderStore/OrderDatabase+Journal.swift", (1, 145)),  # append, op ids, compaction
    ("Sources/Shell/OrderStore/OrderDatabase+APIAnswers.swift", None),  # answers kept per op id
    ("Sources/Shell/OrderStore/OrderDatabase+Outbox.swift", None),  # the slave's outbox, answered ops
    ("Sources/Shell/OrderStore/SQLiteStores.swift", None),  # each engine commit in one transaction
]

# The trimmed package: the modules under test and the test targets that need nothing more. The
# engine tests of OrderSyncNodeTests that import only SyncCore and OrderStore come along as
# `EngineTests`.
COPIED = [
    "Sources/Core/JSON", "Sources/Core/SyncCore", "Sources/Shell/CSQLite3", "Sources/Shell/OrderStore",
    "Tests/SyncCoreTests", "Tests/SyncSimulationTests", "Tests/OrderStoreTests",
]
ENGINE_TESTS = [
    "StorePOSSyncTests.swift", "StorePOSPutRightTests.swift", "SnapshotStreamTests.swift",
    "GroupCommitEngineTests.swift", "MasterEngine+SnapshotSteps.swift", "StorePOSAppModel.swift",
    # These import OrderSyncNode but use nothing of it: the import is left out of the copy.
    "RateLimitEngineTests.swift", "BulkBroadcastTests.swift", "EnginesOnSQLiteTests.swift", "EngineAnswerTests.swift",
    "FailingCommitStore.swift",
]
NODE_IMPORT = b"@testable import OrderSyncNode\n"
MANIFEST = """// swift-tools-version:6.0
import PackageDescription

// Written by Scripts/mutants.py: the modules a mutant touches and the tests that cover them.
let package = Package(
    name: "OrderSyncMutants",
    targets: [
        .target(name: "JSON", path: "Sources/Core/JSON"),
        .target(name: "SyncCore", dependencies: ["JSON"], path: "Sources/Core/SyncCore"),
        .systemLibrary(name: "CSQLite3", path: "Sources/Shell/CSQLite3", pkgConfig: "sqlite3"),
        .target(name: "OrderStore", dependencies: ["CSQLite3", "JSON", "SyncCore"], path: "Sources/Shell/OrderStore"),
        .testTarget(name: "SyncCoreTests", dependencies: ["JSON", "SyncCore"]),
        .testTarget(name: "SyncSimulationTests", dependencies: ["JSON", "SyncCore", "OrderStore"]),
        .testTarget(name: "OrderStoreTests", dependencies: ["OrderStore", "JSON", "SyncCore"]),
        .testTarget(name: "EngineTests", dependencies: ["OrderStore", "JSON", "SyncCore"]),
    ],
    swiftLanguageModes: [.v6]
)
"""

# Test stages, cheapest first; a mutant stops at the first stage that kills it.
UNIT = "SyncCoreTests|EngineTests|OrderStoreTests"
# The simulation's runs of many seeds (in memory and on SQLite); its self-checks test the harness.
SIMULATION = r"SyncSimulationTests\.SyncSimulationTests/test(ThousandSeeds|SeedsOnSQLite)"

NICE = ["nice", "-n", "15"]


# MARK: Sites


def mask(line, in_multiline):
    """`line` with the insides of string literals and any trailing comment blanked out, so that
    operators are looked for in code only; and whether a multi-line literal is still open."""
    out, i, n = [], 0, len(line)
    if in_multiline:
        end = line.find('"""')
        if end < 0:
            return " " * n, True
        out.append(" " * (end + 3))
        i = end + 3
    while i < n:
        if line.startswith('"""', i):
            end = line.find('"""', i + 3)
            if end < 0:
                out.append(" " * (n - i))
                return "".join(out), True
            out.append('"' + " " * (end + 1 - i) + '"')
            i = end + 3
        elif line[i] == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append('"' + " " * (min(j, n) - i - 1) + '"')
            i = j + 1
        elif line.startswith("//", i):
            out.append(" " * (n - i))
            break
        else:
            out.append(line[i])
            i += 1
    return "".join(out)[:n].ljust(n), False


def balanced(text):
    """Whether brackets of every kind close within `text`."""
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


def condition_end(code, start):
    """Index of the ` {` that ends a condition beginning at `start` (outside brackets), or -1."""
    depth = 0
    for i in range(start, len(code)):
        c = code[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            return i
    return -1


SWAPS = [  # (operator, pattern in masked code, replacement)
    ("relational", " <= ", " < "), ("relational", " >= ", " > "),
    ("relational", " < ", " <= "), ("relational", " > ", " >= "),
    ("equality", " == ", " != "), ("equality", " != ", " == "),
    ("logical", " && ", " || "), ("logical", " || ", " && "),
    ("arithmetic", " + 1", " - 1"), ("arithmetic", " - 1", " + 1"),
    ("arithmetic", " += 1", " -= 1"), ("arithmetic", " -= 1", " += 1"),
    ("arithmetic", " + 1", ""),
    ("boolean", "true", "false"), ("boolean", "false", "true"),
]
STATEMENT = re.compile(r"^(try |_ = |[A-Za-z_][\w.]*(\[[^\]]*\])?\.(append|insert|remove\w*|formUnion)\(|"
                       r"(self\.)?[A-Za-z_][\w.]* (\+|-)?= )")
SKIP = re.compile(r"\b(precondition|preconditionFailure|assert|assertionFailure|fatalError)\(")


def line_sites(line, code, next_code):
    """The mutations of one line: (operator, mutated line) pairs."""
    stripped = code.strip()
    if not stripped or SKIP.search(code):
        return []
    sites = []
    for op, old, new in SWAPS:
        for m in re.finditer(re.escape(old), code):
            at, end = m.start(), m.end()
            if op == "boolean" and (code[at - 1:at].isalnum() or code[end:end + 1].isalnum()):
                continue
            if op == "arithmetic" and code[end:end + 1].isalnum() and old.endswith("1"):
                continue
            if old == " + 1" and code[end:end + 1] in "0123456789.":
                continue
            sites.append((op, line[:at] + new + line[end:]))
    for m in re.finditer(r"\b(if|guard|while) ", code):
        start = m.end()
        if m.group(1) == "guard":
            end = code.find(" else {", start)
        else:
            end = condition_end(code, start)
        cond = code[start:end].strip() if end > 0 else ""
        if not cond or re.search(r"\b(let|var|case)\b|#available|,", cond) or not balanced(cond):
            continue
        original = line[start:start + len(code[start:end].rstrip())]
        sites.append(("negate", line[:start] + "!(" + original + ")" + line[start + len(original):]))
    # A deleted log line changes what an operator reads, not what the store holds: not sampled.
    if STATEMENT.match(stripped) and balanced(stripped) and not re.search(r"[{(\[,]$", stripped) \
            and not stripped.startswith("try {") and not next_code.strip().startswith(".") \
            and ".log(" not in code and not re.match(r"self\.(\w+) = \1$", stripped):
        indent = line[:len(line) - len(line.lstrip())]
        sites.append(("delete", indent + "// (deleted) " + line.strip()))
    m = re.match(r"^(\s*)return (.+)$", line)
    if m and re.search(r"(seq|Seq|count|Count|millis|Millis)\b", code) and balanced(m.group(2)) \
            and not re.search(r"\b(true|false|nil)\b|\{", code):
        sites.append(("return", m.group(1) + "return 0"))
    return sites


def target_files(groups):
    """(group, relative path, line range) for every mutated file."""
    out = []
    for group, entries in groups:
        for rel, lines in entries:
            full = os.path.join(ROOT, rel)
            names = sorted(os.listdir(full)) if os.path.isdir(full) else [""]
            for name in names:
                path = os.path.join(rel, name) if name else rel
                if path.endswith(".swift"):
                    out.append((group, path, lines))
    return out


def all_sites():
    """Every mutation site, in a stable order, each a dict with a stable id."""
    sites = []
    for group, path, lines in target_files([("engine", ENGINE), ("store", STORE)]):
        with open(os.path.join(ROOT, path)) as f:
            text = f.read().split("\n")
        codes, multiline = [], False
        for line in text:
            code, multiline = mask(line, multiline)
            codes.append(code)
        for index, line in enumerate(text):
            number = index + 1
            if lines and not lines[0] <= number <= lines[1]:
                continue
            next_code = codes[index + 1] if index + 1 < len(codes) else ""
            counts = {}
            for op, mutated in line_sites(line, codes[index], next_code):
                counts[op] = counts.get(op, 0) + 1
                sites.append({
                    "id": f"{os.path.basename(path)}:{number}:{op}:{counts[op]}", "group": group,
                    "path": path, "line": number, "op": op, "original": line.strip(),
                    "mutant": mutated.strip(), "mutated_line": mutated,
                })
    return sites


def sample(sites, count, seed):
    """`count` sites chosen by `seed`: half from the engine, half from the store's commit path."""
    rng = random.Random(seed)
    chosen = []
    for group, share in (("engine", count - count // 2), ("store", count // 2)):
        pool = [s for s in sites if s["group"] == group]
        chosen += rng.sample(pool, min(share, len(pool)))
    return chosen


# MARK: Running


def sync_tree(tree):
    """Copies the modules and tests into `tree`, rewriting only files that changed (so the build
    there stays incremental), and writes the trimmed manifest."""
    wanted = {}
    for rel in COPIED:
        for base, _, names in os.walk(os.path.join(ROOT, rel)):
            for name in names:
                source = os.path.join(base, name)
                wanted[os.path.relpath(source, ROOT)] = source
    for name in ENGINE_TESTS:
        wanted[os.path.join("Tests/EngineTests", name)] = os.path.join(ROOT, "Tests/OrderSyncNodeTests", name)
    for rel, source in wanted.items():
        with open(source, "rb") as f:
            data = f.read()
        if rel.startswith("Tests/EngineTests/"):
            data = data.replace(NODE_IMPORT, b"")
        write_if_changed(os.path.join(tree, rel), data)
    for top in ("Sources", "Tests"):
        for base, _, names in os.walk(os.path.join(tree, top)):
            for name in names:
                if os.path.relpath(os.path.join(base, name), tree) not in wanted:
                    os.remove(os.path.join(base, name))
    write_if_changed(os.path.join(tree, "Package.swift"), MANIFEST.encode())


def write_if_changed(path, data):
    """Writes `data` to `path` unless it already holds exactly that."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def run(command, cwd, timeout, env=None):
    """Runs `command`; (exit code, output), the code None when it ran past `timeout` seconds: then
    it and every process it started are killed (`swift test` leaves the test bundle running when
    only it is stopped)."""
    p = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        # `swift test` starts the test bundle in a session of its own: each descendant is found
        # (before any is killed, while they are still children of their parents) and killed.
        for pid in [p.pid] + descendants(p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, _ = p.communicate()
        return None, out


def build(tree, scratch, timeout):
    """Builds the tree and its tests; (succeeded, seconds, tail of the log)."""
    started = time.monotonic()
    code, log = run(NICE + ["swift", "build", "--build-tests", "--scratch-path", scratch], tree, timeout)
    if code is None:
        log += "\nbuild timed out"
    return code == 0, time.monotonic() - started, log[-3000:]


FAILED = re.compile(r"Test Case '-?\[?([\w.]+)[ .](\w+)\]?' failed")
STARTED = re.compile(r"Test Case '-?\[?([\w.]+)[ .](\w+)\]?' started")


def run_tests(tree, scratch, pattern, sim_seeds, timeout):
    """Runs the tests matching `pattern`; (passed, seconds, the test that failed or crashed)."""
    env = dict(os.environ, ORDERSYNC_SIM_SEEDS=str(sim_seeds))
    started = time.monotonic()
    # Line-buffered output (stdbuf, inherited by the test bundle), so that the last test reported
    # started is the one that hung.
    command = NICE + ["stdbuf", "-oL", "swift", "test", "--skip-build", "--scratch-path", scratch, "--filter", pattern]
    code, out = run(command, tree, timeout, env)
    if code is None:
        last = STARTED.findall(out)
        name = ".".join(last[-1]) if last else pattern
        return False, time.monotonic() - started, f"{name} (hung past {timeout} s)"
    seconds = time.monotonic() - started
    if code == 0 and not re.search(r"Executed [1-9]\d* tests?", out):
        sys.exit(f"no test matches {pattern}: a mutant would survive by default")
    if code == 0:
        return True, seconds, None
    failed = FAILED.findall(out)
    if failed:
        return False, seconds, ".".join(failed[0])
    last = STARTED.findall(out)
    return False, seconds, (".".join(last[-1]) if last else pattern) + " (crashed)"


def try_mutant(site, tree, scratch, args):
    """Applies one mutant in the tree, builds, tests and restores; the result as a dict."""
    path = os.path.join(tree, site["path"])
    with open(path) as f:
        original = f.read()
    lines = original.split("\n")
    assert lines[site["line"] - 1].strip() == site["original"], f"{site['id']}: the tree moved"
    lines[site["line"] - 1] = site["mutated_line"]
    result = dict(site)
    try:
        with open(path, "w") as f:
            f.write("\n".join(lines))
        ok, seconds, log = build(tree, scratch, args.build_timeout)
        result["build_s"] = round(seconds, 1)
        if not ok:
            result["outcome"] = "did not compile"
            return result
        result["test_s"] = 0.0
        for pattern in args.tests or (UNIT, SIMULATION):
            passed, seconds, killer = run_tests(tree, scratch, pattern, args.sim_seeds, args.test_timeout)
            result["test_s"] = round(result["test_s"] + seconds, 1)
            if not passed:
                result["outcome"], result["killed_by"] = "killed", killer
                return result
        result["outcome"] = "survived"
        return result
    finally:
        with open(path, "w") as f:
            f.write(original)


def write_report(results, path, args):
    """The Markdown table of the results, with the counts."""
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("killed", "survived", "did not compile")}
    scored = counts["killed"] + counts["survived"]
    rows = [
        f"Mutants: {len(results)} ({'chosen with --only' if args.only else f'seed {args.seed}'}, "
        f"ORDERSYNC_SIM_SEEDS={args.sim_seeds}); "
        f"killed {counts['killed']}, survived {counts['survived']}, did not compile {counts['did not compile']}"
        + (f"; score {100 * counts['killed'] / scored:.0f}%" if scored else ""),
        "",
        "| site | operator | original → mutant | outcome | killed by | build s | test s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(results, key=lambda r: (r["path"], r["line"], r["id"])):
        change = f"`{r['original']}` → `{r['mutant']}`".replace("|", "\\|")
        rows.append(f"| {r['path'].split('/')[-1]}:{r['line']} | {r['op']} | {change} | {r['outcome']} | "
                    f"{r.get('killed_by') or ''} | {r.get('build_s', '')} | {r.get('test_s', '')} |")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print every mutation site and stop")
    parser.add_argument("--count", type=int, default=40, help="mutants to sample (default 40)")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
    parser.add_argument("--only", action="append", help="run this mutant id (repeatable)")
    parser.add_argument("--tests", action="append",
                        help="run only the tests matching this pattern (repeatable; to check that a new test kills a mutant)")
    parser.add_argument("--sim-seeds", type=int, default=20, help="ORDERSYNC_SIM_SEEDS (default 20)")
    parser.add_argument("--work", default="/tmp/ordersync-mutants", help="scratch folder")
    parser.add_argument("--build-timeout", type=int, default=1200)
    parser.add_argument("--test-timeout", type=int, default=150, help="seconds; a mutant that hangs longer is killed")
    parser.add_argument("--fresh", action="store_true", help="forget the results of earlier runs")
    args = parser.parse_args()

    sites = all_sites()
    if args.list:
        for s in sites:
            print(f"{s['id']}\t{s['path']}:{s['line']}\t{s['original']}  =>  {s['mutant']}")
        print(f"{len(sites)} sites: {sum(s['group'] == 'engine' for s in sites)} engine, "
              f"{sum(s['group'] == 'store' for s in sites)} store", file=sys.stderr)
        return 0
    by_id = {s["id"]: s for s in sites}
    if args.only:
        missing = [i for i in args.only if i not in by_id]
        if missing:
            parser.error(f"no such mutant: {', '.join(missing)} (see --list)")
        chosen = [by_id[i] for i in args.only]
    else:
        chosen = sample(sites, args.count, args.seed)

    tree, scratch = os.path.join(args.work, "tree"), os.path.join(args.work, "build")
    # One run per scratch folder: two would mutate the same tree.
    os.makedirs(args.work, exist_ok=True)
    lock = open(os.path.join(args.work, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"another run is using {args.work}: wait for it or pass another --work")
    results_path = os.path.join(args.work, "results.json")
    sync_tree(tree)
    ok, seconds, log = build(tree, scratch, args.build_timeout)
    if not ok:
        sys.exit(f"the unmutated tree does not build:\n{log}")
    for pattern in args.tests or (UNIT, SIMULATION):
        passed, test_s, killer = run_tests(tree, scratch, pattern, args.sim_seeds, args.test_timeout)
        if not passed:
            sys.exit(f"the unmutated tree fails {killer}: fix that first")
        print(f"baseline: {pattern} passes in {test_s:.0f} s", flush=True)

    done = {}
    if os.path.exists(results_path) and not args.fresh:
        with open(results_path) as f:
            done = {r["id"]: r for r in json.load(f)}
    for n, site in enumerate(chosen, 1):
        # A mutant already killed (or not compiling) on this line stays so; a survivor is tried
        # again, as tests may have been added since.
        earlier = done.get(site["id"])
        if earlier and not args.only and earlier["original"] == site["original"] and earlier["outcome"] != "survived":
            continue
        result = try_mutant(site, tree, scratch, args)
        done[site["id"]] = result
        print(f"[{n}/{len(chosen)}] {site['id']}: {result['outcome']} {result.get('killed_by') or ''} "
              f"(build {result.get('build_s')} s, tests {result.get('test_s', 0)} s)", flush=True)
        with open(results_path, "w") as f:
            json.dump(list(done.values()), f, indent=1)
    results = [done[s["id"]] for s in chosen]
    write_report(results, os.path.join(args.work, "report.md"), args)
    print(f"report: {os.path.join(args.work, 'report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
