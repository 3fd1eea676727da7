#!/usr/bin/env bash
# Checks the Swift sources against the project's .swift-format configuration (the formatter
# bundled with the Swift toolchain), the size of Swift files and of the folders of Sources, and
# the dashboard's page with linters of its own. `Scripts/lint.sh --fix` rewrites the Swift files
# in place.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests Fuzz/Package.swift Fuzz/Sources/FuzzFrameParser Fuzz/Sources/FuzzHandshake Fuzz/Sources/FuzzHTTPRequest Fuzz/Sources/FuzzSyncMessage Fuzz/Sources/FuzzNoise Fuzz/Sources/FuzzSecureLink)
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --recursive --parallel "${paths[@]}"
fi
swift format lint --strict --recursive --parallel "${paths[@]}"
echo "lint: swift format found nothing to change"

failed=0
# Files a person can hold in their head: no Swift file over 400 lines, no folder of Sources with
# more than 30 files.
long=$(find Sources Tests -name '*.swift' -print0 | xargs -0 wc -l | awk '$2 != "total" && $1 > 400')
if [ -n "$long" ]; then
    echo "lint: Swift files over 400 lines (split them by concern):"
    echo "$long"
    failed=1
fi
crowded=$(find Sources -type d | while read -r dir; do
    n=$(find "$dir" -maxdepth 1 -type f | wc -l)
    if [ "$n" -gt 30 ]; then echo "$n $dir"; fi
done)
if [ -n "$crowded" ]; then
    echo "lint: folders of Sources with more than 30 files:"
    echo "$crowded"
    failed=1
fi

# The dashboard's page (embedded in the binary at build time), each file by a tool made for
# it: eslint for the script (Debian's package; NODE_PATH finds its modules under any node),
# HTML Tidy for the page, tinycss2 (Scripts/lint_css.py) for the stylesheet.
assets=Sources/Node/OrderSyncNode/Dashboard/Assets
NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs eslint --no-eslintrc -c Scripts/dashboard-eslint.json -f unix \
    "$assets/dashboard.js" || failed=1
tidy -q -e --drop-empty-elements no "$assets/dashboard.html" || failed=1
/usr/bin/python3 Scripts/lint_css.py "$assets/dashboard.css" || failed=1
# One store writer (Docs/ARCHITECTURE.md): outside the store module only the writer's own files
# (Sources/Node/OrderSyncNode/Store) name the SQLite connection; the microbenchmark measures the
# store by itself.
owners=$(grep -rlw OrderDatabase Sources --include='*.swift' \
    | grep -v -e '^Sources/Shell/OrderStore/' -e '^Sources/Node/OrderSyncNode/Store/' -e '^Sources/Programs/MicroBenchCases/' || true)
if [ -n "$owners" ]; then
    echo "lint: OrderDatabase named outside the store module and the store writer (use StoreWriter):"
    echo "$owners"
    failed=1
fi
if [ "$failed" != 0 ]; then
    exit 1
fi
echo "lint: file sizes, folders, the store's one writer and the dashboard's page are in order"
