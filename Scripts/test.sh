#!/usr/bin/env bash
# Sets everything up (as root, on Debian) and runs every test: the Swift unit tests, then the
# scenarios on a simulated LAN with real avahi-daemons, real sockets, real SQLite files and
# independent peers (Python websockets and zeroconf, avahi-browse).
#
# This is CI mode whoever runs it: a missing prerequisite fails a test instead of skipping it,
# and a skipped test fails the run. Six tracks run side by side once the debug build is done:
#   - the LAN scenarios (pytest), and [pytest-b] the other Python suites, mostly waiting on
#     sockets and processes;
#   - [tsan] and [asan]: the sanitizer builds and runs (every unit test under AddressSanitizer,
#     the multi-threaded ones under ThreadSanitizer), the simulation, fuzzing, mostly compiling;
#   - [rollup]: the roll-up's fault drills; [package]: the release builds (the package, the
#     instruction counts).
# Each stage prints its time; the table at the end lists them (Docs/TESTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
export ORDERSYNC_PYTHON="$PWD/.venv/bin/python"

RESULTS="$(mktemp -d "${TMPDIR:-/tmp}/ordersync-test.XXXXXX")"
STARTED=$(date +%s)

# The console, for the lines of the tracks that run in the background (their output goes to a
# file each, printed whole when they are done).
exec 3>&1
# say LINE: prints LINE, and on the console too when in a background track.
say() {
    echo "$*"
    if [ -n "${TRACK_NAME:-}" ]; then echo "[$TRACK_NAME] $*" >&3; fi
}

# CPU per stage. bash's `time` counts the CPU of the children the shell reaped while the command
# ran: a track that ends during the main track's pytest is counted in pytest's figure (its CPU was
# the tracks' twice over), and a daemon that outlives the process that started it (avahi-daemon,
# a LAN scenario's node left behind) is counted nowhere. Where the unified cgroup (v2) hierarchy
# is writable, each stage runs in a cgroup of its own instead, which counts every process the
# stage started and nothing else: cpu.stat's usage_usec, read when the stage ends.
CGROUPS=""
CGROUP_MOUNT="$(findmnt -t cgroup2 -n -o TARGET 2>/dev/null | head -n 1 || true)"
if [ -n "$CGROUP_MOUNT" ]; then
    CGROUP_HERE="$CGROUP_MOUNT$(sed -n 's/^0:://p' /proc/self/cgroup)"
    if mkdir "$CGROUP_HERE/ordersync-test.$$" 2>/dev/null; then
        CGROUPS="$CGROUP_HERE/ordersync-test.$$"
        # pytest then prints the CPU per test file and per test (Tests/support/cpu_accounting.py).
        export ORDERSYNC_CPU_PER_TEST=1
    fi
fi
# The machine's busy CPU (all processes, ours and anyone else's) from /proc/stat, in seconds.
machine_cpu() {
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%d", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat
}
MACHINE_CPU_STARTED=$(machine_cpu)

# stage NAME COMMAND...: runs the command, prints how long it took and the CPU time it and every
# process it started used (user + system, both cores together; see CGROUPS above), and records
# both in the table: on two cores the CPU of all tracks together, not one track's wall time,
# bounds the run.
stage() {
    local name=$1 began rc=0 cpu group=""
    shift
    began=$(date +%s)
    say "test: [$name] started at $(date -u +%H:%M:%S)"
    if [ -n "$CGROUPS" ] && mkdir "$CGROUPS/$name" 2>/dev/null; then group="$CGROUPS/$name"; fi
    if [ -n "$group" ]; then
        # A move the kernel refuses leaves the stage uncounted (CPU 0), never unrun.
        (echo "$BASHPID" >"$group/cgroup.procs" 2>/dev/null || echo "test: [$name] not counted: its cgroup refused the move" >&2
            "$@") || rc=$?
        cpu=$(awk '$1 == "usage_usec" { printf "%d", $2 / 1000000 }' "$group/cpu.stat")
    else
        local TIMEFORMAT='%U %S'
        { time "$@" 2>&4; } 4>&2 2>"$RESULTS/cpu.$name" || rc=$?
        cpu=$(awk 'END { printf "%d", $1 + $2 }' "$RESULTS/cpu.$name" 2>/dev/null || echo 0)
    fi
    echo "$name $(($(date +%s) - began)) $rc ${cpu:-0}" >>"$RESULTS/stages"
    say "test: [$name] took $(($(date +%s) - began)) s (CPU ${cpu:-0} s), exit $rc"
    return "$rc"
}

