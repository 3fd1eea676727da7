#!/usr/bin/env bash
# Checks the Swift sources against the project's .swift-format configuration (the formatter
# bundled with the Swift toolchain). `Scripts/lint.sh --fix` rewrites the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests Fuzz/Package.swift Fuzz/Sources/FuzzFrameParser Fuzz/Sources/FuzzHandshake Fuzz/Sources/FuzzHTTPRequest Fuzz/Sources/FuzzSyncMessage Fuzz/Sources/FuzzNoise Fuzz/Sources/FuzzSecureLink)
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --recursive --parallel "${paths[@]}"
fi
swift format lint --strict --recursive --parallel "${paths[@]}"
echo "lint: swift format found nothing to change"
