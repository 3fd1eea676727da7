#!/usr/bin/env bash
# Fails when a `swift test` log shows a skipped test: XCTest's "Test Case '...' skipped" lines
# and its "with N tests skipped" totals, and swift-testing's "Test ... skipped" lines. Prints
# every skipped test. Tests left out with --skip are not run at all, so they are not skips.
# Usage: Scripts/xctest-skips.sh LOG
set -euo pipefail
log=${1:?usage: Scripts/xctest-skips.sh LOG}
[ -r "$log" ] || { echo "xctest-skips: cannot read $log" >&2; exit 2; }

grep -q -E "Executed [0-9]+ tests?|Test run with [0-9]+ tests?" "$log" ||
    { echo "xctest-skips: $log holds no test totals: not a swift test log, or the run died" >&2; exit 2; }
cases=$(grep -E "^Test Case '[^']+' skipped" "$log" | sed -E "s/^Test Case '([^']+)' skipped.*/\1/" | sort -u || true)
reasons=$(grep -E ": Test skipped" "$log" | sort -u || true)
testing=$(grep -E "Test [^ ].* skipped" "$log" | grep -v -E "^Test Case '" || true)
totals=$(grep -E "with [1-9][0-9]* tests? skipped" "$log" | sort -u || true)
if [ -z "$cases$testing$totals" ]; then
    echo "xctest-skips: no test skipped in $log"
    exit 0
fi
echo "xctest-skips: tests were skipped in $log (a skip fails the run: make the test run, fail, or leave it out with --skip):" >&2
for list in "$cases" "$reasons" "$testing" "$totals"; do
    [ -n "$list" ] && printf '  %s\n' "$list" >&2
done
exit 1
