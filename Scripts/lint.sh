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

failed=0
# The dashboard's page (embedded in the binary at build time), each file by a tool made for
# it: eslint for the script (Debian's package; NODE_PATH finds its modules under any node),
# HTML Tidy for the page, tinycss2 (Scripts/lint_css.py) for the stylesheet.
assets=Sources/Node/OrderSyncNode/Dashboard/Assets
NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs eslint --no-eslintrc -c Scripts/dashboard-eslint.json -f unix \
    "$assets/dashboard.js" || failed=1
tidy -q -e --drop-empty-elements no "$assets/dashboard.html" || failed=1
/usr/bin/python3 Scripts/lint_css.py "$assets/dashboard.css" || failed=1
if [ "$failed" != 0 ]; then
    exit 1
fi
echo "lint: the dashboard's page is in order"
