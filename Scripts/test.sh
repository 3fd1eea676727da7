#!/usr/bin/env bash
# Sets everything up (as root, on Debian) and runs every test: the Swift unit tests, then the
# scenarios on a simulated LAN with real avahi-daemons, real sockets, real SQLite files and
# independent peers (Python websockets and zeroconf, avahi-browse).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/setup.sh --no-build

export ORDERSYNC_PYTHON="$PWD/.venv/bin/python"
echo "test: style (swift format lint --strict with .swift-format)"
Scripts/lint.sh
echo "test: building (debug, with tests)"
swift build --build-tests 2>&1 | tail -n 3
BIN_DIR="$(swift build --show-bin-path)"
export ORDERSYNC_BIN="$BIN_DIR/ordersync"
export ORDERSYNC_WSECHO_BIN="$BIN_DIR/ordersync-wsecho"
export ORDERSYNC_NOISE_PEER_BIN="$BIN_DIR/ordersync-noise-peer"
export ORDERSYNC_QR_BIN="$BIN_DIR/ordersync-qr"

echo "test: unit tests"
# AvahiDiscoveryLanTests need an avahi-daemon on a D-Bus system bus: they run inside a simulated
# host from the LAN tests below (Tests/lan/test_discovery_swift.py), not here.
swift test --skip-build --skip AvahiDiscoveryLanTests

echo "test: unit tests under ThreadSanitizer and AddressSanitizer"
Scripts/sanitizers.sh all

echo "test: fuzzing (libFuzzer + ASAN, 60 s per target)"
Scripts/fuzz.sh 60

echo "test: instruction counts of the hot path under callgrind (smoke: the pipeline, not the figures)"
Scripts/callgrind.sh --smoke

echo "test: WebSocket conformance (Autobahn cases through kosoku, hostile handshakes, limits), Noise interop, LAN scenarios"
# Autobahn results are written to a temporary folder; Docs/CONFORMANCE.md is regenerated only by
# running Scripts/conformance.py by hand.
ORDERSYNC_SWIFT_PACKAGE_DIR="$PWD" .venv/bin/python -m pytest -v -p no:cacheprovider Tests/conformance Tests/noise Tests/lan Tests/bench Tests/package Tests/metrics Tests/api
