#!/usr/bin/env bash
# Writes every output format of leak-audit's reports on the fixture programs into DIR, with what
# changes from run to run masked (process ids, addresses, the checkout's path, times), so that two
# snapshots can be compared byte for byte: take one before a refactoring and one after, or in two
# checkouts of the same commit, then `diff -r BEFORE AFTER` must print nothing.
#
# leak-audit runs from the checkout's root with each fixture named by its path from there, as a
# user runs it from a package's root: the reports show the same paths whatever the checkout's own
# path, and the text report wraps its lines the same way. Masked after rendering: process ids and
# addresses; in JSON the times (durationMilliseconds, peakTimeMilliseconds, each test's start and
# end, a timeline's bucket width and its samples, which fall in buckets by time) and the test
# process that started a child (startedByTestProcess); the checkout's path where a report names a
# file inside it by its whole path. A process id's digit count can still move a wrap of the text
# report's "started by process" line.
#
#   scripts/output-snapshot.sh /tmp/before
#   … change the code …
#   scripts/output-snapshot.sh /tmp/after && diff -r /tmp/before /tmp/after
#
# The unit-level check of the same thing, on reports built by hand, is
# Tests/LeakAuditCoreTests/GoldenOutputTests.swift (it runs with the test suite).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: scripts/output-snapshot.sh DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

scripts/ensure-dependencies.sh >&2
swift build >&2
swift build --build-tests --package-path Fixtures >&2
bin=$(swift build --package-path Fixtures --show-bin-path)
bin=${bin#"$root"/}
leak_audit="$root/.build/debug/leak-audit"

# name | leak-audit options | target | target arguments
cases=(
  "view-model-leaky||ViewModelRetention|leaky"
  "view-model-clean||ViewModelRetention|clean"
  "dismissal-leaky||DismissalCapture|leaky"
  "coordinator-leaky||CoordinatorBudgets|leaky"
  "generic-boxes-leaky||GenericBoxes|leaky"
  "escaping-names-leaky||EscapingNames|leaky"
  "crash-after-leak||CrashAfterLeak|leaky"
  "exit-non-zero||ExitNonZero|leaky"
  "dynamic-library-leaky||DynamicLibraryType|leaky"
  "uninstrumented||Uninstrumented|leaky"
  "uninstrumented-budget|--budget Uninstrumented.*=1|Uninstrumented|leaky"
  "gallery-census|--census|UninstrumentedGallery|leaky"
  "screen-tests|--leaks-per-test|FixturesPackageTests.xctest|"
)

mask() {
  sed -E \
    -e "s#${root}#<root>#g" \
    -e 's/0x[0-9a-fA-F]+/0x…/g' \
    -e 's/("pid" *: *)[0-9]+/\1…/g' \
    -e 's/(pid |started by process )[0-9]+/\1…/g' \
    -e 's/("(address|moduleOffset|startedByTestProcess)" *: *)[0-9]+/\1…/g' \
    -e 's/("(durationMilliseconds|peakTimeMilliseconds|startedAtMilliseconds|finishedAtMilliseconds|bucketMilliseconds)" *: *)[0-9]+/\1…/g' |
    # A timeline's samples ([time, low, high, last] a bucket) fall in buckets by time: how many
    # there are changes from run to run, so the list is masked whole.
    awk '
      /"samples" *: *\[ *$/ { depth = 1; print; next }
      depth > 0 {
        if ($0 ~ /\[ *$/) depth++
        else if ($0 ~ /^ *\]/) depth--
        if (depth == 0) { indent = $0; sub(/[^ ].*/, "", indent); print indent "  …"; print }
        next
      }
      { print }
    '
}

for entry in "${cases[@]}"; do
  IFS='|' read -r name options target arguments <<<"$entry"
  tmp=$(mktemp -d)
  # shellcheck disable=SC2086
  status=0
  COLUMNS=100 "$leak_audit" run $options \
    --output "$tmp/report.txt" --output-json "$tmp/report.json" --output-sarif "$tmp/report.sarif" \
    --output-junit "$tmp/report.xml" --output-github "$tmp/report.github" \
    "$bin/$target" $arguments >/dev/null 2>&1 || status=$?
  for file in "$tmp"/report.*; do
    mask <"$file" >"$out/$name.${file##*.}"
  done
  echo "$status" >"$out/$name.status"
  rm -rf "$tmp"
  echo "$name: exit $status" >&2
done
