#!/usr/bin/env bash
# Instruction counts of the hot path's steps under valgrind's callgrind: repeatable whatever else
# the machine is doing (instructions, not seconds). Each case of `ordersync-microbench` runs N and
# 2N times; instructions per operation = (Ir(2N) - Ir(N)) / N, so start-up and warm-up cancel
# out; only what runs inside `MicroBenchCase.run` is counted. Allocations per operation come from
# the counting allocator linked into the microbench.
#
#   Scripts/callgrind.sh                 # N=2000, release build; prints a Markdown table
#   Scripts/callgrind.sh --json out.json # also writes the figures as JSON
#   Scripts/callgrind.sh --smoke         # N=20, debug build: checks the pipeline only
#   Scripts/callgrind.sh --breakdown     # where apply's and fanout's instructions go (SQLite, JSON,
#                                        # engine, Swift runtime, allocator), and the least SQLite
#                                        # work for the same guarantees (Scripts/bench/sqlite_floor.c)
#                                        # against the master's statements; Scripts/callgrind_breakdown.py
#   Scripts/callgrind.sh --check Tests/bench/callgrind-baseline.json
#                                        # N and build of the baseline; fails when a case takes more
#                                        # instructions or allocations per op than the baseline
#                                        # allows (its margin_percent); see Docs/TESTING.md
#
# Environment: CALLGRIND_SCRATCH_PATH overrides the build folder (default .build).
#
# valgrind 3.19 cannot read the DWARF 5 debug info Swift emits ("unhandled dwarf2 abbrev form
# code 0x25"), so the counts are taken on a copy with the debug info stripped.
set -euo pipefail
cd "$(dirname "$0")/.."
N=2000
CONFIG=release
JSON_OUT=""
CHECK=""
BREAKDOWN=""
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) N=20; CONFIG=debug ;;
        --json) JSON_OUT="$2"; shift ;;
        --check) CHECK="$2"; shift ;;
        -n) N="$2"; shift ;;
        --breakdown) BREAKDOWN=1 ;;
        *) echo "usage: Scripts/callgrind.sh [--smoke] [--json FILE] [--check BASELINE] [--breakdown] [-n N]" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$CHECK" ]; then
    # The baseline's own N and build: counts are only comparable with the same inputs.
    N=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n"])' "$CHECK")
    CONFIG=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"])' "$CHECK")
    [ -n "$JSON_OUT" ] || JSON_OUT="$(mktemp)"
fi
# Swift's per-process random hashing seed changes the path through dictionaries and sets.
export SWIFT_DETERMINISTIC_HASHING=1
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# CALLGRIND_SCRATCH_PATH: a build folder of its own, so that this can build beside another build.
SCRATCH=(--scratch-path "${CALLGRIND_SCRATCH_PATH:-.build}")
swift build -c "$CONFIG" "${SCRATCH[@]}" --product ordersync-microbench 2>&1 | tail -n 1
BIN="$(swift build -c "$CONFIG" "${SCRATCH[@]}" --show-bin-path)/ordersync-microbench"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
strip --strip-debug -o "$WORK/microbench" "$BIN"

if [ -n "$BREAKDOWN" ]; then
    # The floor program against the system's libsqlite3, the library the microbench links.
    gcc -O2 -Wall -Wextra -o "$WORK/sqlite_floor" Scripts/bench/sqlite_floor.c -lsqlite3
    python3 Scripts/callgrind_breakdown.py --microbench "$WORK/microbench" --floor "$WORK/sqlite_floor" -n "$N" --top
    exit 0
fi

instructions() {  # CASE ITERATIONS -> total Ir, and the program's own JSON line in $WORK/last.json
    # Only what runs inside MicroBenchCase.run is counted (not the inputs made beforehand).
    valgrind --tool=callgrind --toggle-collect='*MicroBenchCases*CaseC3run*' --callgrind-out-file="$WORK/cg.out" \
        "$WORK/microbench" "$1" "$2" \
        >"$WORK/last.json" 2>"$WORK/valgrind.log" || { cat "$WORK/valgrind.log" >&2; return 1; }
    awk '/^totals:/ {print $2}' "$WORK/cg.out"
}

echo "| case | instructions per op | mallocs per op | bytes allocated per op |"
echo "| --- | --- | --- | --- |"
rows=()
for c in frame-parse frame-encode message-decode message-encode apply fanout; do
    one=$(instructions "$c" "$N")
    two=$(instructions "$c" $((2 * N)))
    per=$(( (two - one) / N ))
    [ "$per" -gt 0 ] || { echo "callgrind: $c gave no instructions per operation ($one, $two)" >&2; exit 1; }
    mallocs=$(sed -E 's/.*"mallocs_per_op":([0-9.]+).*/\1/' "$WORK/last.json")
    bytes=$(sed -E 's/.*"bytes_per_op":([0-9.]+).*/\1/' "$WORK/last.json")
    printf '| %s | %s | %s | %s |\n' "$c" "$(printf "%'d" "$per")" "$mallocs" "$bytes"
    rows+=("{\"case\":\"$c\",\"instructions_per_op\":$per,\"mallocs_per_op\":$mallocs,\"bytes_per_op\":$bytes}")
done
if [ -n "$JSON_OUT" ]; then
    (IFS=,; echo "{\"n\":$N,\"config\":\"$CONFIG\",\"cases\":[${rows[*]}]}") > "$JSON_OUT"
fi
if [ -n "$CHECK" ]; then
    python3 Scripts/callgrind_check.py "$CHECK" "$JSON_OUT"
fi
