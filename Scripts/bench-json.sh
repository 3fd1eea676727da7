#!/usr/bin/env bash
# Measures how long the JSON parser takes on a 1 MiB text holding one object with 100,000
# members, built with optimization (-O, whole module, as `swift build -c release` does).
#
#   Scripts/bench-json.sh [REVISION] [RUNS]
#
# REVISION is a git revision whose JSON sources to measure (default: the working tree); the JSON
# files are taken from Sources/Core/JSON (or Sources/JSON), or from Sources/SyncCore where the
# library lived before it became a module of its own. Prints the size of the text, then the fastest and the median of
# RUNS parses (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

revision="${1:-}"
runs="${2:-5}"
work="$(mktemp -d "${TMPDIR:-/tmp}/ordersync-bench-json.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [ -z "$revision" ]; then
    cp Sources/Core/JSON/*.swift "$work/"
else
    for dir in Sources/Core/JSON Sources/JSON Sources/SyncCore; do
        git ls-tree --name-only "$revision" "$dir/" | { grep '/JSON[^/]*\.swift$' || true; } | while read -r file; do
            git show "$revision:$file" >"$work/$(basename "$file")"
        done
    done
fi
ls "$work"/JSON*.swift >/dev/null

cat >"$work/main.swift" <<'SWIFT'
import Glibc

// One object of 100,000 members, "0":0 to "99998":0, and a last member "99999" whose string
// value pads the text to exactly 1 MiB.
let size = 1 << 20
let members = 100_000
var text = "{"
for n in 0..<(members - 1) { text += "\"\(n)\":0," }
text += "\"\(members - 1)\":\""
text += String(repeating: "x", count: size - text.utf8.count - 2)
text += "\"}"
let bytes = Array(text.utf8)
precondition(bytes.count == size)

/// CPU time of this thread in milliseconds: unlike wall time, it does not count the time other
/// processes on a busy machine hold the core.
func threadCPUMilliseconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1e6
}

let runs = Int(CommandLine.arguments[1])!
var wall: [Double] = []
var cpu: [Double] = []
for _ in 0..<runs {
    let clock = ContinuousClock()
    let cpuStart = threadCPUMilliseconds()
    var parsed: JSONValue = .null
    let elapsed = try clock.measure { parsed = try JSONParser.parse(bytes) }
    cpu.append(threadCPUMilliseconds() - cpuStart)
    precondition(parsed.objectValue?.keys.count == members)
    let (seconds, attoseconds) = elapsed.components
    wall.append(Double(seconds) * 1000 + Double(attoseconds) / 1e15)
}
wall.sort()
cpu.sort()
func figure(_ ms: Double) -> String { ms < 100 ? String(Double(Int(ms * 10)) / 10) : String(Int(ms)) }
print("input: \(bytes.count) bytes, \(members) members; runs: \(runs)")
print("parse CPU time:  fastest \(figure(cpu[0])) ms, median \(figure(cpu[cpu.count / 2])) ms")
print("parse wall time: fastest \(figure(wall[0])) ms, median \(figure(wall[wall.count / 2])) ms")
SWIFT

swiftc -O -wmo -module-name JSONBench "$work"/*.swift -lm -o "$work/bench"
"$work/bench" "$runs"