# Removes the stages' cgroups; a process still in one (a daemon left behind) goes back to the
# cgroup the run started in.
remove_cgroups() {
    [ -n "$CGROUPS" ] && [ -d "$CGROUPS" ] || return 0
    local group pid
    for group in "$CGROUPS"/*/; do
        [ -f "$group/cgroup.procs" ] || continue
        while read -r pid; do echo "$pid" >"$CGROUP_HERE/cgroup.procs" 2>/dev/null || true; done <"$group/cgroup.procs"
        rmdir "$group" 2>/dev/null || true
    done
    rmdir "$CGROUPS" 2>/dev/null || true
}

summary() {
    local wall=$(($(date +%s) - STARTED))
    echo "test: stage times (seconds; started $(date -u -d "@$STARTED" +%H:%M:%S), all in $wall s)"
    # A stage's cgroup read again now: what its daemons used after it ended counts too.
    local name seconds rc cpu
    [ -f "$RESULTS/stages" ] && while read -r name seconds rc cpu; do
        if [ -n "$CGROUPS" ] && [ -f "$CGROUPS/$name/cpu.stat" ]; then
            cpu=$(awk '$1 == "usage_usec" { printf "%d", $2 / 1000000 }' "$CGROUPS/$name/cpu.stat")
        fi
        echo "$name $seconds $rc $cpu"
    done <"$RESULTS/stages" | awk '{ cpu += $4; printf "test:   %-28s %6d s  CPU %6d s  exit %s\n", $1, $2, $4, $3 }
        END { printf "test:   %-28s %6s    CPU %6d s\n", "(all stages)", "", cpu }'
    echo "test: CPU counted $([ -n "$CGROUPS" ] && echo "per stage in a cgroup of its own" || echo "by bash's time (no writable cgroup v2)");" \
        "the machine was busy $(($(machine_cpu) - MACHINE_CPU_STARTED)) CPU-s of $((wall * $(nproc))) (all processes, anyone's);" \
        "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
    remove_cgroups
    return 0
}
trap summary EXIT

# Runs `swift test` with the given arguments into LOG (printed on failure), then fails if any
# test was skipped: a skip is not a pass.
swift_tests() {
    local log=$1
    shift
    if ! swift test --skip-build "$@" >"$log" 2>&1; then
        grep -E "error:|failed|Fatal|Executed [0-9]+ tests" "$log" | head -n 60
        echo "test: swift test failed (log: $log)" >&2
        return 1
    fi
    grep -E "Executed [0-9]+ tests" "$log" | tail -n 1
    Scripts/xctest-skips.sh "$log"
}

# The second and third tracks: sanitizers, discovery under TSAN, the simulation, fuzzing. Their
# stage lines carry "[tsan]" and "[asan]".
thread_track() {
    local rc=0
    stage tsan Scripts/sanitizers.sh thread || rc=1
    # The Avahi discovery tests inside a simulated host, with the debug build, then with the
    # ThreadSanitizer build: one after the other, here rather than in the main track's pytest.
    stage discovery "${PYTEST[@]}" Tests/lan/test_discovery_swift.py || rc=1
    ORDERSYNC_SWIFT_SCRATCH="$PWD/.build-tsan" ORDERSYNC_SWIFT_SANITIZE=thread stage tsan-discovery \
        .venv/bin/python -m pytest -v -p no:cacheprovider Tests/lan/test_discovery_swift.py || rc=1
    # The deterministic simulation (pure CPU, minutes): here rather than before pytest, so that
    # the LAN scenarios start sooner.
    stage simulation swift_tests "$RESULTS/simulation.log" --filter '^SyncSimulationTests\.' || rc=1
    return "$rc"
}
address_track() {
    local rc=0
    stage asan Scripts/sanitizers.sh address || rc=1
    stage fuzz Scripts/fuzz.sh 30 || rc=1
    return "$rc"
}

# The roll-up's fault drills against a real PostgreSQL on a simulated host of its own (kill -9
# mid-batch, PostgreSQL stopped and restarted, the WAN link down, shaped slow, a promotion): they
# mostly wait on links and restarts (1,218 s for 128 CPU-s), so they run beside the other tracks
# instead of after them.
rollup_track() {
    stage rollup-faults "${PYTEST[@]}" Tests/lan/test_rollup_faults.py Tests/lan/test_postgres_lab.py Tests/lan/test_rollup_tls.py Tests/lan/test_rollup_stop.py
}

# The two release builds share one build folder, .build-release (in .build it would hold
# SwiftPM's lock against the main track's `swift test`): the package (Scripts/package-deb.sh, the
# static release build of ordersync) and its tests, then the instruction counts, whose benchmark
# program reuses the modules the package's build compiled. A track of their own: after the
# drills they made the longest track of the run (3,133 s).
package_track() {
    local rc=0
    ORDERSYNC_RELEASE_SCRATCH=.build-release stage package "${PYTEST[@]}" Tests/package || rc=1
    CALLGRIND_SCRATCH_PATH=.build-release stage callgrind Scripts/callgrind.sh --check Tests/bench/callgrind-baseline.json ||
        rc=1
    return "$rc"
}

# track NAME FUNCTION [NICE]: runs FUNCTION in the background, its output into $RESULTS/NAME.log;
# $! is its process, which exits non-zero if one of its stages failed.
# The tracks run at a lower priority (nice 10 unless NICE says otherwise): the main track's tests
# measure timers and latencies, and it is idle most of the time anyway.
track() {
    local name=$1 function=$2 nice=${3:-10}
    (
        renice -n "$nice" -p "$BASHPID" >/dev/null
        TRACK_NAME=$name "$function"
    ) >"$RESULTS/$name.log" 2>&1 &
}

# The second half of the LAN scenarios, beside the first (see below): the suites outside
# Tests/lan, which start their own simulated hosts, daemons on Unix sockets and ephemeral ports.
second_pytest_track() {
    stage pytest-b "${PYTEST[@]}" "${ALONE[@]/#/--ignore=}" Tests/conformance Tests/noise Tests/bench Tests/metrics Tests/api Tests/dashboard
}

stage setup Scripts/setup.sh --no-build
stage lint Scripts/lint.sh
stage build bash -c 'swift build --build-tests 2>&1 | tail -n 3; exit "${PIPESTATUS[0]}"'
BIN_DIR="$(swift build --show-bin-path)"
export ORDERSYNC_BIN="$BIN_DIR/ordersync"
export ORDERSYNC_WSECHO_BIN="$BIN_DIR/ordersync-wsecho"
export ORDERSYNC_NOISE_PEER_BIN="$BIN_DIR/ordersync-noise-peer"
export ORDERSYNC_QR_BIN="$BIN_DIR/ordersync-qr"

PYTEST=(env ORDERSYNC_SWIFT_PACKAGE_DIR="$PWD" .venv/bin/python -m pytest -v --durations=30 -p no:cacheprovider)
track tsan thread_track
THREAD_TRACK=$!
track asan address_track
ADDRESS_TRACK=$!
track rollup rollup_track
ROLLUP_TRACK=$!
track package package_track
PACKAGE_TRACK=$!

foreground_rc=0
# The unit tests (XCTest) run on the [asan] track, every one of them, under AddressSanitizer
# (Scripts/sanitizers.sh address): a plain run of the same tests here would only repeat them.
# AvahiDiscoveryLanTests need an avahi-daemon on a D-Bus system bus: they run inside a simulated
# host on the [tsan] track (Tests/lan/test_discovery_swift.py, debug and ThreadSanitizer builds).
# The simulation's full seed counts run on the [tsan] track, with the plain debug build.

# Tests that flood the master from processes at the lowest priority and measure what a paired
# terminal sees meanwhile, the automatic failover's promotion-time bound (5 s, issue 26), and the
# bulk test's 15 MB pages: they need the machine to themselves, so they run once the background
# tracks are done.
ALONE=(Tests/lan/test_preauth_limits.py Tests/lan/test_insider_limits.py Tests/conformance/test_bounds.py
    Tests/lan/test_auto_failover.py Tests/lan/test_bulk_changes.py)

# The Python suites in two halves side by side: they wait on sockets, processes and timers far
# more than they compute (1,018 CPU-s in 2,755 s of one process in a whole run), and every one
# makes its own namespaces, data folders and ports. The second half ([pytest-b]: WebSocket
# conformance with the Autobahn cases through kosoku, hostile handshakes and limits, Noise
# interop, the benchmark smoke, metrics with a real Prometheus, the API contract, the dashboard)
# at the main track's priority; this one the LAN scenarios. Autobahn results go to a temporary
# folder; Docs/CONFORMANCE.md is regenerated only by running Scripts/conformance.py by hand.
track pytest-b second_pytest_track 0
SECOND_PYTEST=$!
stage pytest "${PYTEST[@]}" "${ALONE[@]/#/--ignore=}" --ignore=Tests/lan/test_rollup_faults.py --ignore=Tests/lan/test_postgres_lab.py --ignore=Tests/lan/test_rollup_tls.py --ignore=Tests/lan/test_rollup_stop.py \
    --ignore=Tests/lan/test_discovery_swift.py Tests/lan ||
    foreground_rc=1
wait "$SECOND_PYTEST" || foreground_rc=1
echo "test: ---- what [pytest-b] printed ----"
cat "$RESULTS/pytest-b.log"

echo "test: waiting for the sanitizers, fuzzing, the package and the instruction counts"
background_rc=0
wait "$THREAD_TRACK" || background_rc=1
wait "$ADDRESS_TRACK" || background_rc=1
wait "$ROLLUP_TRACK" || background_rc=1
wait "$PACKAGE_TRACK" || background_rc=1
for name in tsan asan rollup package; do
    echo "test: ---- what the [$name] track printed ----"
    cat "$RESULTS/$name.log"
done
stage pytest-alone "${PYTEST[@]}" "${ALONE[@]}" || foreground_rc=1
if [ "$foreground_rc" != 0 ] || [ "$background_rc" != 0 ]; then
    echo "test: FAILED: $(awk '$3 != 0 { printf "%s ", $1 }' "$RESULTS/stages")" >&2
    exit 1
fi
echo "test: every stage passed"
