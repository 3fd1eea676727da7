#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ with AddressSanitizer and runs each one for SECONDS
# (default 60) from its seed corpus in Fuzz/corpus/<Target>/.
#
#   Scripts/fuzz.sh [SECONDS]
#
# The seed corpus is copied to a temporary directory first: inputs libFuzzer finds go there,
# never into the repository. Crash reproducers (crash-*, timeout-*, oom-*, leak-*) go to a
# temporary directory whose path is printed. Exits non-zero if a target fails to build or
# finds anything; reproduce one with `Fuzz/.build/debug/<Target> <reproducer>`.
#
# Environment: FUZZ_SCRATCH_PATH overrides the build directory (default Fuzz/.build).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
case "$seconds" in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
targets=(FuzzFrameParser FuzzHandshake FuzzHTTPRequest FuzzSyncMessage FuzzNoise FuzzSecureLink)
scratch="${FUZZ_SCRATCH_PATH:-$PWD/Fuzz/.build}"
# Coverage instrumentation must reach the Swift compiler itself: `--sanitize=fuzzer
# --sanitize=address` alone builds binaries that run but see no coverage.
build_flags=(-c debug --package-path Fuzz --scratch-path "$scratch"
             --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address)

# Leave a trap to libFuzzer: Swift's own crash backtracer, running under AddressSanitizer,
# reports itself as a stack-buffer-underflow instead of the real failure.
export SWIFT_BACKTRACE=enable=no

work="$(mktemp -d "${TMPDIR:-/tmp}/ordersync-fuzz.XXXXXX")"
echo "fuzz: work directory $work"

for target in "${targets[@]}"; do
    started=$(date +%s)
    if ! swift build "${build_flags[@]}" --product "$target" >"$work/build-$target.log" 2>&1; then
        tail -n 40 "$work/build-$target.log" >&2
        echo "fuzz: building $target failed (log: $work/build-$target.log)" >&2
        exit 1
    fi
    echo "fuzz: built $target in $(( $(date +%s) - started )) s"
done
bin="$(swift build "${build_flags[@]}" --show-bin-path)"

# Print a reproducer as hex, at most 4 KiB of it.
hexdump_input() {
    od -An -v -tx1 -N 4096 "$1" | tr -d ' \n'
    echo
}

failed=0
summary=()
for target in "${targets[@]}"; do
    corpus="$work/$target/corpus"
    artifacts="$work/$target/artifacts"
    log="$work/$target/fuzz.log"
    mkdir -p "$corpus" "$artifacts"
    cp -r "Fuzz/corpus/$target/." "$corpus/"
    echo "fuzz: running $target for $seconds s ($(ls "$corpus" | wc -l) seeds)"
    started=$(date +%s)
    options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
             -artifact_prefix="$artifacts/")
    if [ -f "Fuzz/dict/$target.dict" ]; then
        options+=(-dict="Fuzz/dict/$target.dict")
    fi
    status=0
    "$bin/$target" "${options[@]}" "$corpus" >"$log" 2>&1 || status=$?
    elapsed=$(( $(date +%s) - started ))
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    crashes="$(find "$artifacts" -type f | wc -l)"
    if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        failed=1
        echo "fuzz: $target FAILED (exit $status), log: $log" >&2
        grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*fuzz invariant violated)' "$log" | head -n 20 >&2 || true
        for artifact in "$artifacts"/*; do
            [ -f "$artifact" ] || continue
            echo "fuzz: reproducer $artifact" >&2
            echo "fuzz: hex $(hexdump_input "$artifact")" >&2
        done
        [ "$crashes" -ne 0 ] || crashes=1
    fi
    summary+=("fuzz $target: ${runs:-0} runs in $elapsed s, $crashes crashes")
done

printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
    echo "fuzz: FAILED; reproducers are in $work" >&2
    exit 1
fi
rm -rf "$work"
